"""Hits returned by a live retriever (an endpoint or a Python function), resolved to chunks.

A returned hit names its chunk by id, by text, or by document and offsets (any of them); the
chunk set then locates it in the corpus once (:meth:`ChunkSet.seen`). Its score is required:
the refusal gate of a run made elsewhere reads the retriever's own score. A hit the chunk set
cannot take (nothing to identify it, no score, another text under a known id) makes the
whole query fail with the reason; it is never scored as a miss.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from evalcore.external.chunks import ChunkSet


class BadHits(ValueError):
    """A response or a returned list the run cannot read; the query fails with this reason."""


@dataclass(frozen=True, slots=True)
class RawHit:
    """One returned hit as given: any of chunk id, text, document and offsets, and a score."""

    chunk_id: str | None
    text: str | None
    document: str | None
    start: int | None
    end: int | None
    score: float


def finite_number(value: Any, what: str) -> float:
    """A finite float; BadHits naming ``what`` otherwise."""
    if isinstance(value, bool) or value is None:
        raise BadHits(f"{what} must be a number, got {value!r}")
    try:
        out = float(value)
    except (TypeError, ValueError):
        raise BadHits(f"{what} must be a number, got {value!r}") from None
    if not math.isfinite(out):
        raise BadHits(f"{what} must be a finite number, got {value!r}")
    return out


def offset(value: Any, what: str) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise BadHits(f"{what} must be an integer offset >= 0, got {value!r}")
    return value


def text_or_none(value: Any, what: str) -> str | None:
    if value is None:
        return None
    if isinstance(value, (int, float)) and not isinstance(value, bool) and what.endswith("id"):
        return str(value)
    if not isinstance(value, str):
        raise BadHits(f"{what} must be a string, got {value!r}")
    return value


def resolve_hits(chunks: ChunkSet, hits: Sequence[RawHit], where: str) -> list[tuple[int, float]]:
    """``[(chunk id in the set, score), ...]`` in the order given; BadHits naming the hit."""
    out = []
    ranked: dict[int, int] = {}  # chunk id in the set -> the hit that ranked it
    for i, hit in enumerate(hits, start=1):
        if hit.chunk_id is not None and any(ch.isspace() for ch in hit.chunk_id):
            raise BadHits(f"hit {i}: chunk id {hit.chunk_id!r} contains whitespace")
        if (hit.start is None) != (hit.end is None) or (
            hit.start is not None and hit.end is not None and hit.start >= hit.end
        ):
            raise BadHits(f"hit {i}: offsets must be both given with start < end, got {hit.start!r}, {hit.end!r}")
        try:
            chunk = chunks.seen(hit.chunk_id, hit.document, hit.text, hit.start, hit.end, f"{where}, hit {i}")
        except ValueError as exc:
            raise BadHits(f"hit {i}: {exc}") from None
        if chunk.chunk_id in ranked:
            raise BadHits(f"hit {i}: the same chunk as hit {ranked[chunk.chunk_id]}; a chunk is ranked once per query")
        ranked[chunk.chunk_id] = i
        out.append((chunk.chunk_id, hit.score))
    return out
