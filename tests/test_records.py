"""Configuration: one label rule, written and read back; a stored run and a validation report
as typed records."""

from __future__ import annotations

import json
from collections.abc import Mapping

import pytest
from conftest import MINI

from evalcore.records import Configuration, RunConfiguration


def test_configuration_label_and_parse():
    assert Configuration.parse("E/dense") == Configuration("E", "dense")
    assert Configuration("E", "dense").label == "E/dense" == str(Configuration("E", "dense"))
    assert Configuration.parse("my/strategy/bm25") == Configuration("my/strategy", "bm25")  # split at the last /
    for bad in ("E", "/dense", "E/", ""):
        with pytest.raises(ValueError, match=repr(bad)):
            Configuration.parse(bad)


def test_run_configuration_label_leads_with_the_configuration():
    side = RunConfiguration("20261129-225237-0ff462", Configuration("E", "dense"), "demo")
    assert side.label() == "E/dense · run demo 20261129-225237-0ff462"
    assert side.label(with_run=False) == "E/dense"
    assert side == RunConfiguration("20261129-225237-0ff462", Configuration("E", "dense"), "renamed")


def test_a_stored_run_is_a_typed_record_whose_row_reads_as_before(gate_store, tmp_path):
    """Store.run gives a frozen Run: typed attributes, a missing value None, the run's strategies
    as a tuple; ``to_json()`` and reading by column give the row as the store held it."""
    import dataclasses

    from conftest import copy_with_failed_run

    from evalcore.read.refs import find_run, resolve_run
    from evalcore.records import Run
    from evalcore.store import Store

    path = copy_with_failed_run(gate_store, tmp_path, "zz-failed-1", "base", "disk full")
    store = Store(path)
    row = store.query("SELECT * FROM runs WHERE status = 'complete' ORDER BY run_id LIMIT 1").iloc[0]
    run = resolve_run(store, str(row["run_id"]))
    assert isinstance(run, Run) and run == store.run(str(row["run_id"]))
    assert (run.run_id, run.name, run.status) == (row["run_id"], row["name"], "complete")
    assert run.strategies == tuple(str(row["strategies"]).split(",")) and all(run.strategies)
    assert run.retrievers == tuple(str(row["retrievers"]).split(","))
    assert run.model_dim == int(row["model_dim"]) and isinstance(run.model_dim, int)
    assert run.settings == json.loads(row["settings"]) == run.to_json()["settings"]
    assert run.to_json()["run_id"] == run.run_id and set(run.to_json()) == set(row.index)
    assert not isinstance(run, Mapping)  # a record, read by attribute, not a dict
    with pytest.raises(dataclasses.FrozenInstanceError):
        run.status = "failed"  # type: ignore[misc]
    failed = find_run(store, "zz-failed-1")
    assert (failed.status, failed.reason) == ("failed", "disk full")
    assert (failed.model, failed.model_dim, failed.strategies, failed.settings) == (None, None, (), {})  # never ran
    assert failed.finished_at is not None and failed.finished_at == failed.to_json()["finished_at"]


def test_the_validation_report_is_a_record_whose_json_is_what_validate_prints(capsys):
    """validate --json prints the report's to_json(); its counts are the record's attributes."""
    from conftest import MINI_ARGS

    from evalcore.cli import main
    from evalcore.inputs import sources
    from evalcore.inputs.groundtruth import validation_report
    from evalcore.records import ValidationReport

    corpus, gt = sources.load_corpus_and_questions(
        *(str(MINI / name) for name in ("corpus", "questions.jsonl", "ood.jsonl"))
    )
    report = validation_report(corpus, gt)
    assert isinstance(report, ValidationReport)
    assert (report.documents, report.valid_ground_truths, len(report.invalid)) == (4, 9, 1)
    assert (
        [i.reason for i in report.invalid]
        == ["not found"]
        == [i["reason"] for i in report.to_json()["invalid_ground_truths"]]
    )
    assert report.ood == report.ood_near + report.ood_far == report.to_json()["ood"]["total"]
    assert main(["validate", *MINI_ARGS, "--json"]) == 0
    assert json.loads(capsys.readouterr().out) == report.to_json()
