"""Question sets in the store (evalcore.inputs.question_sets, ``evalcore dataset ...``, ``run --dataset``):
byte-identical round trips of real sets, immutable versions with parents and authors, the
same figures as the question files, re-resolution against a changed corpus, and the note
Compare and gate give when two runs used different versions."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import duckdb
import pytest
from conftest import FIXTURES, MINI, shared_data

from evalcore import authors
from evalcore.cli import main
from evalcore.errors import InputError, NotComparable, StoreError
from evalcore.inputs import question_sets
from evalcore.inputs.corpus import load_corpus
from evalcore.inputs.demo import OOD_PATH, QUESTIONS_PATH
from evalcore.inputs.groundtruth import load_ground_truth
from evalcore.store import Store


def _dataset(store: Path, *argv: str) -> int:
    return main(["--store", str(store), "dataset", *argv])


def _roundtrip(tmp_path: Path, source: Path, name: str, capsys) -> None:
    store = tmp_path / "s.duckdb"
    capsys.readouterr()
    assert _dataset(store, "import", str(source), "--name", name) == 0
    out = capsys.readouterr().out
    assert out.startswith(f"saved {name}@1 (a new set)") and "note:" not in out
    assert _dataset(store, "export", name, "-o", str(tmp_path / f"{name}-out")) == 0
    for file in ("questions.jsonl", "ood.jsonl"):
        if (source / file).exists():
            assert (tmp_path / f"{name}-out" / file).read_bytes() == (source / file).read_bytes(), file
        else:
            assert not (tmp_path / f"{name}-out" / file).exists()


def test_import_then_export_is_byte_identical_for_the_demo_and_the_test_sets(tmp_path, capsys):
    demo = Path(QUESTIONS_PATH).parent
    assert Path(OOD_PATH).parent == demo
    _roundtrip(tmp_path, demo, "demo", capsys)
    _roundtrip(tmp_path, MINI, "mini", capsys)
    gate = tmp_path / "gate-src"
    gate.mkdir()
    shutil.copy(MINI / "questions.jsonl", gate)
    shutil.copy(FIXTURES / "gate" / "ood.jsonl", gate)
    _roundtrip(tmp_path, gate, "gate", capsys)


def test_an_imported_squad_set_round_trips_with_its_exact_spans(tmp_path, capsys):
    from evalcore.inputs.public_sets import import_squad, questions_from_csv

    source = shared_data("xquad", "xquad.en.json")
    faq = shared_data("covid-qa", "data", "faqs", "faq_covidbert.csv")
    import_squad(source, tmp_path / "xquad", questions_from_csv(faq, limit=40))
    _roundtrip(tmp_path, tmp_path / "xquad", "xquad", capsys)
    qs = question_sets.load_question_set(Store(tmp_path / "s.duckdb"), "xquad")
    assert len(qs.questions) == 1190 and len(qs.ood) == 40
    assert all(q.needle is None and q.document and q.end > q.start for q in qs.questions)  # type: ignore[operator]


def test_a_file_in_another_layout_keeps_its_content_and_says_export_rewrites_it(tmp_path, capsys):
    src = tmp_path / "src"
    src.mkdir()
    (src / "questions.jsonl").write_text(
        '{"question": "Which port?", "id": "p", "needle": "The server listens on port 8470 by default."}\n\n'
        '{"id":"c","question":"Caf\\u00e9?","needle":"kettle.toml"}\n',
        encoding="utf-8",
    )
    store = tmp_path / "s.duckdb"
    assert _dataset(store, "import", str(src), "--name", "other") == 0
    assert "note: 2 line(s) are not in evalcore's canonical form" in capsys.readouterr().out
    assert _dataset(store, "export", "other", "-o", str(tmp_path / "out")) == 0
    lines = (tmp_path / "out" / "questions.jsonl").read_text(encoding="utf-8").splitlines()
    assert [json.loads(line) for line in lines] == [
        {"id": "p", "question": "Which port?", "needle": "The server listens on port 8470 by default.", "group": "p",
         "variant": ""},
        {"id": "c", "question": "Café?", "needle": "kettle.toml", "group": "c", "variant": ""},
    ]  # fmt: skip
    assert not (tmp_path / "out" / "ood.jsonl").exists()


def test_bad_files_give_one_line_naming_file_and_line_and_store_nothing(tmp_path, capsys):
    store = tmp_path / "s.duckdb"
    assert _dataset(store, "import", str(MINI), "--name", "mini") == 0
    capsys.readouterr()
    bad = tmp_path / "bad"
    bad.mkdir()
    shutil.copy(MINI / "questions.jsonl", bad)
    (bad / "ood.jsonl").write_text(
        '{"id": "o1", "query": "paella", "kind": "far"}\n{"id": "o2", "query": "x", "kind": "nearish"}\n'
    )
    assert _dataset(store, "import", str(bad), "--name", "mini") == 2
    err = capsys.readouterr().err.strip()
    assert err == f"error: {bad / 'ood.jsonl'}:2: field 'kind' must be one of near, far, got 'nearish'"
    (bad / "ood.jsonl").write_text('{"id": "port-course", "query": "again", "kind": "far"}\n')
    assert _dataset(store, "import", str(bad), "--name", "mini") == 2
    err = capsys.readouterr().err
    assert f"{bad / 'ood.jsonl'}:1: duplicate id 'port-course' (first at {bad / 'questions.jsonl'}:1)" in err
    (bad / "ood.jsonl").write_text("{not json\n")
    assert _dataset(store, "import", str(bad), "--name", "mini") == 2
    assert f"{bad / 'ood.jsonl'}:1: invalid JSON" in capsys.readouterr().err
    assert _dataset(store, "import", str(MINI), "--name", "bad name!") == 2
    assert "question set name 'bad name!'" in capsys.readouterr().err
    assert _dataset(store, "export", "mini@7", "-o", str(tmp_path / "x")) == 2
    assert "question set 'mini' has no version 7 (versions 1 to 1)" in capsys.readouterr().err
    assert _dataset(store, "export", "nosuch", "-o", str(tmp_path / "x")) == 2
    assert "no question set 'nosuch' (sets: mini)" in capsys.readouterr().err
    assert [v.label for v in question_sets.versions(Store(store))] == ["mini@1"]
    with duckdb.connect(str(store), read_only=True) as con:
        assert con.execute("SELECT count(*) FROM question_set_items").fetchone() == (19,)
        assert con.execute("SELECT count(*) FROM question_set_ood").fetchone() == (7,)


def test_saves_make_immutable_versions_and_a_second_save_from_one_parent_is_its_own(tmp_path, monkeypatch):
    store = Store(tmp_path / "s.duckdb")
    v1 = question_sets.import_folder(store, MINI, "mini", author=authors.os_author())[0].version
    assert (v1.version, v1.parent, v1.author) == (1, None, authors.os_author())
    base = question_sets.load_question_set(store, "mini@1")
    alice = question_sets.save(
        store, "mini", base.questions[:-1], base.ood, parent=1, author="alice@example.org", note="drop the last"
    )
    assert alice.message() == "saved mini@2 (from version 1)" and not alice.siblings
    bob = question_sets.save(store, "mini", base.questions, base.ood[:2], parent=1, author="bob", note="fewer ood")
    assert bob.version.version == 3 and [s.version for s in bob.siblings] == [2]
    assert bob.message() == (
        "saved mini@3 (from version 1); version 1 was also edited meanwhile (version 2 by alice@example.org): "
        "your save is its own version, nothing was overwritten"
    )
    got = {v.version: (v.parent, v.author, v.note, v.questions, v.ood) for v in question_sets.versions(store, "mini")}
    assert got == {
        1: (None, authors.os_author(), "", 19, 7),
        2: (1, "alice@example.org", "drop the last", 18, 7),
        3: (1, "bob", "fewer ood", 19, 2),
    }
    assert question_sets.load_question_set(store, "mini@1") == base  # version 1 is untouched
    assert question_sets.load_question_set(store, "mini").version.version == 3
    with pytest.raises(InputError, match="question set 'mini' already exists"):
        question_sets.save(store, "mini", base.questions, base.ood, parent=None, author=None)
    with pytest.raises(StoreError, match="no version 9 to save from"):
        question_sets.save(store, "mini", base.questions, base.ood, parent=9, author=None)
    twice = [*base.questions, base.questions[0]]
    with pytest.raises(InputError, match=r"question set mini:20: duplicate id 'port-course' \(first at "):
        question_sets.save(store, "mini", twice, base.ood, parent=3, author=None)
    assert len(question_sets.versions(store, "mini")) == 3
    # the dashboard's author is the trusted header only
    monkeypatch.setenv("EVALCORE_USER_HEADER", "X-Forwarded-Email")
    who = authors.author_from_headers({"x-forwarded-email": "carol@example.org", "X-User": "mallory"})
    assert question_sets.save(store, "mini", base.questions, base.ood, parent=3, author=who).version.author == (
        "carol@example.org"
    )


@pytest.mark.slow
def test_run_on_a_set_gives_the_figures_of_the_files_and_compare_and_gate_say_the_versions_differ(
    tmp_path, real_embedder, mini_inputs, capsys
):
    from evalcore.chunking import parse_strategies
    from evalcore.cli.text.compare_text import compare_text
    from evalcore.read.summary import summary_table
    from evalcore.regression.gate import run_gate
    from evalcore.run.runner import RunRequest, run_evaluation

    store = Store(tmp_path / "s.duckdb")
    corpus, gt_files = mini_inputs
    question_sets.import_folder(store, MINI, "mini", author="ann")
    qs = question_sets.load_question_set(store, "mini@1")
    fewer = question_sets.save(store, "mini", qs.questions[:-2], qs.ood[:3], parent=1, author="ben").version

    def run(gt, name):
        request = RunRequest(corpus, gt, parse_strategies("E"), ["dense", "bm25"], name=name)
        return run_evaluation(request, store, embedders=[real_embedder]).run_id

    files_run = run(gt_files, "files")
    set_run = run(qs.ground_truth(corpus), "set")
    fewer_run = run(question_sets.load_question_set(store, fewer.label).ground_truth(corpus), "fewer")
    a, b = summary_table(store, files_run), summary_table(store, set_run)
    assert len(a) == 2 and a.equals(b)
    queries = "SELECT * EXCLUDE (run_id, line) FROM queries WHERE run_id = ? ORDER BY query_id"
    assert store.query(queries, [files_run]).equals(store.query(queries, [set_run]))
    with store.read() as con:
        rows = con.execute("SELECT run_id, question_set, question_set_version FROM runs ORDER BY created_at").fetchall()
    assert rows == [(files_run, None, None), (set_run, "mini", 1), (fewer_run, "mini", 2)]

    mixed = compare_text(store, files_run, set_run, width=300)
    assert (
        f"note: the runs used ground truth from different sources: {files_run} question files "
        f"({MINI / 'questions.jsonl'}), {set_run} question set mini@1"
    ) in mixed
    assert any(n.startswith("the runs used ground truth from different sources") for n in run_gate(
        store, files_run, set_run).notes)  # fmt: skip
    # v2 lacks a question: the runs cannot be paired, and the refusal says why
    versions = (
        f"the runs used different versions of question set mini: {set_run} question set mini@1, "
        f"{fewer_run} question set mini@2"
    )
    with pytest.raises(NotComparable, match="did not answer the same in-domain queries") as refused:
        run_gate(store, set_run, fewer_run)
    assert str(refused.value).endswith("; " + versions)
    with pytest.raises(StoreError, match="the runs did not answer the same queries") as failed:
        compare_text(store, set_run, fewer_run, width=200)
    assert versions in str(failed.value)
    # the CLI: run --dataset reads the set from the store and records it
    assert main(["--store", str(store.path), "run", "--corpus", str(MINI / "corpus"), "--dataset", "mini@9"]) == 2
    assert "question set 'mini' has no version 9 (versions 1 to 2)" in capsys.readouterr().err
    argv = ["--store", str(store.path), "run", "--corpus", str(MINI / "corpus"), "--dataset", "mini"]
    assert main([*argv, "--questions", str(MINI / "questions.jsonl")]) == 2
    assert "run takes --dataset or --questions/--ood, not both" in capsys.readouterr().err


def test_a_changed_corpus_lists_the_items_that_no_longer_resolve(tmp_path, capsys):
    store = tmp_path / "s.duckdb"
    assert _dataset(store, "import", str(MINI), "--name", "mini") == 0
    corpus = tmp_path / "corpus"
    shutil.copytree(MINI / "corpus", corpus)
    install = corpus / "install.md"
    text = install.read_text(encoding="utf-8")
    assert "The server listens on port 8470 by default." in text
    install.write_text(
        text.replace("The server listens on port 8470 by default.", "The server listens on port 9000 by default.")
        + "\nThe installer creates a configuration file at `~/.config/kettle/kettle.toml` the first time the "
        "server starts.\n",
        encoding="utf-8",
    )
    before = question_sets.load_question_set(Store(store), "mini").ground_truth(load_corpus(MINI / "corpus"))
    after = question_sets.load_question_set(Store(store), "mini").ground_truth(load_corpus(corpus))
    reasons = {i.group: i.reason for i in after.invalid}
    assert reasons.pop("port") == "not found"
    assert reasons.pop("config").startswith("found 2 times (doc install line ")
    assert reasons == {i.group: i.reason for i in before.invalid}  # the rest as before
    assert set(before.spans) - set(after.spans) == {"port", "config"}
    # the same verdicts as validate gives on the exported files
    files = load_ground_truth(load_corpus(corpus), MINI / "questions.jsonl", MINI / "ood.jsonl")
    assert [(i.group, i.reason, i.line) for i in files.invalid] == [(i.group, i.reason, i.line) for i in after.invalid]
    capsys.readouterr()
    assert _dataset(store, "show", "mini", "--corpus", str(corpus), "--json") == 0
    shown = json.loads(capsys.readouterr().out)
    assert shown["resolved"] == len(after.spans)
    assert {i["group"]: i["reason"] for i in shown["not_resolving"]}["port"] == "not found"
    assert shown["ood"] == {"near": 4, "far": 3} and shown["author"] == authors.shown(authors.os_author())


def test_dataset_list_prints_every_version(tmp_path, capsys):
    store = tmp_path / "s.duckdb"
    assert _dataset(store, "list") == 0
    assert "no question sets in the store" in capsys.readouterr().out
    assert _dataset(store, "import", str(MINI), "--name", "mini", "--note", "first") == 0
    assert _dataset(store, "import", str(MINI), "--name", "mini") == 0
    assert "saved mini@2 (from version 1)" in capsys.readouterr().out
    assert _dataset(store, "list", "--json") == 0
    listed = json.loads(capsys.readouterr().out)
    assert [(v["set"], v["parent"], v["questions"], v["ood"], v["note"]) for v in listed] == [
        ("mini@1", None, 19, 7, "first"),
        ("mini@2", 1, 19, 7, ""),
    ]


def test_a_real_query_list_reads_lines_a_csv_column_or_json_lines(tmp_path):
    import csv
    import io
    import time

    from evalcore.inputs.query_lists import read_queries

    faq = shared_data("covid-qa", "data", "faqs", "faq_covidbert.csv")
    rows = list(csv.DictReader(io.StringIO(faq.read_text(encoding="utf-8"), newline="")))
    expected = list(dict.fromkeys(r["question"].strip() for r in rows if r["question"].strip()))
    assert read_queries("faq.csv", faq.read_bytes(), "question") == expected
    jsonl = "".join(json.dumps({"query": q}) + "\n" for q in expected).encode()
    assert read_queries("q.jsonl", jsonl) == expected
    lines = ("\n".join(f"query number {i}" for i in range(100_000)) + "\n\n").encode()
    t0 = time.perf_counter()
    got = read_queries("q.txt", lines)
    assert len(got) == 100_000 and got[-1] == "query number 99999" and time.perf_counter() - t0 < 5
    with pytest.raises(InputError, match=r"^faq.csv: no column 'query' \(columns: "):
        read_queries("faq.csv", faq.read_bytes())
    with pytest.raises(InputError, match=r"^q.jsonl:2: invalid JSON"):
        read_queries("q.jsonl", b'{"query": "a"}\n{oops\n')
    with pytest.raises(InputError, match="^q.txt: not UTF-8 text"):
        read_queries("q.txt", b"\xff\xfe\x00bad")


def test_new_run_takes_a_set_pinned_to_its_version_and_no_question_files(tmp_path):
    from evalcore import jobs
    from evalcore.errors import ConfigError
    from evalcore.inputs.uploads import UploadedFile

    store = Store(tmp_path / "runs" / "evalcore.duckdb")
    files = [UploadedFile(p.name, p.read_bytes()) for p in sorted((MINI / "corpus").iterdir())]
    with pytest.raises(InputError, match="the store holds no question set yet"):
        jobs.prepare_upload(store, files, None, None, "A", "dense", dataset="mini")
    question_sets.import_folder(store, MINI, "mini", author="ann")
    prepared = jobs.prepare_upload(store, files, None, None, "A", "dense", dataset="mini")
    assert (prepared.spec.dataset, prepared.spec.questions, prepared.spec.ood) == ("mini@1", None, None)
    spec = prepared.spec
    assert (spec.dataset, spec.questions, spec.ood, spec.confined) == ("mini@1", None, None, True)
    saved = jobs.uploads_dir(store) / prepared.job_id
    assert sorted(p.name for p in saved.iterdir()) == ["corpus"]  # no question file is written
    # the same validation as the files the set came from
    as_files = jobs.prepare_upload(
        store,
        files,
        UploadedFile("questions.jsonl", (MINI / "questions.jsonl").read_bytes()),
        UploadedFile("ood.jsonl", (MINI / "ood.jsonl").read_bytes()),
        "A",
        "dense",
    )
    for key in ("documents", "ground_truths", "in_domain_queries", "ood", "invalid_ground_truths"):
        assert prepared.report.to_json()[key] == as_files.report.to_json()[key], key
    with pytest.raises(ConfigError, match="a question set or question files, not both"):
        jobs.prepare_upload(
            store, files, UploadedFile("questions.jsonl", b"{}"), None, "A", "dense", dataset="mini"
        )  # fmt: skip
    with pytest.raises(StoreError, match="question set 'mini' has no version 4"):
        jobs.prepare_upload(store, files, None, None, "A", "dense", dataset="mini@4")
