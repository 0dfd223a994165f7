"""``validate`` and ``run`` name the analyzer for a corpus that is not English (one line on
stderr), say nothing new on an English one, and run exactly what was asked for."""

from __future__ import annotations

import json

from conftest import FIXTURES, MINI, ROOT, KeywordEmbedder, cli_in_process

from evalcore.run.execute import execute
from evalcore.run.spec import RunSpec
from evalcore.store import Store

LANGUAGES = FIXTURES / "languages"
KEYWORDS = ["kette", "bücher", "reifen", "bibliothek"]
EMBEDDER = {"EVALCORE_TEST_EMBEDDER": "cli.test_language_hint:embedder", "PYTHONPATH": f"{ROOT}:{ROOT / 'tests'}"}


def embedder() -> KeywordEmbedder:
    """The keyword embedder (the model is not what is tested here)."""
    return KeywordEmbedder(KEYWORDS)


def inputs(lang: str) -> list[str]:
    folder = LANGUAGES / lang
    return ["--corpus", str(folder / "corpus"), "--questions", str(folder / "questions.jsonl")]


def notes(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if line.startswith("note: the corpus")]


def test_validate_on_a_russian_corpus_with_plain_bm25_names_bm25_russian():
    done = cli_in_process(["validate", *inputs("ru"), "--retrievers", "bm25"])
    assert done.returncode == 0, done.stderr
    (line,) = notes(done.stderr)
    assert "Russian" in line and "use bm25:russian" in line and "English-only" not in line
    assert "note:" not in done.stdout  # the report itself is unchanged
    plain = cli_in_process(["validate", *inputs("ru"), "--retrievers", "bm25:russian"])
    assert plain.returncode == 0 and plain.stdout == done.stdout and not notes(plain.stderr)


def test_validate_with_the_default_retrievers_names_the_analyzers_and_the_english_model():
    done = cli_in_process(["validate", *inputs("de")])
    assert done.returncode == 0, done.stderr
    (line,) = notes(done.stderr)
    assert "German" in line and "use bm25:german, hybrid:german" in line
    assert "all-MiniLM-L6-v2 is English-only" in line
    with_model = cli_in_process(["validate", *inputs("de"), "--retrievers", "dense,bm25:german", "--model", "/m"])
    assert with_model.returncode == 0 and not notes(with_model.stderr)


def test_validate_on_an_english_corpus_says_nothing_new():
    """The same report and the same warnings (the mini corpus's one invalid needle) whatever
    the retrievers: no line on the language."""
    args = ["--corpus", str(MINI / "corpus"), "--questions", str(MINI / "questions.jsonl")]
    seen = set()
    for retrievers in ("bm25", "dense,bm25,hybrid", "bm25:english"):
        done = cli_in_process(["validate", *args, "--retrievers", retrievers])
        assert done.returncode == 0, done.stderr
        assert all(line.startswith("WARNING evalcore.inputs.groundtruth") for line in done.stderr.splitlines())
        seen.add((done.stdout, done.stderr))
    assert len(seen) == 1
    demo = cli_in_process(["validate", "--demo", "--retrievers", "bm25"])
    assert demo.returncode == 0 and not notes(demo.stderr)


def test_validate_json_stays_json_and_the_line_goes_to_stderr():
    done = cli_in_process(["validate", *inputs("ru"), "--retrievers", "bm25", "--json"])
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["documents"] == 2
    assert len(notes(done.stderr)) == 1


def test_validate_checks_its_retrievers():
    done = cli_in_process(["validate", *inputs("ru"), "--retrievers", "bm25:klingon"])
    assert done.returncode == 2 and "unknown language 'klingon'" in done.stderr and not notes(done.stderr)


def rows(path, run_id: str, table: str):
    order = "strategy, retriever, query_id" + (", rank" if table == "hits" else "")
    df = Store(path).query(f"SELECT * FROM {table} WHERE run_id = ? ORDER BY {order}", [run_id])
    return df.drop(columns=["run_id"]).reset_index(drop=True)


def test_run_says_it_and_runs_exactly_what_was_asked(tmp_path, monkeypatch):
    """The line is said; the run holds the asked retrievers only, and its stored results and
    hits equal those of the same run made through the library (no hint path)."""
    store = tmp_path / "evalcore.duckdb"
    argv = ["--store", str(store), "run", *inputs("de"), "--strategies", "E", "--retrievers", "bm25,dense", "--json"]
    done = cli_in_process(argv, EMBEDDER)
    assert done.returncode == 0, done.stderr
    (line,) = notes(done.stderr)
    assert "use bm25:german" in line and "English-only" in line
    hinted = json.loads(done.stdout)["run_id"]
    assert Store(store).run(hinted).settings["retrievers"] == ["bm25", "dense"]
    monkeypatch.setenv("EVALCORE_TEST_EMBEDDER", EMBEDDER["EVALCORE_TEST_EMBEDDER"])
    folder = LANGUAGES / "de"
    spec = RunSpec(
        corpus=folder / "corpus",
        questions=folder / "questions.jsonl",
        strategies=("E",),
        retrievers=("bm25", "dense"),
    )
    plain = execute(spec, Store(store)).run_id
    for table in ("results", "hits"):
        ours, theirs = rows(store, hinted, table), rows(store, plain, table)
        assert len(ours) and ours.equals(theirs), table
    assert set(ours["retriever"]) == {"bm25", "dense"}


def test_an_english_run_prints_no_language_line(tmp_path):
    args = ["--corpus", str(MINI / "corpus"), "--questions", str(MINI / "questions.jsonl")]
    done = cli_in_process(
        ["--store", str(tmp_path / "s.duckdb"), "run", *args, "--strategies", "E", "--retrievers", "bm25,dense", "-q"],
        EMBEDDER,
    )
    assert done.returncode == 0, done.stderr
    assert not notes(done.stderr) and "English-only" not in done.stderr + done.stdout
