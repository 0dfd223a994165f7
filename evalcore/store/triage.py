"""The ``triage_queries`` table (migration 0009): a pasted list of real user queries and the
decision taken on each, per (question set name, author). :mod:`evalcore.read.triage` reads it;
this writes it. A list of 100,000 lines is one bulk insert, not one statement a row."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from evalcore.errors import InputError
from evalcore.store.basics import first_row, now, one_row

if TYPE_CHECKING:
    from evalcore.store.connection import Connection

DECISIONS = ("near", "far", "answer", "skip")


def add_queries(store: Connection, set_name: str, author: str, queries: Sequence[str]) -> int:
    """Append the distinct ``queries`` the list of (``set_name``, ``author``) does not hold
    yet, after its last one (the decisions already taken are kept). Returns how many were added."""
    import pandas as pd

    wanted = list(dict.fromkeys(q.strip() for q in queries if q and q.strip()))
    if not wanted:
        return 0
    with store.transaction() as con:
        con.register("_pasted", pd.DataFrame({"query": wanted, "at": range(len(wanted))}))
        try:
            last = one_row(
                con,
                "SELECT coalesce(max(position), 0) FROM triage_queries WHERE set_name = ? AND author = ?",
                [set_name, author],
            )
            added = first_row(
                con,
                "INSERT INTO triage_queries (set_name, author, position, query) "
                "SELECT ?, ?, ? + row_number() OVER (ORDER BY p.at), p.query FROM _pasted p "
                "WHERE p.query NOT IN (SELECT query FROM triage_queries WHERE set_name = ? AND author = ?) "
                "ORDER BY p.at",
                [set_name, author, int(last[0]), set_name, author],
            )
        finally:
            con.unregister("_pasted")
    return int(added[0]) if added else 0


def decide(store: Connection, set_name: str, author: str, query: str, decision: str | None) -> None:
    """Record ``decision`` (near, far, answer, skip; None: undecided again) on ``query`` of the
    list; InputError when the list does not hold it or the decision is unknown."""
    if decision is not None and decision not in DECISIONS:
        raise InputError(f"triage decision must be one of {', '.join(DECISIONS)}, got {decision!r}")
    with store.transaction() as con:
        found = first_row(
            con,
            "SELECT position FROM triage_queries WHERE set_name = ? AND author = ? AND query = ?",
            [set_name, author, query],
        )
        if found is None:
            raise InputError(f"the list of real queries for {set_name!r} does not hold {query[:80]!r}")
        con.execute(
            "UPDATE triage_queries SET decision = ?, decided_at = ? WHERE set_name = ? AND author = ? AND position = ?",
            [decision, now() if decision is not None else None, set_name, author, found[0]],
        )


def clear(store: Connection, set_name: str, author: str) -> int:
    """Forget the list of (``set_name``, ``author``) and its decisions; returns the rows removed."""
    with store.transaction() as con:
        removed = first_row(con, "DELETE FROM triage_queries WHERE set_name = ? AND author = ?", [set_name, author])
    return int(removed[0]) if removed else 0
