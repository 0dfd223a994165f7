"""A configuration's hits for a query typed on the Triage screen: the query ranked by the run's
own retriever, exactly as the run ranked its questions (the replayer that ``traffic import``
scores a log with, :mod:`evalcore.traffic.replayers`)."""

from __future__ import annotations

import threading
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from evalcore.read.traffic.hits import ChunkHit, chunk_hits
from evalcore.traffic.replayers import replayer
from evalcore.traffic.target import resolve_target

if TYPE_CHECKING:
    from evalcore.embedding.embedder import Embedder
    from evalcore.store import Store
    from evalcore.traffic.replayers import Replayer

_READY: dict[tuple[str, str, str], Any] = {}  # (store, run, configuration) -> its replayer
_READY_LOCK = threading.Lock()
_READY_MAX = 4


def _replayer(store: Store, run_id: str, configuration: str, embedder: Embedder | None) -> Replayer:
    """The configuration made ready to rank new queries (evalcore.traffic.replayers: the code
    traffic import replays with), kept for the next query: a complete run never changes. Its
    query vectors are computed, never written to the store's cache (a read writes nothing)."""
    key = (str(store.path.resolve()), run_id, configuration)
    with _READY_LOCK:
        ready = _READY.get(key)
        if ready is None or (embedder is not None and ready.embedder is not embedder):
            target = resolve_target(store, f"{run_id}:{configuration}")
            ready = replace(replayer(store, target, embedder), store=None)  # type: ignore[arg-type]
            while len(_READY) >= _READY_MAX:
                _READY.pop(next(iter(_READY)))
            _READY[key] = ready
    return ready


def config_hits(
    store: Store, run_id: str, configuration: str, query: str, k: int = 5, embedder: Embedder | None = None
) -> list[ChunkHit]:
    """The top ``k`` chunks of ``query`` under the run's configuration ``STRATEGY/RETRIEVER``
    (dense, bm25, hybrid, rerank, any analyzer), ranked exactly as the run ranked its own
    questions: the same hits as the run stored for a question of the same text. ``score``: the
    retriever's score (cosine similarity for dense). ConfigError for an imported configuration."""
    ready = _replayer(store, run_id, configuration, embedder)
    ids, _, scores, _, _ = ready.score([query])
    chosen = [int(i) for i in ids[0][:k] if int(i) >= 0]
    if not chosen:
        return []
    strategy = configuration.split("/", 1)[0]
    return chunk_hits(
        store, run_id, strategy, chosen, [float(scores[0][rank - 1]) for rank in range(1, len(chosen) + 1)]
    )
