"""A stored configuration made ready to rank new queries as its run did: the built-in pipeline
(the run's model, chunks, BM25 index and cross-encoder) or the run's live search endpoint."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from evalcore import testhooks
from evalcore.embedding.embedder import load_embedder, text_hash
from evalcore.embedding.vector_cache import embed_with_cache
from evalcore.errors import ConfigError, ModelError
from evalcore.external.endpoint import from_spec, parse_header
from evalcore.external.endpoint_calls import Counters, answers
from evalcore.external.record import Failure
from evalcore.measures.threshold import DEFAULT_TOP
from evalcore.read.index import chunk_ids_by_external_id, chunk_texts
from evalcore.retrieval.bm25 import BM25
from evalcore.retrieval.dense import max_norm
from evalcore.retrieval.ranking import block_queries, rank_block
from evalcore.retrieval.rerank import Reranker as _Reranker
from evalcore.traffic.target import Target, refuse

if TYPE_CHECKING:
    import numpy as np

    #: ids, distances, scores (texts x top), gate values, {text index: why the endpoint failed}
    Scores = tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, dict[int, str]]

    from evalcore.embedding.embedder import Embedder
    from evalcore.retrieval.rerank import Reranker
    from evalcore.store import Store


@dataclass
class Replayer:
    """A built-in configuration made ready to rank new queries exactly as its run did."""

    target: Target
    embedder: Embedder
    store: Store
    chunk_texts: list[str]
    cvec: np.ndarray
    bm25: BM25 | None
    reranker: Reranker | None
    cmax: float
    clock: dict[str, float] = field(default_factory=lambda: {"query_embedding": 0.0, "retrieval": 0.0})
    embedded: int = 0

    def score(self, texts: Sequence[str]) -> Scores:
        """Top hits of each text: (ids, distances, scores) of shape (texts, top), the gate
        value of each (smallest distance among its top 4), and no failures."""
        import numpy as np

        t0 = time.perf_counter()
        qvec, stats = embed_with_cache(self.embedder, texts, self.store)
        self.embedded += stats.new
        t1 = time.perf_counter()
        self.clock["query_embedding"] += t1 - t0
        retriever = self.target.configuration.retriever
        empty = np.zeros(0, dtype=np.int64)
        block = block_queries(len(self.cvec))
        parts: list[Any] = []
        for b0 in range(0, len(texts), block):
            b1 = min(len(texts), b0 + block)
            scorer = None
            if self.reranker is not None:
                scorer = _scorer(self.reranker, self.chunk_texts, texts, b0)

            ranked = rank_block(
                qvec[b0:b1],
                self.cvec,
                [empty] * (b1 - b0),
                [retriever],
                self.target.top_n,
                bm25=self.bm25,
                qtexts=list(texts[b0:b1]),
                rerank=scorer,
                cmax=self.cmax,
            )[retriever]
            parts.append(ranked)
        self.clock["retrieval"] += time.perf_counter() - t1
        ids = np.concatenate([p.top_ids for p in parts])
        dist = np.concatenate([p.top_dist for p in parts])
        score = np.concatenate([p.top_score for p in parts])
        head = dist[:, :DEFAULT_TOP]
        gate = head.min(axis=1) if head.shape[1] else np.full(len(texts), np.nan)
        return ids, dist, score, gate, {}


@dataclass
class EndpointReplayer:
    """A live search endpoint's configuration: each query is sent as the run sent its own
    (the same request template, so the same cache key for the same text) through the response
    cache; hits are mapped to the run's chunks by the service's chunk id (-1 for a chunk the
    run never saw). The gate reads the service's score in its direction."""

    target: Target
    endpoint: Any
    store: Store
    ids: dict[str, int]
    higher_is_closer: bool
    clock: dict[str, float] = field(default_factory=lambda: {"query_embedding": 0.0, "retrieval": 0.0})
    embedded: int = 0
    sent: int = 0

    def score(self, texts: Sequence[str]) -> Scores:
        import numpy as np

        t0 = time.perf_counter()
        queries = [(f"traffic-{text_hash(t)[:16]}", t) for t in texts]
        where = {qid: i for i, (qid, _) in enumerate(queries)}
        top = int(self.endpoint.k)
        ids = np.full((len(texts), top), -1, dtype=np.int64)
        score = np.full((len(texts), top), np.nan)
        failures: dict[int, str] = {}
        counters = Counters()
        for qid, outcome in answers(self.endpoint, self.store, queries, counters):
            i = where[qid]
            if isinstance(outcome, Failure):
                failures[i] = outcome.reason
                continue
            for rank, hit in enumerate(outcome[:top]):
                ids[i, rank] = self.ids.get(hit.chunk_id or "", -1)
                score[i, rank] = hit.score
        self.sent += counters.requests
        head = score[:, :DEFAULT_TOP]
        with np.errstate(all="ignore"):
            empty = np.isnan(head).all(axis=1)
            filled = np.where(np.isnan(head), -np.inf if self.higher_is_closer else np.inf, head)
            gate = filled.max(axis=1) if self.higher_is_closer else filled.min(axis=1)
        gate[empty] = np.nan
        self.clock["retrieval"] += time.perf_counter() - t0
        return ids, np.full(score.shape, np.nan), score, gate, failures


def endpoint_replayer(store: Store, target: Target, headers: Sequence[str] = ()) -> EndpointReplayer:
    """The endpoint of ``target`` as the run described it, with ``headers`` ("Name: value") for
    the header names the run used (their values are never stored)."""

    detail = target.info.details()
    endpoint = from_spec({k: v for k, v in detail.items() if k != "refresh"})
    given = [parse_header(h) for h in headers]
    missing = [n for n in detail.get("header_names", []) if n.lower() not in {g.lower() for g, _ in given}]
    if missing:
        raise ConfigError(
            f"run {target.run_id} sent the header(s) {', '.join(missing)} to its endpoint; give their values "
            "with --header 'Name: value' (header values are never stored)"
        )
    endpoint = replace(endpoint, headers=tuple(given))
    endpoint.check()
    ids = chunk_ids_by_external_id(store, target.run_id, target.configuration.strategy)
    return EndpointReplayer(target, endpoint, store, ids, target.info.axis.higher_is_closer)


def _scorer(
    reranker: Reranker, chunk_texts: list[str], texts: Sequence[str], b0: int
) -> Callable[[int, np.ndarray], list[float]]:
    """The cross-encoder scores of query ``b0 + i``'s hybrid head (what the run's rerank asks)."""

    def score(i: int, ids: np.ndarray) -> list[float]:
        return reranker.score(texts[b0 + i], [chunk_texts[j] for j in ids])

    return score


def replayer(
    store: Store, target: Target, embedder: Embedder | None = None, reranker_path: str | None = None
) -> Replayer:
    """Load what replaying ``target`` needs: the run's model, the configuration's chunks and
    their vectors (from the vector cache; embedded anew only if missing), its BM25 index and
    cross-encoder when its retriever uses them."""
    refuse(target)
    model = target.info.model
    embedder = embedder or testhooks.embedder() or load_embedder()
    if model and embedder.name not in {model.strip(), *(m.strip() for m in model.split(","))}:
        raise ModelError(
            f"run {target.run_id} configuration {target.configuration.label} was embedded with {model}, "
            f"not {embedder.name}: vectors of two models are never compared (give --model PATH to that model)"
        )
    chunks = chunk_texts(store, target.run_id, target.configuration.strategy)
    if chunks.empty or list(chunks["chunk_id"]) != list(range(len(chunks))):
        raise ConfigError(
            f"run {target.run_id} strategy {target.configuration.strategy}: no complete chunk list stored"
        )
    texts = [str(t) for t in chunks["text"]]
    cvec, _ = embed_with_cache(embedder, texts, store)
    retriever = target.configuration.retriever
    bm25 = BM25.build(texts) if retriever in ("bm25", "hybrid", "rerank") else None
    reranker = None
    if retriever == "rerank":
        path = reranker_path or _rerank_path(store, target.run_id)
        if not path:
            raise ConfigError(f"run {target.run_id}: its cross-encoder is not known; give --reranker PATH")
        reranker = _Reranker.load(path)
    return Replayer(target, embedder, store, texts, cvec, bm25, reranker, max_norm(cvec))


def _rerank_path(store: Store, run_id: str) -> str | None:
    note = str(store.run(run_id).rerank_note or "")
    prefix = "rerank: cross-encoder "
    if note.startswith(prefix):
        return note[len(prefix) :].rsplit(", hybrid top", 1)[0]
    return None
