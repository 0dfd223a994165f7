"""RRF of one query's dense and BM25 orders, decided from the two orders' heads and rank counts
(METHODS.md "The words" and "Correct hits"), never from a full sort: the dense head is the
float32 row's top (about 1,000 chunks, sorted; it bounds the rank of any chunk and counts it exactly where the chunk's
band lies inside), the BM25 head the exactly ordered top of the matched scores. A chunk outside
both top-``D`` lists fuses to at most ``2 / (61 + D)``, which for ``D = 2K + 60`` is below the
K-th best fused score, so the top K lie among the candidates of depth D; the first correct
chunk (fused score ``f*``) is beaten only by chunks of dense or BM25 rank at most ``R``, the
largest rank with ``2 / (60 + R) >= f*``, so those are counted among the candidates of depth
R. A candidate's ranks start as bounds from the heads, are narrowed by counting over the row
where they do not decide, and are made exact only where they still do not (see
:mod:`evalcore.retrieval.engine.rank_rows`), every undecided candidate of a query in one batch.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from evalcore.retrieval.engine.rank_rows import BM25Row, DenseRow

if TYPE_CHECKING:
    import numpy as np
    from numpy.typing import NDArray

RRF_K = 60


def _rrf(rank: np.ndarray | int, k: int = RRF_K) -> NDArray[np.float64]:
    """1 / (k + rank) in float64, as :func:`rrf_scores` computes it."""
    import numpy as np

    return 1.0 / (k + np.asarray(rank, dtype=np.float64))


class Hybrid:
    """RRF of a dense and a BM25 order for one query, decided from the two orders' heads.

    Candidates are every chunk that may rank within a depth in either order (the dense
    head's float32 bounds, the BM25 head's exact ranks); each carries bounds on its two
    ranks, made exact (:meth:`_resolve`) only where they do not decide."""

    def __init__(self, dense: DenseRow, bm: BM25Row, k_top: int) -> None:
        self.dense, self.bm = dense, bm
        self.depth, deep = self.head_sizes(dense.n, k_top)
        dense.head(self.depth, deep)
        bm.head(deep)
        self._take(self._candidates(self.depth))

    @staticmethod
    def head_sizes(n: int, k_top: int) -> tuple[int, int]:
        """(candidates' depth ``2K + 60``, the heads' size): heads deeper than the candidates'
        depth keep most rank bounds tight."""
        depth = min(n, 2 * k_top + RRF_K)
        return depth, min(n, max(8 * depth, 1024))

    def _candidates(self, depth: int) -> NDArray[np.int64]:
        """Every chunk whose dense or BM25 rank may be <= ``depth`` (a superset), by id."""
        import numpy as np

        h = self.dense.head(depth)
        lo, _ = self.dense.head_bounds(h.ids)
        out: NDArray[np.int64] = np.union1d(h.ids[lo <= depth], self.bm.head(depth)[:depth])
        return out

    def _take(self, cand: NDArray[np.int64]) -> None:
        import numpy as np

        self.cand = cand
        self.matched = self.bm.matched(cand)
        self.rd_lo, self.rd_hi = self.dense.head_bounds(cand)
        self.rb_lo, self.rb_hi = self.bm.rank_bounds(cand)
        self.coarse = np.ones(len(cand), dtype=bool)  # bounds not yet narrowed by a counting pass

    def _fused(self, rd: np.ndarray, rb: np.ndarray, matched: np.ndarray) -> NDArray[np.float64]:
        import numpy as np

        return _rrf(rd) + np.where(matched, _rrf(np.maximum(rb, 1)), 0.0)

    def _bounds(self) -> tuple[np.ndarray, np.ndarray]:
        hi = self._fused(self.rd_lo, self.rb_lo, self.matched)
        lo = self._fused(self.rd_hi, self.rb_hi, self.matched)
        return lo, hi

    def _narrow(self, which: np.ndarray) -> None:
        """Narrow the rank bounds of candidates ``which`` (indices into cand) by one counting
        pass over each row (no float64 similarity beyond the candidates' own)."""
        import numpy as np

        self.coarse[which] = False
        d_open = which[self.rd_lo[which] != self.rd_hi[which]]
        b_open = which[self.matched[which] & (self.rb_lo[which] != self.rb_hi[which])]
        if len(d_open):
            lo, hi = self.dense.narrow_bounds(self.cand[d_open])
            self.rd_lo[d_open] = np.maximum(self.rd_lo[d_open], lo)
            self.rd_hi[d_open] = np.minimum(self.rd_hi[d_open], hi)
        if len(b_open):
            lo, hi = self.bm.narrow_bounds(self.cand[b_open])
            self.rb_lo[b_open] = np.maximum(self.rb_lo[b_open], lo)
            self.rb_hi[b_open] = np.minimum(self.rb_hi[b_open], hi)

    def _resolve(self, which: np.ndarray) -> None:
        """Make the ranks of candidates ``which`` (indices into cand) exact (from the heads,
        else from a counting pass over the row, see :mod:`evalcore.retrieval.engine.rank_rows`)."""

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
            coarse = open_[self.coarse[open_]]
            if len(coarse):  # counted bounds first: they drop most candidates that cannot place
                self._narrow(coarse)
                continue
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
        rb = np.ones(len(ids), dtype=np.int64)  # an unmatched chunk's BM25 rank is not used
        if m.any():
            rb[m] = self.bm.rank(ids[m])
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
            coarse = open_[self.coarse[open_]]
            if len(coarse) > 2:  # many undecided: counted bounds decide most of them
                self._narrow(coarse)
                continue
            self._resolve(open_)


def rrf_scores(
    rankings: Sequence[np.ndarray], k: int = RRF_K, ranked: Sequence[np.ndarray | None] | None = None
) -> np.ndarray:
    """Reciprocal rank fusion: score(c) = sum over rankings of 1 / (k + rank(c)), rank from 1.

    Each ranking is a total order (array of chunk ids, best first); shape (queries, chunks)
    in and out. Scores are never mixed, only ranks. ``ranked[i]`` (a boolean array of the
    same shape, in chunk-id space) says which chunks ranking i really ranks: a chunk it
    does not rank adds nothing from that list. BM25 ranks only the chunks that share a
    term with the query; its order among the rest is a tie broken by corpus position and
    would otherwise leak corpus order into the fused score.
    """
    import numpy as np

    out: NDArray[np.float64] = np.zeros(rankings[0].shape, dtype=np.float64)
    rank_values = 1.0 / (k + np.arange(1, rankings[0].shape[-1] + 1, dtype=np.float64))
    rows = np.arange(out.shape[0])[:, None]
    for i, order in enumerate(rankings):
        contrib = np.empty_like(out)
        contrib[rows, order] = rank_values[None, :]
        mask = None if ranked is None else ranked[i]
        out += contrib if mask is None else np.where(mask, contrib, 0.0)
    return out
