"""The reliability suite's table: one row per case (case, expected, observed, outcome),
printed at the end of the pytest run by tests/conftest.py."""

from __future__ import annotations

ROWS: list[tuple[str, str, str, str]] = []


def record(case: str, expected: str, observed: str) -> None:
    ROWS.append((case, expected, observed, "held" if expected == observed else "FAILED"))


def render() -> list[str]:
    lines = ["| case | expected | observed | |", "|---|---|---|---|"]
    lines += [f"| {c} | {e} | {'(same)' if o == e else o} | {r} |" for c, e, o, r in ROWS]
    held = sum(r == "held" for *_, r in ROWS)
    lines.append(f"\n{len(ROWS)} cases: {held} held, {len(ROWS) - held} failed")
    return lines
