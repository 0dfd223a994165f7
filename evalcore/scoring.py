"""Which chunks answer a ground truth (METHODS.md "Correct hits").

A hit is correct when it is a chunk of the needle's document whose evidence range
``[evidence_start, end)`` contains the needle's whole span. A ground truth is destroyed
under a strategy when no chunk's evidence range contains it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from evalcore.records import Chunk, Span

if TYPE_CHECKING:
    import numpy as np


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
        doc: (
            np.asarray(ids, dtype=np.int64),
            np.asarray([chunks[i].evidence_start for i in ids], dtype=np.int64),
            np.asarray([chunks[i].end for i in ids], dtype=np.int64),
        )
        for doc, ids in by_doc.items()
    }
    empty = np.zeros(0, dtype=np.int64)
    out = {}
    for group, span in spans.items():
        ids, starts, ends = index.get(span.doc_id, (empty, empty, empty))
        out[group] = ids[(starts <= span.start) & (span.end <= ends)]
    return out
