"""The hits of a query typed on a screen under a run's configuration, read back as the run's
stored chunks (:func:`evalcore.traffic.hits.config_hits` ranks the query; this says which
configurations can, and reads the chosen chunks)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from evalcore.configurations import read

if TYPE_CHECKING:
    from evalcore.store import Store


@dataclass(frozen=True, slots=True)
class ChunkHit:
    """One hit of a real query under a run's configuration: the chunk and its place."""

    rank: int
    doc_id: str
    section: str
    start: int
    end: int
    score: float
    content: str


def hit_configurations(store: Store, run_id: str) -> tuple[list[str], str | None]:
    """The configurations ``STRATEGY/RETRIEVER`` of a run whose hits a new query can get
    exactly as the run ranked its own (built-in ones: the run's model, chunks, BM25 index and
    cross-encoder), and, when there is none, the one line that says why."""
    configs = read(store, run_id)
    usable = sorted(info.label for info in configs.values() if info.source == "builtin")
    if usable or not configs:
        return usable, None if usable else f"run {run_id} has no configuration with results"
    sources = {info.source for info in configs.values()}
    if sources <= {"import", "python"}:
        why = "has no retriever here (its rankings were made elsewhere: imported, or by a Python function)"
    else:
        why = "ranked with a live search endpoint, which this view does not call"
    return [], f"No hits for real queries: run {run_id} {why}."


def chunk_hits(
    store: Store, run_id: str, strategy: str, chosen: Sequence[int], scores: Sequence[float]
) -> list[ChunkHit]:
    """The stored chunks ``chosen`` (chunk ids, best first) of the run's ``strategy`` as hits
    ranked 1, 2, ... with their ``scores`` (:func:`evalcore.traffic.hits.config_hits`)."""
    with store.read() as con:
        rows = {
            int(r[0]): r[1:]
            for r in con.execute(
                "SELECT chunk_id, doc_id, coalesce(section, ''), start, \"end\", content FROM chunks "
                "WHERE run_id = ? AND strategy = ? AND chunk_id IN (SELECT unnest(?::INTEGER[]))",
                [run_id, strategy, list(chosen)],
            ).fetchall()
        }
    return [
        ChunkHit(rank, rows[c][0], rows[c][1], int(rows[c][2]), int(rows[c][3]), float(scores[rank - 1]), rows[c][4])
        for rank, c in enumerate(chosen, start=1)
        if c in rows and rows[c][2] is not None
    ]
