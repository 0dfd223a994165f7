"""One run spec, one way to execute it: RunSpec's JSON for jobs, and a notebook's one-import run
on the mini corpus giving the same stored figures as the CLI's run."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest
from conftest import MINI, MINI_ARGS

from evalcore.errors import ConfigError, EvalcoreError


def test_a_run_spec_travels_to_a_job_as_json_and_back():
    from evalcore.external.endpoint import Endpoint, Fields
    from evalcore.run.spec import DEFAULT_RETRIEVERS, RunSpec

    builtin = RunSpec(
        corpus=Path("docs"),
        questions="q.jsonl",
        ood="o.jsonl",
        name="nightly",
        strategies="A,wide:boundaries+size=800",
        retrievers="dense,bm25:german",
        models=("/models/a", "/models/b"),
        confined=True,
        server_paths=True,
        reranker="/models/ce",
    )
    text = builtin.to_json()
    back = RunSpec.from_json(text)
    assert back == dataclasses.replace(builtin, corpus="docs")  # a path travels as its text
    assert back.to_json() == text and back.kind == "builtin" and back.models == ("/models/a", "/models/b")
    assert ",".join(RunSpec(demo=True).retrievers) == DEFAULT_RETRIEVERS == "dense,bm25,hybrid"
    assert RunSpec(demo=True).retrievers == ("dense", "bm25", "hybrid")  # parsed once, when the spec is built
    assert json.loads(builtin.to_json())["strategies"] == "A,wide:boundaries+size=800"  # the CLI's comma list

    service = RunSpec(
        demo=True,
        endpoint=Endpoint(url="http://127.0.0.1:9/search", fields=Fields(hits="data.hits", score="s"), k=7),
        chunker="theirs",
        retriever_name="vector",
        score="distance",
        max_failures=0.2,
    )
    again = RunSpec.from_json(service.to_json())
    assert again == service and again.kind == "endpoint"
    assert again.endpoint is not None and again.endpoint.fields.hits == "data.hits" and again.endpoint.k == 7

    with pytest.raises(ConfigError, match="header values are never written"):
        RunSpec(demo=True, endpoint=Endpoint(url="http://x/", headers=(("Authorization", "Bearer s"),))).to_json()
    with pytest.raises(ConfigError, match="cannot be written as JSON"):
        RunSpec(corpus="docs", questions="q.jsonl", function=lambda q, k: []).to_json()
    with pytest.raises(ConfigError, match="unknown field"):
        RunSpec.from_json(json.dumps({"corpus": "docs", "stratgies": "A"}))
    with pytest.raises(EvalcoreError, match="--dataset or --questions/--ood, not both"):
        RunSpec(corpus="docs", questions="q.jsonl", dataset="support")


def test_a_run_spec_is_checked_whole_when_it_is_built(tmp_path, monkeypatch):
    """Every part of a spec is checked as it is built, before any input or model loads: the
    inputs named here do not exist, so an error can only come from the spec itself."""
    from evalcore.errors import InputError
    from evalcore.external.endpoint import Endpoint
    from evalcore.run.spec import RunSpec

    missing = tmp_path / "nothing here"
    built_in = {"corpus": missing, "questions": missing / "q.jsonl"}
    with pytest.raises(ConfigError, match="unknown retriever sparse"):
        RunSpec(**built_in, retrievers="dense,sparse")
    with pytest.raises(ConfigError, match="unknown language 'klingon'"):
        RunSpec(**built_in, retrievers="bm25:klingon")
    with pytest.raises(ConfigError, match="Z"):
        RunSpec(**built_in, strategies="A,Z")
    with pytest.raises(InputError, match="the version after '@' must be a whole number from 1 to 2147483647"):
        RunSpec(corpus=missing, dataset="support@latest")
    with pytest.raises(ConfigError, match="--url"):
        RunSpec(demo=True, endpoint=Endpoint(url="ftp://example.org/search"))
    monkeypatch.setenv("EVALCORE_ENDPOINTS", "http://127.0.0.1:9/search")
    far = Endpoint(url="http://127.0.0.1:10/search")
    with pytest.raises(ConfigError):
        RunSpec(demo=True, endpoint=far, confined=True)  # the operator's allow-list, for a confined spec
    assert RunSpec(demo=True, endpoint=far).kind == "endpoint"  # the CLI's operator needs no list
    assert RunSpec(demo=True, endpoint=Endpoint(url="http://127.0.0.1:9/search/v1"), confined=True).confined
    with pytest.raises(ConfigError, match="--chunker"):
        RunSpec(demo=True, endpoint=far, chunker="a/b")
    with pytest.raises(ConfigError, match="score kind"):
        RunSpec(demo=True, endpoint=far, score="closeness")
    with pytest.raises(ConfigError, match="retriever must be a function"):
        RunSpec(**built_in, function=42)  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="k must be an integer >= 1, got 0"):
        RunSpec(**built_in, function=lambda q, k: [], k=0)
    with pytest.raises(ConfigError, match="retriever_name"):
        RunSpec(**built_in, function=lambda q, k: [], retriever_name="has space")
    assert (
        RunSpec(**built_in, retrievers="dense,bm25:german", strategies="A,wide:boundaries+size=800").kind == "builtin"
    )


def test_a_dashboard_job_becomes_a_confined_run_spec(tmp_path, monkeypatch):
    """The job a New run screen prepares is stored as its RunSpec; a folder job reads only
    inside the operator's data roots, in the job's process too."""
    from evalcore import jobs
    from evalcore.errors import InputError
    from evalcore.run.execute import load_inputs
    from evalcore.run.spec import RunSpec
    from evalcore.store import Store

    monkeypatch.setenv("EVALCORE_DATA_ROOTS", str(MINI))
    prepared = jobs.prepare_paths(
        str(MINI / "corpus"), str(MINI / "questions.jsonl"), str(MINI / "ood.jsonl"), "A,E", "dense,bm25"
    )
    store = Store(tmp_path / "s.duckdb")
    job_id = jobs.submit(store, prepared, "mini job", start=False)
    stored = RunSpec.from_json(store.query("SELECT spec FROM jobs WHERE job_id = ?", [job_id])["spec"][0])
    assert stored == prepared.spec
    assert (stored.confined, stored.server_paths, stored.strategies, stored.retrievers) == (
        True,
        True,
        ("A", "E"),
        ("dense", "bm25"),
    )
    plain = RunSpec(corpus=MINI / "corpus", questions=MINI / "questions.jsonl", ood=MINI / "ood.jsonl")
    assert load_inputs(stored, store).corpus.fingerprint == load_inputs(plain).corpus.fingerprint
    monkeypatch.setenv("EVALCORE_DATA_ROOTS", str(tmp_path))  # the operator narrowed the roots since
    with pytest.raises(InputError):
        load_inputs(stored, store)


def test_one_import_runs_the_builtin_pipeline_like_the_cli(tmp_path, capsys):
    """A notebook's evaluation with the built-in pipeline: ``import evalcore`` and one call;
    the stored figures and per-query results equal those of ``evalcore run`` on the same inputs."""
    import evalcore
    from evalcore.cli import main
    from evalcore.read.summary import summary_json

    cheap = ("--strategies", "E", "--retrievers", "dense,bm25")
    done = evalcore.execute(
        evalcore.RunSpec(
            corpus=str(MINI / "corpus"),
            questions=str(MINI / "questions.jsonl"),
            ood=str(MINI / "ood.jsonl"),
            strategies="E",
            retrievers="dense,bm25",
        ),
        store=evalcore.Store(tmp_path / "notebook.duckdb"),
    )
    assert isinstance(done, evalcore.RunResult) and done.name == "corpus"
    capsys.readouterr()
    assert main(["--store", str(tmp_path / "cli.duckdb"), "run", *MINI_ARGS, *cheap, "--json", "-q"]) == 0
    cli = json.loads(capsys.readouterr().out)

    notebook = summary_json(evalcore.Store(tmp_path / "notebook.duckdb"), done.run_id)
    assert notebook["configurations"] == cli["configurations"]
    assert len(cli["configurations"]) == 2 and all(c["queries"] == 18 for c in cli["configurations"])

    columns = "strategy, retriever, query_id, domain, first_correct_rank, answer_distance, top_distance"
    order = "ORDER BY strategy, retriever, query_id"
    ours = evalcore.Store(tmp_path / "notebook.duckdb").query(
        f"SELECT {columns} FROM results WHERE run_id = ? {order}", [done.run_id]
    )
    theirs = evalcore.Store(tmp_path / "cli.duckdb").query(
        f"SELECT {columns} FROM results WHERE run_id = ? {order}", [cli["run_id"]]
    )
    assert len(ours) == len(theirs) > 2 * 18  # every configuration's in-domain and off-topic queries
    assert ours.equals(theirs)
