"""evalcore.read.distances against the stored per-query results."""

from __future__ import annotations

import pytest

from evalcore.read import distances, runs


def test_distance_summary_and_its_n(store, engine_run_id):
    for config in runs.configurations(store, engine_run_id)[::4]:
        results = store.query(
            "SELECT * FROM results WHERE run_id = ? AND strategy = ? AND retriever = ?",
            [engine_run_id, config.strategy, config.retriever],
        )
        frame = distances.distances(store, engine_run_id, config)
        summary = distances.distance_summary(frame)
        inside = results[results["domain"] == "in"]
        outside = results[results["domain"] == "out"]
        assert summary.worst_in == pytest.approx(inside["answer_distance"].max())
        assert summary.best_out == pytest.approx(outside["top_distance"].min())
        assert summary.overlap_out == int((outside["top_distance"] <= inside["answer_distance"].max()).sum())
        assert summary.n_in == len(inside)
        assert summary.n_answer == int(inside["answer_distance"].notna().sum())
        assert summary.without_answer == int(inside["destroyed"].sum())  # the queries left out: destroyed
        assert f"{summary.n_in} in-domain queries" in summary.n_text()
        if summary.without_answer:
            assert f"{summary.without_answer} destroyed" in summary.n_text()
        hist = distances.distance_histogram(frame, bins=10)
        assert hist.groupby("measure")["count"].sum().to_dict() == frame.groupby("measure").size().to_dict()
