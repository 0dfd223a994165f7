"""The regression gate for CI (SPEC section 11) and its reports."""
