"""Exact production bounds (evalcore.measures.production): against scipy's hypergeometric
distribution searched by brute force, coverage over simulated periods with known truth, and
hostile inputs."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.stats import hypergeom

from evalcore.errors import InputError
from evalcore.measures.production import (
    Bounds,
    Stratum,
    count_bounds,
    count_bounds_arrays,
    rate_bounds,
    share_bounds,
)


def brute_force(big_n: int, n: int, k: int, k_up: int, delta: float) -> tuple[int, int]:
    """Every M tried: U the largest with P(X <= k_up) > delta, L the smallest with P(X >= k) > delta."""
    m = np.arange(big_n + 1)
    up = m[hypergeom.cdf(k_up, big_n, m, n) > delta]
    low = m[hypergeom.sf(k - 1, big_n, m, n) > delta]
    return int(low.min()), int(up.max())


def test_count_bounds_equal_a_brute_force_search_over_every_m() -> None:
    rng = np.random.default_rng(46)
    cases = [(1, 1, 0, 0.05), (1, 1, 1, 0.05), (2, 1, 1, 0.5), (50, 50, 7, 0.01), (40, 0, 0, 0.1)]
    for _ in range(150):
        big_n = int(rng.integers(1, 400))
        n = int(rng.integers(0, big_n + 1))
        m_true = int(rng.integers(0, big_n + 1))
        k = int(rng.hypergeometric(m_true, big_n - m_true, n)) if n else 0
        cases.append((big_n, n, k, float(rng.choice([0.001, 0.0125, 0.05, 0.1, 0.3]))))
    for big_n, n, k, delta in cases:
        assert count_bounds(Stratum(big_n, n, k), delta) == brute_force(big_n, n, k, k, delta), (big_n, n, k, delta)


def test_count_bounds_on_a_large_frame_meet_the_definition_at_their_ends() -> None:
    big_n, n, k, delta = 10_000_000, 1000, 30, 0.05 / 8
    low, high = count_bounds(Stratum(big_n, n, k), delta)
    assert hypergeom.cdf(k, big_n, high, n) > delta >= hypergeom.cdf(k, big_n, high + 1, n)
    assert hypergeom.sf(k - 1, big_n, low, n) > delta >= hypergeom.sf(k - 1, big_n, low - 1, n)


def test_unsure_lines_count_without_the_property_below_and_with_it_above() -> None:
    for big_n, n, k, u in [(300, 40, 3, 5), (60, 60, 10, 4), (1000, 30, 0, 30)]:
        low, high = count_bounds(Stratum(big_n, n, k, u), 0.05)
        assert low == brute_force(big_n, n, k, k, 0.05)[0]
        assert high == brute_force(big_n, n, k, k + u, 0.05)[1]


def test_certain_strata_need_no_budget() -> None:
    assert count_bounds(Stratum(120, 0, 0), 0.05) == (0, 120)
    assert count_bounds(Stratum(25, 25, 7, 2), 0.05) == (7, 9)
    assert count_bounds(Stratum(0, 0, 0), 0.05) == (0, 0)
    # a fully labelled stratum beside a sampled one: the sampled one gets the whole delta / 2
    alone = rate_bounds([Stratum(500, 30, 3)], [], 0.1)
    assert alone.lower == 1.0 and alone.upper == 1.0  # nothing in "other": the rate is 1 whenever defined
    mixed = rate_bounds([Stratum(500, 30, 3)], [Stratum(40, 40, 12)], 0.1)
    low, high = count_bounds(Stratum(500, 30, 3), 0.05)
    assert mixed.lower == pytest.approx(low / (low + 12)) and mixed.upper == pytest.approx(high / (high + 12))


def test_rate_and_share_follow_their_formulas() -> None:
    a, r = Stratum(1500, 30, 2), Stratum(500, 30, 20, 1)
    out = rate_bounds([a], [r], 0.05)
    la, ua = count_bounds(a, 0.05 / 4)
    lr, ur = count_bounds(r, 0.05 / 4)
    assert out.estimate == pytest.approx((1500 * 2 / 30) / (1500 * 2 / 30 + 500 * 20 / 30))
    assert out.lower == pytest.approx(la / (la + ur)) and out.upper == pytest.approx(ua / (ua + lr))
    share = share_bounds([a, Stratum(900, 30, 1)], 0.05)
    lb, ub = count_bounds(Stratum(900, 30, 1), 0.05 / 4)
    assert share.lower == pytest.approx((la + lb) / 2400) and share.upper == pytest.approx((ua + ub) / 2400)
    assert share.estimate == pytest.approx((100 + 30) / 2400)
    assert out.to_json() == {"estimate": out.estimate, "lower": out.lower, "upper": out.upper}


def test_undefined_figures_are_none() -> None:
    assert rate_bounds([Stratum(100, 0, 0)], [Stratum(50, 10, 2)], 0.05).estimate is None
    assert share_bounds([], 0.05) == Bounds(None, None, None)
    nothing = rate_bounds([Stratum(10, 10, 0)], [Stratum(10, 10, 0)], 0.05)
    assert nothing == Bounds(None, None, None)


def _simulate(rng: np.random.Generator, count: int, periods: int) -> dict[str, np.ndarray]:
    """``count`` versions of ``periods`` periods: frames, true counts and labelled samples."""
    shape = (count, periods)
    n_a = rng.integers(50, 2001, shape)
    n_r = rng.integers(20, 801, shape)
    m_a = rng.binomial(n_a, rng.uniform(0.0, 0.15, shape))
    m_r = rng.binomial(n_r, rng.uniform(0.2, 0.95, shape))
    s_a = np.minimum(n_a, rng.integers(5, 61, shape))
    s_r = np.minimum(n_r, rng.integers(5, 61, shape))
    k_a = rng.hypergeometric(m_a, n_a - m_a, s_a)  # without replacement
    k_r = rng.hypergeometric(m_r, n_r - m_r, s_r)
    return {"N_A": n_a, "N_R": n_r, "M_A": m_a, "M_R": m_r, "n_A": s_a, "n_R": s_r, "k_A": k_a, "k_R": k_r}


@pytest.mark.parametrize(("count", "periods"), [(2000, 1), (400, 4)])
def test_bounds_cover_the_truth_in_at_least_one_minus_delta_of_simulated_periods(count: int, periods: int) -> None:
    """Each bound (lower and upper of the bluff rate, and of the answered share) misses the
    truth in at most a share delta of the simulated periods (versions of ``periods`` periods)."""
    delta = 0.1
    d = _simulate(np.random.default_rng(2026 + periods), count, periods)
    # S: the strata labelled in part (a fully labelled one is known and spends nothing)
    part = lambda s: (d[f"n_{s}"] > 0) & (d[f"n_{s}"] < d[f"N_{s}"])  # noqa: E731
    s_used = part("A").sum(1) + part("R").sum(1)
    per = np.repeat(delta / (2 * np.maximum(s_used, 1)), periods)

    def bounds(big_n: np.ndarray, n: np.ndarray, k: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        low, high = count_bounds_arrays(big_n.ravel(), n.ravel(), k.ravel(), k.ravel(), per)
        return low.reshape(big_n.shape).sum(1), high.reshape(big_n.shape).sum(1)

    la, ua = bounds(d["N_A"], d["n_A"], d["k_A"])
    lr, ur = bounds(d["N_R"], d["n_R"], d["k_R"])
    ma, mr = d["M_A"].sum(1), d["M_R"].sum(1)
    truth = ma / (ma + mr)
    lower, upper = la / (la + ur), ua / (ua + lr)
    # the vectorised figures are rate_bounds' own, checked on a part of the periods
    for i in range(0, count, count // 20):
        strata = [
            [Stratum(int(d[f"N_{s}"][i, p]), int(d[f"n_{s}"][i, p]), int(d[f"k_{s}"][i, p])) for p in range(periods)]
            for s in "AR"
        ]
        out = rate_bounds(strata[0], strata[1], delta)
        assert (out.lower, out.upper) == pytest.approx((lower[i], upper[i]))
        share = share_bounds(strata[0], delta)
        assert share.lower is not None and share.upper is not None
        lo_s, hi_s = count_bounds_arrays(
            d["N_A"][i],
            d["n_A"][i],
            d["k_A"][i],
            d["k_A"][i],
            np.full(periods, delta / (2 * max(1, part("A")[i].sum()))),
        )
        assert (share.lower, share.upper) == pytest.approx(
            (lo_s.sum() / d["N_A"][i].sum(), hi_s.sum() / d["N_A"][i].sum())
        )
    miss_low = float(np.mean(lower > truth))
    miss_high = float(np.mean(upper < truth))
    assert miss_low <= delta and miss_high <= delta, (miss_low, miss_high)
    # the share of answers that went to off-topic questions, with its own (S = periods) budget
    per_share = np.repeat(delta / (2 * np.maximum(part("A").sum(1), 1)), periods)
    ls, hs = count_bounds_arrays(d["N_A"].ravel(), d["n_A"].ravel(), d["k_A"].ravel(), d["k_A"].ravel(), per_share)
    lines = d["N_A"].sum(1)
    share_low, share_high = ls.reshape(count, periods).sum(1) / lines, hs.reshape(count, periods).sum(1) / lines
    share_truth = ma / lines
    assert float(np.mean(share_low > share_truth)) <= delta
    assert float(np.mean(share_high < share_truth)) <= delta
    # not vacuous: the intervals are far narrower than [0, 1]
    assert float(np.mean(upper - lower)) < 0.7  # measured: 0.63 (4 periods), with 5 to 60 labels a stratum
    assert float(np.mean(share_high - share_low)) < 0.3  # measured: 0.26


@pytest.mark.parametrize(
    ("stratum", "field"),
    [
        (Stratum(10, 5, 6), "hits"),
        (Stratum(10, 11, 0), "labelled"),
        (Stratum(-1, 0, 0), "lines"),
        (Stratum(10, -2, 0), "labelled"),
        (Stratum(10, 5, -1), "hits"),
        (Stratum(10, 5, 3, -1), "unsure"),
        (Stratum(10, 5, 3, 3), "unsure"),
        (Stratum(10.5, 5, 3), "lines"),  # type: ignore[arg-type]
        (Stratum(10, True, 0), "labelled"),
        (Stratum(10, 5, "2"), "hits"),  # type: ignore[arg-type]
    ],
)
def test_hostile_strata_name_their_field(stratum: Stratum, field: str) -> None:
    with pytest.raises(InputError, match=field):
        count_bounds(stratum, 0.05)
    with pytest.raises(InputError, match=field):
        rate_bounds([Stratum(10, 2, 1)], [stratum], 0.05)
    with pytest.raises(InputError, match=field):
        share_bounds([stratum], 0.05)


@pytest.mark.parametrize("delta", [0, 1, -0.1, 1.5, math.nan, math.inf, "0.05", None, True])
def test_hostile_deltas_name_the_field(delta: object) -> None:
    with pytest.raises(InputError, match="delta"):
        count_bounds(Stratum(10, 2, 1), delta)  # type: ignore[arg-type]
    with pytest.raises(InputError, match="delta"):
        rate_bounds([Stratum(10, 2, 1)], [Stratum(10, 2, 1)], delta)  # type: ignore[arg-type]
    with pytest.raises(InputError, match="delta"):
        share_bounds([Stratum(10, 2, 1)], delta)  # type: ignore[arg-type]


def test_a_list_that_is_not_one_is_refused() -> None:
    with pytest.raises(InputError, match="counted"):
        rate_bounds("abc", [], 0.05)  # type: ignore[arg-type]
    with pytest.raises(InputError, match=r"other\[0\]"):
        rate_bounds([], [(10, 2, 1)], 0.05)  # type: ignore[list-item]
