"""Which chunks answer a ground truth (SPEC section 5).

A hit is correct when it is a chunk of the needle's document whose evidence range
``[evidence_start, end)`` contains the needle's whole span. A ground truth is destroyed
under a strategy when no chunk's evidence range contains it.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Sequence

from evalcore.records import Chunk, Span

if TYPE_CHECKING:
    import numpy as np
    import pandas as pd


def is_correct(chunk: Chunk, span: Span) -> bool:
    """True when ``chunk`` belongs to the span's document and its evidence range holds the span."""
    return chunk.doc_id == span.doc_id and chunk.evidence_start <= span.start and span.end <= chunk.end


def correct_chunks(chunks: Sequence[Chunk], span: Span) -> np.ndarray:
    """Chunk ids (positions in ``chunks``) that are correct for ``span``; empty when destroyed."""
    import numpy as np

    return np.asarray([i for i, c in enumerate(chunks) if is_correct(c, span)], dtype=np.int64)


def destroyed_cut(chunks: Sequence[Chunk], span: Span) -> int | None:
    """A chunk boundary strictly inside the span: the cut that split a destroyed answer.

    None when no boundary falls inside (e.g. the span lies in text no chunk holds).
    """
    cuts = set()
    for c in chunks:
        if c.doc_id != span.doc_id:
            continue
        for edge in (c.evidence_start, c.end):
            if span.start < edge < span.end:
                cuts.add(edge)
    return min(cuts) if cuts else None


def correct_sets(chunks: Sequence[Chunk], spans: dict[str, Span]) -> dict[str, np.ndarray]:
    """:func:`correct_chunks` of every span at once (chunks indexed by document once)."""
    import numpy as np

    by_doc: dict[str, list[int]] = {}
    for i, c in enumerate(chunks):
        by_doc.setdefault(c.doc_id, []).append(i)
    index = {
        doc: (np.asarray(ids, dtype=np.int64),
              np.asarray([chunks[i].evidence_start for i in ids], dtype=np.int64),
              np.asarray([chunks[i].end for i in ids], dtype=np.int64))
        for doc, ids in by_doc.items()
    }
    empty = np.zeros(0, dtype=np.int64)
    out = {}
    for group, span in spans.items():
        ids, starts, ends = index.get(span.doc_id, (empty, empty, empty))
        out[group] = ids[(starts <= span.start) & (span.end <= ends)]
    return out


def block_frames(run_id: str, strategy: str, ranked: dict, qids: Sequence[str], in_domain: np.ndarray,
                 correct: Sequence[np.ndarray]) -> tuple[list[pd.DataFrame], list[pd.DataFrame]]:
    """Result and hit rows of one block of queries for every retriever (SPEC section 5).

    ``ranked[retriever]`` is an :class:`evalcore.ranking.Ranked`; ``correct[i]`` the chunk
    ids correct for query i. A hit is correct when its chunk is one of them.
    """
    import numpy as np
    import pandas as pd

    qids = np.asarray(qids, dtype=object)
    nb = len(qids)
    has_answer = np.array([len(c) > 0 for c in correct], dtype=bool)
    results, hits = [], []
    for retr, r in ranked.items():
        top = r.top_ids.shape[1]
        flags = np.array([np.isin(r.top_ids[i], correct[i]) for i in range(nb)], dtype=bool).reshape(nb, top)
        results.append(pd.DataFrame({
            "run_id": run_id, "strategy": strategy, "retriever": retr, "query_id": qids,
            "domain": np.where(in_domain, "in", "out"),
            "first_correct_rank": pd.Series(r.first, dtype="Int64").mask(~has_answer),
            "answer_distance": np.where(has_answer, r.answer_dist, np.nan),
            "top_distance": r.top_dist[:, 0],
            "destroyed": in_domain & ~has_answer,
        }))
        hits.append(pd.DataFrame({
            "run_id": run_id, "strategy": strategy, "retriever": retr,
            "query_id": np.repeat(qids, top), "rank": np.tile(np.arange(1, top + 1), nb),
            "chunk_id": r.top_ids.ravel(), "distance": r.top_dist.ravel(),
            "score": r.top_score.ravel(), "correct": flags.ravel(),
        }))
    return results, hits
