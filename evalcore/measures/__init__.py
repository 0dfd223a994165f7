"""Measures: retrieval metrics, statistics, the refusal threshold and its claim (one home per constant)."""
