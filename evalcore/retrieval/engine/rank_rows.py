"""One query's exact order for one retriever, without sorting every chunk (METHODS.md "The words"
and 5): :class:`DenseRow` from its float32 screening row (decided in float64 within the
screening band, see :mod:`evalcore.retrieval.ranking`), :class:`BM25Row` from its scores.

Each row keeps a head (its top, sorted: exact ranks and bounds near the top with a search).
A rank deep in a row is counted by a compiled pass over the row (:mod:`evalcore.retrieval.engine.kernels`),
all the ranks a query asks at once in one blocked pass: the row is read from memory once and
compared with every asked value from the cache. A dense rank counts the chunks above the
chunk's screening band and decides the band's own chunks in float64; its bounds (the counts
above the band and from its bottom up) need no float64 at all. Every pass releases the GIL.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import numpy as np
    from numpy.typing import NDArray

_DELTA = 1e-12  # separates two float64 similarities enough that 1 - s orders them strictly
_SAMPLE = 8192  # sample size used to guess a top-n threshold on long rows


def exact_similarities(q64: np.ndarray, vectors: np.ndarray, ids: np.ndarray) -> NDArray[np.float64]:
    """float64 dot products of ``q64`` with ``vectors[ids]``, the same bits for a pair
    whatever else is asked with it: exact products summed in numpy's pairwise order (the
    bits of ``(vectors[ids].astype(float64) * q64).sum(axis=1)``)."""
    import numpy as np

    from evalcore.retrieval.engine import kernels

    ids = np.asarray(ids, dtype=np.int64).reshape(-1)
    q = np.ascontiguousarray(q64, dtype=np.float64)
    if (
        getattr(vectors, "dtype", None) == np.float32
        and getattr(vectors, "ndim", 0) == 2
        and q.size <= kernels.PAIRWISE_MAX
    ):
        v = vectors if vectors.flags.c_contiguous else np.ascontiguousarray(vectors)
        out: NDArray[np.float64] = kernels.exact_sims(q, v, ids)
        return out
    rows = np.asarray(vectors[ids], dtype=np.float64).reshape(len(ids), -1)
    sums: NDArray[np.float64] = np.multiply(rows, q, out=rows).sum(axis=1)
    return sums


def _threshold_candidates(values: np.ndarray, n: int, margin: float) -> NDArray[np.intp]:
    """Indices of every element >= (the n-th largest value) - margin; a superset of the
    top n, found without sorting ``values`` (a sampled guess, checked, else a partition)."""
    import numpy as np

    from evalcore.retrieval.engine import kernels

    size = len(values)
    if n >= size:
        return np.arange(size)
    if size >= 4 * _SAMPLE and n * 32 <= size:
        step = size // _SAMPLE
        sample = values[::step]
        want = min(len(sample), int(n * len(sample) / size * 2) + 16)  # twice the top n's share: checked below
        guess = np.float64(np.partition(sample, len(sample) - want)[len(sample) - want])
        idx = kernels.select_ge(values, guess - margin)
        vals = values[idx]
        if np.count_nonzero(vals >= guess) >= n:  # the guess is below the true n-th value
            kth = np.float64(np.partition(vals, len(vals) - n)[len(vals) - n])
            out: NDArray[np.intp] = idx[vals >= kth - margin]
            return out
    kth = np.float64(np.partition(values, size - n)[size - n])
    return kernels.select_ge(values, kth - margin)  # type: ignore[no-any-return]


_MANY = 8  # from this many chunks at once, their bounds come from the row's levels
_LEVELS = 1 << 16  # levels of a row (at most; fewer for short rows)


def _bounds(
    above: np.ndarray, at_least: np.ndarray, ids: np.ndarray, known: dict[int, int]
) -> tuple[NDArray[np.int64], NDArray[np.int64]]:
    """Rank bounds from counts: ``above[j]`` chunks surely beat chunk ``ids[j]`` and at most
    ``at_least[j]`` (the chunk itself among them) can; a rank counted before is both bounds."""
    import numpy as np

    low, high = (above + 1).astype(np.int64), np.asarray(at_least).astype(np.int64)
    for j, x in enumerate(ids.tolist()):
        r = known.get(x)
        if r is not None:
            low[j] = high[j] = r
    return low, high


class _Levels:
    """A row's values counted by level in one compiled pass (:func:`kernels.level_counts`): a
    value's level is monotone in it, so the values in levels above a value's level are above
    it and those below are below; ``above[k]`` counts the values in levels above ``k``."""

    def __init__(self, values: np.ndarray, lo: float | None = None, hi: float | None = None) -> None:
        """``lo``, ``hi``: the row's least and greatest value when the row already knows them
        (each a pass over a million values saved); else they are read from the row."""
        import numpy as np

        from evalcore.retrieval.engine import kernels

        self.values = values
        self.n = len(values)
        self.size = int(min(_LEVELS, max(1 << 10, self.n // 8)))
        if not self.n:
            lo, hi = 0.0, 0.0
        else:
            lo = float(values.min()) if lo is None else lo
            hi = float(values.max()) if hi is None else hi
        self.lo = lo
        self.scale = (self.size - 1) / (hi - lo) if hi > lo else 0.0
        counts, self.keys = kernels.level_counts(values, self.lo, self.scale, self.size)
        self.above: NDArray[np.int64] = self.n - np.cumsum(counts)

    def level(self, v: np.ndarray) -> NDArray[np.int64]:
        from evalcore.retrieval.engine import kernels

        out: NDArray[np.int64] = kernels.levels_of(v, self.lo, self.scale, self.size)
        return out

    def at_least(self, k: np.ndarray) -> NDArray[np.int64]:
        """Number of values whose level is ``k`` or above."""
        import numpy as np

        out: NDArray[np.int64] = np.where(k > 0, self.above[np.maximum(k - 1, 0)], self.n)
        return out

    def bounds(self, lo: np.ndarray, hi: np.ndarray) -> tuple[NDArray[np.int64], NDArray[np.int64]]:
        """(values surely above ``hi``, values possibly at or above ``lo``) for each pair."""
        return self.above[self.level(hi)], self.at_least(self.level(lo))

    def members(self, lo: np.ndarray, hi: np.ndarray) -> tuple[NDArray[np.int64], NDArray[np.int64]]:
        """(positions, levels) of the values in the levels of any range [lo[j], hi[j]], in one pass."""
        import numpy as np

        from evalcore.retrieval.engine import kernels

        k_lo, k_hi = self.level(lo), self.level(hi)
        edge = np.zeros(self.size + 1, dtype=np.int64)
        np.add.at(edge, k_lo, 1)
        np.add.at(edge, k_hi + 1, -1)
        wanted = np.cumsum(edge[:-1]) > 0
        idx, keys = kernels.level_members(self.keys, wanted)
        return idx, keys


class DenseRow:
    """The exact dense order of one query over all chunks, from its float32 screening row."""

    def __init__(self, row32: np.ndarray, q64: np.ndarray, vectors: np.ndarray, eps: float) -> None:
        import numpy as np

        self.row = row32
        self.q64 = np.ascontiguousarray(q64, dtype=np.float64)
        self.vectors = vectors
        self.eps = eps
        self.n = len(row32)
        self._head: _DenseHead | None = None
        self._levels: _Levels | None = None
        self._ranks: dict[int, int] = {}  # exact ranks already counted

    def levels(self) -> _Levels:
        if self._levels is None:  # the head's first value is the row's greatest
            h = self._head
            self._levels = _Levels(self.row, hi=float(h.asc[-1]) if h is not None and len(h.asc) else None)
        return self._levels

    def sims(self, ids: np.ndarray) -> np.ndarray:
        return exact_similarities(self.q64, self.vectors, ids)

    def dist(self, ids: np.ndarray) -> np.ndarray:
        return 1.0 - self.sims(ids)

    def top(self, n: int) -> tuple[np.ndarray, np.ndarray]:
        """The first ``n`` chunks of the order (ids, distances)."""
        import numpy as np

        margin = 2 * self.eps + _DELTA
        h = self._head
        if h is not None and min(h.depth, len(h.asc)) >= n > 0:
            # the head holds every value at or above the n-th largest minus the margin
            kth = np.float64(h.asc[len(h.asc) - n])
            idx = h.ids[h.asc >= kth - margin]
        else:
            idx = _threshold_candidates(self.row, n, margin)
        d = self.dist(idx)
        order = np.lexsort((idx, d))[:n]
        return idx[order], d[order]

    def _band(self, centre: np.ndarray, wide: float) -> tuple[np.ndarray, np.ndarray]:
        """float32 bounds enclosing [centre - wide, centre + wide] (one step wider each way),
        so the row is compared in float32 without copying it."""
        import numpy as np

        c = np.asarray(centre, dtype=np.float64)
        lo = np.nextafter((c - wide).astype(np.float32), np.float32(-np.inf))
        hi = np.nextafter((c + wide).astype(np.float32), np.float32(np.inf))
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
        counted there (a search and the band's float64 similarities), all the others by one
        blocked counting pass over the row. Each counts the same chunks."""
        import numpy as np

        ids = np.asarray(ids, dtype=np.int64)
        out = np.empty(len(ids), dtype=np.int64)
        known = self._ranks
        todo = [i for i, x in enumerate(ids.tolist()) if x not in known]
        for i, x in enumerate(ids.tolist()):
            if x in known:
                out[i] = known[x]
        if not todo:
            return out
        want = np.array(todo, dtype=np.int64)
        x_ids = ids[want]
        d = self.dist(x_ids)
        s = 1.0 - d
        lo, hi = self._band(s, self.eps + _DELTA)
        h = self._head
        in_head = (lo >= h.floor) if h is not None else np.zeros(len(want), dtype=bool)
        far: list[int] = []
        for j in range(len(want)):
            if in_head[j]:
                assert h is not None
                out[want[j]] = h.rank(self, int(x_ids[j]), float(d[j]), lo[j], hi[j])
            else:
                far.append(j)
        if far:
            f = np.array(far, dtype=np.int64)
            out[want[f]] = self._count(x_ids[f], d[f], lo[f], hi[f])
        for j in range(len(want)):
            known[int(x_ids[j])] = int(out[want[j]])
        return out

    def _count(self, x: np.ndarray, d: np.ndarray, lo: np.ndarray, hi: np.ndarray) -> NDArray[np.int64]:
        """Exact ranks by one pass over the row: the chunks above each band beat the chunk
        exactly; the band's own chunks are decided by their float64 distances. With the row's
        levels, the chunks in levels above a band's top level are counted from them and only
        the band's levels are read (else a blocked pass counts and collects, see kernels)."""
        import numpy as np

        from evalcore.retrieval.engine import kernels

        if self._levels is None and len(x) < _MANY:
            above, idx, owner = kernels.band_members(self.row, lo, hi)
        else:
            lv = self.levels()
            idx_all, keys = lv.members(lo, hi)
            k_lo, k_hi = lv.level(lo), lv.level(hi)
            more, idx, owner = kernels.split_members(self.row[idx_all], idx_all, keys, k_lo, k_hi, lo, hi)
            above = lv.above[k_hi] + more
        db = self.dist(idx)
        beat = (db < d[owner]) | ((db == d[owner]) & (idx < x[owner]))
        counted: NDArray[np.int64] = above + np.bincount(owner[beat], minlength=len(x)) + 1
        return counted

    def narrow_bounds(self, ids: np.ndarray) -> tuple[NDArray[np.int64], NDArray[np.int64]]:
        """(lowest, highest) possible rank of each chunk by one counting pass and no float64
        beyond each chunk's own similarity: the chunks above its screening band beat it, and
        only those from the band's bottom up can (the chunk itself among them). Many chunks
        at once are bounded from the row's levels (the band's levels widen it a little)."""
        import numpy as np

        from evalcore.retrieval.engine import kernels

        ids = np.asarray(ids, dtype=np.int64)
        if len(ids) >= _MANY:
            v = self.row[ids].astype(np.float64)
            lo, hi = self._band(v, 2 * self.eps + _DELTA)  # around the float32 value: no float64
            above, at_least = self.levels().bounds(lo, hi)
        else:
            lo, hi = self._band(self.sims(ids), self.eps + _DELTA)
            above, at_least = kernels.band_counts(self.row, lo, hi)
        return _bounds(above, at_least, ids, self._ranks)

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
        from evalcore.retrieval.engine import kernels

        self.row = row  # score of every chunk (0: shares no term)
        self.n = len(row)
        self.m = kernels.count_above(row, 0.0)  # chunks sharing a term with the query
        self._levels: _Levels | None = None
        self._head: NDArray[np.intp] | None = None  # the first matched chunks, in order
        self._head_by_id: tuple[NDArray[np.intp], NDArray[np.intp]] | None = None
        self._ranks: dict[int, int] = {}  # exact ranks already counted

    def score(self, ids: NDArray[np.intp]) -> NDArray[np.float64]:
        """BM25 score of each chunk (0.0 for a chunk sharing no term)."""
        return self.row[ids]

    def matched(self, ids: NDArray[np.intp]) -> NDArray[np.bool_]:
        return self.row[ids] > 0

    def _ordered(self, want: int) -> NDArray[np.intp]:
        """Every matched chunk scoring at least the ``want``-th best matched score (all of
        them when fewer match), in order: score descending, then chunk id."""
        import numpy as np

        from evalcore.retrieval.engine import kernels

        if self.m <= want:
            idx = kernels.select_ge(self.row, np.nextafter(0.0, 1.0))
        else:  # the want-th best score is positive, so the threshold keeps matched chunks only
            idx = _threshold_candidates(self.row, want, 0.0)
        order = np.lexsort((idx, -self.row[idx]))
        out: NDArray[np.intp] = idx[order]
        return out

    def top_matched(self, n: int) -> NDArray[np.intp]:
        """The first ``min(n, m)`` matched chunks, in order."""
        if self._head is not None and len(self._head) >= min(n, self.m):
            return self._head[:n]
        return self._ordered(n)[:n]

    def head(self, depth: int) -> NDArray[np.intp]:
        """Every matched chunk scoring at least the ``depth``-th best score, in order (so
        exactly ranked; a matched chunk outside ranks below all of them), deepened on demand."""
        import numpy as np

        h = self._head
        if h is None or (len(h) < min(depth, self.m)):
            want = depth if h is None else max(depth, 4 * len(h))
            h = self._head = self._ordered(min(want, self.m))
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

    def narrow_bounds(self, ids: NDArray[np.intp]) -> tuple[NDArray[np.int64], NDArray[np.int64]]:
        """(lowest, highest) possible rank of each matched chunk of ``ids``: a few are ranked
        exactly (a BM25 rank costs one blocked counting pass, the price of its bounds); many
        at once are bounded from the row's levels (one pass): the chunks in levels above its
        score's level beat it, those below do not."""
        import numpy as np

        ids = np.asarray(ids, dtype=np.int64)
        if len(ids) < _MANY:
            r = self.rank(ids)
            return r, r.copy()
        if self._levels is None:  # the unmatched chunks score 0; the head's first is the greatest
            h = self._head
            self._levels = _Levels(
                self.row,
                lo=0.0 if self.m < self.n else None,
                hi=float(self.row[h[0]]) if h is not None and len(h) else None,
            )
        s = self.score(ids)
        above, at_least = self._levels.bounds(s, s)
        return _bounds(above, at_least, ids, self._ranks)

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
        """1-based rank of each chunk in ``ids``: a head position, a rank counted before, or
        (all the others at once) one blocked counting pass over the row. An unmatched chunk
        ranks after the ``m`` matched ones, in chunk order."""
        import numpy as np

        from evalcore.retrieval.engine import kernels

        ids = np.asarray(ids, dtype=np.int64)
        s = self.score(ids)
        out = self._head_pos(ids) if self._head_by_id is not None else np.zeros(len(ids), dtype=np.int64)
        for i, x in enumerate(ids.tolist()):
            r = self._ranks.get(x)
            if r is not None:
                out[i] = r
        todo = np.flatnonzero(out == 0)
        if not len(todo):
            return out
        # the chunks scoring more, and those scoring the same with a smaller id; an unmatched
        # chunk (score 0) thus ranks after the m matched ones, then by id among the rest
        out[todo] = kernels.score_beats(self.row, s[todo], ids[todo]) + 1
        for i in todo.tolist():
            self._ranks[int(ids[i])] = int(out[i])
        return out
