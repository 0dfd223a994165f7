"""The reliability suite's table: one row per case (case, expected, observed, outcome),
printed at the end of the pytest run by tests/conftest.py."""

from __future__ import annotations

ROWS: list[tuple[str, str, str, str]] = []


def record(case: str, expected: str, observed: str) -> None:
    ROWS.append((case, expected, observed, "held" if expected == observed else "FAILED"))


def render(rows: list[tuple[str, str, str, str]] | None = None) -> list[str]:
    """The table of ``rows`` (default: this process's own)."""
    rows = ROWS if rows is None else rows
    lines = ["| case | expected | observed | |", "|---|---|---|---|"]
    lines += [f"| {c} | {e} | {'(same)' if o == e else o} | {r} |" for c, e, o, r in rows]
    held = sum(r == "held" for *_, r in rows)
    lines.append(f"\n{len(rows)} cases: {held} held, {len(rows) - held} failed")
    return lines
