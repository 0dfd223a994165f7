"""Recall@k and MRR against ranx and pytrec_eval on generated runs; the metric registry."""

from __future__ import annotations

import math
import random

import numpy as np
import pandas as pd
import pytest
import ranx_oracle

from evalcore.errors import ConfigError
from evalcore.measures.metrics import (
    DEFAULT_KS,
    METRICS,
    SUMMARY_COLUMNS,
    hit_at_k,
    hits_by_query,
    mrr,
    parse_metric,
    recall_at_k,
    summarize,
    wide,
)
from evalcore.measures.stats import wilson_interval


def generated_run(seed: int, queries: int = 300, chunks: int = 120, depth: int = 40):
    """Random rankings with 0-3 correct chunks per query (0: destroyed ground truth; a
    correct chunk may also lie outside the ranking). Returns qrels, run (distinct scores,
    descending with rank) and each query's first correct rank over its ranking."""
    rng = random.Random(seed)
    qrels, run, first = {}, {}, {}
    for q in range(queries):
        qid = f"q{q}"
        ranking = rng.sample(range(chunks), depth)
        correct = set(rng.sample(range(chunks), rng.choice([0, 1, 1, 1, 2, 3])))
        # Ground truth for the oracles; a destroyed one gets a chunk no ranking holds.
        qrels[qid] = {f"c{c}": 1 for c in correct} or {"c-destroyed": 1}
        run[qid] = {f"c{c}": float(depth - i) for i, c in enumerate(ranking)}
        first[qid] = next((i + 1 for i, c in enumerate(ranking) if c in correct), None)
    return qrels, run, first


@pytest.fixture(scope="module")
def runs():
    return [generated_run(seed) for seed in (1, 2, 3)]


@pytest.mark.slow
def test_recall_and_mrr_agree_with_ranx(runs):
    pytest.importorskip("ranx")
    ks = DEFAULT_KS + (2, 40)
    metrics = [f"hit_rate@{k}" for k in ks] + ["mrr"]
    for qrels, run, first in runs:
        scores = ranx_oracle.evaluate(qrels, run, metrics)
        ranks = list(first.values())
        for k in ks:
            # ranx' hit_rate@k: share of queries with >= 1 relevant item in the top k. (Its
            # recall@k divides by the number of relevant items, which differs with 2+.)
            assert recall_at_k(ranks, k) == pytest.approx(scores[f"hit_rate@{k}"], abs=1e-9)
        assert mrr(ranks) == pytest.approx(scores["mrr"], abs=1e-9)


def test_mrr_and_hits_agree_with_pytrec_eval(runs):
    pytrec_eval = pytest.importorskip("pytrec_eval")
    for qrels, run, first in runs:
        per_query = pytrec_eval.RelevanceEvaluator(qrels, {"recip_rank", "success"}).evaluate(run)
        for qid, rank in first.items():
            assert (0.0 if rank is None else 1 / rank) == pytest.approx(per_query[qid]["recip_rank"], abs=1e-12)
            for k in (1, 5, 10):  # trec_eval's success@{1,5,10} is our hit@k
                assert float(hit_at_k(rank, k)) == per_query[qid][f"success_{k}"]
        expected = np.mean([v["recip_rank"] for v in per_query.values()])
        assert mrr(list(first.values())) == pytest.approx(expected, abs=1e-9)


def test_hand_examples_and_missing_values():
    assert recall_at_k([1, 3, None, 4], 3) == 0.5
    assert mrr([1, 2, None, 4]) == pytest.approx((1 + 0.5 + 0 + 0.25) / 4)
    assert hit_at_k(4, 4) and not hit_at_k(5, 4) and not hit_at_k(None, 1)
    # Columns read from the store: nullable ints, or floats with NaN.
    assert recall_at_k(pd.Series([1, None, 3], dtype="Int64"), 3) == pytest.approx(2 / 3)
    assert mrr(pd.Series([2.0, math.nan])) == 0.25
    assert mrr(np.array([1, 4])) == pytest.approx(0.625)


@pytest.mark.parametrize(
    "call",
    [
        lambda: recall_at_k([], 4),
        lambda: mrr([]),
        lambda: recall_at_k([1], 0),
        lambda: recall_at_k([0], 1),
        lambda: mrr([1.5]),
        lambda: hit_at_k(True, 1),
        lambda: recall_at_k([1], 2.0),
    ],
)
def test_bad_input_raises_value_error(call):
    with pytest.raises(ValueError):
        call()


def test_parse_metric_and_registry():
    assert parse_metric("recall@20").k == 20 and parse_metric("Recall@20").name == "recall@20"
    assert parse_metric("hit@4").per_query(3) == 1.0 and parse_metric("hit@4").per_query(5) == 0.0
    assert parse_metric("mrr").k is None
    assert parse_metric("mrr")([1, 2]) == 0.75
    assert parse_metric("recall@1")([1, 2]) == 0.5
    assert "top 20" in parse_metric("recall@20").description
    assert all(spec.description for spec in METRICS.values())
    for bad in ("ndcg@10", "recall", "recall@0", "mrr@10", "hit@x", ""):
        with pytest.raises(ConfigError) as info:
            parse_metric(bad)
        assert "recall@k" in str(info.value) and "mrr" in str(info.value) and "hit@k" in str(info.value)


def test_summarize_is_tidy_with_wilson_intervals():
    ranks = {("A", "dense"): [1, 5, None, 2, 30], ("E", "bm25"): [1, 1, 9, None, 20]}
    frame = summarize(ranks)
    assert list(frame.columns) == list(SUMMARY_COLUMNS)
    assert len(frame) == 2 * (len(DEFAULT_KS) + 1)
    for (strategy, retriever), values in ranks.items():
        rows = frame[(frame["strategy"] == strategy) & (frame["retriever"] == retriever)]
        assert rows["config"].unique().tolist() == [f"{strategy}/{retriever}"]
        for k in DEFAULT_KS:
            row = rows[rows["metric"] == f"recall@{k}"].iloc[0]
            hits = sum(1 for r in values if r is not None and r <= k)
            assert (row["value"], row["successes"], row["queries"], row["k"]) == (hits / 5, hits, 5, k)
            assert (row["low"], row["high"]) == tuple(wilson_interval(hits, 5))
        row = rows[rows["metric"] == "mrr"].iloc[0]
        assert row["value"] == pytest.approx(mrr(values)) and math.isnan(row["low"])
    table = wide(frame)
    assert table["recall@4"].tolist() == [0.4, 0.4]
    assert {"recall@20 low", "recall@20 high", "mrr", "queries"} <= set(table.columns)
    with pytest.raises(ValueError, match="E/x"):
        summarize({("E", "x"): []})


def test_hits_by_query_feeds_the_paired_test():
    assert hits_by_query({"q1": 1, "q2": None, "q3": 5}, 4) == {"q1": True, "q2": False, "q3": False}
