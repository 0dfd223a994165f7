"""One query's exact order for one retriever, without sorting every chunk (SPEC sections 4
and 5): :class:`DenseRow` from its float32 screening row (decided in float64 within the
screening band, see :mod:`evalcore.pipeline.ranking`), :class:`BM25Row` from its scores."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import numpy as np
    from numpy.typing import NDArray

_DELTA = 1e-12  # separates two float64 similarities enough that 1 - s orders them strictly
_SAMPLE = 8192  # sample size used to guess a top-n threshold on long rows


def exact_similarities(q64: np.ndarray, vectors: np.ndarray, ids: np.ndarray) -> NDArray[np.float64]:
    """float64 dot products of ``q64`` with ``vectors[ids]``, the same bits for a pair
    whatever else is asked with it (products are exact; numpy's pairwise sum along a
    contiguous row does not depend on the row's neighbours or alignment)."""
    import numpy as np

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
        self._sorted: np.ndarray | None = None

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

    def rank(self, ids: np.ndarray) -> np.ndarray:
        """1-based rank of each chunk in ``ids`` (one counting pass each)."""
        import numpy as np

        ids = np.asarray(ids, dtype=np.int64)
        d = self.dist(ids)
        s = 1.0 - d
        out = np.empty(len(ids), dtype=np.int64)
        for i, (x, dx, sx) in enumerate(zip(ids, d, s, strict=True)):
            lo, hi = self._band(sx, self.eps + _DELTA)
            sure = int(np.count_nonzero(self.row > hi))  # exactly above: float32 error < eps
            band = np.flatnonzero((self.row >= lo) & (self.row <= hi))
            db = self.dist(band)
            out[i] = sure + int(np.count_nonzero((db < dx) | ((db == dx) & (band < x)))) + 1
        return out

    def _ascending(self) -> np.ndarray:
        import numpy as np

        if self._sorted is None:
            self._sorted = np.sort(self.row)
        return self._sorted

    def rank_bounds(self, ids: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(lowest, highest) possible rank of each chunk, from the float32 row alone."""
        import numpy as np

        asc = self._ascending()
        v = self.row[ids].astype(np.float64)
        wide = 2 * self.eps + _DELTA
        lo = self.n - np.searchsorted(asc, v + wide, side="right") + 1
        hi = self.n - np.searchsorted(asc, v - wide, side="left")
        return lo.astype(np.int64), hi.astype(np.int64)

    def at_rank(self, r: int) -> int:
        """The chunk at 1-based rank ``r``."""
        import numpy as np

        v = np.float64(self._ascending()[self.n - r])  # float64: compare in float64, not float32
        wide = 2 * self.eps + _DELTA
        above = int(np.count_nonzero(self.row > v + wide))
        band = np.flatnonzero(np.abs(self.row - v) <= wide)
        d = self.dist(band)
        return int(band[np.lexsort((band, d))][r - 1 - above])


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
        self._ranks: np.ndarray | None = None

    def score(self, ids: NDArray[np.intp]) -> NDArray[np.float64]:
        """BM25 score of each chunk (0.0 for a chunk sharing no term)."""
        return self.row[ids]

    def matched(self, ids: NDArray[np.intp]) -> NDArray[np.bool_]:
        return self.row[ids] > 0

    def top_matched(self, n: int) -> NDArray[np.intp]:
        """The first ``min(n, m)`` matched chunks, in order."""
        import numpy as np

        idx = _threshold_candidates(self.scores, n, 0.0)
        order = np.lexsort((self.ids[idx], -self.scores[idx]))[:n]
        return self.ids[idx[order]]

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
        for i, (x, sx, mx) in enumerate(zip(ids, s, is_m, strict=True)):
            before = int(np.searchsorted(self.ids, x))  # matched chunks with a smaller id
            if mx:
                out[i] = int(np.count_nonzero(self.scores > sx) + np.count_nonzero(self.scores[:before] == sx)) + 1
            else:
                out[i] = self.m + int(x) - before + 1
        return out

    def all_ranks(self) -> np.ndarray:
        """Rank of every matched chunk (aligned with ``self.ids``); sorts the matched chunks."""
        import numpy as np

        if self._ranks is None:
            order = np.lexsort((self.ids, -self.scores))
            ranks = np.empty(self.m, dtype=np.int64)
            ranks[order] = np.arange(1, self.m + 1)
            self._ranks = ranks
        return self._ranks
