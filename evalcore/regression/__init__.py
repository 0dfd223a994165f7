"""The regression gate for CI (CI.md "What the gate decides") and its reports."""
