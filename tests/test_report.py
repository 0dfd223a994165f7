"""evalcore.report / charts / export against a store made by the real engine (conftest).

Expectations are computed independently: straight from the stored hits with pandas,
statsmodels' Wilson interval, scipy's binomtest, statsmodels' Holm, and a brute-force gate.
"""
from __future__ import annotations

import math
import shutil

import numpy as np
import pandas as pd
import pytest
from scipy.stats import binomtest
from statsmodels.stats.multitest import multipletests
from statsmodels.stats.proportion import proportion_confint

from evalcore import PIPELINE_VERSION, export, report
from evalcore.errors import StoreError
from evalcore.store import Store


@pytest.fixture(scope="module")
def store(engine_store) -> Store:
    return Store(engine_store)


@pytest.fixture()
def scratch(engine_store, tmp_path) -> Store:
    """A private copy of the engine store, for tests that write."""
    path = tmp_path / "copy.duckdb"
    shutil.copy(engine_store, path)
    return Store(path)


def _first_ranks(store: Store, run_id: str, strategy: str, retriever: str) -> pd.Series:
    """First correct rank per scored in-domain query, from the stored top-20 hits (NaN: none)."""
    hits = store.query("SELECT * FROM hits WHERE run_id = ? AND strategy = ? AND retriever = ?",
                       [run_id, strategy, retriever])
    queries = store.query("SELECT query_id FROM queries WHERE run_id = ? AND domain = 'in' AND valid", [run_id])
    first = hits[hits["correct"]].groupby("query_id")["rank"].min()
    return first.reindex(queries["query_id"])


def test_runs_overview_counts(store, engine_run_id):
    row = report.runs_overview(store).set_index("run_id").loc[engine_run_id]
    docs = store.query("SELECT * FROM documents WHERE run_id = ?", [engine_run_id])
    queries = store.query("SELECT * FROM queries WHERE run_id = ?", [engine_run_id])
    assert row["status"] == "complete"
    assert row["documents"] == (docs["state"] == "indexed").sum()
    assert row["characters"] == docs["characters"].sum()
    assert row["in_domain"] == ((queries["domain"] == "in") & queries["valid"]).sum()
    assert row["out_of_domain"] == (queries["domain"] == "out").sum()
    assert row["duration_s"] > 0
    assert report.default_run(store) == engine_run_id


def test_recall_table_matches_hits_and_wilson(store, engine_run_id):
    table = report.recall_table(store, engine_run_id)
    configs = report.configurations(store, engine_run_id)
    assert sorted(table["config"].unique()) == sorted(configs)
    for config in configs[:4]:
        strategy, retriever = report.parse_config(config)
        ranks = _first_ranks(store, engine_run_id, strategy, retriever)
        n = len(ranks)
        rows = table[table["config"] == config].set_index("metric")
        for k in (1, 4, 8, 20):
            hits = int((ranks <= k).sum())
            low, high = proportion_confint(hits, n, method="wilson")
            assert rows.loc[f"recall@{k}", "value"] == pytest.approx(hits / n)
            assert rows.loc[f"recall@{k}", "low"] == pytest.approx(low)
            assert rows.loc[f"recall@{k}", "high"] == pytest.approx(high)
        assert rows.loc["mrr", "value"] == pytest.approx((1 / ranks).fillna(0).mean())


def test_win_loss_matches_binomtest_and_holm(store, engine_run_id):
    configs = report.configurations(store, engine_run_id)[:3]
    matrix = report.win_loss(store, engine_run_id, 4, adjust=True)
    outcomes = {}
    for config in configs:
        s, r = report.parse_config(config)
        outcomes[config] = (_first_ranks(store, engine_run_id, s, r) <= 4)
    a, b = configs[0], configs[1]
    wins = int((outcomes[a] & ~outcomes[b]).sum())
    losses = int((~outcomes[a] & outcomes[b]).sum())
    row = matrix[(matrix["row"] == a) & (matrix["column"] == b)].iloc[0]
    assert (row["wins"], row["losses"]) == (wins, losses)
    expected_p = 1.0 if wins + losses == 0 else binomtest(wins, wins + losses, 0.5).pvalue
    assert row["p_value"] == pytest.approx(expected_p)
    pairs = matrix[matrix["row"] < matrix["column"]]
    assert pairs["p_holm"].to_numpy() == pytest.approx(
        multipletests(pairs["p_value"].to_numpy(), method="holm")[1])
    assert f"+{wins}/-{losses}" in row["label"]
    test, listed = report.pair_queries(store, (engine_run_id, a), (engine_run_id, b), 4)
    assert (test.wins, test.losses) == (wins, losses)
    assert sorted(listed.loc[listed["outcome"] == "won", "query_id"]) == sorted(
        outcomes[a][outcomes[a] & ~outcomes[b]].index)
    sentence = report.significance_text(matrix, 4, True)
    assert "hit@4" in sentence and "Holm" in sentence


def test_win_loss_over_chosen_configurations_adjusts_for_their_pairs_only(store, engine_run_id):
    chosen = [c for c in report.configurations(store, engine_run_id) if c.endswith("/dense")]
    matrix = report.win_loss(store, engine_run_id, 20, adjust=True, only=chosen)
    assert set(matrix["row"]) == set(chosen) and len(matrix) == len(chosen) * (len(chosen) - 1)
    pairs = matrix[matrix["row"] < matrix["column"]]
    assert len(pairs) == len(chosen) * (len(chosen) - 1) // 2
    assert pairs["p_holm"].to_numpy() == pytest.approx(
        multipletests(pairs["p_value"].to_numpy(), method="holm")[1])


def test_win_loss_across_two_runs_on_the_same_queries(scratch, engine_run_id, mini_inputs):
    """A second run of the same questions (another embedder) pairs query by query."""
    from conftest import KeywordEmbedder
    from evalcore.chunking import parse_strategies
    from evalcore.runner import RunRequest, run_evaluation

    corpus, gt = mini_inputs
    other = run_evaluation(RunRequest(corpus, gt, parse_strategies("C"), ["dense"], name="keywords"), scratch,
                           embedder=KeywordEmbedder(["port", "recipe", "server", "device", "token"])).run_id
    assert report.comparable(scratch, engine_run_id, other) is None
    matrix = report.win_loss(scratch, engine_run_id, 4, adjust=False, other_run=other, only=["C/dense"])
    assert len(matrix) == 2  # the two runs' C/dense, both orders
    row = matrix.iloc[0]
    mine, theirs = (report.side_of(row[c], engine_run_id, other) for c in ("row", "column"))
    a = _first_ranks(scratch, *([mine[0]] + list(report.parse_config(mine[1])))) <= 4
    b = _first_ranks(scratch, *([theirs[0]] + list(report.parse_config(theirs[1])))) <= 4
    wins, losses = int((a & ~b).sum()), int((~a & b).sum())
    assert (row["wins"], row["losses"]) == (wins, losses)
    assert row["p_value"] == pytest.approx(1.0 if wins + losses == 0 else binomtest(wins, wins + losses).pvalue)


def test_win_loss_across_runs_needs_same_queries(scratch, engine_run_id):
    scratch.start_run({"run_id": "other", "name": "other"})
    scratch.finish_run("other", "failed", "killed")
    with pytest.raises(StoreError, match="same queries"):
        report.win_loss(scratch, engine_run_id, 4, other_run="other")
    with pytest.raises(StoreError, match="failed: killed"):
        report.require_complete(scratch, "other")


def _brute_gate(store: Store, run_id: str, config: str, t: float) -> dict[str, int]:
    strategy, retriever = report.parse_config(config)
    hits = store.query(
        "SELECT h.*, q.domain AS qdomain FROM hits h JOIN queries q USING (run_id, query_id) "
        "WHERE h.run_id = ? AND strategy = ? AND retriever = ? AND rank <= 4 AND q.valid",
        [run_id, strategy, retriever])
    out = {"bluffs": 0, "refused": 0, "lost": 0, "answered_wrong": 0}
    for _, g in hits.groupby("query_id"):
        kept = g[g["distance"] < t]
        if g["qdomain"].iloc[0] == "out":
            out["bluffs"] += len(kept) > 0
            continue
        out["refused"] += kept.empty
        out["lost"] += bool(g["correct"].any() and not kept["correct"].any())
        out["answered_wrong"] += bool(len(kept) and not kept["correct"].any())
    return out


def test_sweep_and_gate_table_match_brute_force(store, engine_run_id):
    config = report.configurations(store, engine_run_id)[0]
    sweep = report.sweep(store, engine_run_id, config)
    finite = sweep["threshold"][np.isfinite(sweep["threshold"])]
    for t in (float(finite.min()) - 0.01, float(finite.median()), float(finite.max()) + 0.01):
        table = report.gate_table(sweep, t).set_index("outcome")["queries"]
        expected = _brute_gate(store, engine_run_id, config, t)
        assert table.iloc[0] == expected["bluffs"]
        assert table.iloc[2] == expected["refused"]
        assert table.iloc[4] == expected["answered_wrong"]
        assert table.iloc[5] == expected["lost"]
        assert len(report.bluffs_at(store, engine_run_id, config, t)) == expected["bluffs"]
        full = report.gate_table(sweep, t)
        for k, n, low, high in zip(full["queries"], full["of"], full["wilson low"], full["wilson high"]):
            assert (low, high) == pytest.approx(proportion_confint(k, n, method="wilson"))
    long = report.sweep_long(sweep)
    assert set(long["series"]) == {"bluffs (out-of-domain)", "lost answers (in-domain)"}
    assert np.isfinite(long["threshold"]).all()


def test_distances_summary(store, engine_run_id):
    config = report.configurations(store, engine_run_id)[0]
    s, r = report.parse_config(config)
    results = store.query("SELECT * FROM results WHERE run_id = ? AND strategy = ? AND retriever = ?",
                          [engine_run_id, s, r])
    frame = report.distances(store, engine_run_id, config)
    summary = report.distance_summary(frame)
    inside = results[results["domain"] == "in"]
    outside = results[results["domain"] == "out"]
    assert summary.worst_in == pytest.approx(inside["answer_distance"].max())
    assert summary.best_out == pytest.approx(outside["top_distance"].min())
    assert summary.overlap_out == int((outside["top_distance"] <= inside["answer_distance"].max()).sum())
    hist = report.distance_histogram(frame, bins=10)
    assert hist.groupby("measure")["count"].sum().to_dict() == frame.groupby("measure").size().to_dict()


def test_query_hits_quote_content_and_highlight_needle(store, engine_run_id):
    config = report.configurations(store, engine_run_id)[0]
    query = store.query("SELECT * FROM queries WHERE run_id = ? AND domain = 'in' AND valid ORDER BY query_id LIMIT 1",
                        [engine_run_id]).iloc[0]
    hits = report.query_hits(store, engine_run_id, query["query_id"], config)
    docs = store.query("SELECT doc_id, text FROM documents WHERE run_id = ?", [engine_run_id]).set_index("doc_id")["text"]
    for hit in hits.itertuples():
        assert hit.content == docs[hit.doc_id][hit.start:hit.end]
        assert hit.locator == f"#char={hit.start},{hit.end}"
        if not math.isnan(hit.needle_start):
            parts = report.highlight(hit.content, hit.needle_start, hit.needle_end)
            assert [p for p, mark in parts if mark] == [docs[query["doc_id"]][query["start"]:query["end"]]]
    view = report.query_config(store, engine_run_id, query["query_id"], config, threshold=2.1)
    assert len(view.kept) == min(4, len(hits))
    answer = report.answer(store, engine_run_id, query["query_id"], config, 2.1, count=False)
    assert answer.answered and list(answer.citations["quote"]) == list(hits["content"].head(4))
    refused = report.answer(store, engine_run_id, query["query_id"], config, 0.0, count=False)
    assert not refused.answered and refused.prompt.startswith("NO ANSWER")


def test_prompt_pieces_match_the_model_tokenizer(store, engine_run_id, real_embedder):
    config = report.configurations(store, engine_run_id)[0]
    qid = store.query("SELECT query_id FROM queries WHERE run_id = ? AND domain = 'in' AND valid LIMIT 1",
                      [engine_run_id]).iloc[0, 0]
    answer = report.answer(store, engine_run_id, qid, config, 2.1)
    assert answer.pieces == real_embedder.count_pieces([answer.prompt])[0]
    texts = ["déjà vu — naïve café 東京", "x " * 600]
    assert [report.piece_counter()(t) for t in texts] == real_embedder.count_pieces(texts)


def test_index_and_stale_documents(scratch, engine_run_id):
    health = report.index_health(scratch, engine_run_id)
    chunks = scratch.query("SELECT strategy, count(*) AS n, sum(pieces) AS p, count(*) FILTER (pieces > 256) AS over "
                           "FROM chunks WHERE run_id = ? GROUP BY strategy", [engine_run_id]).set_index("strategy")
    for row in health.itertuples():
        assert row.chunks == chunks.loc[row.strategy, "n"]
        assert row.pieces == chunks.loc[row.strategy, "p"]
        assert row.over_window == chunks.loc[row.strategy, "over"]
    assert len(report.over_window_chunks(scratch, engine_run_id)) == int(chunks["over"].sum())
    docs = report.documents(scratch, engine_run_id)
    assert not docs["stale"].any()
    # chunks per document, recounted from the chunker itself on the same corpus
    from conftest import MINI
    from evalcore.chunking import STANDARD_STRATEGIES, chunk_document
    from evalcore.corpus import load_corpus

    for doc in load_corpus(MINI / "corpus").documents:
        row = docs.set_index("doc_id").loc[doc.doc_id]
        for name in "ABCDEF":
            assert row[f"chunks {name}"] == len(chunk_document(doc, STANDARD_STRATEGIES[name]))
    victim = docs[docs["state"] == "indexed"]["doc_id"].iloc[0]
    with scratch.connect() as con:
        con.execute("UPDATE documents SET pipeline_version = 'old/0' WHERE run_id = ? AND doc_id = ?",
                    [engine_run_id, victim])
    docs = report.documents(scratch, engine_run_id).set_index("doc_id")
    assert docs.loc[victim, "stale"] and PIPELINE_VERSION in docs.loc[victim, "stale_reason"]
    assert docs["stale"].sum() == 1


def test_destroyed_list_shows_the_cut(store, engine_run_id):
    destroyed = report.destroyed_list(store, engine_run_id)
    docs = store.query("SELECT doc_id, text FROM documents WHERE run_id = ?", [engine_run_id]).set_index("doc_id")["text"]
    for row in destroyed.itertuples():
        needle = docs[row.doc_id][row.start:row.end]
        assert row.before_cut + row.after_cut == needle
        assert ("split by the cut at offset" in row.why) == (not pd.isna(row.cut))
    counts = report.destroyed_counts(store, engine_run_id).set_index("strategy")["destroyed"]
    assert counts.to_dict() == destroyed.groupby("strategy").size().reindex(counts.index, fill_value=0).to_dict()


def test_save_decision_is_listed(scratch, engine_run_id):
    config = report.configurations(scratch, engine_run_id)[0]
    decision = report.save_decision(scratch, engine_run_id, config, 0.42, "pm review")
    saved = report.decisions(scratch, engine_run_id)
    assert saved["decision_id"].tolist() == [decision]
    assert saved["threshold"].iloc[0] == 0.42 and saved["note"].iloc[0] == "pm review"
    with pytest.raises(ValueError, match="finite"):
        report.save_decision(scratch, engine_run_id, config, math.inf, "")


def test_parse_config_rejects_bad_labels():
    assert report.parse_config("E/dense") == ("E", "dense")
    for bad in ("E", "/dense", "E/", "E/a/b"):
        with pytest.raises(ValueError, match=repr(bad)):
            report.parse_config(bad)


def test_export_png_svg_csv_caption(store, engine_run_id):
    from evalcore import charts

    run = store.run(engine_run_id)
    summary = report.recall_table(store, engine_run_id)
    chart = charts.recall_chart(summary)
    png = export.to_png(chart)
    assert png[:8] == b"\x89PNG\r\n\x1a\n"
    assert "<svg" in export.to_svg(chart)
    csv = export.to_csv(summary).decode()
    assert csv.splitlines()[0].startswith("strategy,retriever,config,metric")
    text = export.caption(run, "Recall@k", "all", 12, None, report.INTERVAL_METHOD)
    assert engine_run_id[:8] in text and "n = 12" in text and "Wilson" in text
