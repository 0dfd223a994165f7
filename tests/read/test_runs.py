"""evalcore.read.runs: the run list as shown, one run, its configurations."""

from __future__ import annotations

import pandas as pd

from evalcore.read import runs
from evalcore.records import Configuration


def test_runs_overview_counts_and_no_missing_text(store, engine_run_id):
    overview = runs.runs_overview(store)
    row = overview.set_index("run_id").loc[engine_run_id]
    docs = store.query("SELECT * FROM documents WHERE run_id = ?", [engine_run_id])
    queries = store.query("SELECT * FROM queries WHERE run_id = ?", [engine_run_id])
    assert row["status"] == "complete" and row["state"] == "complete"
    assert row["documents"] == (docs["state"] == "indexed").sum()
    assert row["characters"] == docs["characters"].sum()
    assert row["in_domain"] == ((queries["domain"] == "in") & queries["valid"]).sum()
    assert row["out_of_domain"] == (queries["domain"] == "out").sum()
    assert row["duration_s"] > 0
    text = overview.select_dtypes(exclude="number").drop(columns=["created_at"])
    assert not text.isna().any().any()  # never "None"/"nan" on screen
    assert runs.default_run(store) == engine_run_id


def test_state_text_says_where_a_run_is():
    assert runs.state_text({"status": "complete", "stage": "E: embedding", "progress": 0.65}) == "complete"
    assert (
        runs.state_text({"status": "running", "stage": "E: embedding 340/1120 chunks", "progress": 0.654})
        == "running · E: embedding 340/1120 chunks · 65%"
    )
    assert runs.state_text({"status": "failed", "reason": "killed"}) == "failed: killed"


def test_failed_run_shows_its_reason(scratch):
    scratch.start_run({"run_id": "zz", "name": "broken"})
    scratch.finish_run("zz", "failed", "corpus folder not found")
    row = runs.runs_overview(scratch).set_index("run_id").loc["zz"]
    assert row["state"] == "failed: corpus folder not found" and row["rerank_note"] == "" and row["model"] == ""


def test_a_cancelled_run_says_where_it_stopped_and_shows_no_stored_counts(scratch):
    scratch.start_run({"run_id": "zc", "name": "stopped"})
    scratch.progress("zc", "E: embedding 120/377 chunks", 0.4)
    scratch.finish_run("zc", "cancelled", "cancelled from the dashboard")
    row = runs.runs_overview(scratch).set_index("run_id").loc["zc"]
    assert row["state"] == "cancelled: cancelled from the dashboard · stopped at E: embedding 120/377 chunks · 40%"
    assert all(pd.isna(row[c]) for c in runs.COUNTED)  # not stored, so not 0


def test_configurations_in_the_runs_order(store, engine_run_id):
    configs = runs.configurations(store, engine_run_id)
    results = store.query("SELECT DISTINCT strategy, retriever FROM results WHERE run_id = ?", [engine_run_id])
    assert set(configs) == {Configuration(s, r) for s, r in zip(results["strategy"], results["retriever"], strict=True)}
    run = store.run(engine_run_id)
    strategies, retrievers = list(run.strategies), list(run.retrievers)
    assert configs == sorted(configs, key=lambda c: (strategies.index(c.strategy), retrievers.index(c.retriever)))
    sides = runs.run_configurations(store, engine_run_id)
    assert [s.configuration for s in sides] == configs and {s.run_name for s in sides} == {"mini"}
