"""Production rates with exact bounds (METHODS.md "Production rates and the monitor").

Pure statistics over counts; nothing here reads the store (``evalcore.read.traffic.estimates``
gathers the counts of a deployment version).

A **stratum** is one period's answered (or refused) lines of a deployment version: ``N`` lines in
the sampling frame, of which a uniform sample without replacement (the first ``n`` lines of a
seeded random order) was labelled. ``k`` of the ``n`` have the counted property (for example
"off-topic"); ``unsure`` more carry a label that leaves the property unknown. ``M``, the number of
the ``N`` lines with the property, is unknown; the number of hits among ``n`` lines drawn without
replacement is hypergeometric (``N``, ``M``, ``n``), so ``M`` is bounded **exactly**, with no
normal approximation, by inverting that distribution (scipy's ``hypergeom``).

Unsure lines count *without* the property for every lower bound and *with* it for every upper
bound: the bounds then hold whatever the unsure lines really are, since each bound only grows
with ``k``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from evalcore.errors import InputError

if TYPE_CHECKING:  # pragma: no cover
    import numpy as np
    from numpy.typing import NDArray

    IntArray = NDArray[np.int64]


@dataclass(frozen=True, slots=True)
class Stratum:
    """One stratum of one period: ``lines`` (N) in the frame, ``labelled`` (n) of its uniform
    sample labelled, ``hits`` (k) of those with the counted property, ``unsure`` of those whose
    property is unknown (counted without it for lower bounds, with it for upper bounds)."""

    lines: int
    labelled: int
    hits: int
    unsure: int = 0


@dataclass(frozen=True, slots=True)
class Bounds:
    """A rate's point estimate and its bounds; any of them None where it is not defined."""

    estimate: float | None
    lower: float | None
    upper: float | None

    def to_json(self) -> dict[str, float | None]:
        return {"estimate": self.estimate, "lower": self.lower, "upper": self.upper}


def _whole(value: Any, field: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        if isinstance(value, float) and math.isfinite(value) and value == int(value):
            return int(value)
        raise InputError(f"{field} must be a whole number, got {value!r}")
    return value


def check_stratum(s: Stratum, field: str = "stratum") -> tuple[int, int, int, int]:
    """``(N, n, k, unsure)`` of ``s`` once checked: whole numbers, ``0 <= k``, ``0 <= unsure``,
    ``k + unsure <= n <= N``. Raises :class:`~evalcore.errors.InputError` naming the field."""
    if not isinstance(s, Stratum):
        raise InputError(f"{field} must be a Stratum, got {type(s).__name__}")
    big_n = _whole(s.lines, f"{field}.lines")
    n = _whole(s.labelled, f"{field}.labelled")
    k = _whole(s.hits, f"{field}.hits")
    u = _whole(s.unsure, f"{field}.unsure")
    if big_n < 0:
        raise InputError(f"{field}.lines must be at least 0, got {big_n}")
    if n < 0:
        raise InputError(f"{field}.labelled must be at least 0, got {n}")
    if k < 0:
        raise InputError(f"{field}.hits must be at least 0, got {k}")
    if u < 0:
        raise InputError(f"{field}.unsure must be at least 0, got {u}")
    if n > big_n:
        raise InputError(f"{field}.labelled ({n}) must not exceed {field}.lines ({big_n})")
    if k + u > n:
        raise InputError(f"{field}.hits + {field}.unsure ({k + u}) must not exceed {field}.labelled ({n})")
    return big_n, n, k, u


def check_delta(delta: Any, field: str = "delta") -> float:
    """``delta`` as a float strictly between 0 and 1, else :class:`InputError` naming ``field``."""
    if isinstance(delta, bool) or not isinstance(delta, (int, float)):
        raise InputError(f"{field} must be a number between 0 and 1 (exclusive), got {delta!r}")
    d = float(delta)
    if not (0.0 < d < 1.0):  # NaN fails too
        raise InputError(f"{field} must lie strictly between 0 and 1, got {delta!r}")
    return d


#: Points tried per step of :func:`last_true`: each step narrows the range 16-fold, so a frame
#: of 10 million lines takes six steps (one vectorised call each).
SEARCH_POINTS = 16


def last_true(lo: IntArray, hi: IntArray, pred: Any) -> IntArray:
    """Per row, the largest ``m`` in ``[lo, hi]`` with ``pred(m)`` true, for a ``pred`` true at
    ``lo`` and monotone (true, then false). ``pred`` takes an array of shape ``(rows, points)``
    and answers one of booleans of the same shape; each step tries :data:`SEARCH_POINTS`
    evenly spaced points of every row's open range."""
    import numpy as np

    lo = lo.astype(np.int64).copy()
    hi = np.maximum(hi.astype(np.int64), lo)
    steps = np.arange(1, SEARCH_POINTS + 1, dtype=np.int64)
    while (hi > lo).any():
        step = np.maximum(1, -(-(hi - lo) // SEARCH_POINTS))
        points = np.minimum(lo[:, None] + step[:, None] * steps[None, :], hi[:, None])
        ok = np.asarray(pred(points), dtype=bool) & (points > lo[:, None])
        t = ok.sum(axis=1)  # monotone: the first t points hold
        got = t > 0
        new_lo = np.where(got, points[np.arange(len(lo)), np.maximum(t - 1, 0)], lo)
        below = t < SEARCH_POINTS
        new_hi = np.where(below, points[np.arange(len(lo)), np.minimum(t, SEARCH_POINTS - 1)] - 1, hi)
        lo, hi = new_lo, np.maximum(np.minimum(new_hi, hi), new_lo)
    return lo


def count_bounds_arrays(
    big_n: IntArray, n: IntArray, k_low: IntArray, k_high: IntArray, delta: NDArray[np.float64]
) -> tuple[IntArray, IntArray]:
    """Vectorised :func:`count_bounds` over strata (already checked): ``k_low`` the hits for the
    lower bound, ``k_high`` (hits + unsure) for the upper, ``delta`` each bound's one-sided level."""
    import numpy as np
    from scipy.stats import hypergeom

    # U: the largest M with P(X <= k_high | M) > delta; the cdf falls as M grows, and is 1 at M = k_high.
    col = np.s_[:, None]

    def upper_ok(m: IntArray) -> NDArray[np.bool_]:
        return np.asarray(hypergeom.cdf(k_high[col], big_n[col], m, n[col]) > delta[col])

    upper = last_true(np.minimum(k_high, big_n), big_n - (n - k_high), upper_ok)

    # L: the smallest M with P(X >= k_low | M) > delta; the tail grows with M, and is 1 at M = N - n + k_low.
    # Searched as the largest j = N - M with P(X >= k_low | N - j) > delta.
    def lower_ok(j: IntArray) -> NDArray[np.bool_]:
        return np.asarray(hypergeom.sf(k_low[col] - 1, big_n[col], big_n[col] - j, n[col]) > delta[col])

    j = last_true(n - k_low, big_n - k_low, lower_ok)
    lower = big_n - j
    none = n == 0
    return np.where(none, 0, lower).astype(np.int64), np.where(none, big_n, upper).astype(np.int64)


def count_bounds(s: Stratum, delta: float) -> tuple[int, int]:
    """Exact bounds ``(L, U)`` on ``M``, the number of the stratum's ``N`` lines with the property,
    **each one-sided at confidence 1 - delta**.

    ``U`` is the largest ``M`` with ``P(X <= k | N, M, n) > delta`` and ``L`` the smallest ``M``
    with ``P(X >= k | N, M, n) > delta`` (``X`` hypergeometric). Guarantee: for the true ``M``,
    ``U < M`` happens only when the observed ``k`` lies in a lower tail of mass at most ``delta``
    of the true distribution, so ``P(U >= M) >= 1 - delta``; the same for ``L``. Values the sample
    rules out with certainty are never inside (``M >= k``, ``N - M >= n - k``); ``n = 0`` gives
    ``(0, N)``. Unsure lines: ``k`` without them for ``L``, ``k + unsure`` for ``U``.
    """
    import numpy as np

    big_n, n, k, u = check_stratum(s)
    d = check_delta(delta)
    low, high = count_bounds_arrays(np.array([big_n]), np.array([n]), np.array([k]), np.array([k + u]), np.array([d]))
    return int(low[0]), int(high[0])


def _random_strata(strata: Sequence[Stratum]) -> int:
    """How many strata need a bound at all: one labelled in part (0 < n < N). A stratum with no
    label is bounded by (0, N) and a fully labelled one by its counts, both with certainty, so
    they spend none of the error budget."""
    return sum(1 for s in strata if 0 < s.labelled < s.lines)


def _checked(strata: Sequence[Stratum], field: str) -> list[tuple[int, int, int, int]]:
    if isinstance(strata, (str, bytes)) or not isinstance(strata, Sequence):
        raise InputError(f"{field} must be a list of strata")
    return [check_stratum(s, f"{field}[{i}]") for i, s in enumerate(strata)]


def _sums(rows: list[tuple[int, int, int, int]], per_bound: float) -> tuple[int, int]:
    """Sum of the strata's lower and upper bounds, each one-sided at ``per_bound``."""
    import numpy as np

    if not rows:
        return 0, 0
    a = np.array(rows, dtype=np.int64).reshape(-1, 4)
    low, high = count_bounds_arrays(a[:, 0], a[:, 1], a[:, 2], a[:, 2] + a[:, 3], np.full(len(a), per_bound))
    return int(low.sum()), int(high.sum())


def _split_sums(
    rows_c: list[tuple[int, int, int, int]], rows_o: list[tuple[int, int, int, int]], per_bound: float
) -> tuple[int, int, int, int]:
    """:func:`_sums` of both lists in one search: ``(L_c, U_c, L_o, U_o)``."""
    import numpy as np

    rows = rows_c + rows_o
    if not rows:
        return 0, 0, 0, 0
    a = np.array(rows, dtype=np.int64).reshape(-1, 4)
    low, high = count_bounds_arrays(a[:, 0], a[:, 1], a[:, 2], a[:, 2] + a[:, 3], np.full(len(a), per_bound))
    c = len(rows_c)
    return int(low[:c].sum()), int(high[:c].sum()), int(low[c:].sum()), int(high[c:].sum())


def horvitz_thompson(rows: list[tuple[int, int, int, int]]) -> float | None:
    """``sum N k / n``: the unbiased estimate of ``sum M`` (unsure lines counted without the
    property); None when a stratum with lines has no label."""
    total = 0.0
    for big_n, n, k, _u in rows:
        if big_n == 0:
            continue
        if n == 0:
            return None
        total += big_n * k / n
    return total


def _ratio(num: float, den: float) -> float | None:
    return num / den if den > 0 else None


def rate_bounds(counted: Sequence[Stratum], other: Sequence[Stratum], delta: float) -> Bounds:
    """The rate ``sum M_counted / (sum M_counted + sum M_other)`` with bounds at confidence 1 - delta.

    For the bluff rate, ``counted`` are the answered strata and ``other`` the refused ones (the
    property: off-topic); for the lost rate, ``counted`` are the refused strata and ``other`` the
    answered ones (the property: answerable with the answer in the hits).

    ``upper = sum U_counted / (sum U_counted + sum L_other)`` and ``lower = sum L_counted /
    (sum L_counted + sum U_other)``. Guarantee: the rate grows with every ``M_counted`` and falls
    with every ``M_other``, so whenever each stratum's bounds hold, the true rate lies in
    ``[lower, upper]``. Each side uses one one-sided bound per stratum; with ``S`` strata that
    need one (labelled in part), each is taken at ``delta / (2 S)``, so by the union bound all
    ``2 S`` hold together with probability at least ``1 - delta``. ``estimate``: the
    Horvitz-Thompson counts ``N k / n`` in the same ratio. Each figure is None where its
    denominator is 0 (or, for the estimate, where a stratum with lines has no label).
    """
    d = check_delta(delta)
    rows_c = _checked(counted, "counted")
    rows_o = _checked(other, "other")
    used = _random_strata(counted) + _random_strata(other)
    per_bound = d / (2 * used) if used else d
    low_c, high_c, low_o, high_o = _split_sums(rows_c, rows_o, per_bound)
    est_c = horvitz_thompson(rows_c)
    est_o = horvitz_thompson(rows_o)
    estimate = None if est_c is None or est_o is None else _ratio(est_c, est_c + est_o)
    return Bounds(estimate, _ratio(low_c, low_c + high_o), _ratio(high_c, high_c + low_o))


def share_bounds(strata: Sequence[Stratum], delta: float) -> Bounds:
    """The share ``sum M / sum N`` (for example: of the answered lines, those that went to
    off-topic questions), two-sided at confidence 1 - delta.

    ``lower = sum L / sum N``, ``upper = sum U / sum N``; with ``S`` strata labelled in part each
    one-sided bound is at ``delta / (2 S)`` (union bound over the ``2 S`` bounds). None throughout
    when there is no line.
    """
    d = check_delta(delta)
    rows = _checked(strata, "strata")
    used = _random_strata(strata)
    per_bound = d / (2 * used) if used else d
    low, high = _sums(rows, per_bound)
    lines = sum(r[0] for r in rows)
    est = horvitz_thompson(rows)
    return Bounds(
        None if est is None else _ratio(est, lines),
        _ratio(low, lines),
        _ratio(high, lines),
    )
