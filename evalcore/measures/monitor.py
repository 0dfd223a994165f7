"""The claim monitor: anytime-valid bounds on a deployment version's rate (METHODS.md "Production
rates and the monitor").

A version's labels arrive one by one and its periods are added one by one; anyone may look at
the monitor at any moment, as often as they like. The monitor's guarantee holds over all those
looks at once: **the chance that the true rate ever lies outside the shown bounds, at any look
during the whole life of the version, is at most delta** (so a claim that holds is shown
``breached`` at some look with probability at most delta).

Two families of bounds on ``T_counted = sum M`` and ``T_other = sum M`` (over the version's
periods) are taken, each with half of delta, and intersected:

- **per period** (:func:`sequence_bounds`): each stratum's confidence sequence for its own ``M``
  (Waudby-Smith & Ramdas's prior-posterior ratio, uniform prior), period ``i`` spending
  ``period_delta(i, delta / 4)`` on each of its two strata; exact and tight while a version has
  a few periods, or a period is labelled heavily;
- **pooled** (:func:`pooled_bound`): one exponential supermartingale over every label of the
  version, so that evidence adds up across periods (the per-period family alone never gets
  tighter than one period's 30 labels allow); four one-sided bounds, each over a grid of bets.

Everything depends on the counts only (``N``, ``n``, ``k`` per stratum), never on the order in
which the labels came.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from evalcore.errors import InputError
from evalcore.measures.production import Stratum, check_delta, check_stratum, last_true

if TYPE_CHECKING:  # pragma: no cover
    import numpy as np
    from numpy.typing import NDArray

    IntArray = NDArray[np.int64]
    FloatArray = NDArray[np.float64]

State = Literal["holding", "breached", "undecided"]

#: The bets of the pooled supermartingale (per label, on the scale of one line's 0/1): a grid
#: from cautious to bold, each a separate bound at an equal share of the level (union bound).
BETS = (0.15, 0.35, 0.8, 1.8, 4.0)
#: The largest bet per label (before the factor ``N / (N - h) <= 2``): a bolder one only adds
#: its compensator's ``e^c``.
MAX_BET = 4.0


def period_delta(index: int, delta: float) -> float:
    """The level spent on period ``index`` (1-based) of a version: ``delta / (index (index + 1))``.
    ``sum_i 1 / (i (i + 1)) = 1``, so a version with any number of periods spends at most delta."""
    if isinstance(index, bool) or not isinstance(index, int) or index < 1:
        raise InputError(f"index must be a whole number of at least 1, got {index!r}")
    return check_delta(delta) / (index * (index + 1))


# --- per stratum: the prior-posterior ratio confidence sequence --------------------------------


def _log_choose(a: FloatArray, b: FloatArray) -> FloatArray:
    from scipy.special import gammaln

    return gammaln(a + 1) - gammaln(b + 1) - gammaln(a - b + 1)


def _ppr_log_score(big_n: IntArray, n: IntArray, k: IntArray, m: IntArray) -> FloatArray:
    """``log((N + 1) pi_n(M))``, ``pi_n(M) = C(M, k) C(N - M, n - k) / C(N + 1, n + 1)``: the
    posterior of ``M`` under a uniform prior on ``0..N``, over the prior's ``1 / (N + 1)``."""
    import numpy as np

    f = np.float64
    return (
        np.log(big_n + f(1))
        + _log_choose(m.astype(f), k.astype(f))
        + _log_choose((big_n - m).astype(f), (n - k).astype(f))
        - _log_choose((big_n + 1).astype(f), (n + 1).astype(f))
    )


def ppr_bounds_arrays(
    big_n: IntArray, n: IntArray, k_low: IntArray, k_high: IntArray, log_delta: FloatArray
) -> tuple[IntArray, IntArray]:
    """Vectorised :func:`sequence_bounds` (strata already checked): the smallest ``M`` of the set
    computed with ``k_low`` hits and the largest of the set computed with ``k_high``.

    The score is log-concave in ``M`` (a product of two binomial coefficients), so each set is an
    interval around the posterior mode ``floor(k (N + 1) / n)``, where ``(N + 1) pi_n >= 1 > delta``;
    each end is found by bisection."""
    import numpy as np

    shape = np.shape(big_n)
    big_n, n, k_low, k_high = (np.ravel(x).astype(np.int64) for x in (big_n, n, k_low, k_high))
    log_delta = np.ravel(np.broadcast_to(log_delta, shape)).astype(np.float64)

    def mode(k: IntArray) -> IntArray:
        m = np.where(n > 0, (k * (big_n + 1)) // np.maximum(n, 1), 0)
        return np.clip(m, k, big_n - n + k)

    # lower end: the smallest M in [k, mode] in the set; searched as the largest j = mode - M.
    top = mode(k_low)
    col = np.s_[:, None]

    def low_ok(j: IntArray) -> NDArray[np.bool_]:
        return np.asarray(_ppr_log_score(big_n[col], n[col], k_low[col], top[col] - j) > log_delta[col])

    j = last_true(np.zeros_like(top), top - k_low, low_ok)
    lower = top - j
    peak = mode(k_high)

    def high_ok(m: IntArray) -> NDArray[np.bool_]:
        return np.asarray(_ppr_log_score(big_n[col], n[col], k_high[col], m) > log_delta[col])

    upper = last_true(peak, big_n - n + k_high, high_ok)
    none = n == 0
    low = np.where(none, 0, lower).astype(np.int64).reshape(shape)
    return low, np.where(none, big_n, upper).astype(np.int64).reshape(shape)


def sequence_bounds(s: Stratum, delta: float) -> tuple[int, int]:
    """A confidence **sequence** ``(L_n, U_n)`` for ``M``: with probability at least 1 - delta the
    true ``M`` lies in the bounds at every ``n`` at once, however many labels come and however
    often one looks.

    The prior-posterior ratio of Waudby-Smith & Ramdas ("Confidence sequences for sampling without
    replacement", 2020), uniform prior on ``M`` in ``0..N``: ``pi_n(M) = C(M, k) C(N - M, n - k) /
    C(N + 1, n + 1)``, and the set is ``{M : (N + 1) pi_n(M) > delta}``. Guarantee: for the true
    ``M``, ``pi_0(M) / pi_n(M)`` is the likelihood of the labels under the prior's mixture over
    their likelihood under the truth, a nonnegative martingale that starts at 1 as labels arrive
    in the sample's random order; Ville's inequality bounds the chance it ever reaches
    ``1 / delta`` by delta. Unsure lines: without the property for ``L``, with it for ``U`` (both
    ends grow with ``k``)."""
    import numpy as np

    big_n, n, k, u = check_stratum(s)
    d = check_delta(delta)
    low, high = ppr_bounds_arrays(
        np.array([big_n]), np.array([n]), np.array([k]), np.array([k + u]), np.array([math.log(d)])
    )
    return int(low[0]), int(high[0])


# --- pooled over the version: one supermartingale over every label ------------------------------


def _reference(big_n: IntArray) -> IntArray:
    """Per version (leading axes), the lines of its first stratum with lines: the scale the pooled
    bets are set against. It is known before any of the version's labels, so the bets are fixed
    in advance (predictable) whatever comes later."""
    import numpy as np

    has = big_n > 0
    first = np.argmax(has, axis=-1)
    ref = np.take_along_axis(big_n, first[..., None], axis=-1)
    return np.maximum(ref, 1)


def pooled_coefficients(
    big_n: IntArray, n: IntArray, k: IntArray, bet: float, sign: int, ref: IntArray
) -> tuple[FloatArray, FloatArray]:
    """Per stratum, ``(A, B)`` with: the log of the pooled supermartingale at candidate counts
    ``M`` is at least ``sign * (sum A - sum B M)``... precisely, for ``sign = +1`` (bets against
    too small an ``M``) it is at least ``sum A - sum B M``, and for ``sign = -1`` (bets against
    too large an ``M``) at least ``sum B M - sum A``.

    For one stratum, ``Y_i = (M - k_i) / (N - i)``, the share with the property among the lines
    not yet labelled, is a martingale as labels arrive in the sample's random order; so is
    ``W_n = Y_0 - Y_n = (k_n - n M / N) / (N - n)``, whose step at label ``i + 1`` is ``(X - Y_i) /
    (N - i - 1)``, ``X`` being Bernoulli(``Y_i``) given the past. A fixed bet ``lam`` on ``W`` is a
    bet ``c_i = lam / (N - i - 1)`` on ``X - Y_i``; Bennett's ``log E exp(c (X - Y)) <= Y psi(c)``,
    ``psi(c) = e^c - 1 - c`` (any real ``c``), and ``Y_i <= M / (N - i)`` make ``exp(sign lam W_n -
    M sum_i psi(sign c_i) / (N - i))`` a nonnegative supermartingale, and a product of them over
    strata (each stratum's labels in its own random order) is one too. Three steps only lower
    the process, so the bound stays valid: the sum is replaced by ``h psi(sign c_h) / (N - h + 1)``
    (``psi(sign c)`` grows with ``c``); only the first ``h = min(n, floor(N / 2))`` labels enter
    (the bets stay below ``2 lam / N``); and, from counts alone, the hits among those ``h`` are
    taken at their least favourable value (at least ``k - (n - h)``, at most ``min(k, h)``).
    ``lam = N min(bet N / ref, MAX_BET)``: about ``bet N / ref`` per label, more for a larger
    stratum, as a Horvitz-Thompson weight would have it, and never above ``2 MAX_BET``."""
    parts = _pooled_parts(big_n, n, k, sign, ref)
    return _pooled_at(parts, bet, sign)


def _pooled_parts(big_n: IntArray, n: IntArray, k: IntArray, sign: int, ref: IntArray) -> tuple[FloatArray, ...]:
    """What :func:`pooled_coefficients` needs that does not depend on the bet (0 for a stratum
    with no label entering)."""
    import numpy as np

    h = np.minimum(n, big_n // 2)
    live = h > 0
    rest = np.where(live, big_n - h, 1).astype(np.float64)
    kk = np.maximum(0, k - (n - h)) if sign > 0 else np.minimum(k, h)
    lines = np.where(live, big_n, 0).astype(np.float64)
    ratio = lines / ref
    kk_rest = kk / rest
    h_lines_rest = h / (np.maximum(lines, 1.0) * rest)
    h_rest1 = h / (rest + 1)
    return lines, ratio, rest, kk_rest, h_lines_rest, h_rest1


def _pooled_at(parts: tuple[FloatArray, ...], bet: float, sign: int) -> tuple[FloatArray, FloatArray]:
    import numpy as np

    lines, ratio, rest, kk_rest, h_lines_rest, h_rest1 = parts
    lam = lines * np.minimum(bet * ratio, MAX_BET)  # a stratum with no label bets nothing
    c = (sign * lam) / rest
    psi = np.expm1(c) - c
    return lam * kk_rest, lam * h_lines_rest + sign * h_rest1 * psi


def _knapsack_min(b: FloatArray, need: FloatArray, cap: FloatArray) -> FloatArray:
    """The least ``sum x`` with ``sum b x >= need``, ``0 <= x <= cap`` (``b >= 0``), per version
    (last axis: strata); ``sum cap`` where nothing reaches the need."""
    import numpy as np

    order = np.argsort(-b, axis=-1, kind="stable")
    bs = np.take_along_axis(b, order, axis=-1)
    cs = np.take_along_axis(cap, order, axis=-1)
    gain = np.cumsum(bs * cs, axis=-1)
    used = np.cumsum(cs, axis=-1)
    idx = np.minimum((gain < need[..., None]).sum(axis=-1), b.shape[-1] - 1)[..., None]
    bi = np.take_along_axis(bs, idx, axis=-1)[..., 0]
    gi = np.take_along_axis(gain - bs * cs, idx, axis=-1)[..., 0]
    ui = np.take_along_axis(used - cs, idx, axis=-1)[..., 0]
    x = ui + (need - gi) / np.where(bi > 0, bi, 1.0)
    x = np.where(gain[..., -1] < need, cap.sum(axis=-1), x)
    return np.where(need > 0, x, 0.0)


def _knapsack_max(d: FloatArray, budget: FloatArray, cap: FloatArray) -> FloatArray:
    """The largest ``sum x`` with ``sum d x <= budget``, ``0 <= x <= cap`` (``d`` of any sign),
    per version; 0 where even ``x = 0`` breaks the budget."""
    import numpy as np

    free = d <= 0
    budget = budget - (np.where(free, d, 0.0) * cap).sum(axis=-1)  # strata that cost nothing: full
    base = np.where(free, cap, 0.0).sum(axis=-1)
    key = np.where(free, np.inf, d)
    order = np.argsort(key, axis=-1, kind="stable")
    ds = np.take_along_axis(np.where(free, 0.0, d), order, axis=-1)
    cs = np.take_along_axis(np.where(free, 0.0, cap), order, axis=-1)
    cost = np.cumsum(ds * cs, axis=-1)
    used = np.cumsum(cs, axis=-1)
    idx = np.minimum((cost <= budget[..., None]).sum(axis=-1), d.shape[-1] - 1)[..., None]
    di = np.take_along_axis(ds, idx, axis=-1)[..., 0]
    ci = np.take_along_axis(cost - ds * cs, idx, axis=-1)[..., 0]
    ui = np.take_along_axis(used - cs, idx, axis=-1)[..., 0]
    fill = np.where(
        di > 0, np.minimum(np.take_along_axis(cs, idx, axis=-1)[..., 0], (budget - ci) / np.where(di > 0, di, 1.0)), 0.0
    )
    x = np.where(cost[..., -1] <= budget, used[..., -1], ui + fill)
    return np.where(budget >= 0, base + x, 0.0)


def pooled_bound(
    big_n: IntArray,
    n: IntArray,
    k: IntArray,
    floor: IntArray,
    ceiling: IntArray,
    alpha: float,
    side: Literal["lower", "upper"],
) -> IntArray:
    """A one-sided anytime-valid bound on ``sum M`` over the strata on the last axis (leading
    axes: separate versions), at level ``alpha``: for each bet of :data:`BETS` (at ``alpha /
    len(BETS)`` each), Ville's inequality keeps the candidates ``M`` whose supermartingale
    (:func:`pooled_coefficients`) stays under ``len(BETS) / alpha``; with ``floor <= M <=
    ceiling`` (what the sample makes certain) the extreme ``sum M`` among them is a fractional
    knapsack. The bound is the best over the bets, rounded outwards to a whole count."""
    import numpy as np

    level = math.log(len(BETS) / alpha)
    shape = big_n.shape[:-1]
    width = big_n.shape[-1] if big_n.ndim else 1
    big_n, n, k, floor, ceiling = (
        np.asarray(x, dtype=np.int64).reshape(-1, width) for x in (big_n, n, k, floor, ceiling)
    )
    ref = _reference(big_n)
    cap = (ceiling - floor).astype(np.float64)
    base = floor.sum(axis=-1).astype(np.float64)
    sign = 1 if side == "lower" else -1
    parts = _pooled_parts(big_n, n, k, sign, ref)
    if side == "lower":
        best = base.copy()
        for bet in BETS:
            a, b = _pooled_at(parts, bet, sign)
            need = a.sum(axis=-1) - level - (b * floor).sum(axis=-1)
            rows = np.flatnonzero(need > 0)  # elsewhere every candidate down to the floor is kept
            if rows.size:
                found = base[rows] + _knapsack_min(b[rows], need[rows], cap[rows])
                best[rows] = np.maximum(best[rows], found)
        low: IntArray = np.ceil(best - 1e-9).astype(np.int64).reshape(shape)
        return low
    best = base + cap.sum(axis=-1)
    for bet in BETS:
        a, d = _pooled_at(parts, bet, sign)
        budget = level + a.sum(axis=-1) - (d * floor).sum(axis=-1)
        rows = np.flatnonzero((d * cap).sum(axis=-1) > budget)  # elsewhere every candidate up to the ceiling is kept
        if rows.size:
            found = base[rows] + _knapsack_max(d[rows], budget[rows], cap[rows])
            best[rows] = np.minimum(best[rows], found)
    high: IntArray = np.floor(best + 1e-9).astype(np.int64).reshape(shape)
    return high


# --- the monitor -------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class VersionCounts:
    """The version's strata as arrays (last axis: periods, in order): lines, labels, and hits
    for lower bounds (``k``) and for upper bounds (``k + unsure``)."""

    lines: IntArray
    labelled: IntArray
    k_low: IntArray
    k_high: IntArray

    @classmethod
    def of(cls, strata: Sequence[Stratum], field: str) -> VersionCounts:
        import numpy as np

        if isinstance(strata, (str, bytes)) or not isinstance(strata, Sequence):
            raise InputError(f"{field} must be a list of strata")
        rows = [check_stratum(s, f"{field}[{i}]") for i, s in enumerate(strata)]
        a = np.array(rows, dtype=np.int64).reshape(-1, 4)
        return cls(a[:, 0], a[:, 1], a[:, 2], a[:, 2] + a[:, 3])


def per_period_bounds(v: VersionCounts, delta: float) -> tuple[IntArray, IntArray]:
    """Each stratum's confidence sequence, period ``i`` (1-based, last axis) at
    ``period_delta(i, delta)``: arrays of lower and upper bounds per stratum."""
    import numpy as np

    index = np.arange(1, v.lines.shape[-1] + 1, dtype=np.float64)
    log_delta = np.broadcast_to(np.log(delta / (index * (index + 1))), v.lines.shape)
    return ppr_bounds_arrays(v.lines, v.labelled, v.k_low, v.k_high, log_delta)


def version_totals(
    v: VersionCounts,
    delta: float,
    per_period: tuple[IntArray, IntArray] | None = None,
    need: Literal["both", "lower", "upper"] = "both",
) -> tuple[IntArray, IntArray]:
    """Anytime-valid ``(L, U)`` on ``sum M`` over the version's periods (last axis) at ``delta``:
    ``delta / 2`` for the per-period family (``per_period``: its bounds, when already computed at
    that level) and ``delta / 2`` for the pooled one, ``delta / 8`` to each of four bounds: the
    lower and the upper, each computed on the lines with the property and on those without
    (Bennett's bound is tight for a rare side, so whichever side is rarer gives the better one).
    ``need``: "lower" or "upper" skips the pooled work for the other end (it is then the
    per-period family's alone: still valid, only wider)."""
    import numpy as np

    low_p, high_p = per_period if per_period is not None else per_period_bounds(v, delta / 2)
    big_n, n = v.lines, v.labelled
    total = big_n.sum(axis=-1)
    without_low, without_high = n - v.k_high, n - v.k_low  # lines surely without / maybe without
    a = delta / 8
    low, high = low_p.sum(axis=-1), high_p.sum(axis=-1)
    if need != "upper":
        direct = pooled_bound(big_n, n, v.k_low, v.k_low, big_n - (n - v.k_low), a, "lower")
        mirror = total - pooled_bound(big_n, n, without_high, without_high, big_n - v.k_low, a, "upper")
        low = np.maximum(low, np.maximum(direct, mirror))
    if need != "lower":
        direct = pooled_bound(big_n, n, v.k_high, v.k_high, big_n - (n - v.k_high), a, "upper")
        mirror = total - pooled_bound(big_n, n, without_low, without_low, big_n - v.k_high, a, "lower")
        high = np.minimum(high, np.minimum(direct, mirror))
    return low, high


@dataclass(frozen=True, slots=True)
class ClaimMonitor:
    """The monitor of one claim on one version: ``holding`` (upper bound under the target),
    ``breached`` (lower bound over it) or ``undecided``; ``labels_to_decide``, for undecided,
    about how many more labels (all strata together) would decide it if the labelled shares
    stayed as they are (None when decided, or when it cannot be told)."""

    state: State
    target: float
    lower: float | None
    upper: float | None
    labels_to_decide: int | None

    def to_json(self) -> dict[str, Any]:
        return {
            "state": self.state,
            "target": self.target,
            "lower": self.lower,
            "upper": self.upper,
            "labels_to_decide": self.labels_to_decide,
        }


def _ratio(num: float, den: float) -> float | None:
    return num / den if den > 0 else None


def rate_from_totals(low_c: float, high_c: float, low_o: float, high_o: float) -> tuple[float | None, float | None]:
    """``(lower, upper)`` of ``T_c / (T_c + T_o)`` from bounds on each total (monotone in each)."""
    return _ratio(low_c, low_c + high_o), _ratio(high_c, high_c + low_o)


def state_of(lower: float | None, upper: float | None, target: float) -> State:
    if upper is not None and upper < target:
        return "holding"
    if lower is not None and lower > target:
        return "breached"
    return "undecided"


def _bounds(c: VersionCounts, o: VersionCounts, delta: float) -> tuple[float | None, float | None]:
    low_c, high_c = version_totals(c, delta / 2)
    low_o, high_o = version_totals(o, delta / 2)
    return rate_from_totals(float(low_c), float(high_c), float(low_o), float(high_o))


def _scaled(v: VersionCounts, extra: int, total: int) -> VersionCounts:
    """``v`` with ``extra`` more labels dealt out in proportion to the labels so far, each
    stratum's hit shares kept (capped at its lines)."""
    import numpy as np

    n = v.labelled
    add = np.floor(extra * n / total + 0.5).astype(np.int64)
    new_n = np.minimum(v.lines, n + add)
    scale = np.where(n > 0, new_n / np.maximum(n, 1), 1.0)
    k_low = np.minimum(new_n, np.floor(v.k_low * scale + 0.5).astype(np.int64))
    k_high = np.clip(np.floor(v.k_high * scale + 0.5).astype(np.int64), k_low, new_n)
    return VersionCounts(v.lines, new_n, k_low, k_high)


def _labels_to_decide(c: VersionCounts, o: VersionCounts, target: float, delta: float) -> int | None:
    total = int(c.labelled.sum() + o.labelled.sum())
    room = int(c.lines.sum() + o.lines.sum()) - total
    if total == 0 or room <= 0:
        return None

    def decides(extra: int) -> bool:
        low, high = _bounds(_scaled(c, extra, total), _scaled(o, extra, total), delta)
        return state_of(low, high, target) != "undecided"

    extra, last_no = max(10, total // 4), 0
    while not decides(extra):
        last_no = extra
        if extra >= 64 * room:
            return None
        extra *= 2
    while extra - last_no > max(1, extra // 20):  # to about 5%
        mid = (extra + last_no) // 2
        if decides(mid):
            extra = mid
        else:
            last_no = mid
    return extra


def check_target(target: Any) -> float:
    if isinstance(target, bool) or not isinstance(target, (int, float)) or not (0.0 < float(target) < 1.0):
        raise InputError(f"target must be a rate strictly between 0 and 1, got {target!r}")
    return float(target)


def monitor(counted: Sequence[Stratum], other: Sequence[Stratum], target: float, delta: float) -> ClaimMonitor:
    """The monitor of the claim "rate <= target" on a version: ``counted[i]`` and ``other[i]`` are
    period ``i + 1`` (for the bluff claim the answered and refused strata, property off-topic;
    for the lost claim the refused and answered strata, property answerable with the answer in
    the hits).

    Guarantee (any number of looks): each list's total gets anytime-valid bounds at ``delta / 2``
    (:func:`version_totals`: the per-period confidence sequences, period ``i`` spending
    ``period_delta(i, delta / 4)`` over its stratum, intersected with the pooled bounds), so with
    probability at least ``1 - delta`` every bound holds at every look of the version's life;
    the rate grows with ``T_counted`` and falls with ``T_other``, so ``lower = L_c / (L_c + U_o)``
    and ``upper = U_c / (U_c + L_o)`` hold then too. ``breached`` needs ``lower > target``: a
    claim that holds is shown breached, ever, with probability at most delta.
    """
    d = check_delta(delta)
    t = check_target(target)
    c = VersionCounts.of(counted, "counted")
    o = VersionCounts.of(other, "other")
    if c.lines.shape != o.lines.shape:
        raise InputError(
            f"counted and other must hold one stratum per period each, got {len(c.lines)} and {len(o.lines)}"
        )
    lower, upper = _bounds(c, o, d)
    state = state_of(lower, upper, t)
    to_decide = _labels_to_decide(c, o, t, d) if state == "undecided" else None
    return ClaimMonitor(state, t, lower, upper, to_decide)
