"""The threshold claim (evalcore.measures.claim) against independent computations written here:
scipy's binom for the bounds, mannwhitneyu for the AUC, a pairwise DeLong for its interval,
and a brute-force gate for the counts and the guarantee's region."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.stats import binom, mannwhitneyu, norm

from evalcore.measures.claim import ClaimError, threshold_claim
from evalcore.measures.claim_held_out import held_out


def _k_star(n: int, rate: float, delta: float) -> int | None:
    best = None
    for k in range(n + 1):
        if binom.cdf(k, n, rate) <= delta:
            best = k
    return best


def _delong(pos: np.ndarray, neg: np.ndarray) -> tuple[float, float]:
    """Pairwise kernel, O(m n): P(pos > neg) + P(=)/2 and DeLong's standard error."""
    kernel = (pos[:, None] > neg[None, :]) + 0.5 * (pos[:, None] == neg[None, :])
    v10, v01 = kernel.mean(axis=1), kernel.mean(axis=0)
    return float(kernel.mean()), math.sqrt(v10.var(ddof=1) / len(pos) + v01.var(ddof=1) / len(neg))


def _brute(ood: np.ndarray, correct: np.ndarray, t: float, higher: bool) -> tuple[int, int]:
    if higher:
        return int((ood >= t).sum()), int((correct < t).sum())
    return int((ood < t).sum()), int((correct >= t).sum())


@pytest.mark.parametrize("higher", [False, True])
@pytest.mark.parametrize(("n_ood", "centre"), [(36, 0.70), (80, 0.62), (150, 0.70)])  # too few, apart, feasible
def test_claim_follows_the_definitions(higher: bool, n_ood: int, centre: float) -> None:
    rng = np.random.default_rng(n_ood)
    ood = np.round(rng.normal(centre, 0.06, n_ood), 3)  # rounded: ties happen
    inside = np.round(rng.normal(0.42, 0.08, 120), 3)
    inside[:5] = np.inf  # in-domain queries with no hit at all
    correct = np.round(inside[10:100] + rng.uniform(0, 0.03, 90), 3)
    sign = -1.0 if higher else 1.0
    claim = threshold_claim(sign * ood, sign * correct, sign * inside, axis="score" if higher else "distance")
    delta = 0.05
    k, j = _k_star(n_ood, 0.05, delta), _k_star(90, 0.20, delta)
    assert (claim.n_ood, claim.n_in_domain, claim.n_answerable) == (n_ood, 120, 90)
    assert claim.lost_allowed == j and claim.lost_status == "bounded"
    if k is None:
        assert claim.bluff_status == "too_few" and claim.bluff_ok_up_to is None
        assert claim.ood_needed == math.ceil(math.log(delta) / math.log(0.95)) == 59
        assert not claim.feasible and claim.recommended is None
        assert "59 are needed" in (claim.problem() or "")
    else:
        assert claim.bluff_status == "bounded" and claim.bluffs_allowed == k
        bluff_edge = sign * np.sort(ood)[k]
        assert claim.bluff_ok_up_to == pytest.approx(bluff_edge)
        lost_edge = sign * np.sort(correct)[::-1][j]
        assert claim.lost_ok_above == pytest.approx(lost_edge)
        # the region of the guarantee, checked on a grid by brute force
        for t in np.linspace(0.2, 0.9, 141) * sign:
            bluffs, lost = _brute(sign * ood, sign * correct, t, higher)
            if (t > bluff_edge) if higher else (t <= bluff_edge):
                assert bluffs <= k
            if (t <= lost_edge) if higher else (t > lost_edge):
                assert lost <= j
        assert claim.feasible == (np.sort(correct)[::-1][j] < np.sort(ood)[k]) == (centre > 0.65)
        if claim.feasible:
            t = claim.recommended
            assert t is not None
            bluffs, lost = _brute(sign * ood, sign * correct, t, higher)
            assert (claim.bluffs, claim.lost) == (bluffs, lost) and bluffs <= k and lost <= j
            kept = int(((sign * inside) >= t).sum() if higher else ((sign * inside) < t).sum())
            assert claim.refused == 120 - kept and claim.answered_wrong == kept - claim.answered_correct
    expected = mannwhitneyu(ood, inside, alternative="two-sided").statistic / (n_ood * 120)
    assert claim.auc == pytest.approx(expected, abs=1e-12)
    auc, se = _delong(ood, inside)
    z = norm.ppf(0.975)
    assert claim.auc_low == pytest.approx(max(0.0, auc - z * se), abs=1e-9)
    assert claim.auc_high == pytest.approx(min(1.0, auc + z * se), abs=1e-9)


def test_bad_options_and_empty_sets_name_themselves() -> None:
    ok = ([0.5, 0.6], [0.3], [0.3, 0.4])
    for kwargs, word in (({"alpha": 0}, "alpha"), ({"beta": 1.0}, "beta"), ({"confidence": 1.5}, "confidence")):
        with pytest.raises(ClaimError, match=word):
            threshold_claim(*ok, axis="distance", **kwargs)  # type: ignore[arg-type]
    with pytest.raises(ClaimError, match="off-topic"):
        threshold_claim([], [0.3], [0.3], axis="distance")
    with pytest.raises(ClaimError, match="answerable"):
        threshold_claim([0.5], [], [0.3], axis="distance")
    with pytest.raises(ClaimError, match="axis"):
        threshold_claim(*ok, axis="cosine")


def test_held_out_keeps_ground_truths_together_and_reports_rates() -> None:
    rng = np.random.default_rng(7)
    ood = rng.normal(0.62, 0.05, 240)
    correct = rng.normal(0.40, 0.06, 100)
    correct[::10] = np.inf  # not answerable
    groups = [f"g{i // 2}" for i in range(100)]
    check = held_out(ood, correct, groups, axis="distance", splits=40, seed=3)
    assert check.splits == 40 and check.used == 40
    assert check.share is not None and 0.0 <= check.share <= 1.0
    assert check.median_bluff_rate is not None and check.median_bluff_rate <= 0.10
    # the same split again by hand for the first draw: halves of groups and of off-topic queries
    again = held_out(ood, correct, groups, axis="distance", splits=40, seed=3)
    assert again == check
    small = held_out(ood[:40], correct, groups, axis="distance", splits=5)
    assert small.used == 0 and small.share is None  # 20 off-topic per half cannot bound 5%
