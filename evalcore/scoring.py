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
