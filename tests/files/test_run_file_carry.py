"""A run file carries everything its run owns beyond the results: its threshold decisions
with their authors, its traffic (imports, log lines, scored texts, hits, labels with their
authors) and the question-set version it used; it says what could not travel, and
``load-run`` reports that. A load killed inside its transaction leaves nothing.

One store made by real ``python -m evalcore`` commands (the keyword embedder, so each starts
in a second): the mini questions imported as question set ``faq``, two runs on it, a query log
replayed against one of them, a label and a decision with their authors.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import time
import zipfile
from datetime import UTC, datetime, timedelta
from pathlib import Path

import duckdb
import pytest
import zygote
from conftest import MINI, ROOT, KeywordEmbedder, cli_in_process

from evalcore.embedding.embedder import text_hash
from evalcore.files.run_files import TABLES
from evalcore.files.run_travel import SET_TABLES, TRAFFIC_TABLES
from evalcore.store import Store
from evalcore.store.traffic import imported as traffic_rows

PYTHONPATH = os.pathsep.join([str(ROOT), str(ROOT / "tests")])
FAKE = {"EVALCORE_TEST_EMBEDDER": "files.test_run_file_carry:embedder", "PYTHONPATH": PYTHONPATH}
KEYWORDS = ["install", "cache", "token", "password", "recipe", "error", "python", "pip"]


def embedder() -> KeywordEmbedder:
    """The keyword embedder, named without commas: ``traffic import`` reads a run's model
    list as comma-separated, so the reliability suite's ``fake:embedder`` name (which holds
    commas) never matches itself there."""
    fake = KeywordEmbedder(KEYWORDS)
    fake.name = "keyword-embedder/" + "+".join(KEYWORDS)
    return fake


RUN = ["run", "--corpus", str(MINI / "corpus"), "--dataset", "faq", "--strategies", "E", "-q"]


def cli(store: Path, *args: str) -> subprocess.CompletedProcess:
    return cli_in_process(["--store", str(store), *args], FAKE)


def ok(store: Path, *args: str) -> str:
    done = cli(store, *args)
    assert done.returncode == 0, done.stderr
    return done.stdout


def one_line_refusal(done: subprocess.CompletedProcess) -> str:
    assert done.returncode == 2, (done.stdout, done.stderr)
    assert done.stderr.startswith("error: ") and done.stderr.count("\n") == 1, done.stderr
    assert "Traceback" not in done.stderr and "unexpected" not in done.stderr
    return done.stderr


def read(path: Path, sql: str, params: list | None = None) -> list[tuple]:
    con = duckdb.connect(str(path), read_only=True)
    try:
        return con.execute(sql, params or []).fetchall()
    finally:
        con.close()


def rows(path: Path, table: str, where: str, params: list) -> list[tuple]:
    return sorted(read(path, f'SELECT * FROM "{table}" WHERE {where}', params), key=repr)


def counts(path: Path) -> dict[str, int]:
    tables = [*TABLES, *SET_TABLES]
    return {t: read(path, f'SELECT count(*) FROM "{t}"')[0][0] for t in tables}


def run_id(path: Path, name: str) -> str:
    return read(path, "SELECT run_id FROM runs WHERE name = ?", [name])[0][0]


@pytest.fixture(scope="module")
def source(tmp_path_factory) -> dict:
    """The source store (see the module doc) and the exported file of each run."""
    folder = tmp_path_factory.mktemp("carry")
    store = folder / "source.duckdb"
    ok(store, "dataset", "import", str(MINI), "--name", "faq", "--note", "the mini questions")
    ok(store, *RUN, "--name", "carried")
    ok(store, *RUN, "--name", "second")
    rid = run_id(store, "carried")
    questions = [json.loads(x)["question"] for x in (MINI / "questions.jsonl").read_text().splitlines()][:6]
    start = datetime(2026, 11, 2, 8, 0, tzinfo=UTC)
    log = folder / "log.jsonl"
    lines = [{"time": (start + timedelta(hours=i)).isoformat(), "query": q} for i, q in enumerate(questions)]
    lines.append({"time": (start + timedelta(days=1)).isoformat(), "query": "where do I park my bicycle?"})
    log.write_text("".join(json.dumps(x) + "\n" for x in lines))
    ok(store, "traffic", "import", str(log), "--run", f"{rid}:E/dense", "-q")
    traffic_rows.write_label(Store(store), [rid, "E", "dense"], text_hash(questions[0]), "answerable", "bob")
    Store(store).save_decision(rid, "E", "dense", 0.7, "chosen in review", author="alice")
    files = {}
    for name in ("carried", "second"):
        files[name] = folder / f"{name}.evalcore.zip"
        ok(store, "export-run", name, "-o", str(files[name]))
    return {"store": store, "run_id": rid, "files": files, "folder": folder}


@pytest.fixture(scope="module")
def loaded(source) -> tuple[Path, str]:
    """A fresh store the carried run was loaded into, and what load-run printed."""
    path = source["folder"] / "loaded.duckdb"
    return path, ok(path, "load-run", str(source["files"]["carried"]))


def test_decisions_travel_with_their_authors(source, loaded):
    rid = source["run_id"]
    theirs = rows(source["store"], "decisions", "run_id = ?", [rid])
    mine = rows(loaded[0], "decisions", "run_id = ?", [rid])
    assert mine == theirs and len(mine) == 1
    assert read(loaded[0], "SELECT author, note FROM decisions WHERE run_id = ?", [rid]) == [
        ("alice", "chosen in review")
    ]


def test_traffic_lines_texts_and_labels_travel(source, loaded):
    rid = source["run_id"]
    for table in TRAFFIC_TABLES:
        theirs = rows(source["store"], table, "run_id = ?", [rid])
        assert theirs, f"the source holds no {table}: the test would prove nothing"
        assert rows(loaded[0], table, "run_id = ?", [rid]) == theirs, table
    assert read(loaded[0], "SELECT count(*) FROM traffic_queries")[0][0] == 7
    assert read(loaded[0], "SELECT label, author FROM traffic_labels") == [("answerable", "bob")]
    assert read(loaded[0], "SELECT status, added FROM traffic_imports") == [("complete", 7)]


def test_the_question_set_version_travels(source, loaded):
    path, printed = loaded
    rid = source["run_id"]
    assert read(path, "SELECT question_set, question_set_version FROM runs WHERE run_id = ?", [rid]) == [("faq", 1)]
    for table, (where, _) in SET_TABLES.items():
        params = ["faq"] if table == "question_sets" else ["faq", 1]
        theirs = rows(source["store"], table, where, params)
        assert theirs and rows(path, table, where, params) == theirs, table
    assert "stored question set faq v1, which the run used" in printed
    manifest = json.loads(zipfile.ZipFile(source["files"]["carried"]).read("manifest.json"))
    assert manifest["question_set"]["name"] == "faq" and manifest["question_set"]["version"] == 1
    assert manifest["question_set"]["tables"]["question_set_items"]["rows"] == len(
        (MINI / "questions.jsonl").read_text().splitlines()
    )


def test_the_file_says_what_did_not_travel_and_load_run_reports_it(source, loaded):
    manifest = json.loads(zipfile.ZipFile(source["files"]["carried"]).read("manifest.json"))
    assert [n["what"] for n in manifest["not_carried"]] == ["the embedding cache"]
    assert "not carried: the embedding cache: a stored run never reads it again" in loaded[1]
    assert read(loaded[0], "SELECT count(*) FROM embeddings")[0][0] == 0


def test_a_second_run_on_the_same_set_version_stores_it_once(source, loaded, tmp_path):
    path = tmp_path / "both.duckdb"
    shutil.copy(loaded[0], path)
    printed = ok(path, "load-run", str(source["files"]["second"]))
    assert "stored question set" not in printed
    assert read(path, "SELECT count(*) FROM question_set_versions")[0][0] == 1
    assert read(path, "SELECT count(*) FROM runs WHERE question_set = 'faq' AND question_set_version = 1")[0][0] == 2
    again = ok(path, "load-run", str(source["files"]["carried"]))
    assert "identical; nothing loaded" in again


def rewrite(source_file: Path, out: Path, edit) -> Path:
    """A copy of a run file with ``edit(manifest, members)`` applied (members by name)."""
    with zipfile.ZipFile(source_file) as zf:
        members = {n: zf.read(n) for n in zf.namelist()}
    manifest = json.loads(members.pop("manifest.json"))
    edit(manifest, members)
    with zipfile.ZipFile(out, "w") as zf:
        zf.writestr("manifest.json", json.dumps(manifest))
        for name, data in members.items():
            zf.writestr(name, data)
    return out


def without_set(manifest, members):
    for meta in manifest.pop("question_set")["tables"].values():
        members.pop(meta["file"])


def test_a_set_that_could_not_travel_is_named_in_the_next_file(source, tmp_path):
    """A run whose set is not in the store (it came in a file without it) travels on without
    it: the next file says so, and load-run reports it."""
    stripped = rewrite(source["files"]["carried"], tmp_path / "stripped.zip", without_set)
    middle, last = tmp_path / "middle.duckdb", tmp_path / "last.duckdb"
    ok(middle, "load-run", str(stripped))
    assert read(middle, "SELECT count(*) FROM question_set_versions")[0][0] == 0
    again = tmp_path / "again.evalcore.zip"
    exported = ok(middle, "export-run", "carried", "-o", str(again))
    assert "not carried: question set faq v1: it is not in the exporting store" in exported
    printed = ok(last, "load-run", str(again))
    assert "not carried: question set faq v1: it is not in the exporting store" in printed
    assert rows(last, "traffic_labels", "true", []) == rows(source["store"], "traffic_labels", "true", [])


def test_a_version_2_file_loads_and_says_it_carries_no_set(source, tmp_path):
    def as_version_2(manifest, members):
        without_set(manifest, members)
        manifest["format_version"] = 2
        del manifest["not_carried"]
        for table in TRAFFIC_TABLES:
            members.pop(manifest["tables"].pop(table)["file"])

    old = rewrite(source["files"]["second"], tmp_path / "v2.zip", as_version_2)
    printed = ok(tmp_path / "v2.duckdb", "load-run", str(old))
    assert "not carried: question set faq v1: a run file of format version 2 carries no question sets" in printed


def test_a_set_of_that_name_made_elsewhere_is_refused_and_nothing_stored(source, tmp_path):
    other = tmp_path / "other.duckdb"
    ok(other, "dataset", "import", str(MINI), "--name", "faq", "--note", "made here, not the run's")
    before = counts(other)
    err = one_line_refusal(cli(other, "load-run", str(source["files"]["carried"])))
    assert "the question set 'faq' in" in err and "is another set than the one its run used" in err
    assert counts(other) == before


@pytest.mark.parametrize(
    "edit, message",
    [
        (
            lambda m, _: m["question_set"].update(version=2),
            "it carries question set faq v2, but its run used faq v1",
        ),
        (lambda m, _: m.update(not_carried="everything"), "not_carried is not a list of what and why"),
        (lambda m, _: m["question_set"]["tables"].pop("question_set_ood"), "question_set entry is malformed"),
    ],
)
def test_a_tampered_manifest_is_one_line_and_nothing_stored(source, tmp_path, edit, message):
    bad = rewrite(source["files"]["carried"], tmp_path / "bad.zip", edit)
    store = tmp_path / "fresh.duckdb"
    err = one_line_refusal(cli(store, "load-run", str(bad)))
    assert message in err
    assert not store.exists() or counts(store)["runs"] == 0


def test_a_label_that_cannot_be_is_refused(source, tmp_path):
    import hashlib

    def bad_label(manifest, members):
        meta = manifest["tables"]["traffic_labels"]
        src, dst = tmp_path / "in.parquet", tmp_path / "out.parquet"
        src.write_bytes(members[meta["file"]])
        relabelled = f"SELECT * REPLACE ('maybe' AS label) FROM read_parquet('{src}')"
        duckdb.execute(f"COPY ({relabelled}) TO '{dst}' (FORMAT parquet)")
        members[meta["file"]] = dst.read_bytes()
        meta["sha256"] = hashlib.sha256(members[meta["file"]]).hexdigest()

    bad = rewrite(source["files"]["carried"], tmp_path / "label.zip", bad_label)
    err = one_line_refusal(cli(tmp_path / "fresh.duckdb", "load-run", str(bad)))
    assert "tables/traffic_labels.parquet: 1 row(s) with a label other than answerable or off-topic" in err


@pytest.mark.slow
@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGTERM], ids=["SIGKILL", "SIGTERM"])
def test_a_load_stopped_inside_its_transaction_leaves_nothing_and_loads_again(source, loaded, tmp_path, sig):
    store = tmp_path / "target.duckdb"
    ok(store, "dataset", "import", str(MINI), "--name", "other")  # an existing store
    before = counts(store)
    marker = tmp_path / "inside"
    env = {**os.environ, **FAKE, "EVALCORE_TEST_PAUSE": f"loading a run={marker}"}
    proc = zygote.start(["--store", str(store), "load-run", str(source["files"]["carried"])], env)
    deadline = time.monotonic() + 60
    while not marker.exists() and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.05)
    assert marker.exists(), proc.communicate()
    proc.send_signal(sig)
    out, err = proc.communicate(timeout=60)
    if sig == signal.SIGTERM:
        assert proc.returncode == 128 + signal.SIGTERM and err.count("\n") == 1 and "interrupted" in err, err
    else:
        assert proc.returncode == -signal.SIGKILL
    assert counts(store) == before  # as if it never started
    ok(store, "load-run", str(source["files"]["carried"]))
    alone = counts(loaded[0])  # the run loaded into an empty store
    assert counts(store) == {t: before[t] + alone[t] for t in before}
