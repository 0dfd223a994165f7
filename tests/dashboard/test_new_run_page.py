"""The New run page driven by AppTest: upload the mini corpus and question files, validate,
start, watch the job's progress, find the run on the Runs page with the same figures as
``python -m evalcore run`` on the same files; a bad upload shows its message and changes
nothing. The job is a real background process with the real model (about 25 s)."""

from __future__ import annotations

import os
import re
import time
from pathlib import Path

import pytest
import zygote
from conftest import MINI, MINI_ARGS, ROOT
from streamlit.testing.v1 import AppTest

from evalcore import jobs
from evalcore.read.summary import summary_table
from evalcore.store import Store

APP = str(ROOT / "app.py")


def open_new_run(store_path: Path, monkeypatch) -> AppTest:
    monkeypatch.setenv("EVALCORE_STORE", str(store_path))  # the dashboard shows the operator's store
    at = AppTest.from_file(APP, default_timeout=120)
    at.run()
    at.switch_page("evalcore_app/screens/new_run.py")
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def upload(at: AppTest, corpus: list[tuple[str, bytes]], questions: bytes, ood: bytes | None) -> None:
    corpus_up, questions_up, ood_up = at.file_uploader
    corpus_up.set_value([(name, data, "text/markdown") for name, data in corpus])
    questions_up.set_value(("questions.jsonl", questions, "application/jsonl"))
    if ood is not None:
        ood_up.set_value(("ood.jsonl", ood, "application/jsonl"))
    at.multiselect(key="nr_strategies").set_value(["A", "E"])
    at.multiselect(key="nr_retrievers").set_value(["dense", "bm25", "hybrid"])
    at.run()
    at.button(key="nr_validate").click()
    at.run()
    assert not at.exception, [e.value for e in at.exception]


def mini_corpus() -> list[tuple[str, bytes]]:
    return [(p.name, p.read_bytes()) for p in sorted((MINI / "corpus").iterdir())]


@pytest.mark.slow
def test_upload_start_watch_and_find_the_run_with_the_cli_figures(tmp_path, monkeypatch):
    store_path = tmp_path / "runs" / "evalcore.duckdb"
    at = open_new_run(store_path, monkeypatch)
    upload(at, mini_corpus(), (MINI / "questions.jsonl").read_bytes(), (MINI / "ood.jsonl").read_bytes())
    status = [*at.success, *at.warning]  # the mini questions hold one invalid needle: valid with a problem
    assert len(status) == 1 and "4 documents" in status[0].value, [e.value for e in at.error]
    at.text_input(key="nr_name").set_value("uploaded")
    # the mini job takes a second or two: it holds at E's embedding until the page has shown
    # that stage, so that a busy machine cannot finish it between two redraws
    paused = tmp_path / "paused"
    monkeypatch.setenv("EVALCORE_TEST_PAUSE", f"E: embedding={paused}")
    at.button(key="nr_start").click()
    at.run()
    monkeypatch.delenv("EVALCORE_TEST_PAUSE")  # the job's process has it; the CLI run below does not
    job_id = at.session_state["nr_last_job"]
    seen: list[tuple[float, str]] = []
    deadline = time.monotonic() + 180
    while time.monotonic() < deadline:  # the page redraws while the job runs, as its fragment does each second
        at.run()
        assert not at.exception, [e.value for e in at.exception]
        bars = [(p.value, p.proto.text) for p in at.get("progress")]
        if not bars:
            break
        seen.extend(bars)
        if paused.exists() and any("running · E: embedding" in text for _, text in bars):
            paused.unlink()  # seen on the page: let the job go on
        time.sleep(0.3)
    stages = [text for _, text in seen]
    print(f"\nprogress seen on the page: {len(seen)} redraws; " + " | ".join(dict.fromkeys(stages)))
    ended = jobs.job(Store(store_path), job_id)
    assert any("running · E: embedding" in text for text in stages), (stages, ended)
    assert all(job_id in text for text in stages)
    values = [v for v, _ in seen]
    assert values == sorted(values)  # progress only moves forward
    store = Store(store_path)
    assert jobs.job(store, job_id)["status"] == "complete"

    # the same files through the CLI, into the same store
    env = dict(os.environ, HF_HUB_OFFLINE="1", PYTHONPATH=str(ROOT))
    cli = zygote.run(
        [
            "--store",
            str(store_path),
            "run",
            *MINI_ARGS,
            "--strategies",
            "A,E",
            "--retrievers",
            "dense,bm25,hybrid",
            "--name",
            "cli",
            "-q",
        ],
        env,
        timeout=300,
    )
    assert cli.returncode == 0, cli.stderr
    cli_run = store.latest_complete("cli")
    assert summary_table(store, job_id).equals(summary_table(store, cli_run))

    # the Runs page lists the dashboard run as complete and shows its figures
    runs = AppTest.from_file(APP, default_timeout=120)
    runs.session_state["run_id"] = job_id
    runs.run()
    assert not runs.exception, [e.value for e in runs.exception]
    table = runs.dataframe[0].value.set_index("run_id")
    assert table.loc[job_id, "status"] == "complete" and table.loc[job_id, "name"] == "uploaded"
    metrics = {m.label: m.value for m in runs.metric}
    queries = store.query("SELECT * FROM queries WHERE run_id = ?", [cli_run])
    assert metrics["Documents"] == str(len(mini_corpus()))
    assert metrics["In-domain queries"] == str(int(((queries["domain"] == "in") & queries["valid"]).sum()))
    assert metrics["Out-of-domain queries"] == str(int((queries["domain"] == "out").sum()))


def test_bad_upload_shows_its_message_and_changes_nothing(tmp_path, monkeypatch):
    store_path = tmp_path / "runs" / "evalcore.duckdb"
    at = open_new_run(store_path, monkeypatch)
    store = Store(store_path)
    bad = (MINI / "questions.jsonl").read_bytes().replace(b'"id": "port-ticket"', b'"id": port-ticket', 1)
    line = next(i for i, text in enumerate(bad.decode().splitlines(), 1) if "port-ticket" in text)
    upload(at, [*mini_corpus(), ("blob.md", b"\0\1\2")], bad, None)
    # the messages as a reader sees them: Markdown's backslash escapes (the file name and the
    # line are user text, escaped on the way into Markdown) read as the characters they escape
    errors = [re.sub(r"\\(.)", r"\1", e.value) for e in at.error]
    assert any(e.startswith(f"questions.jsonl:{line}: invalid JSON") for e in errors), errors
    assert not at.success  # nothing validated, so no Start button
    assert store.query("SELECT count(*) FROM jobs").iloc[0, 0] == 0
    assert store.query("SELECT count(*) FROM runs").iloc[0, 0] == 0
    assert not jobs.uploads_dir(store).exists() or not any(jobs.uploads_dir(store).iterdir())
    # fixed questions: the upload goes through, the binary file is skipped with its message
    upload(at, [*mini_corpus(), ("blob.md", b"\0\1\2")], (MINI / "questions.jsonl").read_bytes(), None)
    warnings = [w.value for w in at.warning]
    assert len(warnings) == 1 and "1 × file skipped" in warnings[0] and "4 documents" in warnings[0]
    assert "blob.md: binary file (NUL byte at offset 0)" in warnings[0].replace("\\", ""), warnings
    assert at.button(key="nr_start")  # valid with a problem: it can start


def test_strategies_default_to_a_g_and_only_the_chosen_run(tmp_path, monkeypatch):
    """G is one of the strategies, not a pre-filled custom text that sneaks into a run where
    only E was chosen."""
    from evalcore.chunking import DEFAULT_STRATEGIES

    at = open_new_run(tmp_path / "runs" / "evalcore.duckdb", monkeypatch)
    assert at.multiselect(key="nr_strategies").value == DEFAULT_STRATEGIES.split(",")
    assert at.text_input(key="nr_custom").value == ""
    at.radio(key="nr_source").set_value("demo")
    at.multiselect(key="nr_strategies").set_value(["E"])
    at.multiselect(key="nr_retrievers").set_value(["dense"])
    at.run()
    at.button(key="nr_validate").click()
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    assert at.session_state["nr_prepared"].spec.strategies == ("E",)
    assert not (tmp_path / "runs" / "evalcore.duckdb").exists()  # visiting and validating create no store


def test_many_problems_are_one_summary_and_one_table_above_nothing(tmp_path, monkeypatch):
    """Questions whose documents were not uploaded: one warning with the counts and the
    Start button right under it, the problems in one table, not one box each."""
    questions = (MINI / "questions.jsonl").read_bytes()
    at = open_new_run(tmp_path / "runs" / "evalcore.duckdb", monkeypatch)
    upload(at, mini_corpus()[:1], questions, None)  # one document: most needles are not found
    assert not at.exception, [e.value for e in at.exception]
    prepared = at.session_state["nr_prepared"]
    invalid = len(prepared.report.to_json()["invalid_ground_truths"])
    assert invalid > 3
    assert not at.success and len(at.warning) == 1
    assert f"{invalid} × ground truth excluded" in at.warning[0].value
    table = next(d.value for d in at.dataframe if "message" in d.value.columns)
    assert len(table) == invalid
    assert at.button(key="nr_start")
