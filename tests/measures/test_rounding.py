"""Bounds in words on their safe side, and numeric options read one way (issue 34): checked
against exact rational arithmetic (fractions) and brute-force counts, on random values."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest
from scipy.stats import binom

from evalcore.boundary.numbers import bounded_float, bounded_int, range_text
from evalcore.errors import ConfigError
from evalcore.measures.claim import threshold_claim
from evalcore.measures.rounding import bound_text, grid_above, grid_at_or_below, rate_text, threshold_text

OPS = ("<=", "<", ">", ">=")


def _holds(a, op: str, b) -> bool:
    return {"<=": a <= b, "<": a < b, ">": a > b, ">=": a >= b}[op]


def _values(rng: np.random.Generator, n: int) -> list[float]:
    """Distances and scores as they come: arbitrary floats, values on the grid, floats next to them."""
    out = []
    for i in range(n):
        x = float(rng.uniform(-3, 3))
        if i % 3 == 1:
            x = round(x, 3)
        elif i % 3 == 2:
            x = math.nextafter(round(x, 3), math.inf if rng.random() < 0.5 else -math.inf)
        out.append(x)
    return out


def test_a_bound_in_words_reads_back_on_its_safe_side_and_close():
    rng = np.random.default_rng(34)
    for x in _values(rng, 3000):
        for op in OPS:
            shown = bound_text(x, op)
            back = float(shown)
            assert len(shown.partition(".")[2]) == 3, shown
            # every t the words allow is allowed by the exact bound: t <= shown implies t <= x, ...
            assert back <= x if op in ("<=", "<") else back >= x, (x, op, shown)
            assert abs(Fraction(back) - Fraction(x)) < Fraction(1, 1000), (x, op, shown)


def test_beside_a_threshold_the_words_compare_as_the_exact_values():
    rng = np.random.default_rng(35)
    for x in _values(rng, 2000):
        for t in (x, math.nextafter(x, 9), math.nextafter(x, -9), round(x, 3), x + float(rng.uniform(-2e-3, 2e-3))):
            for op in OPS:
                shown = bound_text(x, op, against=[t])
                truth = _holds(t, op, x)
                assert _holds(t, op, float(shown)) == truth, (x, op, t, shown)
                # as the reader sees them: the decimals of t against the decimals of the bound
                assert _holds(Fraction(threshold_text(t)), op, Fraction(shown)) == truth, (x, op, t, shown)


def test_a_threshold_in_words_is_the_number_it_is():
    for t in (0.113, 0.5, 0.11371, 0.1 + 0.2, -0.25, 1e-7, 12.0):
        text = threshold_text(t)
        assert float(text) == t and len(text.partition(".")[2]) >= 3, text
    assert threshold_text(0.113) == "0.113" and threshold_text(0.11371) == "0.11371"
    assert threshold_text(0.5, 4) == "0.5000" and threshold_text(math.inf) == "inf"


def test_grid_values_and_rates():
    rng = np.random.default_rng(36)
    for x in _values(rng, 2000):
        below, above = grid_at_or_below(x), grid_above(x)
        assert below <= x < above and Fraction(above) - Fraction(below) <= Fraction(2, 1000) + Fraction(1, 10**12)
        assert float(f"{below:.3f}") == below and float(f"{above:.3f}") == above
    assert [rate_text(r) for r in (0.05, 0.025, 0.2, 0.95, 0.975)] == ["5%", "2.5%", "20%", "95%", "97.5%"]


@pytest.mark.parametrize("higher", [False, True])
def test_the_recommendation_is_on_the_grid_and_meets_both_claims(higher):
    """Random sets (some with a band narrower than the grid): the recommended t meets both
    claims by brute force, is on the grid when a grid value lies in the band, and every bound
    in the sentence holds at its shown value."""
    rng = np.random.default_rng(37 + higher)
    sign = -1.0 if higher else 1.0
    on_grid = exact = 0
    for trial in range(200):
        n_ood, n_ans = int(rng.integers(40, 400)), int(rng.integers(20, 200))
        spread = 10 ** rng.uniform(-5, -1)  # the band's width follows: narrower than the grid now and then
        centre = float(rng.uniform(0.2, 0.8))
        ood = rng.normal(centre + 6 * spread, spread, n_ood)
        ans = rng.normal(centre, spread, n_ans)
        alpha, beta = float(rng.uniform(0.02, 0.3)), float(rng.uniform(0.02, 0.4))
        claim = threshold_claim(
            sign * ood, sign * ans, sign * ans, axis="score" if higher else "distance", alpha=alpha, beta=beta
        )
        if not claim.feasible:
            continue
        k = int(np.flatnonzero(binom.cdf(np.arange(n_ood + 1), n_ood, alpha) <= 0.05)[-1])
        j = int(np.flatnonzero(binom.cdf(np.arange(n_ans + 1), n_ans, beta) <= 0.05)[-1])
        t = claim.recommended
        bluffs = int((sign * ood >= t).sum() if higher else (ood < t).sum())
        lost = int((sign * ans < t).sum() if higher else (ans >= t).sum())
        assert bluffs <= k and lost <= j, (trial, t)
        if float(f"{t:.3f}") == t:
            on_grid += 1
        else:
            exact += 1
            b, lo = claim.bluff_ok_up_to, claim.lost_ok_above
            inside = (b < grid_above(b) <= lo) if higher else (lo < grid_at_or_below(b) <= b)
            assert not inside, (trial, "a grid value lay in the band", t)
        # the region's words, read back, keep the claim and agree with t
        bound = float(claim.bluff_bound_text())
        assert (bound >= claim.bluff_ok_up_to) if higher else (bound <= claim.bluff_ok_up_to)
        assert _holds(t, claim.bluff_op(), bound) and _holds(t, claim.lost_op(), float(claim.lost_bound_text()))
    assert on_grid > 20 and exact > 5, (on_grid, exact)


@pytest.mark.parametrize(
    ("text", "value"), [("0.05", 0.05), (" .5 ", 0.5), ("5e-2", 0.05), ("1e-300", 1e-300), ("+0.25", 0.25)]
)
def test_a_plain_number_is_read(text, value):
    assert bounded_float(text, option="--x", low=0, high=1, low_open=True, high_open=True) == value


@pytest.mark.parametrize(
    "text", ["nan", "inf", "-inf", "Infinity", "1e400", "0x1p-3", "1_0", "", "0.5.5", "\u0665", "0", "1"]
)
def test_everything_else_gets_one_message(text):
    with pytest.raises(ConfigError) as info:
        bounded_float(text, option="--max-bluff-rate", low=0, high=1, low_open=True, high_open=True)
    assert str(info.value) == f"--max-bluff-rate must be a number in (0, 1); got {text!r}"


def test_integers_and_ranges():
    assert bounded_int("12", option="--splits", low=1, high=math.inf) == 12
    for text in ("0", "1.0", "1e3", "nan", " "):
        with pytest.raises(ConfigError, match=r"--splits must be an integer in \[1, inf\); got"):
            bounded_int(text, option="--splits", low=1, high=math.inf)
    assert range_text(0, 1) == "[0, 1]" and range_text(-math.inf, math.inf) == "(-inf, inf)"
    assert range_text(0, 1, low_open=True) == "(0, 1]"


@pytest.mark.parametrize("n", [1, 7, 20, 41, 58, 59, 100, 1000])
def test_the_best_rate_a_set_supports_reads_as_a_bound_rounded_up(n):
    """The smallest bluff rate n off-topic questions support (zero bluffs) is 1 - delta ** (1/n);
    shown with one decimal it is rounded up, never to nearest (41 questions: 7.05% reads 7.1%).
    The oracle is scipy: at the shown rate, zero bluffs among n are at most delta likely."""
    from decimal import Decimal

    from scipy.stats import binom

    from evalcore.measures.claim import best_rate
    from evalcore.measures.rounding import rate_bound_text

    exact = best_rate(n, 0.05)
    shown = rate_bound_text(exact)
    value = float(Decimal(shown.removesuffix("%")) / 100)
    assert value >= exact
    assert value - exact < 0.001 + 1e-12  # one step of the last decimal at most
    assert binom.cdf(0, n, min(value, 1.0)) <= 0.05 + 1e-12  # the shown rate is supported
    if n == 41:
        assert shown == "7.1%"


def test_a_rate_bound_that_is_a_round_number_keeps_it():
    from evalcore.measures.rounding import rate_bound_text

    assert [rate_bound_text(r) for r in (0.05, 0.07, 0.2, 0.0704, 0.07001)] == ["5.0%", "7.0%", "20.0%", "7.1%", "7.1%"]
