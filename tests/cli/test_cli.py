"""The CLI: help text for every command, clear errors with exit 2, JSON summaries."""

from __future__ import annotations

import json
import sys

import pytest
import zygote
from conftest import MINI, MINI_ARGS, ROOT, shared_data

from evalcore.cli import build_parser, main

COMMANDS = [
    "demo",
    "run",
    "validate",
    "chunks",
    "list",
    "show",
    "job",
    "import-squad",
    "gate",
    "export-run",
    "load-run",
    "compare",
    "import-run",
    "run-endpoint",
    "export-formats",
    "dashboard",
    "threshold",
    "traffic",
    "question-set",
    "dataset",  # the former name of question-set, kept working
    "keys",
]


def test_every_command_has_help_text(capsys):
    parser = build_parser()
    sub = next(a for a in parser._actions if a.dest == "command")
    assert sorted(sub.choices) == sorted(COMMANDS)
    for name in COMMANDS:
        with pytest.raises(SystemExit) as exc:
            main([name, "--help"])
        assert exc.value.code == 0
        out = capsys.readouterr().out
        assert f"usage: python -m evalcore {name}" in out
        assert sub.choices[name].description
        for action in sub.choices[name]._actions:
            assert action.help, f"{name} {action.dest} has no help text"


def run_cli(*args, store=None):
    """``python -m evalcore [--store STORE] ARGS`` in a process of its own (tests/zygote.py)."""
    return zygote.run((["--store", str(store)] if store else []) + list(args), timeout=600)


@pytest.mark.parametrize(
    "content, expected",
    [
        ('{"id": "q1", "question": "x", "needle": "y"}\n{"id": "q2", "question": \n', "questions.jsonl:2"),
        ('{"id": "q1", "needle": "y"}\n', "questions.jsonl:1"),
    ],
)
def test_bad_input_is_one_clear_line_and_exit_2_with_nothing_stored(tmp_path, content, expected):
    q = tmp_path / "questions.jsonl"
    q.write_text(content)
    store = tmp_path / "s.duckdb"
    res = run_cli("run", "--corpus", str(MINI / "corpus"), "--questions", str(q), "-q", store=store)
    assert res.returncode == 2
    assert res.stderr.startswith("error: ") and expected in res.stderr
    assert "Traceback" not in res.stderr
    assert not store.exists()  # failed before the store was touched


def test_unknown_strategy_lists_known_names(tmp_path):
    res = run_cli(
        "run",
        "--corpus",
        str(MINI / "corpus"),
        "--questions",
        str(MINI / "questions.jsonl"),
        "--strategies",
        "A,Z",
        "-q",
        store=tmp_path / "s.duckdb",
    )
    assert res.returncode == 2 and "A, B, C, D, E, F" in res.stderr


def test_validate_reports_invalid_needles_with_reasons():
    res = run_cli(
        "validate",
        *MINI_ARGS,
        "--json",
    )
    assert res.returncode == 0, res.stderr
    report = json.loads(res.stdout)
    assert report["documents"] == 4
    assert report["ground_truths"]["valid"] == 9
    assert [i["reason"] for i in report["invalid_ground_truths"]] == ["not found"]


def test_run_json_list_and_show(tmp_path):
    store = tmp_path / "s.duckdb"
    res = run_cli(
        "run",
        *MINI_ARGS,
        "--strategies",
        "A,E",
        "--json",
        "-q",
        store=store,
    )
    assert res.returncode == 0, res.stderr
    out = json.loads(res.stdout)
    configs = {(c["strategy"], c["retriever"]): c for c in out["configurations"]}
    assert set(configs) == {(s, r) for s in "AE" for r in ("dense", "bm25", "hybrid")}
    assert all(c["queries"] == 18 for c in configs.values())
    assert configs[("A", "dense")]["destroyed"] == 2 and configs[("E", "dense")]["destroyed"] == 0
    for c in configs.values():
        assert 0 <= c["recall@1"] <= c["recall@4"] <= c["recall@8"] <= c["recall@20"] <= 1
        lo, hi = c["recall@20_wilson95"]
        assert lo <= c["recall@20"] <= hi
    listed = run_cli("list", store=store)
    assert out["run_id"] in listed.stdout and "complete" in listed.stdout
    shown = run_cli("show", out["run_id"][:17], "--json", store=store)
    assert json.loads(shown.stdout)["configurations"] == out["configurations"]
    missing = run_cli("show", "nope", store=store)
    assert missing.returncode == 2 and "no run 'nope'" in missing.stderr


def test_chunks_accepts_every_default_strategy_by_name(tmp_path):
    from evalcore.chunking import DEFAULT_STRATEGIES

    for name in DEFAULT_STRATEGIES.split(","):
        out = tmp_path / f"{name}.jsonl"
        assert main(["chunks", "--corpus", str(MINI / "corpus"), "--strategy", name, "-o", str(out)]) == 0
        assert out.read_text().count("\n") > 0
    first = json.loads((tmp_path / "G.jsonl").read_text().splitlines()[0])
    assert first["text"].startswith("[")  # G: header, and the introduction is chunked too
    assert first["section"] == ""


def test_chunks_output_for_strategy_e_agrees_with_the_seed(tmp_path):
    import shutil

    corpus = shared_data("poetry-docs", "docs")
    if not shutil.which("node"):
        pytest.skip("node is not installed")
    sys.path.insert(0, str(ROOT / "tools"))
    from check_chunks import compare, seed_chunks

    out = tmp_path / "e.jsonl"
    res = run_cli("chunks", "--corpus", str(corpus), "--strategy", "E", "-o", str(out))
    assert res.returncode == 0, res.stderr
    ours = [json.loads(line) for line in out.read_text().splitlines()]
    assert len(ours) == 570
    assert compare(ours, seed_chunks(str(corpus))) == []
    assert all(
        set(c) == {"document", "text", "content", "section", "from", "to", "evidence_from", "locator", "pages"}
        for c in ours
    )
    # Markdown has no pages: every locator is the RFC 5147 range of the chunk's content
    assert all(c["locator"] == f"#char={c['from']},{c['to']}" and c["pages"] is None for c in ours)


def test_device_cuda_without_a_gpu_is_one_line_exit_2(capsys):
    import torch

    from evalcore.cli import main

    if torch.cuda.is_available():
        pytest.skip("this machine has a GPU")
    assert main(["demo", "--device", "cuda", "-q", "--strategies", "A"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "no CUDA GPU" in err


def test_the_runs_last_line_opens_the_dashboard_on_the_store_it_wrote(tmp_path, mini_inputs, capsys, monkeypatch):
    """A run into a store other than the default ends with ``dashboard --store`` naming it; a
    run into the default store ($EVALCORE_STORE here) names none (the dashboard opens it)."""
    import shlex

    sys.path.insert(0, str(ROOT / "examples"))
    try:
        import external_bm25
    finally:
        sys.path.remove(str(ROOT / "examples"))

    corpus, gt = mini_inputs
    files = external_bm25.write_files(tmp_path / "bm25", corpus, gt)
    store = tmp_path / "my runs" / "s.duckdb"
    argv = ["import-run", *MINI_ARGS, "--chunks", str(files["chunks"]), "--rankings", str(files["trec"])]
    monkeypatch.delenv("EVALCORE_STORE", raising=False)
    assert main(["--store", str(store), *argv]) == 0
    last = capsys.readouterr().out.strip().splitlines()[-1]
    assert last == f"Open the dashboard:  python -m evalcore dashboard --store {shlex.quote(str(store))}"
    assert shlex.split(last.split(":", 1)[1])[-1] == str(store)  # the path survives the shell
    monkeypatch.setenv("EVALCORE_STORE", str(store))
    assert main(argv) == 0
    last = capsys.readouterr().out.strip().splitlines()[-1]
    assert last.startswith("Open the dashboard:  python -m evalcore dashboard ") and "--store" not in last
