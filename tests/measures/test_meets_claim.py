"""Whether a threshold meets its claim (``evalcore.measures.claim_check.meets_claim``), against the
claim's bounds computed here independently: scipy's binomial CDF gives the largest number of
bluffs (lost answers) the claim allows, the bound is that order statistic of the gate values,
and every check is made for t inside, at and outside each bound, on both axes (a distance, kept
when ``d < t``; a score, kept when ``s >= t``). The bound the check names is read back from its
printed digits (as a reader would) and must say the same as the exact comparison; the counts at
t are counted here from the raw values. Seeded, vectorised: the module runs in about a second."""

from __future__ import annotations

import math
from dataclasses import asdict
from decimal import Decimal

import numpy as np
import pytest
from scipy.stats import binom

from evalcore.i18n import Translator
from evalcore.measures.claim import ClaimError, threshold_claim
from evalcore.measures.claim_check import ClaimCheck, meets_claim, outside_claim
from evalcore.measures.rounding import threshold_text

SETS = [  # (seed, n_ood, n_answerable, alpha, beta, confidence)
    (1, 190, 98, 0.05, 0.20, 0.95),
    (2, 400, 300, 0.02, 0.10, 0.99),
    (3, 60, 40, 0.10, 0.25, 0.90),
    (4, 1000, 50, 0.05, 0.20, 0.95),
]


def allowed(n: int, rate: float, delta: float) -> int | None:
    """The most failures a claim at ``rate`` allows over ``n`` at confidence ``1 - delta``: the
    largest k with P(Binomial(n, rate) <= k) <= delta (scipy), or None when not even 0 is."""
    cdf = binom.cdf(np.arange(n + 1), n, rate)
    ok = np.flatnonzero(cdf <= delta)
    return int(ok[-1]) if len(ok) else None


def values(seed: int, n_ood: int, n_answerable: int, axis: str):
    """Gate values with ties and a coarse grid (as a score axis often has), off-topic ones
    mostly farther than the answerable ones; on a score axis the same, negated."""
    rng = np.random.default_rng(seed)
    ood = np.round(rng.beta(5, 3, n_ood), 3)
    ans = np.round(rng.beta(2, 5, n_answerable), 4)
    inside = np.concatenate([ans, np.round(rng.beta(4, 4, n_answerable // 3), 3)])
    if axis == "score":
        return -ood, -ans, -inside
    return ood, ans, inside


def bounds(ood, ans, axis: str, alpha: float, beta: float, confidence: float):
    """(bluff bound, lost bound) as the claim defines them, each None when the set is too small
    and ``"unbounded"`` when every t meets that side, computed here from the order statistics."""
    delta = 1 - confidence
    k, j = allowed(len(ood), alpha, delta), allowed(len(ans), beta, delta)
    bluff = lost = None
    if k is not None:
        ordered = np.sort(ood) if axis == "distance" else np.sort(ood)[::-1]  # bluffs come from the closest
        bluff = "unbounded" if k + 1 > len(ood) else float(ordered[k])
    if j is not None:
        ordered = np.sort(ans)[::-1] if axis == "distance" else np.sort(ans)  # losses come from the farthest
        lost = "unbounded" if j + 1 > len(ans) else float(ordered[j])
    return bluff, lost, k, j


def thresholds(bound: float) -> list[float]:
    """t inside, at and outside ``bound``: far and near on each side, the bound itself, its
    neighbouring floats, and grid values (three decimals) on either side."""
    grid = math.floor(bound * 1000) / 1000
    return sorted(
        {
            bound - 0.1,
            bound - 1e-9,
            math.nextafter(bound, -math.inf),
            bound,
            math.nextafter(bound, math.inf),
            bound + 1e-9,
            bound + 0.1,
            grid,
            grid + 0.001,
            grid - 0.001,
        }
    )


def kept(values_, t: float, axis: str) -> np.ndarray:
    return values_ >= t if axis == "score" else values_ < t


def reads(text: str, op: str, t: float) -> bool:
    """What a reader concludes from the printed bound: the printed t against the printed bound."""
    shown, at = Decimal(text), Decimal(threshold_text(t))
    return at <= shown if op == "<=" else at > shown


CASES = [(s, axis) for s in SETS for axis in ("distance", "score")]


@pytest.mark.parametrize(("params", "axis"), CASES, ids=[f"{s[0]}-{a}" for s, a in CASES])
def test_each_side_against_the_binomial_bound_inside_at_and_outside(params, axis):
    seed, n_ood, n_answerable, alpha, beta, confidence = params
    ood, ans, inside = values(seed, n_ood, n_answerable, axis)
    claim = threshold_claim(ood, ans, inside, axis=axis, alpha=alpha, beta=beta, confidence=confidence)
    bluff_bound, lost_bound, k, j = bounds(ood, ans, axis, alpha, beta, confidence)
    assert isinstance(bluff_bound, float) and isinstance(lost_bound, float)  # these sets bound both sides
    checked = 0
    for side, bound, allowed_fails in (("bluff", bluff_bound, k), ("lost", lost_bound, j)):
        for t in thresholds(bound):
            check = meets_claim(claim, t, ood_min=ood, answerable_min=ans)
            bluffs = int(kept(ood, t, axis).sum())
            lost = len(ans) - int(kept(ans, t, axis).sum())
            assert (check.bluffs_at_t, check.lost_at_t) == (bluffs, lost)
            assert (check.n_ood, check.n_answerable) == (n_ood, n_answerable)
            # the claim's rule: distance bluff t <= b, lost t > b; score bluff t > b, lost t <= b
            if side == "bluff":
                want = t <= bound if axis == "distance" else t > bound
                got, op, text, shown = check.bluff, check.bluff_op, check.bluff_bound_text, check.bluff_bound
                assert want == (bluffs <= allowed_fails)  # what the bound means: at most k* bluffs
            else:
                want = t > bound if axis == "distance" else t <= bound
                got, op, text, shown = check.lost, check.lost_op, check.lost_bound_text, check.lost_bound
                assert want == (lost <= allowed_fails)
            assert got is want, (side, axis, t, bound)
            assert text is not None and shown == float(text)
            assert reads(text, op, t) is want, (side, t, text)  # the printed bound reads t the same way
            # the printed bound lies on its safe side of the exact one
            assert (shown <= bound) if op == "<=" else (shown >= bound), (side, op, shown, bound)
            assert check.met is (False if check.bluff is False or check.lost is False else True)
            checked += 1
    assert checked >= 16


def test_the_stored_json_and_the_claim_give_the_same_check():
    ood, ans, inside = values(7, 190, 98, "distance")
    claim = threshold_claim(ood, ans, inside, axis="distance")
    for t in (0.1, 0.381, claim.bluff_ok_up_to, claim.lost_ok_above, 0.9):
        assert meets_claim(claim.to_json(), t) == meets_claim(claim, t)
        assert meets_claim(claim, t).bluffs_at_t is None  # no gate values given: no count


def test_too_few_questions_make_no_claim_and_an_unbounded_side_holds_everywhere():
    rng = np.random.default_rng(11)
    few = threshold_claim(rng.uniform(0.5, 1, 20), rng.uniform(0, 0.5, 10), rng.uniform(0, 1, 30), axis="distance")
    assert (few.bluff_status, few.lost_status) == ("too_few", "too_few")
    check = meets_claim(few, 0.4)
    assert (check.bluff, check.lost, check.met, check.bluff_bound, check.lost_bound) == (None, None, None, None, None)
    assert outside_claim(check) is None
    # a side whose every question may fail (a status the claim's JSON can hold): every t meets it
    unbounded = {**few.to_json(), "bluff_status": "unbounded", "bluff_ok_up_to": None}
    check = meets_claim(unbounded, 5.0)
    assert check.bluff is True and check.bluff_bound is None and check.bluff_bound_text is None
    assert check.lost is None and check.met is None


def test_the_warning_names_the_bound_and_the_bluffs_at_t_in_each_language():
    ood, ans, inside = values(1, 190, 98, "distance")
    claim = threshold_claim(ood, ans, inside, axis="distance")
    bound, _, _, _ = bounds(ood, ans, "distance", 0.05, 0.2, 0.95)
    t = 0.781
    assert isinstance(bound, float) and t > bound
    check = meets_claim(claim, t, ood_min=ood, answerable_min=ans)
    bluffs = int((ood < t).sum())
    text = outside_claim(check)
    assert text is not None
    want = (
        f"t = 0.781 lies outside the claim 'bluffs <= 5%': its bound is t <= {check.bluff_bound_text}, "
        f"and at t = 0.781, {bluffs} of 190 off-topic questions bluff."
    )
    assert text.startswith(want), text
    assert Decimal(check.bluff_bound_text) <= Decimal(repr(bound))  # rounded down: its safe side
    german = outside_claim(check, Translator("de"))
    assert german is not None
    assert german.startswith(
        f"t = 0,781 liegt außerhalb der Zusage 'Bluffs <= 5\xa0%': ihre Grenze ist t <= "
        f"{check.bluff_bound_text.replace('.', ',')}, und bei t = 0,781 bluffen {bluffs} von 190 themenfremden Fragen."
    ), german
    for lang in ("nl", "id"):
        other = outside_claim(check, Translator(lang))
        assert other is not None and "0,781" in other and f"{bluffs}" in other and other != text
    # one bluff: the singular form
    one = ClaimCheck(**_with(check, bluffs_at_t=1))
    assert "1 of 190 off-topic questions bluffs." in (outside_claim(one) or "")
    assert "blufft 1 von 190" in (outside_claim(one, Translator("de")) or "")


def _with(check: ClaimCheck, **changes: object) -> dict:
    return {**asdict(check), **changes}


HOSTILE_THRESHOLDS = [math.nan, math.inf, -math.inf, "0.3", None, True]


@pytest.mark.parametrize("t", HOSTILE_THRESHOLDS, ids=repr)
def test_a_threshold_that_is_no_finite_number_is_refused_naming_it(t):
    ood, ans, inside = values(1, 190, 98, "distance")
    claim = threshold_claim(ood, ans, inside, axis="distance")
    with pytest.raises(ClaimError, match="threshold must be a finite number"):
        meets_claim(claim, t)  # type: ignore[arg-type]
