"""The anytime-valid monitor (evalcore.measures.monitor): its confidence sequences against an
enumerated posterior, the whole monitor against an independent derivation
(tests/measures/monitor_oracle.py), simulated versions looked at every day for a year, and
hostile inputs."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest

from evalcore.errors import InputError
from evalcore.measures.monitor import (
    VersionCounts,
    monitor,
    period_delta,
    ppr_bounds_arrays,
    sequence_bounds,
    version_totals,
)
from evalcore.measures.production import Stratum
from tests.measures import monitor_oracle as oracle


def test_period_delta_spends_at_most_delta_over_any_number_of_periods() -> None:
    assert period_delta(1, 0.05) == pytest.approx(0.025)
    assert sum(period_delta(i, 0.05) for i in range(1, 100_000)) == pytest.approx(0.05, rel=1e-4)
    assert sum(period_delta(i, 0.05) for i in range(1, 100_000)) < 0.05


def test_sequence_bounds_equal_the_enumerated_posterior() -> None:
    rng = np.random.default_rng(7)
    cases = [(1, 0, 0, 0), (1, 1, 1, 0), (30, 30, 4, 2), (200, 0, 0, 0), (50, 10, 0, 10)]
    for _ in range(120):
        big_n = int(rng.integers(1, 600))
        n = int(rng.integers(0, big_n + 1))
        m = int(rng.integers(0, big_n + 1))
        k = int(rng.hypergeometric(m, big_n - m, n)) if n else 0
        u = int(rng.integers(0, n - k + 1)) if rng.random() < 0.3 else 0
        cases.append((big_n, n, k, u))
    for big_n, n, k, u in cases:
        for delta in (0.001, 0.05, 0.3):
            want = oracle.ppr_interval(big_n, n, k, k + u, delta)
            assert sequence_bounds(Stratum(big_n, n, k, u), delta) == want, (big_n, n, k, u, delta)


def test_sequence_ends_grow_with_the_hits() -> None:
    """What makes the unsure rule sound: both ends only grow with k (every small case)."""
    for big_n in range(1, 26):
        for n in range(big_n + 1):
            ks = np.arange(0, n + 1)
            low, high = ppr_bounds_arrays(
                np.full(len(ks), big_n), np.full(len(ks), n), ks, ks, np.full(len(ks), math.log(0.05))
            )
            assert (np.diff(low) >= 0).all() and (np.diff(high) >= 0).all(), (big_n, n)


def test_a_sequence_covers_its_truth_at_every_look_at_once() -> None:
    """2,000 strata labelled one line at a time, looked at after every label: the share whose
    truth ever leaves the sequence is at most delta."""
    rng = np.random.default_rng(11)
    strata, delta, looks = 2000, 0.1, 80
    big_n = rng.integers(looks, 1500, strata)
    m = rng.binomial(big_n, rng.uniform(0.0, 1.0, strata))
    k = np.zeros(strata, dtype=np.int64)
    ever = np.zeros(strata, dtype=bool)
    width = 0.0
    for n in range(1, looks + 1):
        # the n-th line of a uniform order without replacement: property with chance (M - k) / (N - n + 1)
        k = k + (rng.random(strata) < (m - k) / (big_n - n + 1))
        low, high = ppr_bounds_arrays(big_n, np.full(strata, n), k, k, np.full(strata, math.log(delta)))
        ever |= (m < low) | (m > high)
        width = float(np.mean((high - low) / big_n))
    assert float(ever.mean()) <= delta, ever.mean()
    assert width < 0.4  # after 80 labels the sequence is far from vacuous (measured about 0.3)


def _random_version(rng: np.random.Generator, periods: int) -> tuple[list[Stratum], list[Stratum]]:
    def strata(lo: int, hi: int, share: float) -> list[Stratum]:
        out = []
        for _ in range(periods):
            big_n = int(rng.integers(lo, hi))
            n = int(rng.integers(0, min(big_n, 80) + 1))
            m = int(rng.binomial(big_n, share))
            k = int(rng.hypergeometric(m, big_n - m, n)) if n else 0
            u = min(3, int(rng.integers(0, n - k + 1))) if n > k and rng.random() < 0.3 else 0
            out.append(Stratum(big_n, n, k, u))
        return out

    return strata(5, 800, rng.uniform(0, 0.3)), strata(5, 400, rng.uniform(0.2, 0.95))


def test_the_monitor_equals_the_independent_derivation() -> None:
    rng = np.random.default_rng(3)
    for case in range(25):
        counted, other = _random_version(rng, int(rng.integers(1, 6)))
        got = monitor(counted, other, 0.05, 0.05)
        assert (got.lower, got.upper) == oracle.rate(counted, other, 0.05), case


def _simulate(
    versions: int,
    rate: float,
    *,
    weeks: int = 52,
    per_week: int = 30,
    seed: int = 0,
    delta: float = 0.05,
    alpha: float = 0.05,
    checks: int = 0,
    look_every: int = 1,
) -> dict[str, Any]:
    """``versions`` deployment versions followed for ``weeks`` weeks.

    Each week is a period, whose frames are complete when it starts: ``N_A`` (300 to 3,000)
    answered and ``N_R`` (100 to 1,000) refused lines; a share 0.3 to 0.9 of the refused lines is
    off-topic, and the answered off-topic lines are set so that each period's bluff rate is
    ``rate``. Over the 7 days of its week the period gets ``per_week`` labels per stratum, drawn
    without replacement (hypergeometric steps). Every ``look_every`` days (by default every day)
    the monitor's lower bound of the version's bluff rate is computed (the state is ``breached``
    only when it is over alpha, so counting those looks counts every breached look); ``checks``
    looks are compared with :func:`monitor` itself."""
    rng = np.random.default_rng(seed)
    shape = (versions, weeks)
    lines = {"A": rng.integers(300, 3001, shape), "R": rng.integers(100, 1001, shape)}
    m_r = rng.binomial(lines["R"], rng.uniform(0.3, 0.9, shape))
    true = {"R": m_r, "A": np.minimum(lines["A"], np.rint(rate / (1 - rate) * m_r).astype(np.int64))}
    n = {s: np.zeros(shape, np.int64) for s in "AR"}
    k = {s: np.zeros(shape, np.int64) for s in "AR"}
    ppr = {s: [np.zeros(shape, np.int64), lines[s].copy()] for s in "AR"}
    first = np.full(versions, -1)
    labels_then = np.zeros(versions, np.int64)
    ever_missed = np.zeros(versions, dtype=bool)
    check_days = set(rng.choice(7 * weeks, size=checks, replace=False).tolist()) if checks else set()
    lower = np.zeros(versions)
    for day in range(7 * weeks):
        p, d = divmod(day, 7)
        looking = (day + 1) % look_every == 0 or day in check_days
        target = round(per_week * (d + 1) / 7)
        for s in "AR":
            add = target - n[s][:, p]
            good = true[s][:, p] - k[s][:, p]
            bad = lines[s][:, p] - true[s][:, p] - (n[s][:, p] - k[s][:, p])
            k[s][:, p] += rng.hypergeometric(good, bad, add)
            n[s][:, p] += add
            # the per-period sequences change only for the period being labelled: computed once here
            log_delta = np.full(versions, math.log(delta / 4 / ((p + 1) * (p + 2))))
            lo, hi = ppr_bounds_arrays(lines[s][:, p], n[s][:, p], k[s][:, p], k[s][:, p], log_delta)
            ppr[s][0][:, p], ppr[s][1][:, p] = lo, hi
        if not looking:
            continue
        cut = np.s_[:, : p + 1]
        view = {s: VersionCounts(lines[s][cut], n[s][cut], k[s][cut], k[s][cut]) for s in "AR"}
        low_a, _ = version_totals(view["A"], delta / 2, (ppr["A"][0][cut], ppr["A"][1][cut]), need="lower")
        _, high_r = version_totals(view["R"], delta / 2, (ppr["R"][0][cut], ppr["R"][1][cut]), need="upper")
        lower = low_a / np.maximum(low_a + high_r, 1)
        truth = true["A"][cut].sum(1) / (true["A"][cut].sum(1) + true["R"][cut].sum(1))
        ever_missed |= lower > truth
        breached = (lower > alpha) & (first < 0)
        first = np.where(breached, day, first)
        labels_then = np.where(breached, n["A"].sum(1) + n["R"].sum(1), labels_then)
        if day in check_days:
            i = int(rng.integers(versions))
            counted = [
                Stratum(int(a), int(b), int(c))
                for a, b, c in zip(*(x[i, : p + 1] for x in (lines["A"], n["A"], k["A"])), strict=True)
            ]
            other = [
                Stratum(int(a), int(b), int(c))
                for a, b, c in zip(*(x[i, : p + 1] for x in (lines["R"], n["R"], k["R"])), strict=True)
            ]
            got = monitor(counted, other, alpha, delta)
            assert got.lower == pytest.approx(lower[i]), (day, i)  # the same bound, one version at a time
    return {"first": first, "labels": labels_then, "ever_missed": ever_missed, "lower": lower, "counts": (lines, n, k)}


def test_a_holding_claim_looked_at_daily_for_a_year_is_rarely_ever_breached() -> None:
    """500 versions, true bluff rate alpha / 2, 30 + 30 labels a week, a look every day for 365
    days (52 weekly periods): the share of versions ever shown breached is at most delta, and so
    is the share whose true rate ever falls under the lower bound."""
    out = _simulate(500, 0.025, checks=4)
    ever_breached = float(np.mean(out["first"] >= 0))
    assert ever_breached <= 0.05, ever_breached
    assert float(np.mean(out["ever_missed"])) <= 0.05


def test_a_claim_broken_three_times_over_ends_breached_within_the_year() -> None:
    """Power: at a true bluff rate of 3 alpha most versions are breached by the year's end."""
    out = _simulate(150, 0.15, seed=5, look_every=7)  # a look a week: the end of the year is what counts
    lines, n, k = out["counts"]
    # the year's end through the full monitor, for a few versions
    for i in range(3):
        counted = [Stratum(int(a), int(b), int(c)) for a, b, c in zip(lines["A"][i], n["A"][i], k["A"][i], strict=True)]
        other = [Stratum(int(a), int(b), int(c)) for a, b, c in zip(lines["R"][i], n["R"][i], k["R"][i], strict=True)]
        got = monitor(counted, other, 0.05, 0.05)
        assert (got.state == "breached") == (got.lower is not None and got.lower > 0.05)
    breached = float(np.mean(out["first"] >= 0))
    assert breached > 0.5, breached  # measured about 0.9


def test_the_states_and_the_labels_that_would_decide() -> None:
    holding = monitor([Stratum(2000, 400, 0)] * 4, [Stratum(600, 400, 350)] * 4, 0.05, 0.05)
    assert holding.state == "holding" and holding.upper is not None and holding.upper < 0.05
    assert holding.labels_to_decide is None
    breached = monitor([Stratum(2000, 400, 60)] * 4, [Stratum(600, 400, 300)] * 4, 0.05, 0.05)
    assert breached.state == "breached" and breached.labels_to_decide is None
    early = monitor([Stratum(2000, 30, 3)], [Stratum(600, 30, 20)], 0.05, 0.05)
    assert early.state == "undecided" and early.labels_to_decide is not None and early.labels_to_decide > 0
    # that many more labels, the shares kept, decide it; a tenth as many do not
    more = 1 + early.labels_to_decide // 2
    decided = monitor(
        [Stratum(2000, 30 + more, round(3 * (30 + more) / 30))],
        [Stratum(600, 30 + more, round(20 * (30 + more) / 30))],
        0.05,
        0.05,
    )
    assert decided.state != "undecided"
    few = 1 + early.labels_to_decide // 20
    assert monitor([Stratum(2000, 30 + few, 3)], [Stratum(600, 30 + few, 20)], 0.05, 0.05).state == "undecided"
    assert set(early.to_json()) == {"state", "target", "lower", "upper", "labels_to_decide"}
    nothing = monitor([Stratum(100, 0, 0)], [Stratum(100, 0, 0)], 0.05, 0.05)
    assert nothing.state == "undecided" and nothing.labels_to_decide is None


@pytest.mark.parametrize(
    ("counted", "other", "target", "delta", "field"),
    [
        ([Stratum(10, 5, 6)], [Stratum(10, 5, 1)], 0.05, 0.05, "hits"),
        ([Stratum(10, 11, 0)], [Stratum(10, 5, 1)], 0.05, 0.05, "labelled"),
        ([Stratum(10, 5, 1)], [Stratum(-3, 0, 0)], 0.05, 0.05, "lines"),
        ([Stratum(10, 5, 1, -1)], [Stratum(10, 5, 1)], 0.05, 0.05, "unsure"),
        ([Stratum(10, 5, 1)], [Stratum(10, 5, 1)], 0.05, 0, "delta"),
        ([Stratum(10, 5, 1)], [Stratum(10, 5, 1)], 0.05, 1, "delta"),
        ([Stratum(10, 5, 1)], [Stratum(10, 5, 1)], 0.05, math.nan, "delta"),
        ([Stratum(10, 5, 1)], [Stratum(10, 5, 1)], math.nan, 0.05, "target"),
        ([Stratum(10, 5, 1)], [Stratum(10, 5, 1)], 0, 0.05, "target"),
        ([Stratum(10, 5, 1)], [Stratum(10, 5, 1)], 1.5, 0.05, "target"),
        ([Stratum(10, 5, 1)], [Stratum(10, 5, 1)], "0.05", 0.05, "target"),
        ([Stratum(10, 5, 1)], [], 0.05, 0.05, "one stratum per period"),
        ("abc", [], 0.05, 0.05, "counted"),
    ],
)
def test_hostile_monitor_inputs_name_their_field(counted: Any, other: Any, target: Any, delta: Any, field: str) -> None:
    with pytest.raises(InputError, match=field):
        monitor(counted, other, target, delta)


@pytest.mark.parametrize("index", [0, -1, 1.5, True, "2"])
def test_hostile_period_indexes(index: Any) -> None:
    with pytest.raises(InputError, match="index"):
        period_delta(index, 0.05)


def test_hostile_sequence_inputs() -> None:
    with pytest.raises(InputError, match="hits"):
        sequence_bounds(Stratum(10, 2, 3), 0.05)
    with pytest.raises(InputError, match="delta"):
        sequence_bounds(Stratum(10, 2, 1), 1.0)
