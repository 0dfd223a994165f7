"""A person's progress through a list of real user queries (the ``triage_queries`` table of
migration 0009, written by :mod:`evalcore.store.triage`), for the Questions screen: how many
are decided, one page of the list, the queries decided off-topic. Each reader reads only what
it shows, so a list of 100,000 lines is paged, never loaded whole."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from evalcore.store.basics import one_row

if TYPE_CHECKING:
    from evalcore.store import Store

#: a decision as stored -> as the screen words it (and back)
LABELS = {"near": "off-topic (near)", "far": "off-topic (far)", "answer": "answer in the corpus", "skip": "skip"}


@dataclass(frozen=True, slots=True)
class Entry:
    """One query of the list: its 1-based position, its text and the decision (None: open)."""

    position: int
    query: str
    decision: str | None


@dataclass(frozen=True, slots=True)
class TriageProgress:
    decided: int
    total: int

    def sentence(self) -> str:
        return f"{self.decided:,} of {self.total:,} queries decided"


def _has_table(store: Store) -> bool:
    return store.path.exists()


def progress(store: Store, set_name: str, author: str) -> TriageProgress:
    """How many queries of the list of (``set_name``, ``author``) are decided, of how many."""
    if not _has_table(store):
        return TriageProgress(0, 0)
    with store.read() as con:
        row = one_row(
            con,
            "SELECT count(decision), count(*) FROM triage_queries WHERE set_name = ? AND author = ?",
            [set_name, author],
        )
    return TriageProgress(int(row[0]), int(row[1]))


def page(store: Store, set_name: str, author: str, number: int, size: int) -> list[Entry]:
    """Page ``number`` (from 1) of ``size`` queries of the list, in paste order."""
    if not _has_table(store):
        return []
    with store.read() as con:
        rows = con.execute(
            "SELECT position, query, decision FROM triage_queries WHERE set_name = ? AND author = ? "
            "ORDER BY position LIMIT ? OFFSET ?",
            [set_name, author, size, max(0, number - 1) * size],
        ).fetchall()
    return [Entry(int(r[0]), r[1], r[2]) for r in rows]


def off_topic(store: Store, set_name: str, author: str) -> list[tuple[str, str]]:
    """``(query, near|far)`` of every query of the list decided off-topic, in list order (what
    a restored draft holds as off-topic items)."""
    if not _has_table(store):
        return []
    with store.read() as con:
        rows = con.execute(
            "SELECT query, decision FROM triage_queries WHERE set_name = ? AND author = ? "
            "AND decision IN ('near', 'far') ORDER BY position",
            [set_name, author],
        ).fetchall()
    return [(r[0], r[1]) for r in rows]
