"""evalcore.read.selection: what a run opens on when nobody chose, checked against the stored
hits read here (recall@4 and the cost of a threshold counted query by query)."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from evalcore.measures.claim import ClaimError
from evalcore.read import claims, decisions, runs, selection
from evalcore.records import Configuration


def _recall_at_4(store, run_id: str) -> dict[Configuration, float]:
    """Share of valid in-domain queries with a correct hit among their stored top 4."""
    df = store.query(
        "SELECT r.strategy, r.retriever, r.query_id, bool_or(coalesce(h.correct AND h.rank <= 4, false)) AS hit "
        "FROM results r JOIN queries q ON q.run_id = r.run_id AND q.query_id = r.query_id "
        "LEFT JOIN hits h ON h.run_id = r.run_id AND h.strategy = r.strategy AND h.retriever = r.retriever "
        "AND h.query_id = r.query_id WHERE r.run_id = ? AND r.domain = 'in' AND q.valid GROUP BY ALL",
        [run_id],
    )
    return {
        Configuration(s, r): float(g["hit"].mean()) for (s, r), g in df.groupby(["strategy", "retriever"], sort=False)
    }


def test_default_configuration_is_the_latest_decision_else_the_best_by_recall_at_4(scratch, engine_run_id):
    configs = runs.configurations(scratch, engine_run_id)
    recall = _recall_at_4(scratch, engine_run_id)
    top = max(recall.values())
    best = next(c for c in configs if recall[c] == top)  # ties: the first in the run's order
    chosen, why = selection.default_configuration(scratch, engine_run_id, configs)
    assert chosen == best
    assert why == f"the best configuration by recall@4 ({top:.3f}); no decision is saved for this run"
    other = next(c for c in configs if c != best)
    decisions.save_decision(scratch, engine_run_id, other, 0.4, "")
    chosen, why = selection.default_configuration(scratch, engine_run_id, configs)
    assert chosen == other and why.startswith(f"the configuration of the latest saved decision (t = 0.4000 for {other}")
    assert selection.why_linked(scratch, engine_run_id, other.label) == why
    assert selection.why_linked(scratch, engine_run_id, best.label) == "the configuration named in the link"
    # a decision for a configuration the caller does not offer is not opened on
    assert selection.default_configuration(scratch, engine_run_id, [best])[0] == best


def test_compared_configurations_by_default(two_run_store, two_run_ids):
    from evalcore.store import Store

    store = Store(two_run_store)
    first, second = two_run_ids
    recall = _recall_at_4(store, first)
    available, default = selection.compared(store, first)
    assert [s.configuration for s in available] == runs.configurations(store, first)
    assert len(available) > selection.MAX_ALL
    best = max(recall, key=lambda c: recall[c])  # max keeps the first of equals, as the run's order does
    best = next(c for c in runs.configurations(store, first) if recall[c] == recall[best])
    assert [s.configuration for s in default] == [
        c for c in runs.configurations(store, first) if c.retriever == best.retriever
    ]
    available, default = selection.compared(store, first, second)
    assert [s.run_id for s in available] == [first] * len(recall) + [second] * len(runs.configurations(store, second))
    mine = sorted(runs.configurations(store, first), key=lambda c: -recall[c])[:4]  # stable sort: ties in run order
    theirs = runs.configurations(store, second)
    other_recall = _recall_at_4(store, second)
    theirs = sorted(theirs, key=lambda c: -other_recall[c])[:4]
    assert [(s.run_id, s.configuration) for s in default] == [(first, c) for c in mine] + [(second, c) for c in theirs]


def test_pair_keeps_a_valid_choice_else_the_first_two():
    labels = ["A/dense", "B/dense", "C/bm25"]
    assert selection.pair(labels) == ("A/dense", "B/dense")
    assert selection.pair(labels, "C/bm25", "A/dense") == ("C/bm25", "A/dense")
    assert selection.pair(labels, "B/dense", "B/dense") == ("B/dense", "A/dense")
    assert selection.pair(labels, "gone", "C/bm25") == ("A/dense", "C/bm25")
    assert selection.pair(labels, "C/bm25", "gone") == ("C/bm25", "A/dense")


def _minima(store, run_id: str, config: Configuration) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """From the stored top-4 hits: each off-topic query's smallest distance, each answerable
    in-domain query's smallest correct distance, and every distinct distance."""
    hits = store.query(
        "SELECT h.query_id, q.domain, h.distance, h.correct FROM hits h "
        "JOIN queries q ON q.run_id = h.run_id AND q.query_id = h.query_id "
        "WHERE h.run_id = ? AND h.strategy = ? AND h.retriever = ? AND h.rank <= 4 AND q.valid",
        [run_id, config.strategy, config.retriever],
    )
    off = hits[hits["domain"] == "out"].groupby("query_id")["distance"].min().to_numpy()
    answer = hits[(hits["domain"] == "in") & hits["correct"]].groupby("query_id")["distance"].min().to_numpy()
    return off, answer, np.unique(hits["distance"].to_numpy())


def _cost(off: np.ndarray, answer: np.ndarray, t: float) -> int:
    """3 x bluffs + lost answers at gate t (a hit is kept below t): a bluff is an off-topic
    query with a hit kept, a lost answer an answerable query none of whose correct hits is kept."""
    return 3 * int((off < t).sum()) + int((answer >= t).sum())


def test_default_threshold_is_the_decision_else_the_claim_else_the_cheapest_at_cost_ratio_3(scratch, engine_run_id):
    config = next(c for c in runs.configurations(scratch, engine_run_id) if c.retriever == "dense")
    t, source = selection.default_threshold(scratch, engine_run_id, config)
    assert source == f"suggested for {config} at cost ratio 3 (no decision saved for it yet)"
    off, answer, values = _minima(scratch, engine_run_id, config)
    candidates = [0.0, 2.5, *(values + 1e-9)]  # every distinct gate outcome
    assert _cost(off, answer, t) == min(_cost(off, answer, c) for c in candidates)
    try:
        claim = claims.claim_of(scratch, engine_run_id, config)
    except ClaimError:
        pytest.skip("the mini corpus supports no claim")
    feasible = dataclasses.replace(claim, feasible=True, recommended=0.3125)
    t, source = selection.default_threshold(scratch, engine_run_id, config, feasible)
    assert t == 0.3125 and source.startswith(f"the threshold claim's recommendation for {config} (bluffs <= ")
    infeasible = dataclasses.replace(claim, feasible=False)
    assert selection.default_threshold(scratch, engine_run_id, config, infeasible)[1].startswith("suggested for")
    decisions.save_decision(scratch, engine_run_id, config, 0.47, "")
    t, source = selection.default_threshold(scratch, engine_run_id, config, feasible)
    assert t == 0.47 and source.startswith(f"saved decision: t = 0.4700 for {config}")
