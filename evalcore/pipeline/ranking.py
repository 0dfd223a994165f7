"""Exact rankings without sorting every chunk (SPEC sections 4 and 5).

A query needs two things from each retriever's total order (ties broken by chunk order):
its top hits, and the rank of its first correct chunk. Neither needs a full sort. The top
hits come from a threshold (found on a sample, checked, then refined) and a sort of the
few chunks above it; a rank is one plus the number of chunks that beat a chunk, counted.

Dense scores are screened in float32 (one matrix product per block of queries, the only
large buffer) and decided in float64: a float32 dot product of ``d`` terms is within
``eps = (d + 4) * 2**-24 * |q| * max|c|`` of the exact one, so a chunk whose float32
similarity is more than ``eps`` away from another's is on the same side exactly, and only
chunks within that band are recomputed. The float64 similarity of a pair is always
computed the same way (:func:`exact_similarities`: the float64 products summed by
numpy's pairwise sum), so a pair gets the same bits whichever block or batch asks for it,
and equal vectors tie exactly (then chunk order decides). Distances are ``1 - sim`` in
float64 and orders compare those distances, as the full sort did.

Hybrid (RRF of the dense order and the BM25 order of the chunks sharing a term with the
query) is decided from the two orders' heads, never from a full sort: the dense head is
the float32 row's top (about 1,000 chunks, sorted; it bounds the rank of any chunk and
counts it exactly where the chunk's band lies inside), the BM25 head the exactly ordered
top of the matched scores. A chunk outside both top-``D`` lists fuses to at most
``2 / (61 + D)``, which for ``D = 2K + 60`` is below the K-th best fused score, so the top
K lie among the candidates of depth D; the first correct chunk (fused score ``f*``) is
beaten only by chunks of dense or BM25 rank at most ``R``, the largest rank with
``2 / (60 + R) >= f*``, so those are counted among the candidates of depth R. A
candidate's ranks start as bounds and are made exact only where they do not decide; a
rank deep in a row is counted from the row's levels (see :mod:`evalcore.pipeline.rank_rows`),
every undecided candidate of a query in one batch.

One query's exact dense and BM25 orders are :mod:`evalcore.pipeline.rank_rows`; this module
fuses and reranks them and ranks a block of queries (:func:`rank_block`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from evalcore.pipeline.rank_rows import BM25Row, DenseRow
from evalcore.pipeline.retrieval import BM25, RERANK_DEPTH, RRF_K, retriever_name

if TYPE_CHECKING:
    import numpy as np
    from numpy.typing import NDArray

BLOCK_BYTES = 256 * 2**20  # the float32 screening scores of one block of queries


def block_queries(n_chunks: int, budget: int = BLOCK_BYTES, cap: int = 256) -> int:
    """Queries per block so that a block's float32 scores fit in ``budget`` bytes."""
    return max(1, min(cap, budget // max(1, 4 * n_chunks)))


def _positions(order: np.ndarray, ids: np.ndarray) -> np.ndarray:
    """1-based position of each of ``ids`` in ``order`` (0 where absent)."""
    import numpy as np

    if not len(order):
        return np.zeros(len(ids), dtype=np.int64)
    by_id = np.argsort(order)
    pos = np.minimum(np.searchsorted(order[by_id], ids), len(order) - 1)
    found = order[by_id][pos] == ids
    return np.where(found, by_id[pos] + 1, 0).astype(np.int64)


def _rrf(rank: np.ndarray | int, k: int = RRF_K) -> NDArray[np.float64]:
    """1 / (k + rank) in float64, as ``retrieval.rrf_scores`` computes it."""
    import numpy as np

    return 1.0 / (k + np.asarray(rank, dtype=np.float64))


class _Hybrid:
    """RRF of a dense and a BM25 order for one query, decided from the two orders' heads.

    Candidates are every chunk that may rank within a depth in either order (the dense
    head's float32 bounds, the BM25 head's exact ranks); each carries bounds on its two
    ranks, made exact (:meth:`_resolve`) only where they do not decide."""

    def __init__(self, dense: DenseRow, bm: BM25Row, k_top: int) -> None:
        n = dense.n
        self.dense, self.bm = dense, bm
        self.depth = min(n, 2 * k_top + RRF_K)
        # heads deeper than the candidates' depth keep most rank bounds tight
        deep = min(n, max(8 * self.depth, 1024))
        dense.head(self.depth, deep)
        bm.head(deep)
        self._take(self._candidates(self.depth))

    def _candidates(self, depth: int) -> NDArray[np.int64]:
        """Every chunk whose dense or BM25 rank may be <= ``depth`` (a superset), by id."""
        import numpy as np

        h = self.dense.head(depth)
        lo, _ = self.dense.head_bounds(h.ids)
        out: NDArray[np.int64] = np.union1d(h.ids[lo <= depth], self.bm.head(depth)[:depth])
        return out

    def _take(self, cand: NDArray[np.int64]) -> None:
        self.cand = cand
        self.matched = self.bm.matched(cand)
        self.rd_lo, self.rd_hi = self.dense.head_bounds(cand)
        self.rb_lo, self.rb_hi = self.bm.rank_bounds(cand)

    def _fused(self, rd: np.ndarray, rb: np.ndarray, matched: np.ndarray) -> NDArray[np.float64]:
        import numpy as np

        return _rrf(rd) + np.where(matched, _rrf(np.maximum(rb, 1)), 0.0)

    def _bounds(self) -> tuple[np.ndarray, np.ndarray]:
        hi = self._fused(self.rd_lo, self.rb_lo, self.matched)
        lo = self._fused(self.rd_hi, self.rb_hi, self.matched)
        return lo, hi

    def _tighten(self) -> None:
        """Intersect every candidate's rank bounds with the (deepened) heads' bounds."""
        import numpy as np

        lo, hi = self.dense.head_bounds(self.cand)
        self.rd_lo, self.rd_hi = np.maximum(self.rd_lo, lo), np.minimum(self.rd_hi, hi)
        lo, hi = self.bm.rank_bounds(self.cand)
        self.rb_lo, self.rb_hi = np.maximum(self.rb_lo, lo), np.minimum(self.rb_hi, hi)

    def _resolve(self, which: np.ndarray) -> None:
        """Make the ranks of candidates ``which`` (indices into cand) exact (from the heads,
        else from the rows' levels, see :mod:`evalcore.pipeline.rank_rows`)."""

        dense, bm = self.dense, self.bm
        d_open = which[self.rd_lo[which] != self.rd_hi[which]]
        b_open = which[self.matched[which] & (self.rb_lo[which] != self.rb_hi[which])]
        if len(d_open):
            r = dense.rank(self.cand[d_open])
            self.rd_lo[d_open] = r
            self.rd_hi[d_open] = r
        if len(b_open):
            r = bm.rank(self.cand[b_open])
            self.rb_lo[b_open] = r
            self.rb_hi[b_open] = r

    def top(self, k: int) -> tuple[np.ndarray, np.ndarray]:
        """The first ``k`` chunks of the fused order (ids, fused scores).

        The top ``k`` lie among the candidates of depth ``2k + 60``: a chunk below that
        depth in both orders fuses to at most ``2 / (61 + depth)``, less than the dense
        top ``k`` chunks' ``1 / (60 + k)`` each."""
        import numpy as np

        k = min(k, len(self.cand))
        while True:
            lo, hi = self._bounds()
            kth = np.partition(lo, len(lo) - k)[len(lo) - k]
            live = np.flatnonzero(hi >= kth)
            open_ = live[lo[live] != hi[live]]
            if not len(open_):
                break
            # every undecided live candidate at once: one batch of counts per order
            self._resolve(open_)
        fused = lo[live]
        order = np.lexsort((self.cand[live], -fused))[:k]
        return self.cand[live][order], fused[order]

    def fused_exact(self, ids: np.ndarray) -> np.ndarray:
        """Exact fused score of arbitrary chunks (exact dense and BM25 ranks)."""
        import numpy as np

        ids = np.asarray(ids, dtype=np.int64)
        rd = self.dense.rank(ids)
        m = self.bm.matched(ids)
        rb = np.where(m, self.bm.rank(ids), 1)
        return self._fused(rd, rb, m)

    def first_rank(self, correct: np.ndarray) -> tuple[int, int]:
        """(1-based rank, chunk id) of the best-placed correct chunk (after :meth:`top`).

        A chunk beating fused score ``f*`` has a dense or BM25 rank of at most ``R``, the
        largest rank with ``2 / (60 + R) >= f*`` (below ``R`` in both orders it fuses to
        less), so it is a candidate of depth ``R``: the chunks beating the best correct
        one are counted among those, from their rank bounds, exact only where undecided."""
        import numpy as np

        f = self.fused_exact(correct)
        best = np.lexsort((correct, -f))[0]
        c_star, f_star = int(correct[best]), float(f[best])
        n = self.dense.n
        r = max(0, min(n, int(2.0 / f_star) - RRF_K))
        while r + 1 <= n and 2 * _rrf(r + 1) >= f_star:
            r += 1
        while r >= 1 and not 2 * _rrf(r) >= f_star:
            r -= 1
        if r > self.depth:  # deeper than the top's candidates: a wider set
            self._take(self._candidates(r))
            self.depth = r
        others = self.cand != c_star
        while True:
            lo, hi = self._bounds()
            beats_lo = others & ((lo > f_star) | ((lo == f_star) & (self.cand < c_star)))
            beats_hi = others & ((hi > f_star) | ((hi == f_star) & (self.cand < c_star)))
            open_ = np.flatnonzero(beats_lo != beats_hi)
            if not len(open_):
                return int(np.count_nonzero(beats_lo)) + 1, c_star
            self._resolve(open_)


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


def screening_error(q: np.ndarray, max_norm: float) -> NDArray[np.float64]:
    """Bound on |float32 dot - exact dot| for each query row (see the module docstring)."""
    import numpy as np

    dim: int = q.shape[1]
    norms: NDArray[np.float64] = np.sqrt(np.einsum("ij,ij->i", q.astype(np.float64), q.astype(np.float64)))
    return 1.01 * (dim + 4) * 2.0**-24 * norms * max_norm + 1e-15


def max_norm(vectors: np.ndarray, block: int = 65536) -> float:
    """Largest L2 norm of the rows of ``vectors`` (read in blocks, no full copy)."""
    import numpy as np

    best = 0.0
    for i in range(0, len(vectors), block):
        part = np.asarray(vectors[i : i + block], dtype=np.float32)
        best = max(best, float(np.einsum("ij,ij->i", part, part, dtype=np.float64).max(initial=0.0)))
    return float(np.sqrt(best))


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
) -> dict[str, Ranked]:
    """Top hits and first correct rank of a block of queries under each retriever.

    ``qvec`` (queries x d) and ``cvec`` (chunks x d) are float32 unit vectors;
    ``correct[i]`` the chunk ids correct for query i (empty: none). ``bm25`` is one index
    (its analyzer's retrievers: ``bm25``, ``hybrid``, ``rerank`` or ``bm25:german``, ...) or
    one per analyzer (``{"": chapter's, "german": ...}``). ``rerank(i, ids)`` scores a
    hybrid head of query i with the cross-encoder. Memory: one float32 row per query of the
    block, and one float64 BM25 row at a time.
    """
    import time

    import numpy as np

    clock = clock if clock is not None else {}
    tick = time.perf_counter

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
    scores32 = q32 @ np.asarray(cvec).T  # (nb, n) float32: the block's one large buffer
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
    t = charge("vector_scan", t)
    for i in range(nb):
        row = DenseRow(scores32[i], q64[i], cvec, float(eps[i]))
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
        t = charge("vector_scan", t)
        for index, nb25, nhy, nrr, want_hy, want_rr in plans:
            bm = BM25Row(index.row(qtexts[i]))
            if nb25 in out:
                col = out[nb25]
                ids = bm.top(top)
                col.ids[i], col.dist[i], col.score[i] = ids, row.dist(ids), bm.score(ids)
                if len(ci):
                    best = np.lexsort((ci, -bm.score(ci)))[0]
                    col.answer[i], col.answer_dist[i] = ci[best], row.dist(ci[best : best + 1])[0]
                    col.first[i] = bm.rank(ci[best : best + 1])[0]
            t = charge("bm25", t)
            if not want_hy:
                continue
            hy = out.get(nhy) or out["\0" + nhy]
            k = min(n, max(top, RERANK_DEPTH) if want_rr else top)
            h = _Hybrid(row, bm, k)
            head, fused = h.top(k)
            hy.ids[i], hy.dist[i], hy.score[i] = head[:top], row.dist(head[:top]), fused[:top]
            if len(ci):
                r, c = h.first_rank(ci)
                hy.first[i], hy.answer[i] = r, c
                hy.answer_dist[i] = row.dist(np.array([c]))[0]
            t = charge("fusion", t)
            if want_rr:
                assert rerank is not None  # want_rr requires it
                _rerank_one(out[nrr], i, head, hy, row, ci, top, rerank)
                t = charge("rerank", t)
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
