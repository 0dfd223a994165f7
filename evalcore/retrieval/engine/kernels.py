# The kernels are compiled by numba, which types their locals itself; numpy's stubs see the
# int32 block counters and the scalars they return as other types than the ones declared.
# mypy: disable-error-code="assignment,no-any-return"
"""The passes over a whole row of one query, compiled (numba), each a single loop.

Retrieval decides a query from its rows (the float32 screening similarities of every chunk, the
float64 BM25 scores of every chunk): their top, the number of chunks above a value, the chunks
within a band, the row's values counted by level. In numpy each of these is several passes with
a temporary as large as the row; here each is one loop, and every kernel releases the GIL, so
two queries are worked on at once on two cores (:func:`evalcore.retrieval.ranking.rank_block`).

Every kernel computes exactly what the numpy expression in its docstring computes, bit for bit:
:func:`exact_sims` reproduces numpy's pairwise summation (the order of ``np.sum`` along a
contiguous row), :func:`bm25_row` adds a query's terms in the order ``BM25.row`` did, and the
level of a value is the same float64 expression in :func:`level_counts` as in numpy.
Compiled once per machine and cached (numba's cache: beside this file, or in the user's cache
folder when this folder is read-only).
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numba import njit

from evalcore.retrieval.engine import index_kernels

_JIT: dict[str, Any] = {"nogil": True, "cache": True, "boundscheck": False}


@njit(**_JIT)  # type: ignore[untyped-decorator]
def _leaf(v: Any, row: int, q: Any, lo: int, n: int) -> Any:
    """numpy's pairwise-sum leaf (n <= 128) over the products ``v[row, i] * q[i]``: eight
    running sums combined as ((r0+r1)+(r2+r3))+((r4+r5)+(r6+r7)), then the rest. The sums are
    locals and the row is indexed in ``v`` itself (no view of it made): the loop compiles to
    vector instructions, about three times as fast as through a scratch array and a view."""
    if n < 8:
        res = 0.0
        for i in range(lo, lo + n):
            res += np.float64(v[row, i]) * q[i]
        return res
    r0, r1 = np.float64(v[row, lo]) * q[lo], np.float64(v[row, lo + 1]) * q[lo + 1]
    r2, r3 = np.float64(v[row, lo + 2]) * q[lo + 2], np.float64(v[row, lo + 3]) * q[lo + 3]
    r4, r5 = np.float64(v[row, lo + 4]) * q[lo + 4], np.float64(v[row, lo + 5]) * q[lo + 5]
    r6, r7 = np.float64(v[row, lo + 6]) * q[lo + 6], np.float64(v[row, lo + 7]) * q[lo + 7]
    m = n - (n % 8)
    for i in range(lo + 8, lo + m, 8):
        r0 += np.float64(v[row, i]) * q[i]
        r1 += np.float64(v[row, i + 1]) * q[i + 1]
        r2 += np.float64(v[row, i + 2]) * q[i + 2]
        r3 += np.float64(v[row, i + 3]) * q[i + 3]
        r4 += np.float64(v[row, i + 4]) * q[i + 4]
        r5 += np.float64(v[row, i + 5]) * q[i + 5]
        r6 += np.float64(v[row, i + 6]) * q[i + 6]
        r7 += np.float64(v[row, i + 7]) * q[i + 7]
    res = ((r0 + r1) + (r2 + r3)) + ((r4 + r5) + (r6 + r7))
    for i in range(lo + m, lo + n):
        res += np.float64(v[row, i]) * q[i]
    return res


def _halving(inner: Any) -> Any:
    """numpy's pairwise step over ``inner``: a range of more than 128 products is cut in two
    halves (the first rounded down to a multiple of 8) and their sums added. numpy recurses;
    numba cannot cache a recursive function, so each depth is a function of its own."""

    @njit(**_JIT)  # type: ignore[untyped-decorator]
    def step(v: Any, row: int, q: Any, lo: int, n: int) -> float:
        if n <= 128:
            return _leaf(v, row, q, lo, n)
        n2 = n // 2
        n2 -= n2 % 8
        return inner(v, row, q, lo, n2) + inner(v, row, q, lo + n2, n - n2)

    return step


#: pairwise sums up to 7 halvings deep: rows of up to 8,192 values (longer rows use numpy)
PAIRWISE_MAX = 8192
_pairwise = _leaf
for _ in range(7):
    _pairwise = _halving(_pairwise)

_AHEAD = 6  # rows touched ahead of the one summed, so that their cache lines are on the way


@njit(**_JIT)  # type: ignore[untyped-decorator]
def exact_sims(q64: Any, vectors: Any, ids: Any) -> Any:
    """``(vectors[ids].astype(float64) * q64).sum(axis=1)``, the same bits: the float64
    products summed as numpy sums a contiguous row (its reduction starts from 0.0). The rows
    a few places ahead are touched first (one value per cache line), so that memory serves
    several rows at once instead of one after the other."""
    n = ids.shape[0]
    out = np.empty(n, dtype=np.float64)
    d = q64.shape[0]
    touched = 0.0
    for j in range(min(_AHEAD, n)):
        a = ids[j]
        for k in range(0, d, 16):
            touched += vectors[a, k]
    for j in range(n):
        if j + _AHEAD < n:
            a = ids[j + _AHEAD]
            for k in range(0, d, 16):
                touched += vectors[a, k]
        r = ids[j]
        if d == 384:  # the model's width, its four leaves with constant bounds: inlined whole
            left = _leaf(vectors, r, q64, 0, 96) + _leaf(vectors, r, q64, 96, 96)
            out[j] = 0.0 + (left + (_leaf(vectors, r, q64, 192, 96) + _leaf(vectors, r, q64, 288, 96)))
        else:
            out[j] = 0.0 + _pairwise(vectors, r, q64, 0, d)
    if n and touched == np.inf:  # keeps the touches (never true for finite unit vectors)
        out[0] = out[0] + 0.0
    return out


@njit(**_JIT)  # type: ignore[untyped-decorator]
def bm25_row(indptr: Any, indices: Any, data: Any, terms: Any, counts: Any, n: int) -> Any:
    """Every chunk's BM25 score for one query: for each term in ``terms`` order,
    ``acc[indices[p]] += counts[t] * data[p]`` over its postings (float64, in that order)."""
    acc = np.zeros(n, dtype=np.float64)
    for t in range(terms.shape[0]):
        j = terms[t]
        v = counts[t]
        for p in range(indptr[j], indptr[j + 1]):
            acc[indices[p]] += v * data[p]
    return acc


_BLOCK = 2048  # values a blocked kernel reads once from memory and compares from the cache
# The counting loops add 0 or 1 to an int32 counter per block (a select, no branch), the form
# LLVM turns into vector compares; a branch and an int64 counter in a nested loop it does not.
_ONE = np.int32(1)
_ZERO = np.int32(0)


@njit(**_JIT)  # type: ignore[untyped-decorator]
def count_above(values: Any, threshold: Any) -> int:
    """``np.count_nonzero(values > threshold)``."""
    n = values.shape[0]
    total: Any = 0
    for b0 in range(0, n, _BLOCK):
        blk = values[b0 : b0 + _BLOCK]
        c: Any = _ZERO
        for k in range(blk.shape[0]):
            c += _ONE if blk[k] > threshold else _ZERO
        total += c
    return total


_PIECE = 64  # a block's values are read again a piece at a time, only where a piece holds a hit


@njit(**_JIT)  # type: ignore[untyped-decorator]
def _grown(out: Any, used: int, need: int) -> Any:
    """``out`` with room for ``need`` values (its first ``used`` kept): doubled when full."""
    if need <= out.shape[0]:
        return out
    bigger = np.empty(max(2 * out.shape[0], need), dtype=out.dtype)
    bigger[:used] = out[:used]
    return bigger


@njit(**_JIT)  # type: ignore[untyped-decorator]
def select_ge(values: Any, threshold: Any) -> Any:
    """``np.flatnonzero(values >= threshold)`` in one pass: each block is counted (vector
    compares) and, if it holds a value at or above the threshold, its pieces holding one are
    read again at once, from the cache."""
    n = values.shape[0]
    out = np.empty(1024, dtype=np.int64)
    at = 0
    for b0 in range(0, n, _BLOCK):
        blk = values[b0 : b0 + _BLOCK]
        c = _ZERO
        for k in range(blk.shape[0]):
            c += _ONE if blk[k] >= threshold else _ZERO
        if not c:
            continue
        out = _grown(out, at, at + c)
        for p0 in range(0, blk.shape[0], _PIECE):
            piece = blk[p0 : p0 + _PIECE]
            c = _ZERO
            for k in range(piece.shape[0]):
                c += _ONE if piece[k] >= threshold else _ZERO
            if c:
                for k in range(piece.shape[0]):
                    if piece[k] >= threshold:
                        out[at] = b0 + p0 + k
                        at += 1
    return out[:at]


@njit(**_JIT)  # type: ignore[untyped-decorator]
def band_counts(row: Any, lo: Any, hi: Any) -> Any:
    """For each band j: ``(np.count_nonzero(row > hi[j]), np.count_nonzero(row >= lo[j]))``."""
    n = row.shape[0]
    m = lo.shape[0]
    above = np.zeros(m, dtype=np.int64)
    at_least = np.zeros(m, dtype=np.int64)
    for b0 in range(0, n, _BLOCK):
        blk = row[b0 : b0 + _BLOCK]
        for j in range(m):
            a, c = _block_counts(blk, lo[j], hi[j])
            above[j] += a
            at_least[j] += c
    return above, at_least


@njit(inline="always", **_JIT)  # type: ignore[untyped-decorator]
def _block_counts(blk: Any, low: Any, h: Any) -> Any:
    """(values > h, values >= low) of one block, as vector compares."""
    a = _ZERO
    c = _ZERO
    for k in range(blk.shape[0]):
        x = blk[k]
        a += _ONE if x > h else _ZERO
        c += _ONE if x >= low else _ZERO
    return a, c


_CELLS = 1 << 16  # cells of the grid that finds the members of many bands in one pass


@njit(inline="always", **_JIT)  # type: ignore[untyped-decorator]
def _cell(v: Any, gmin: float, scale: float) -> int:
    """The grid cell of a value, monotone in it: 0 below the grid, 1.._CELLS on it (the top
    cell also takes values just above it), _CELLS + 1 far above (cells 0 and _CELLS + 1 meet
    no band, so a value there is skipped without a branch on the range)."""
    y = (np.float64(v) - gmin) * scale + 1.0
    return int(min(max(y, 0.0), _CELLS + 1.0))


@njit(**_JIT)  # type: ignore[untyped-decorator]
def band_members(row: Any, lo: Any, hi: Any) -> Any:
    """For each band j: ``np.count_nonzero(row > hi[j])``, and every ``(i, j)`` with
    ``lo[j] <= row[i] <= hi[j]`` (in no promised order). The counts are vector compares; the
    members of a few bands are collected block by block in the same pass, those of many in a
    pass over a grid of cells that marks which bands each cell meets (after a counting pass)."""
    n = row.shape[0]
    m = lo.shape[0]
    if m <= 5:  # one pass: a block's members are collected while it is in the cache
        above = np.zeros(m, dtype=np.int64)
        idx = np.empty(256, dtype=np.int64)
        owner = np.empty(256, dtype=np.int64)
        got = 0
        for b0 in range(0, n, _BLOCK):
            blk = row[b0 : b0 + _BLOCK]
            for j in range(m):
                h = hi[j]
                low = lo[j]
                a, c = _block_counts(blk, low, h)
                above[j] += a
                c -= a  # the band's members (lo <= hi)
                if not c:
                    continue
                idx = _grown(idx, got, got + c)
                owner = _grown(owner, got, got + c)
                for p0 in range(0, blk.shape[0], _PIECE):
                    piece = blk[p0 : p0 + _PIECE]
                    c = _ZERO
                    for k in range(piece.shape[0]):
                        x = piece[k]
                        c += _ONE if (x >= low) & (x <= h) else _ZERO
                    if c:
                        for k in range(piece.shape[0]):
                            x = piece[k]
                            if x >= low and x <= h:
                                idx[got] = b0 + p0 + k
                                owner[got] = j
                                got += 1
        return above, idx[:got], owner[:got]
    above, at_least = band_counts(row, lo, hi)
    total = 0
    for j in range(m):
        total += at_least[j] - above[j]
    idx = np.empty(total, dtype=np.int64)
    owner = np.empty(total, dtype=np.int64)
    got = 0
    gmin = np.float64(lo[0])
    gmax = np.float64(hi[0])
    for j in range(m):
        gmin = min(gmin, np.float64(lo[j]))
        gmax = max(gmax, np.float64(hi[j]))
    scale = (_CELLS - 1) / (gmax - gmin) if gmax > gmin else 0.0
    # cell 0: below gmin; cells 1.._CELLS: the grid; _CELLS + 1: above gmax
    ptr = np.zeros(_CELLS + 3, dtype=np.int64)
    for j in range(m):
        for c in range(_cell(lo[j], gmin, scale), _cell(hi[j], gmin, scale) + 1):
            ptr[c + 1] += 1
    for c in range(_CELLS + 2):
        ptr[c + 1] += ptr[c]
    bands = np.empty(ptr[_CELLS + 2], dtype=np.int64)
    fill = ptr.copy()
    for j in range(m):
        for c in range(_cell(lo[j], gmin, scale), _cell(hi[j], gmin, scale) + 1):
            bands[fill[c]] = j
            fill[c] += 1
    for i in range(n):
        c = _cell(row[i], gmin, scale)  # no branch on the range: outside it, an empty cell
        for t in range(ptr[c], ptr[c + 1]):
            j = bands[t]
            if row[i] >= lo[j] and row[i] <= hi[j]:
                idx[got] = i
                owner[got] = j
                got += 1
    return above, idx[:got], owner[:got]


@njit(**_JIT)  # type: ignore[untyped-decorator]
def score_beats(row: Any, s: Any, x: Any) -> Any:
    """For each j: ``np.count_nonzero(row > s[j]) + np.count_nonzero(row[:x[j]] == s[j])``,
    the chunks beating chunk ``x[j]`` of score ``s[j]`` (ties by chunk order), blocked."""
    n = row.shape[0]
    m = s.shape[0]
    out = np.zeros(m, dtype=np.int64)
    for b0 in range(0, n, _BLOCK):
        blk = row[b0 : b0 + _BLOCK]
        for j in range(m):
            sj = s[j]
            c = _ZERO
            for k in range(blk.shape[0]):
                c += _ONE if blk[k] > sj else _ZERO
            e = min(blk.shape[0], x[j] - b0)
            for k in range(e):
                c += _ONE if blk[k] == sj else _ZERO
            out[j] += c
    return out


@njit(**_JIT)  # type: ignore[untyped-decorator]
def level_counts(values: Any, lo: float, scale: float, size: int) -> Any:
    """``np.bincount(keys, minlength=size)`` and the ``keys`` (uint16, ``size`` <= 65536): a
    value's level is ``int(clip((float64(v) - lo) * scale, 0, size - 1))``, monotone in v
    (:func:`levels_of`). The keys are computed in a first loop (vector code), then counted."""
    n = values.shape[0]
    keys = np.empty(n, dtype=np.uint16)
    top = np.float64(size - 1)
    for i in range(n):
        k = (np.float64(values[i]) - lo) * scale
        keys[i] = np.uint16(min(max(k, 0.0), top))
    counts = np.zeros(size, dtype=np.int64)
    for i in range(n):
        counts[keys[i]] += 1
    return counts, keys


@njit(**_JIT)  # type: ignore[untyped-decorator]
def level_members(keys: Any, wanted: Any) -> Any:
    """Positions and levels of the values whose level (``keys``) is ``wanted`` (a bool per level)."""
    n = keys.shape[0]
    c = 0
    for b0 in range(0, n, _BLOCK):
        blk = keys[b0 : b0 + _BLOCK]
        a = _ZERO
        for k in range(blk.shape[0]):
            a += _ONE if wanted[blk[k]] else _ZERO
        c += a
    idx = np.empty(c, dtype=np.int64)
    out = np.empty(c, dtype=np.int64)
    c = 0
    for i in range(n):
        k = keys[i]
        if wanted[k]:
            idx[c] = i
            out[c] = k
            c += 1
    return idx, out


@njit(**_JIT)  # type: ignore[untyped-decorator]
def split_members(v: Any, idx: Any, keys: Any, k_lo: Any, k_hi: Any, lo: Any, hi: Any) -> Any:
    """For the members ``idx`` (values ``v``, levels ``keys``) of some bands' levels: for each
    band j, how many members in its levels ``[k_lo[j], k_hi[j]]`` are above ``hi[j]``, and every
    ``(idx[i], j)`` with such a member inside ``[lo[j], hi[j]]``, in member order (the loop
    ``DenseRow._count`` ran in Python, band by band)."""
    m = lo.shape[0]
    above = np.zeros(m, dtype=np.int64)
    got = 0
    for i in range(v.shape[0]):
        for j in range(m):
            if keys[i] >= k_lo[j] and keys[i] <= k_hi[j] and v[i] >= lo[j] and v[i] <= hi[j]:
                got += 1
    out = np.empty(got, dtype=np.int64)
    owner = np.empty(got, dtype=np.int64)
    got = 0
    for j in range(m):
        for i in range(v.shape[0]):
            if keys[i] >= k_lo[j] and keys[i] <= k_hi[j]:
                if v[i] > hi[j]:
                    above[j] += 1
                elif v[i] >= lo[j]:
                    out[got] = idx[i]
                    owner[got] = j
                    got += 1
    return above, out, owner


def levels_of(values: Any, lo: float, scale: float, size: int) -> Any:
    """The level of each value, as the kernels compute it (numpy, for a few values)."""
    k = (np.asarray(values, dtype=np.float64) - lo) * scale
    return np.clip(k, 0.0, float(size - 1)).astype(np.int64)


def warm() -> None:
    """Load every kernel a run uses, with the argument types it uses them with (compiled on a
    machine's first run, read from numba's cache afterwards: about half a second of loading,
    which a run does in a thread while it embeds, instead of at its first query)."""
    f32, f64, i32, i64 = np.float32, np.float64, np.int32, np.int64
    row32, row64 = np.zeros(64, dtype=f32), np.zeros(64, dtype=f64)
    ids = np.arange(3, dtype=i64)
    exact_sims(np.zeros(8, dtype=f64), np.zeros((4, 8), dtype=f32), ids)
    for row in (row32, row64):
        select_ge(row, f64(0.5))
        level_counts(row, 0.0, 1.0, 1024)
    count_above(row64, 0.0)
    band = np.zeros(1, dtype=f32)
    band_members(row32, band, band)
    band_members(row32, np.zeros(8, dtype=f32), np.zeros(8, dtype=f32))
    score_beats(row64, np.zeros(1, dtype=f64), ids[:1])
    level_members(np.zeros(64, dtype=np.uint16), np.zeros(1024, dtype=np.bool_))
    split_members(row32[:3], ids, ids, ids[:1], ids[:1], band, band)
    indptr32 = np.zeros(2, dtype=i32)
    bm25_row(indptr32, np.zeros(0, dtype=i32), np.zeros(0, dtype=f64), ids[:1] * 0, np.ones(1, dtype=f64), 4)

    index_kernels.warm_index_kernels()
