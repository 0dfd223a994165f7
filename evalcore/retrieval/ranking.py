"""Exact rankings without sorting every chunk (METHODS.md "The words"; METHODS.md "Correct hits").

A query needs two things from each retriever's total order (ties broken by chunk order):
its top hits, and the rank of its first correct chunk. Neither needs a full sort. The top
hits come from a threshold (found on a sample, checked, then refined) and a sort of the
few chunks above it; a rank is one plus the number of chunks that beat a chunk, counted.

Dense scores are screened in float32 and decided in float64 (:mod:`evalcore.retrieval.dense`).

Hybrid (RRF of the dense order and the BM25 order of the chunks sharing a term with the
query) is decided from the two orders' heads and rank counts (:mod:`evalcore.retrieval.hybrid`).

One query's exact dense and BM25 orders are :mod:`evalcore.retrieval.engine.rank_rows`, their fusion
:mod:`evalcore.retrieval.hybrid`; this module screens a block of queries, works on its queries
a group at a time on several threads, and reranks (:func:`rank_block`).
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import TYPE_CHECKING

from evalcore.retrieval.bm25 import BM25
from evalcore.retrieval.dense import max_norm, screen_scores, screening_error
from evalcore.retrieval.engine.rank_rows import BM25Row, DenseRow
from evalcore.retrieval.engine.threads import retrieval_threads
from evalcore.retrieval.hybrid import Hybrid
from evalcore.retrieval.names import retriever_name
from evalcore.retrieval.rerank import RERANK_DEPTH

if TYPE_CHECKING:
    import numpy as np
    from numpy.typing import NDArray

#: the float32 screening scores of one block of queries: 256 queries up to a million chunks
#: (a matrix product of 256 queries runs near the machine's limit; one of 64 at half of it)
BLOCK_BYTES = 2**30
#: the float32 screening scores of one block on a shard (which also holds its BM25 rows)
SHARD_BLOCK_BYTES = 256 * 2**20


def block_queries(n_chunks: int, budget: int = BLOCK_BYTES, cap: int = 256) -> int:
    """Queries per block so that a block's float32 scores fit in ``budget`` bytes."""
    return max(1, min(cap, budget // max(1, 4 * n_chunks)))


@dataclass(frozen=True, slots=True)
class Ranked:
    """One retriever's answer for a block of queries.

    ``first`` is the 1-based rank of the first correct chunk (0: no correct chunk),
    ``answer`` that chunk's id (-1: none); hits are the first ``top`` chunks.
    """

    top_ids: np.ndarray
    top_dist: np.ndarray
    top_score: np.ndarray
    first: np.ndarray
    answer: np.ndarray
    answer_dist: np.ndarray


class _Collect:
    def __init__(self, nb: int, top: int) -> None:
        import numpy as np

        self.ids = np.zeros((nb, top), dtype=np.int64)
        self.dist = np.zeros((nb, top), dtype=np.float64)
        self.score = np.zeros((nb, top), dtype=np.float64)
        self.first = np.zeros(nb, dtype=np.int64)
        self.answer = np.full(nb, -1, dtype=np.int64)
        self.answer_dist = np.full(nb, np.nan)

    def done(self) -> Ranked:
        return Ranked(self.ids, self.dist, self.score, self.first, self.answer, self.answer_dist)


def order_by(values: np.ndarray, descending: bool) -> np.ndarray:
    """Chunk ids sorted by value, ties broken by chunk id (stable sort)."""
    import numpy as np

    key = -values if descending else values
    return np.argsort(key, axis=-1, kind="stable")


def workers() -> int:
    """Threads that work on the queries of a block at once: the cores this process may use
    (``EVALCORE_THREADS`` overrides, see :func:`evalcore.retrieval.engine.threads.retrieval_threads`);
    the row kernels release the GIL."""

    chosen = retrieval_threads()
    if chosen is not None:
        return chosen
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not on Linux
        return max(1, os.cpu_count() or 1)


_POOL: dict[int, ThreadPoolExecutor] = {}


def _pool(n: int) -> ThreadPoolExecutor:
    """One shared pool of ``n`` threads (made on first use, kept for the process)."""
    with _POOL_LOCK:
        pool = _POOL.get(n)
        if pool is None:
            pool = _POOL[n] = ThreadPoolExecutor(n, thread_name_prefix="evalcore-rank")
        return pool


_POOL_LOCK = threading.Lock()
_GROUP = 8  # queries worked on together, stage by stage (their BM25 rows are held at once)


def rank_block(
    qvec: np.ndarray,
    cvec: np.ndarray,
    correct: Sequence[np.ndarray],
    retrievers: Sequence[str],
    top: int,
    *,
    bm25: BM25 | Mapping[str, BM25] | None = None,
    qtexts: Sequence[str] = (),
    rerank: Callable[[int, np.ndarray], Sequence[float]] | None = None,
    cmax: float | None = None,
    clock: dict[str, float] | None = None,
    threads: int | None = None,
    screening: Callable[[np.ndarray, np.ndarray], NDArray[np.float32]] | None = None,
) -> dict[str, Ranked]:
    """Top hits and first correct rank of a block of queries under each retriever.

    ``qvec`` (queries x d) and ``cvec`` (chunks x d) are float32 unit vectors;
    ``correct[i]`` the chunk ids correct for query i (empty: none). ``bm25`` is one index
    (its analyzer's retrievers: ``bm25``, ``hybrid``, ``rerank`` or ``bm25:german``, ...) or
    one per analyzer (``{"": chapter's, "german": ...}``). ``rerank(i, ids)`` scores a
    hybrid head of query i with the cross-encoder (called from this thread, in query order).

    The queries are worked on in groups of 8, stage by stage (dense, then each analyzer's
    BM25, then its fusion), each stage on ``threads`` threads at once (default
    :func:`workers`); ``clock`` is charged each stage's wall time. ``screening`` makes the
    block's float32 scores (:func:`screener`; default :func:`screen_scores`, numpy). Every query's answer is
    computed on its own, so it does not depend on the threads. Memory: one float32 row per
    query of the block, and the float64 BM25 rows of one group.
    """

    import numpy as np

    clock = clock if clock is not None else {}
    tick = time.perf_counter
    n_threads = workers() if threads is None else max(1, threads)

    def charge(stage: str, since: float) -> float:
        now = tick()
        clock[stage] = clock.get(stage, 0.0) + now - since
        return now

    t = tick()
    nb, n = len(qvec), len(cvec)
    q32 = np.asarray(qvec, dtype=np.float32)
    q64 = q32.astype(np.float64)
    cmax = max_norm(cvec) if cmax is None else cmax
    eps = screening_error(q32, cmax)
    cvec = np.asarray(cvec)
    scores32 = (screening or screen_scores)(q32, cvec)  # (nb, n) float32: the block's one large buffer
    top = min(top, n)
    indexes: Mapping[str, BM25] = {} if bm25 is None else {bm25.analyzer.name: bm25} if isinstance(bm25, BM25) else bm25
    out = {name: _Collect(nb, top) for name in retrievers if name == "dense"}
    # per analyzer: (its index, its bm25 / hybrid / rerank names, whether hybrid is needed)
    plans: list[tuple[BM25, str, str, str, bool, bool]] = []
    for analyzer, index in indexes.items():
        nb25, nhy, nrr = (retriever_name(b, analyzer) for b in ("bm25", "hybrid", "rerank"))
        want_rr = nrr in retrievers and rerank is not None
        want_hy = nhy in retrievers or want_rr
        if not (want_hy or nb25 in retrievers):
            continue
        for name in (nb25, nhy, nrr):
            if name in retrievers and (name != nrr or want_rr):
                out[name] = _Collect(nb, top)
        if want_rr and nhy not in out:
            out["\0" + nhy] = _Collect(nb, top)  # a private hybrid the rerank reads
        plans.append((index, nb25, nhy, nrr, want_hy, want_rr))
    rows: list[DenseRow | None] = [None] * nb
    # the hybrid's heads, made first when a hybrid is wanted: the top hits are read off them
    fused_k = max((min(n, max(top, RERANK_DEPTH) if p[5] else top) for p in plans if p[4]), default=0)
    heads_at = Hybrid.head_sizes(n, fused_k) if fused_k else None

    def dense(i: int) -> None:
        row = rows[i] = DenseRow(scores32[i], q64[i], cvec, float(eps[i]))
        if heads_at is not None:
            row.head(*heads_at)
        ci = correct[i]
        if "dense" in out:
            col = out["dense"]
            ids, d = row.top(top)
            col.ids[i], col.dist[i], col.score[i] = ids, d, 1.0 - d
            if len(ci):
                dc = row.dist(ci)
                best = np.lexsort((ci, dc))[0]
                col.answer[i], col.answer_dist[i] = ci[best], dc[best]
                col.first[i] = row.rank(ci[best : best + 1])[0]

    pool = _pool(n_threads) if n_threads > 1 else None

    def each(fn: Callable[[int], object], group: range) -> None:
        if pool is None or len(group) == 1:
            for i in group:
                fn(i)
        else:
            for _ in pool.map(fn, group):  # re-raises the first error
                pass

    t = charge("vector_scan", t)
    for g0 in range(0, nb, _GROUP):
        group = range(g0, min(nb, g0 + _GROUP))
        each(dense, group)
        t = charge("vector_scan", t)
        for index, nb25, nhy, nrr, want_hy, want_rr in plans:
            bms: dict[int, BM25Row] = {}
            heads: dict[int, np.ndarray] = {}

            def lexical(i: int, index: BM25 = index, nb25: str = nb25, bms: dict[int, BM25Row] = bms) -> None:
                row = rows[i]
                assert row is not None
                ci = correct[i]
                bm = bms[i] = BM25Row(index.row(qtexts[i]))
                if heads_at is not None:
                    bm.head(heads_at[1])
                if nb25 in out:
                    col = out[nb25]
                    ids = bm.top(top)
                    col.ids[i], col.dist[i], col.score[i] = ids, row.dist(ids), bm.score(ids)
                    if len(ci):
                        best = np.lexsort((ci, -bm.score(ci)))[0]
                        col.answer[i], col.answer_dist[i] = ci[best], row.dist(ci[best : best + 1])[0]
                        col.first[i] = bm.rank(ci[best : best + 1])[0]

            def fusion(
                i: int,
                nhy: str = nhy,
                want_rr: bool = want_rr,
                bms: dict[int, BM25Row] = bms,
                heads: dict[int, np.ndarray] = heads,
            ) -> None:
                row = rows[i]
                assert row is not None
                ci = correct[i]
                hy = out.get(nhy) or out["\0" + nhy]
                k = min(n, max(top, RERANK_DEPTH) if want_rr else top)
                h = Hybrid(row, bms[i], k)
                head, fused = h.top(k)
                heads[i] = head
                hy.ids[i], hy.dist[i], hy.score[i] = head[:top], row.dist(head[:top]), fused[:top]
                if len(ci):
                    r, c = h.first_rank(ci)
                    hy.first[i], hy.answer[i] = r, c
                    hy.answer_dist[i] = row.dist(np.array([c]))[0]

            each(lexical, group)
            t = charge("bm25", t)
            if not want_hy:
                continue
            each(fusion, group)
            bms.clear()
            t = charge("fusion", t)
            if want_rr:
                assert rerank is not None  # want_rr requires it
                hy = out.get(nhy) or out["\0" + nhy]
                for i in group:
                    row = rows[i]
                    assert row is not None
                    _rerank_one(out[nrr], i, heads[i], hy, row, correct[i], top, rerank)
                t = charge("rerank", t)
        for i in group:
            rows[i] = None
    return {name: out[name].done() for name in retrievers if name in out}


def _rerank_one(
    col: _Collect,
    i: int,
    head: np.ndarray,
    hy: _Collect,
    row: DenseRow,
    correct: np.ndarray,
    top: int,
    rerank: Callable[[int, np.ndarray], Sequence[float]],
) -> None:
    """The hybrid head re-sorted by cross-encoder score (ties: chunk id), then the rest."""
    import numpy as np

    head = head[:RERANK_DEPTH]
    sc = np.asarray(rerank(i, head), dtype=np.float64)
    order = np.lexsort((head, -sc))
    new_head, new_sc = head[order], sc[order]
    take = min(top, len(new_head))
    ids = np.concatenate([new_head[:take], hy.ids[i, take:top]])
    col.ids[i] = ids
    col.dist[i] = row.dist(ids)
    col.score[i] = np.concatenate([new_sc[:take], np.full(top - take, np.nan)])
    if len(correct):
        inside = np.flatnonzero(np.isin(new_head, correct))
        if len(inside):
            col.first[i], col.answer[i] = inside[0] + 1, new_head[inside[0]]
        else:
            col.first[i], col.answer[i] = hy.first[i], hy.answer[i]
        col.answer_dist[i] = row.dist(np.array([col.answer[i]]))[0]
