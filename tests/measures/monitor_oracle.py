"""A second, independent derivation of the monitor's bounds, used only by the tests.

Nothing here calls :mod:`evalcore.measures.monitor`'s searches or knapsacks:

- the per-period confidence sequence is the posterior of ``M`` computed by **enumeration** over
  every ``M`` in ``0..N`` (scipy's ``hypergeom.pmf`` as the likelihood, normalised numerically;
  the set is ``{M : (N + 1) posterior(M) > delta}``), where the library bisects a closed form;
- the pooled supermartingale's exponent is evaluated at ``M = 0`` and ``M = 1`` of each stratum
  (it is linear in ``M``) from its definition, where the library writes the coefficients out;
- the extreme total over the kept candidates is a linear programme solved by scipy's
  ``linprog`` (HiGHS), where the library fills a fractional knapsack.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
from scipy.optimize import linprog
from scipy.stats import hypergeom

from evalcore.measures.production import Stratum

BETS = (0.15, 0.35, 0.8, 1.8, 4.0)  # the library's grid, restated: a change there must be made here too
MAX_BET = 4.0


def ppr_interval(big_n: int, n: int, k_low: int, k_high: int, delta: float) -> tuple[int, int]:
    """The prior-posterior-ratio set's ends by enumeration (uniform prior on 0..N)."""
    m = np.arange(big_n + 1)

    def kept(k: int) -> np.ndarray:
        like = hypergeom.pmf(k, big_n, m, n)
        post = like / like.sum()
        return m[(big_n + 1) * post > delta]

    return int(kept(k_low).min()), int(kept(k_high).max())


def _exponent(big_n: int, n: int, k: int, m: float, bet: float, sign: int, ref: int) -> float:
    """The log of one stratum's (lowered) supermartingale at candidate ``M = m``, from its
    definition: bet ``lam`` on ``W_h = (k_h - h M / N) / (N - h)`` over the first ``h`` labels,
    Bennett's compensator ``M h psi(sign lam / (N - h)) / (N - h + 1)``, ``k_h`` least favourable."""
    h = min(n, big_n // 2)
    if h == 0:
        return 0.0
    lam = big_n * min(bet * big_n / ref, MAX_BET)
    k_h = max(0, k - (n - h)) if sign > 0 else min(k, h)
    w = (k_h - h * m / big_n) / (big_n - h)
    c = sign * lam / (big_n - h)
    psi = math.expm1(c) - c
    return sign * lam * w - m * h * psi / (big_n - h + 1)


def pooled(rows: Sequence[tuple[int, int, int, int, int]], alpha: float, side: str) -> int:
    """One-sided pooled bound on ``sum M``; ``rows``: ``(N, n, k, floor, ceiling)`` per stratum."""
    ref = next((r[0] for r in rows if r[0] > 0), 1)
    level = math.log(len(BETS) / alpha)
    floors = np.array([r[3] for r in rows], dtype=float)
    ceils = np.array([r[4] for r in rows], dtype=float)
    best = floors.sum() if side == "lower" else ceils.sum()
    sign = 1 if side == "lower" else -1
    for bet in BETS:
        e0 = np.array([_exponent(N, n, k, 0.0, bet, sign, ref) for N, n, k, _, _ in rows])
        e1 = np.array([_exponent(N, n, k, 1.0, bet, sign, ref) for N, n, k, _, _ in rows])
        slope = e1 - e0  # exponent = sum e0 + sum slope * M; kept: exponent < level
        bounds = list(zip(floors, ceils, strict=True))
        goal = np.ones(len(rows)) if side == "lower" else -np.ones(len(rows))
        res = linprog(goal, A_ub=slope[None, :], b_ub=[level - e0.sum()], bounds=bounds, method="highs")
        if side == "lower":
            value = res.fun if res.status == 0 else ceils.sum()
            best = max(best, value)
        else:
            value = -res.fun if res.status == 0 else floors.sum()
            best = min(best, value)
    return math.ceil(best - 1e-6) if side == "lower" else math.floor(best + 1e-6)


def totals(strata: Sequence[Stratum], delta: float) -> tuple[int, int]:
    """``(L, U)`` on ``sum M`` at ``delta``, split as the library documents it: half to the
    per-period family (period i at delta / 2 / (i (i + 1))), an eighth to each pooled bound."""
    low_p = high_p = 0
    for i, s in enumerate(strata, start=1):
        lo, hi = ppr_interval(s.lines, s.labelled, s.hits, s.hits + s.unsure, delta / 2 / (i * (i + 1)))
        low_p, high_p = low_p + lo, high_p + hi
    a = delta / 8
    total = sum(s.lines for s in strata)
    k_low = [(s.lines, s.labelled, s.hits) for s in strata]
    k_high = [(s.lines, s.labelled, s.hits + s.unsure) for s in strata]
    direct_low = pooled([(N, n, k, k, N - (n - k)) for N, n, k in k_low], a, "lower")
    mirror_low = total - pooled([(N, n, n - k, n - k, N - k) for N, n, k in k_low], a, "upper")
    direct_high = pooled([(N, n, k, k, N - (n - k)) for N, n, k in k_high], a, "upper")
    mirror_high = total - pooled([(N, n, n - k, n - k, N - k) for N, n, k in k_high], a, "lower")
    return max(low_p, direct_low, mirror_low), min(high_p, direct_high, mirror_high)


def rate(counted: Sequence[Stratum], other: Sequence[Stratum], delta: float) -> tuple[float | None, float | None]:
    """The monitor's ``(lower, upper)``: each list's totals at delta / 2, combined monotonically."""
    lc, uc = totals(counted, delta / 2)
    lo, uo = totals(other, delta / 2)
    lower = lc / (lc + uo) if lc + uo > 0 else None
    upper = uc / (uc + lo) if uc + lo > 0 else None
    return lower, upper
