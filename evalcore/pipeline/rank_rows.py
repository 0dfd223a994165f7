"""One query's exact order for one retriever, without sorting every chunk (SPEC sections 4
and 5): :class:`DenseRow` from its float32 screening row (decided in float64 within the
screening band, see :mod:`evalcore.pipeline.ranking`), :class:`BM25Row` from its scores.

Each row keeps a head (its top, sorted: exact ranks and bounds near the top with a search)
and, once several ranks deep in the row are asked at once, its levels: the values cut into
up to 2**20 levels by a monotone map, counted with one bincount. A value in a level above
a threshold's level is above the threshold, so the chunks beating a chunk are the levels
above its band's top level plus those of its band's levels that beat it in float64 (found
for every asked chunk in one lookup pass): the same count as a pass over the row."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import numpy as np
    from numpy.typing import NDArray

_DELTA = 1e-12  # separates two float64 similarities enough that 1 - s orders them strictly
_SAMPLE = 8192  # sample size used to guess a top-n threshold on long rows
_BATCH = 2  # from this many ranks asked at once outside a head, count them by levels
_ROWS = 8192  # chunk vectors copied to float64 at once by exact_similarities
_PAIRS = 1 << 21  # (asked chunk, level member) pairs compared at once: bounds the temporaries


def exact_similarities(q64: np.ndarray, vectors: np.ndarray, ids: np.ndarray) -> NDArray[np.float64]:
    """float64 dot products of ``q64`` with ``vectors[ids]``, the same bits for a pair
    whatever else is asked with it (products are exact; numpy's pairwise sum along a
    contiguous row does not depend on the row's neighbours or alignment)."""
    import numpy as np

    if np.ndim(ids) == 1 and len(ids) > _ROWS:  # a slice at a time: float64 copies stay small
        return np.concatenate([exact_similarities(q64, vectors, ids[a : a + _ROWS]) for a in range(0, len(ids), _ROWS)])
    rows = np.asarray(vectors[ids], dtype=np.float64)
    if rows.ndim == 1:
        rows = rows.reshape(1, -1)
    sims: NDArray[np.float64] = np.multiply(rows, q64, out=rows).sum(axis=1)
    return sims


def _threshold_candidates(values: np.ndarray, n: int, margin: float) -> NDArray[np.intp]:
    """Indices of every element >= (the n-th largest value) - margin; a superset of the
    top n, found without sorting ``values`` (a sampled guess, checked, else a partition)."""
    import numpy as np

    size = len(values)
    if n >= size:
        return np.arange(size)
    if size >= 4 * _SAMPLE and n * 32 <= size:
        step = size // _SAMPLE
        sample = values[::step]
        want = min(len(sample), int(n * len(sample) / size * 4) + 16)
        guess = np.float64(np.partition(sample, len(sample) - want)[len(sample) - want])
        idx = np.flatnonzero(values >= guess - margin)
        vals = values[idx]
        if np.count_nonzero(vals >= guess) >= n:  # the guess is below the true n-th value
            kth = np.float64(np.partition(vals, len(vals) - n)[len(vals) - n])
            return idx[vals >= kth - margin]
    kth = np.float64(np.partition(values, size - n)[size - n])
    return np.flatnonzero(values >= kth - margin)


class DenseRow:
    """The exact dense order of one query over all chunks, from its float32 screening row."""

    def __init__(self, row32: np.ndarray, q64: np.ndarray, vectors: np.ndarray, eps: float) -> None:
        self.row = row32
        self.q64 = q64
        self.vectors = vectors
        self.eps = eps
        self.n = len(row32)
        self._head: _DenseHead | None = None
        self._levels: _Levels | None = None

    def sims(self, ids: np.ndarray) -> np.ndarray:
        return exact_similarities(self.q64, self.vectors, ids)

    def dist(self, ids: np.ndarray) -> np.ndarray:
        return 1.0 - self.sims(ids)

    def top(self, n: int) -> tuple[np.ndarray, np.ndarray]:
        """The first ``n`` chunks of the order (ids, distances)."""
        import numpy as np

        idx = _threshold_candidates(self.row, n, 2 * self.eps + _DELTA)
        d = self.dist(idx)
        order = np.lexsort((idx, d))[:n]
        return idx[order], d[order]

    def _band(self, centre: np.ndarray, wide: float) -> tuple[np.float32, np.float32]:
        """float32 bounds enclosing [centre - wide, centre + wide] (one step wider each way),
        so the row is compared in float32 without copying it."""
        import numpy as np

        lo = np.nextafter(np.float32(centre - wide), np.float32(-np.inf))
        hi = np.nextafter(np.float32(centre + wide), np.float32(np.inf))
        return lo, hi

    def head(self, depth: int, size: int = 0) -> _DenseHead:
        """The float32 head of the row holding at least every chunk of rank <= ``depth``
        (and, when it is first made, about ``size`` chunks); deepened on demand."""
        h = self._head
        want = max(size, depth + depth // 8 + 16)
        while h is None or (h.depth < depth and h.depth < self.n):
            h = _DenseHead(self, want)
            want *= 2
        self._head = h
        return h

    def rank(self, ids: np.ndarray) -> np.ndarray:
        """1-based rank of each chunk in ``ids``: a chunk whose band lies in the head is
        counted there (a search and the band's float64 similarities), any other by one
        counting pass over the row. Both count the same chunks."""
        import numpy as np

        ids = np.asarray(ids, dtype=np.int64)
        d = self.dist(ids)
        s = 1.0 - d
        out = np.empty(len(ids), dtype=np.int64)
        h = self._head
        far: list[int] = []
        for i, (x, dx, sx) in enumerate(zip(ids, d, s, strict=True)):
            lo, hi = self._band(sx, self.eps + _DELTA)
            if h is not None and lo >= h.floor:
                out[i] = h.rank(self, int(x), dx, lo, hi)
            else:
                far.append(i)
        if len(far) >= _BATCH or (far and self._levels is not None):
            self._rank_by_levels(ids, d, s, np.array(far, dtype=np.int64), out)
            return out
        for i in far:
            x, dx = ids[i], d[i]
            lo, hi = self._band(s[i], self.eps + _DELTA)
            sure = int(np.count_nonzero(self.row > hi))  # exactly above: float32 error < eps
            band = np.flatnonzero((self.row >= lo) & (self.row <= hi))
            db = self.dist(band)
            out[i] = sure + int(np.count_nonzero((db < dx) | ((db == dx) & (band < x)))) + 1
        return out

    def _rank_by_levels(self, ids: np.ndarray, d: np.ndarray, s: np.ndarray, far: np.ndarray, out: np.ndarray) -> None:
        """The ranks of ``ids[far]`` counted from the row's levels: the chunks in levels above
        a band's top level beat the chunk exactly; those in the band's levels are decided in
        float64 (a superset of the band, found for every chunk in one lookup pass)."""
        import numpy as np

        if self._levels is None:
            self._levels = _Levels(self.row)
        lv = self._levels
        bands = [self._band(s[i], self.eps + _DELTA) for i in far]
        k_lo = lv.level(np.array([b[0] for b in bands], dtype=np.float32))
        k_hi = lv.level(np.array([b[1] for b in bands], dtype=np.float32))
        idx, keys = lv.members(k_lo, k_hi)
        d_all = self.dist(idx)
        step = max(1, _PAIRS // max(1, len(idx)))  # (chunks x members) pairs at a time
        for a in range(0, len(far), step):
            f, lo_, hi_ = far[a : a + step], k_lo[a : a + step, None], k_hi[a : a + step, None]
            x, dx = ids[f][:, None], d[f][:, None]
            beat = (keys >= lo_) & (keys <= hi_) & ((d_all < dx) | ((d_all == dx) & (idx < x)))
            out[f] = lv.above[k_hi[a : a + step]] + np.count_nonzero(beat, axis=1) + 1

    def head_bounds(self, ids: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(lowest, highest) possible rank of each chunk from the head alone (no pass over the
        row): exact counts where the band lies in the head, else ``head + 1`` or ``n``."""
        import numpy as np

        h = self._head
        assert h is not None  # head() first
        v = self.row[ids].astype(np.float64)
        wide = 2 * self.eps + _DELTA
        size = len(h.asc)
        lo = size - np.searchsorted(h.asc, v + wide, side="right") + 1
        hi = np.where(v - wide >= h.floor, size - np.searchsorted(h.asc, v - wide, side="left"), self.n)
        return lo.astype(np.int64), hi.astype(np.int64)


class _Levels:
    """A row's values cut into levels by a monotone float map (v - min) * scale, in the
    row's own dtype (one pass and one bincount): the count of values in the levels above
    any level is then known, and a value above a threshold's level is above the threshold."""

    def __init__(self, values: np.ndarray) -> None:
        import numpy as np

        self.values = values
        self.size = int(min(1 << 20, max(1 << 12, len(values) // 4)))
        kind = values.dtype.type
        lo, hi = (values.min(), values.max()) if len(values) else (kind(0), kind(0))
        self.lo = kind(lo)
        self.scale = kind((self.size - 1) / (float(hi) - float(lo))) if hi > lo else kind(0)
        self.key = self.level(values)
        self.above: NDArray[np.int64] = len(values) - np.cumsum(np.bincount(self.key, minlength=self.size))

    def level(self, v: np.ndarray) -> NDArray[np.intp]:
        """The level of each value (monotone: a larger value never gets a lower level)."""
        import numpy as np

        k = np.subtract(np.asarray(v, dtype=self.values.dtype), self.lo)
        k *= self.scale
        np.clip(k, 0, self.size - 1, out=k)
        out: NDArray[np.intp] = k.astype(np.intp)
        return out

    def members(self, k_lo: np.ndarray, k_hi: np.ndarray) -> tuple[NDArray[np.intp], NDArray[np.intp]]:
        """(positions, levels) of the values in any level range [k_lo[j], k_hi[j]], in one pass."""
        import numpy as np

        edge = np.zeros(self.size + 1, dtype=np.int64)
        np.add.at(edge, k_lo, 1)
        np.add.at(edge, k_hi + 1, -1)
        wanted = np.cumsum(edge[:-1]) > 0
        idx = np.flatnonzero(wanted[self.key])
        return idx, self.key[idx]


class _DenseHead:
    """The chunks of a row whose float32 value is at least ``floor`` (every chunk above the
    floor, so counts of chunks above a value >= floor are exact), ascending by value.

    ``depth``: every chunk of exact rank <= depth is in the head. Exact float64 distances
    are computed for head members only when a rank asks for them, and kept."""

    def __init__(self, row: DenseRow, want: int) -> None:
        import numpy as np

        n = row.n
        wide = 2 * row.eps + _DELTA
        idx = _threshold_candidates(row.row, min(n, want), 0.0) if want < n else np.arange(n)
        v = row.row[idx]
        order = np.argsort(v, kind="stable")
        self.asc = v[order]  # float32, ascending
        self.ids = idx[order].astype(np.int64)
        self.floor = np.float32(self.asc[0]) if len(idx) < n else np.float32(-np.inf)
        # a chunk outside has float32 value < floor, so a member more than ``wide`` above
        # the floor beats it exactly
        above = len(idx) - int(np.searchsorted(self.asc, np.float64(self.floor) + wide, side="right"))
        self.depth = n if len(idx) >= n else above
        self._d64 = np.full(len(idx), np.nan)

    def _dists(self, row: DenseRow, a: int, b: int) -> NDArray[np.float64]:
        import numpy as np

        part = self._d64[a:b]
        miss = np.flatnonzero(np.isnan(part))
        if len(miss):
            part[miss] = row.dist(self.ids[a + miss])
        return part

    def rank(self, row: DenseRow, x: int, dx: float, lo: np.float32, hi: np.float32) -> int:
        """The rank of chunk ``x`` (distance ``dx``) whose band [lo, hi] lies above the floor."""
        import numpy as np

        size = len(self.asc)
        top = int(np.searchsorted(self.asc, hi, side="right"))
        bottom = int(np.searchsorted(self.asc, lo, side="left"))
        db = self._dists(row, bottom, top)
        band = self.ids[bottom:top]
        return size - top + int(np.count_nonzero((db < dx) | ((db == dx) & (band < x)))) + 1


class BM25Row:
    """The exact BM25 order of one query: chunks sharing a term with it by score
    (descending, ties by chunk order), then every other chunk in chunk order."""

    def __init__(self, row: NDArray[np.float64]) -> None:
        import numpy as np

        self.row = row  # score of every chunk (0: shares no term)
        self.ids = np.flatnonzero(row > 0)  # matched chunks, by id
        self.scores = row[self.ids]
        self.n = len(row)
        self.m = len(self.ids)
        self._head: NDArray[np.intp] | None = None  # the first matched chunks, in order
        self._head_by_id: tuple[NDArray[np.intp], NDArray[np.intp]] | None = None
        self._levels: _Levels | None = None

    def score(self, ids: NDArray[np.intp]) -> NDArray[np.float64]:
        """BM25 score of each chunk (0.0 for a chunk sharing no term)."""
        return self.row[ids]

    def matched(self, ids: NDArray[np.intp]) -> NDArray[np.bool_]:
        return self.row[ids] > 0

    def top_matched(self, n: int) -> NDArray[np.intp]:
        """The first ``min(n, m)`` matched chunks, in order."""
        import numpy as np

        if self._head is not None and len(self._head) >= min(n, self.m):
            return self._head[:n]
        idx = _threshold_candidates(self.scores, n, 0.0)
        order = np.lexsort((self.ids[idx], -self.scores[idx]))[:n]
        return self.ids[idx[order]]

    def head(self, depth: int) -> NDArray[np.intp]:
        """Every matched chunk scoring at least the ``depth``-th best score, in order (so
        exactly ranked; a matched chunk outside ranks below all of them), deepened on demand."""
        import numpy as np

        h = self._head
        if h is None or (len(h) < min(depth, self.m)):
            want = depth if h is None else max(depth, 4 * len(h))
            idx = _threshold_candidates(self.scores, min(want, self.m), 0.0)
            order = np.lexsort((self.ids[idx], -self.scores[idx]))
            h = self._head = self.ids[idx[order]]
            by_id = np.argsort(h)
            self._head_by_id = (h[by_id], by_id)
        return h

    def rank_bounds(self, ids: NDArray[np.intp]) -> tuple[NDArray[np.int64], NDArray[np.int64]]:
        """(lowest, highest) possible rank of each matched chunk of ``ids`` from the head:
        exact inside it, ``head + 1`` to ``m`` outside (meaningless for unmatched chunks)."""
        import numpy as np

        assert self._head is not None and self._head_by_id is not None  # head() first
        pos = self._head_pos(ids)
        size = len(self._head)
        lo = np.where(pos > 0, pos, size + 1).astype(np.int64)
        hi = np.where(pos > 0, pos, max(self.m, 1)).astype(np.int64)
        return lo, hi

    def _head_pos(self, ids: NDArray[np.intp]) -> NDArray[np.int64]:
        """1-based position of each of ``ids`` in the head (0 where absent)."""
        import numpy as np

        assert self._head_by_id is not None
        sorted_ids, by_id = self._head_by_id
        if not len(sorted_ids):
            return np.zeros(len(ids), dtype=np.int64)
        at = np.minimum(np.searchsorted(sorted_ids, ids), len(sorted_ids) - 1)
        return np.where(sorted_ids[at] == ids, by_id[at] + 1, 0).astype(np.int64)

    def top(self, n: int) -> np.ndarray:
        """The first ``n`` chunks of the total order (unmatched ones fill up in chunk order)."""
        import numpy as np

        head = self.top_matched(n)
        if len(head) >= n or len(head) >= self.n:
            return head
        need = min(n, self.n) - len(head)
        pool = np.arange(min(self.n, need + self.m), dtype=np.int64)
        rest = pool[~self.matched(pool)][:need]
        return np.concatenate([head, rest])

    def rank(self, ids: np.ndarray) -> np.ndarray:
        """1-based rank of each chunk in ``ids`` (one counting pass each)."""
        import numpy as np

        ids = np.asarray(ids, dtype=np.int64)
        s = self.score(ids)
        is_m = self.matched(ids)
        out = np.empty(len(ids), dtype=np.int64)
        known = self._head_pos(ids) if self._head_by_id is not None else np.zeros(len(ids), dtype=np.int64)
        deep = np.flatnonzero((known == 0) & is_m)
        if len(deep) >= _BATCH or (len(deep) and self._levels is not None):
            self._rank_by_levels(ids, s, deep, out)
            known[deep] = out[deep]
        for i, (x, sx, mx) in enumerate(zip(ids, s, is_m, strict=True)):
            if known[i]:  # in the head (its position there) or counted by levels
                out[i] = known[i]
                continue
            before = int(np.searchsorted(self.ids, x))  # matched chunks with a smaller id
            if mx:
                out[i] = int(np.count_nonzero(self.scores > sx) + np.count_nonzero(self.scores[:before] == sx)) + 1
            else:
                out[i] = self.m + int(x) - before + 1
        return out

    def _rank_by_levels(self, ids: np.ndarray, s: np.ndarray, which: np.ndarray, out: np.ndarray) -> None:
        """Ranks of the matched chunks ``ids[which]``: the scores in levels above a chunk's
        level beat it; those sharing its level are compared exactly (ties by chunk order)."""
        import numpy as np

        if self._levels is None:
            self._levels = _Levels(self.scores)
        lv = self._levels
        k = lv.level(s[which])
        idx, keys = lv.members(k, k)
        sc, other = self.scores[idx], self.ids[idx]
        step = max(1, _PAIRS // max(1, len(idx)))  # (chunks x members) pairs at a time
        for a in range(0, len(which), step):
            w, kw = which[a : a + step], k[a : a + step]
            sw, xw = s[w][:, None], ids[w][:, None]
            beat = (keys == kw[:, None]) & ((sc > sw) | ((sc == sw) & (other < xw)))
            out[w] = lv.above[kw] + np.count_nonzero(beat, axis=1) + 1
