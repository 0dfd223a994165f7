"""Threshold gate and sweep: the exact step function must agree with brute force at any t."""

from __future__ import annotations

import math

import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from evalcore.measures.stats import wilson_interval
from evalcore.measures.suggestion import suggest_threshold
from evalcore.measures.threshold import (
    COUNT_COLUMNS,
    counts_at,
    gate,
    split_hits,
    state_at,
    sweep,
)

# Distances on a coarse grid force ties between queries and with thresholds.
GRID = [round(0.05 * i, 2) for i in range(21)]
distance = st.one_of(st.sampled_from(GRID), st.floats(0.0, 1.2, allow_nan=False))
in_hits = st.lists(st.tuples(distance, st.booleans()), min_size=0, max_size=6)
ood_hits = st.lists(distance, min_size=0, max_size=6)
in_domain = st.dictionaries(st.text("abcdef", min_size=1, max_size=4), in_hits, max_size=25)
out_domain = st.dictionaries(st.text("uvwxyz", min_size=1, max_size=4), ood_hits, max_size=25)


def observed(ind, ood, top=4):
    values = {d for hits in ind.values() for d, _ in hits[:top]}
    values |= {d for ds in ood.values() for d in ds[:top]}
    return sorted(values)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(in_domain, out_domain, st.integers(1, 5), st.booleans(), st.data())
def test_sweep_agrees_with_brute_force_at_any_threshold(ind, ood, top, similarity, data):
    """Both directions: distances (kept when d < t) and similarities (kept when s >= t)."""
    frame = sweep(ind, ood, top=top, higher_is_closer=similarity)
    values = observed(ind, ood, top)
    probes = [-1.0, 0.0, 2.0, math.inf, data.draw(st.floats(-0.5, 1.5, allow_nan=False))]
    for d in values:  # exactly at, just below and just above every observed value
        probes += [d, math.nextafter(d, -math.inf), math.nextafter(d, math.inf)]
    for t in probes:
        assert state_at(frame, t) == counts_at(ind, ood, t, top=top, higher_is_closer=similarity), t
    # Every row's own threshold reproduces the row; the step set is minimal (rows differ).
    for row in frame.itertuples(index=False):
        expected = counts_at(ind, ood, row.threshold, top=top, higher_is_closer=similarity)
        assert tuple(getattr(row, c) for c in COUNT_COLUMNS) == tuple(getattr(expected, c) for c in COUNT_COLUMNS)
    counts = frame[list(COUNT_COLUMNS)]
    assert not counts.duplicated().any()
    assert frame["threshold"].is_monotonic_increasing and math.isinf(frame["threshold"].iloc[-1])
    assert (frame["t_from"].iloc[1:].to_numpy() == frame["threshold"].iloc[:-1].to_numpy()).all()


def test_gate_keeps_strictly_below_threshold_from_top_four():
    distances = [0.5, 0.2, 0.675, 0.1, 0.05]
    assert gate(distances, 0.675) == [0, 1, 3]  # 0.675 itself is not kept; rank 5 never
    assert gate(distances, 0.6751) == [0, 1, 2, 3]
    assert gate(distances, 0.1) == []  # NO ANSWER
    assert gate(distances, 1.0, top=2) == [0, 1]
    with pytest.raises(ValueError):
        gate(distances, math.nan)
    with pytest.raises(ValueError):
        gate(distances, 0.5, top=0)


def test_gate_on_a_similarity_keeps_at_or_above_threshold():
    scores = [0.9, 0.7, 0.75, 0.2, 0.95]
    assert gate(scores, 0.75, higher_is_closer=True) == [0, 2]  # 0.75 itself is kept; rank 5 never
    assert gate(scores, 0.7500001, higher_is_closer=True) == [0]
    assert gate(scores, 0.96, higher_is_closer=True) == []  # NO ANSWER
    assert gate([-3.5, -9.0], -4.0, higher_is_closer=True) == [0]  # any real scale, e.g. logits


def test_sweep_on_similarities_by_hand():
    ind = {"q1": [(0.9, False), (0.8, True)], "q2": [(0.5, True)], "q3": []}
    ood = {"o1": [0.85], "o2": [0.3]}
    frame = sweep(ind, ood, higher_is_closer=True)
    assert frame["threshold"].tolist() == [0.3, 0.5, 0.8, 0.85, 0.9, math.inf]
    at = state_at(frame, 0.8)  # keeps s >= 0.8: q1 answered (correct at 0.8), q2 refused, o1 bluffs
    assert (at.bluffs, at.refused, at.answered_correct, at.answered_wrong, at.lost) == (1, 2, 1, 0, 1)
    assert state_at(frame, math.inf).refused == 3 and state_at(frame, -5).bluffs == 2
    s = suggest_threshold(frame, cost_ratio=1.0, higher_is_closer=True)
    # cost 1 x bluffs + lost: t in (0.3, 0.5] -> 1 + 0; t in (0.5, 0.8] -> 1 + 1; ties: none lower
    assert (s.t_from, s.t_to, s.bluffs, s.lost) == (0.3, 0.5, 1, 0)
    assert "highest threshold" in s.rule
    c = suggest_threshold(frame, max_bluff_rate=0.0, higher_is_closer=True)
    assert (c.bluffs, c.answered_correct) == (0, 0) and c.t_from >= 0.85


def test_sweep_hand_example_counts_and_rates():
    ind = {
        "q1": [(0.3, False), (0.4, True)],  # answerable; wrong chunk comes first
        "q2": [(0.5, True)],  # answerable
        "q3": [(0.2, False), (0.6, False)],  # not answerable: only wrong answers or refusal
        "q4": [(0.1, False)] * 4 + [(0.05, True)],  # correct only at rank 5: not answerable
    }
    ood = {"o1": [0.45, 0.5], "o2": [0.3]}
    frame = sweep(ind, ood)
    assert frame["threshold"].tolist()[:-1] == [0.1, 0.2, 0.3, 0.4, 0.45, 0.5]
    at = state_at(frame, 0.42)  # keeps < 0.42
    assert (at.bluffs, at.refused, at.answered_correct, at.answered_wrong, at.lost, at.answerable) == (
        1,
        1,
        1,
        2,
        1,
        2,
    )  # q2 refused and lost; q3, q4 wrong
    row = frame[frame["threshold"] == 0.45].iloc[0]
    assert row["bluff_rate"] == 0.5 and row["lost_rate"] == 0.5
    low, high = wilson_interval(1, 2)
    assert (row["bluff_low"], row["bluff_high"]) == pytest.approx((low, high), abs=1e-12)
    assert row["answered_wrong_rate"] == 0.5  # q3, q4


def test_sweep_without_ood_queries_has_nan_bluff_rate():
    frame = sweep({"q": [(0.4, True)]}, {})
    assert frame["bluff_rate"].isna().all()
    assert frame["refused"].tolist() == [1, 0]
    with pytest.raises(ValueError, match="out-of-domain"):
        suggest_threshold(frame, max_bluff_rate=0.1)


def test_nan_distance_is_rejected():
    with pytest.raises(ValueError, match="finite"):
        sweep({"q": [(math.nan, True)]}, {})


@settings(max_examples=80, deadline=None)
@given(in_domain, out_domain, st.sampled_from([0.0, 0.5, 1.0, 2.0, 5.0]), st.booleans())
def test_cost_suggestion_is_optimal_and_reproducible(ind, ood, ratio, similarity):
    frame = sweep(ind, ood, higher_is_closer=similarity)
    s = suggest_threshold(frame, cost_ratio=ratio, higher_is_closer=similarity)
    at = counts_at(ind, ood, s.threshold, higher_is_closer=similarity)
    assert (at.bluffs, at.lost, at.refused, at.answered_correct) == (s.bluffs, s.lost, s.refused, s.answered_correct)
    assert s.t_from < s.threshold <= s.t_to
    # Independent optimum: brute force over thresholds at and around every observed value.
    candidates = [-1.0, math.inf] + [x for d in observed(ind, ood) for x in (d, math.nextafter(d, math.inf))]
    costs = [
        ratio * c.bluffs + c.lost for c in (counts_at(ind, ood, t, higher_is_closer=similarity) for t in candidates)
    ]
    assert s.cost == pytest.approx(min(costs))
    # Tie rule: no stricter threshold (lower for distances, higher for similarities) reaches it.
    stricter = (lambda t: t > s.t_to) if similarity else (lambda t: t <= s.t_from)
    assert all(cost > s.cost for t, cost in zip(candidates, costs, strict=True) if stricter(t))


@settings(max_examples=80, deadline=None)
@given(in_domain, out_domain.filter(bool), st.sampled_from([0.0, 0.1, 0.25, 0.5, 1.0]), st.booleans())
def test_bluff_ceiling_suggestion(ind, ood, ceiling, similarity):
    frame = sweep(ind, ood, higher_is_closer=similarity)
    s = suggest_threshold(frame, max_bluff_rate=ceiling, higher_is_closer=similarity)
    at = counts_at(ind, ood, s.threshold, higher_is_closer=similarity)
    assert (at.bluffs, at.lost, at.answered_correct) == (s.bluffs, s.lost, s.answered_correct)
    assert at.bluffs / len(ood) <= ceiling
    candidates = [-1.0, math.inf] + [x for d in observed(ind, ood) for x in (d, math.nextafter(d, math.inf))]
    feasible = [
        c
        for c in (counts_at(ind, ood, t, higher_is_closer=similarity) for t in candidates)
        if c.bluffs / len(ood) <= ceiling
    ]
    best = max(c.answered_correct for c in feasible)
    assert s.answered_correct == best
    assert s.bluffs == min(c.bluffs for c in feasible if c.answered_correct == best)


def test_suggestion_needs_exactly_one_rule():
    frame = sweep({"q": [(0.4, True)]}, {"o": [0.3]})
    with pytest.raises(ValueError):
        suggest_threshold(frame)
    with pytest.raises(ValueError):
        suggest_threshold(frame, cost_ratio=1.0, max_bluff_rate=0.1)
    with pytest.raises(ValueError):
        suggest_threshold(frame, cost_ratio=-1.0)


def test_suggested_value_is_a_short_decimal_inside_the_step():
    ind = {f"q{i}": [(round(0.6 + 0.01 * i, 2), True)] for i in range(10)}  # 0.60 .. 0.69
    ood = {f"o{i}": [round(0.3 + 0.1 * i, 1)] for i in range(5)}  # 0.3 .. 0.7
    s = suggest_threshold(sweep(ind, ood), cost_ratio=0.5)
    # By hand: t <= 0.3 costs 10 (all lost); t in (0.69, 0.7] keeps every answer and the
    # four ood hits below 0.7: cost 0.5 * 4 = 2; t > 0.7 costs 2.5. The step (0.69, 0.7]
    # has the one-decimal value 0.7, where the ood hit at exactly 0.7 is not kept.
    assert (s.t_from, s.t_to) == (0.69, 0.7)
    assert s.threshold == 0.7
    assert (s.bluffs, s.lost, s.cost) == (4, 0, 2.0)
    assert "0.5 x bluffs" in s.rule


def test_split_hits():
    hits = pd.DataFrame(
        {
            "query_id": ["q1", "q1", "o1", "q2"],
            "domain": ["in", "in", "out", "in"],
            "rank": [2, 1, 1, 1],
            "distance": [0.4, 0.3, 0.5, 0.2],
            "correct": [True, False, False, False],
        }
    )
    ind, ood = split_hits(hits, domains={"q3": "in"})
    assert ind == {"q1": [(0.3, False), (0.4, True)], "q2": [(0.2, False)], "q3": []}
    assert ood == {"o1": [0.5]}
