"""Intervals, sign tests, Holm and sample-size statements against independent implementations."""

from __future__ import annotations

import math
import random
from fractions import Fraction

import numpy as np
import pandas as pd
import pytest
from scipy.stats import binomtest, norm
from statsmodels.stats.multitest import multipletests

from evalcore.measures.stats import (
    MATRIX_COLUMNS,
    Interval,
    detectable_difference,
    holm,
    interval_half_width,
    paired_test,
    sample_statement,
    sign_test,
    sign_test_power,
    wilson_interval,
    win_loss_matrix,
)

Z95 = 1.959963984540054


def wilson_closed_form(k: int, n: int, z: float = Z95) -> tuple[float, float]:
    """Wilson (1927) score interval, written out."""
    p = k / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z / (1 + z * z / n) * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n))
    return centre - half, centre + half


def exact_two_sided(wins: int, losses: int) -> float:
    """Two-sided exact binomial p at 1/2 in rational arithmetic: the probability of every
    outcome no more likely than the observed one (the minlike rule)."""
    n = wins + losses
    if n == 0:
        return 1.0
    observed = math.comb(n, wins)
    total = sum(math.comb(n, i) for i in range(n + 1) if math.comb(n, i) <= observed)
    return float(min(Fraction(1), Fraction(total, 2**n)))


# --- SPEC and seed figures --------------------------------------------------------------------


def test_spec_sign_test_figures():
    assert round(sign_test(18, 3), 4) == 0.0015
    assert round(sign_test(12, 2), 4) == 0.0129
    assert round(sign_test(8, 6), 2) == 0.79
    assert round(sign_test(9, 7), 2) == 0.80
    assert round(sign_test(10, 3), 2) == 0.09  # hybrid vs bm25 at R@4 in the seed
    assert round(sign_test(10, 6), 2) == 0.45  # hybrid vs dense
    assert sign_test(0, 0) == 1.0


def test_spec_wilson_figures():
    assert tuple(round(x, 3) for x in wilson_interval(38, 64)) == (0.471, 0.705)
    assert tuple(round(x, 3) for x in wilson_interval(53, 64)) == (0.718, 0.901)


def test_seed_half_width_for_64_queries():
    assert round(interval_half_width(64), 2) == 0.12
    low, high = wilson_closed_form(32, 64)
    assert interval_half_width(64) == pytest.approx((high - low) / 2, abs=1e-12)
    assert "about ±0.12" in sample_statement(64)


# --- Oracles ------------------------------------------------------------------------------------


def test_sign_test_against_binomtest_and_exact_rational():
    for wins in range(41):
        for losses in range(41):
            ours = sign_test(wins, losses)
            if wins + losses:
                assert ours == pytest.approx(binomtest(wins, wins + losses, 0.5).pvalue, abs=1e-12)
            assert ours == pytest.approx(exact_two_sided(wins, losses), rel=1e-9, abs=1e-15)


def test_wilson_against_closed_form():
    rng = random.Random(5)
    cases = [(0, 1), (1, 1), (0, 64), (64, 64), (1, 3)] + [
        (k, n) for n in (rng.randint(1, 2000) for _ in range(300)) for k in [rng.randint(0, n)]
    ]
    for k, n in cases:
        low, high = wilson_interval(k, n)
        exp_low, exp_high = wilson_closed_form(k, n)
        assert (low, high) == pytest.approx((max(0.0, exp_low), min(1.0, exp_high)), abs=1e-9)
    low, high = wilson_interval(38, 64, confidence=0.9)
    assert (low, high) == pytest.approx(wilson_closed_form(38, 64, norm.ppf(0.95)), abs=1e-12)


def test_interval_record_unpacks():
    interval = wilson_interval(38, 64)
    low, high = interval
    assert isinstance(interval, Interval) and (low, high) == (interval.low, interval.high)


@pytest.mark.parametrize("args", [(1, 0), (5, 4), (-1, 4), (2.5, 4), (1, 4, 1.0)])
def test_wilson_rejects_bad_input(args):
    with pytest.raises(ValueError):
        wilson_interval(*args)


def _holm_by_the_formula(p: list[float]) -> list[float]:
    """Holm's step-down rule written out: sorted p_(1) <= ... <= p_(m),
    adj_(i) = max over j <= i of min(1, (m - j + 1) p_(j))."""
    order = sorted(range(len(p)), key=lambda i: p[i])
    out, running = [0.0] * len(p), 0.0
    for j, i in enumerate(order):
        running = max(running, min(1.0, (len(p) - j) * p[i]))
        out[i] = running
    return out


def test_holm_against_multipletests():
    # statsmodels' multipletests runs gc.collect() on every call: few calls keep this test fast
    rng = np.random.default_rng(11)
    for size in (1, 2, 3, 8, 30):
        p = rng.uniform(0, 1, size) ** 3
        p[rng.integers(0, size)] = p[0]  # ties
        if size > 2:
            p[1] = 1.0
        expected = multipletests(p, method="holm")[1]
        assert holm(list(p)) == pytest.approx(list(expected), abs=1e-12)
        assert holm(list(p)) == pytest.approx(_holm_by_the_formula(list(p)), abs=1e-12)
    assert holm([]) == []
    # by hand: sorted 0.01, 0.03, 0.04 -> 3 x 0.01, max(0.03, 2 x 0.03), max(0.06, 1 x 0.04)
    assert holm([0.01, 0.04, 0.03]) == pytest.approx([0.03, 0.06, 0.06])
    with pytest.raises(ValueError):
        holm([0.1, math.nan])
    with pytest.raises(ValueError):
        holm([1.2])


def test_paired_test_counts_and_ids():
    first = {"q1": True, "q2": True, "q3": False, "q4": False, "q5": True}
    second = {"q1": False, "q2": True, "q3": True, "q4": False, "q5": False}
    result = paired_test(first, second)
    assert (result.wins, result.losses, result.ties) == (2, 1, 2)
    assert result.won == ("q1", "q5") and result.lost == ("q3",)
    assert result.p_value == binomtest(2, 3, 0.5).pvalue


def test_paired_test_names_differing_queries():
    first = {f"q{i}": True for i in range(10)}
    second = {f"q{i}": True for i in range(3, 17)}
    with pytest.raises(ValueError) as info:
        paired_test(first, second)
    message = str(info.value)
    assert "3 only in first" in message and "'q0'" in message
    assert "7 only in second" in message and "'q10'" in message


def test_win_loss_matrix_against_hand_counts_and_multipletests():
    rng = random.Random(3)
    queries = [f"q{i}" for i in range(64)]
    configs = ["A/dense", "E/dense", "E/bm25", "run2:E/hybrid"]
    skill = {"A/dense": 0.5, "E/dense": 0.8, "E/bm25": 0.6, "run2:E/hybrid": 0.85}
    outcomes = {c: {q: rng.random() < skill[c] for q in queries} for c in configs}
    frame = win_loss_matrix(outcomes)
    assert list(frame.columns) == list(MATRIX_COLUMNS)
    assert len(frame) == 12 and not (frame["row"] == frame["column"]).any()
    pairs = [(a, b) for i, a in enumerate(configs) for b in configs[i + 1 :]]
    raw = []
    for a, b in pairs:
        wins = sum(outcomes[a][q] and not outcomes[b][q] for q in queries)
        losses = sum(outcomes[b][q] and not outcomes[a][q] for q in queries)
        raw.append(binomtest(wins, wins + losses, 0.5).pvalue if wins + losses else 1.0)
        for row, column, w, n_lost in ((a, b, wins, losses), (b, a, losses, wins)):
            rec = frame[(frame["row"] == row) & (frame["column"] == column)].iloc[0]
            assert (rec["wins"], rec["losses"], rec["ties"], rec["n"]) == (w, n_lost, 64 - w - n_lost, 64)
            assert rec["p_value"] == pytest.approx(raw[-1], abs=1e-12)
    adjusted = multipletests(raw, method="holm")[1]
    for (a, b), p in zip(pairs, adjusted, strict=True):
        both = frame[frame["row"].isin([a, b]) & frame["column"].isin([a, b])]
        assert both["p_holm"].tolist() == pytest.approx([p, p], abs=1e-12)
    assert win_loss_matrix(outcomes, adjust=False)["p_holm"].isna().all()
    assert win_loss_matrix({"only": {"q": True}}).empty


def test_win_loss_matrix_needs_the_same_queries():
    with pytest.raises(ValueError, match="same queries"):
        win_loss_matrix({"a": {"q1": True}, "b": {"q2": True}})


# --- What the sample can show -------------------------------------------------------------


def exact_power(discordant: int, q: float, alpha: float = 0.05) -> float:
    """Power by enumeration with the rational p-value above (independent of scipy)."""
    return sum(
        math.comb(discordant, w) * q**w * (1 - q) ** (discordant - w)
        for w in range(discordant + 1)
        if exact_two_sided(w, discordant - w) <= alpha
    )


@pytest.mark.parametrize("n,discordance", [(64, 0.25), (64, 0.33), (200, 0.2), (1000, 0.1)])
def test_detectable_difference_reaches_the_power_exactly(n, discordance):
    diff = detectable_difference(n, discordance)
    discordant = round(n * discordance)
    q = 0.5 + diff * n / discordant / 2  # difference = D/n * (2q - 1)
    assert exact_power(discordant, q) == pytest.approx(0.8, abs=1e-6)
    assert exact_power(discordant, q - 0.01) < 0.8  # a smaller difference is not detected
    assert sign_test_power(discordant, q) == pytest.approx(exact_power(discordant, q), abs=1e-9)


def test_detectable_difference_with_too_few_discordant_pairs_is_infinite():
    # 5 discordant pairs: even 5-0 gives p = 0.0625 > 0.05.
    assert detectable_difference(20, 0.25) == math.inf
    assert "cannot reach" in sample_statement(20)
    assert math.isfinite(detectable_difference(24, 0.25))  # 6-0 gives p = 0.03125


def test_sample_statement_mentions_its_assumption():
    text = sample_statement(64)
    assert text.startswith("With 64 queries, a recall near 0.5 carries a 95% Wilson interval of about ±0.12;")
    assert f"about {detectable_difference(64):.2f}" in text and "25% of the queries (16)" in text


def test_matrix_frame_is_tidy_for_altair():
    frame = win_loss_matrix({"a": {"q": True}, "b": {"q": False}})
    assert isinstance(frame, pd.DataFrame)
    assert frame.dtypes["wins"] == np.int64 and frame.dtypes["p_value"] == np.float64
