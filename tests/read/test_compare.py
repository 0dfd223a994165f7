"""evalcore.read.compare against the engine-made stores (tests/conftest.py).

Expectations are computed independently: straight from the stored hits with pandas,
statsmodels' Wilson interval, scipy's binomtest and statsmodels' Holm.
"""

from __future__ import annotations

import pytest
from scipy.stats import binomtest
from statsmodels.stats.multitest import multipletests
from statsmodels.stats.proportion import proportion_confint

from evalcore.errors import StoreError
from evalcore.measures.stats import format_p, p_relation
from evalcore.read import compare, runs
from evalcore.read.comparison import statements
from evalcore.records import Configuration, RunConfiguration
from read.oracle import first_ranks


def test_recall_table_matches_hits_and_wilson(store, engine_run_id):
    sides = runs.run_configurations(store, engine_run_id)
    table = compare.recall_table(store, sides)
    assert list(dict.fromkeys(table["label"])) == [s.configuration.label for s in sides]
    for side in sides[:4]:
        c = side.configuration
        ranks = first_ranks(store, engine_run_id, c.strategy, c.retriever)
        n = len(ranks)
        rows = table[table["label"] == c.label].set_index("metric")
        for k in (1, 4, 8, 20):
            hits = int((ranks <= k).sum())
            low, high = proportion_confint(hits, n, method="wilson")
            assert rows.loc[f"recall@{k}", "value"] == pytest.approx(hits / n)
            assert (rows.loc[f"recall@{k}", "low"], rows.loc[f"recall@{k}", "high"]) == pytest.approx((low, high))
        assert rows.loc["mrr", "value"] == pytest.approx((1 / ranks).fillna(0).mean())
    wide = compare.recall_wide(table)
    assert len(wide) == len(sides) and wide["recall@4"].tolist() == pytest.approx(
        table[table["metric"] == "recall@4"]["value"].tolist()
    )


def test_matrix_matches_binomtest_and_holm_over_the_chosen_pairs(store, engine_run_id):
    sides = tuple(s for s in runs.run_configurations(store, engine_run_id) if s.configuration.retriever == "dense")
    comparison = compare.compare(store, sides, 4, adjust=True)
    matrix = comparison.matrix
    assert list(comparison.labels) == [s.configuration.label for s in sides]  # one run: labels without the run
    assert len(matrix) == len(sides) * (len(sides) - 1)
    outcomes = {
        s.configuration.label: first_ranks(store, engine_run_id, s.configuration.strategy, "dense") <= 4 for s in sides
    }
    for a, b in [(sides[0], sides[1]), (sides[-1], sides[2])]:
        la, lb = a.configuration.label, b.configuration.label
        wins = int((outcomes[la] & ~outcomes[lb]).sum())
        losses = int((~outcomes[la] & outcomes[lb]).sum())
        cell = comparison.cell(la, lb)
        assert (cell["wins"], cell["losses"]) == (wins, losses)
        assert cell["p_value"] == pytest.approx(1.0 if wins + losses == 0 else binomtest(wins, wins + losses).pvalue)
    pairs = matrix[matrix["row"] < matrix["column"]]
    adjusted = multipletests(pairs["p_value"].to_numpy(), method="holm")[1]
    assert pairs["p_holm"].to_numpy() == pytest.approx(adjusted)
    assert (pairs["p_shown"] == pairs["p_holm"]).all()
    assert list(pairs["p_text"]) == [format_p(p) for p in adjusted]
    unadjusted = compare.compare(store, sides, 4, adjust=False)
    assert (unadjusted.matrix["p_shown"] == unadjusted.matrix["p_value"]).all()
    assert "unadjusted" in unadjusted.p_name and "Holm" in comparison.p_name


def test_cell_detail_shows_the_cells_p_first(store, engine_run_id):
    sides = tuple(runs.run_configurations(store, engine_run_id)[:5])
    comparison = compare.compare(store, sides, 4, adjust=True)
    row, column = comparison.labels[0], comparison.labels[3]
    cell = comparison.cell(row, column)
    sentence = statements.pair_sentence(comparison, row, column)
    assert f"Holm-adjusted p {p_relation(cell['p_text'])}" in sentence
    assert sentence.index("Holm-adjusted p") < sentence.index("unadjusted p")
    assert f"unadjusted p {p_relation(format_p(cell['p_value']))}" in sentence
    test, listed = compare.pair_queries(store, comparison.side(row), comparison.side(column), 4)
    assert (test.wins, test.losses) == (cell["wins"], cell["losses"])
    assert sorted(listed.loc[listed["outcome"] == "won", "query_id"]) == sorted(test.won)


def test_best_statement_reads_the_same_cell(store, engine_run_id):
    sides = tuple(runs.run_configurations(store, engine_run_id))
    comparison = compare.compare(store, sides, 4, adjust=True)
    top = statements.best(comparison)
    recall = {
        s.configuration.label: float(
            (first_ranks(store, engine_run_id, s.configuration.strategy, s.configuration.retriever) <= 4).mean()
        )
        for s in sides
    }
    best_value = max(recall.values())
    assert top.recall == pytest.approx(best_value)
    assert top.label == next(label for label, v in recall.items() if v == best_value)  # ties: the first
    n = comparison.n
    low, high = proportion_confint(round(best_value * n), n, method="wilson")
    assert (top.interval.low, top.interval.high) == pytest.approx((low, high))
    cell = comparison.cell(top.label, top.runner_up)
    assert top.p_text == cell["p_text"]
    sentence = top.sentence(4, comparison.p_name)
    assert top.label in sentence and f"p {p_relation(cell['p_text'])}" in sentence
    assert ("not significantly better" in sentence) == (not top.significant)


def test_comparison_across_two_runs_with_other_names(two_run_store, two_run_ids):
    from evalcore.store import Store

    store = Store(two_run_store)
    first, second = two_run_ids
    assert compare.comparable(store, first, second) is None
    sides = (runs.run_configurations(store, first)[0], *runs.run_configurations(store, second)[:2])
    comparison = compare.compare(store, sides, 4, adjust=False)
    # labels lead with the configuration and name the run
    assert [label.split(" · ")[0] for label in comparison.labels] == [s.configuration.label for s in sides]
    assert all(
        " · run " in label and label.endswith(s.run_id) for label, s in zip(comparison.labels, sides, strict=True)
    )
    a = first_ranks(store, first, sides[0].configuration.strategy, sides[0].configuration.retriever) <= 4
    b = first_ranks(store, second, sides[1].configuration.strategy, sides[1].configuration.retriever) <= 4
    wins, losses = int((a & ~b).sum()), int((~a & b).sum())
    cell = comparison.cell(comparison.labels[0], comparison.labels[1])
    assert (cell["wins"], cell["losses"]) == (wins, losses)
    assert cell["p_value"] == pytest.approx(1.0 if wins + losses == 0 else binomtest(wins, wins + losses).pvalue)
    assert comparison.side(comparison.labels[2]) == sides[2]


def test_comparison_across_runs_needs_the_same_queries(scratch, engine_run_id):
    scratch.start_run({"run_id": "other", "name": "other"})
    scratch.finish_run("other", "failed", "killed")
    sides = (runs.run_configurations(scratch, engine_run_id)[0], RunConfiguration("other", Configuration("A", "dense")))
    with pytest.raises(StoreError, match="same queries"):
        compare.compare(scratch, sides, 4)
    with pytest.raises(StoreError, match="failed: killed"):
        runs.require_complete(scratch, "other")


def test_destroyed_counts_in_the_runs_order(store, engine_run_id):
    counts = compare.destroyed_counts(store, engine_run_id)
    assert list(counts["strategy"]) == runs.strategies_of(store, engine_run_id)
    stored = store.query(
        "SELECT strategy, count(*) AS n FROM destroyed WHERE run_id = ? GROUP BY strategy", [engine_run_id]
    ).set_index("strategy")["n"]
    assert (
        counts.set_index("strategy")["destroyed"].to_dict()
        == stored.reindex(counts["strategy"], fill_value=0).to_dict()
    )


def test_best_statement_when_no_query_differs_names_no_winner():
    """Two configurations that find exactly the same queries (e.g. the same retriever imported
    and served): the sentence says no query differs instead of naming a winner by order."""
    from evalcore.measures.stats import Interval

    top = statements.Best(
        "ext:sent3/rank_bm25",
        0.5,
        Interval(0.4, 0.6),
        36,
        72,
        "api:sent3/bm25api",
        0.5,
        0,
        0,
        "1",
        False,
        ("api:sent3/bm25api",),
    )
    sentence = top.sentence(4, "p")
    assert "no query differs at hit@4" in sentence and "significantly better" not in sentence
    assert "+0/-0" not in sentence
