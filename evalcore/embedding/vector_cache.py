"""Vectors through the store's cache, keyed by (model, text hash): each distinct text is
embedded once, and a cached vector of another size than the model's is refused.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable, Sequence
from contextlib import closing
from dataclasses import dataclass
from typing import TYPE_CHECKING

from evalcore.embedding.embedder import text_hash
from evalcore.errors import ModelError

if TYPE_CHECKING:
    import numpy as np

    from evalcore.embedding.embedder import Embedder
    from evalcore.store import Store


@dataclass(frozen=True, slots=True)
class EmbedStats:
    new: int
    cached: int
    seconds: float


def embed_with_cache(
    embedder: Embedder,
    texts: Sequence[str],
    store: Store | None,
    on_progress: Callable[[int], None] | None = None,
    batch: int = 512,
) -> tuple[np.ndarray, EmbedStats]:
    """Vectors for ``texts``, reusing the store's cache keyed by (model, text hash).

    Distinct texts are embedded once. A cached vector of another size than the model's
    is a hard error: vectors of two models are never compared.
    """

    import numpy as np

    hashes = [text_hash(t) for t in texts]
    unique: dict[str, str] = {}
    for h, t in zip(hashes, texts, strict=True):
        unique.setdefault(h, t)
    slot = {h: i for i, h in enumerate(unique)}
    vectors = np.zeros((len(unique), embedder.dim), dtype=np.float32)  # one copy, filled in place
    have = np.zeros(len(unique), dtype=bool)
    cached = store.cached_vectors(embedder.name, list(unique)) if store is not None else {}
    for h, (dim, vec) in cached.items():
        if dim != embedder.dim or len(vec) != embedder.dim:
            raise ModelError(
                f"cached vector for model {embedder.name} has size {len(vec)}, the model makes "
                f"{embedder.dim}: the cache holds vectors of another model; refusing to compare them"
            )
        vectors[slot[h]] = vec
        have[slot[h]] = True
    del cached
    # longest first, so each batch pads to similar lengths (and a too-long text fails early)
    missing = sorted((h for h in unique if not have[slot[h]]), key=lambda h: -len(unique[h]))
    uses = Counter(hashes)  # progress counts texts, duplicates included
    if on_progress is not None and len(unique) > len(missing):
        on_progress(sum(n for h, n in uses.items() if have[slot[h]]))
    t0 = time.perf_counter()
    rows = np.fromiter((slot[h] for h in missing), dtype=np.int64, count=len(missing))
    weight = np.fromiter((uses[h] for h in missing), dtype=np.int64, count=len(missing))
    parts = ((i, missing[i : i + batch]) for i in range(0, len(missing), batch))  # without one pass:
    calls = ((np.arange(i, i + len(p)), embedder.encode([unique[h] for h in p])) for i, p in parts)
    streamed = getattr(embedder, "embedded", None)  # one pass: batched by tokens, tokenised ahead
    with closing(streamed([unique[h] for h in missing]) if streamed and missing else calls) as done:
        for where, vecs in done:
            vectors[rows[where]] = vecs
            if on_progress is not None:
                on_progress(int(weight[where].sum()))
    seconds = time.perf_counter() - t0
    if missing and store is not None:
        store.cache_vectors(embedder.name, embedder.dim, {h: vectors[slot[h]] for h in missing})
    out = vectors[[slot[h] for h in hashes]] if hashes else np.zeros((0, embedder.dim), np.float32)
    return out, EmbedStats(new=len(missing), cached=len(unique) - len(missing), seconds=seconds)
