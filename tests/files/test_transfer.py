"""export-run / load-run: one verified file per run, stored again in one transaction."""

from __future__ import annotations

import json
import shutil
import zipfile
from pathlib import Path

import pytest
from conftest import copy_with_failed_run
from dashboard.test_app import PAGES, no_exception, open_page

from evalcore.cli import main
from evalcore.files.run_files import FORMAT_VERSION, TABLES, export_run, load_run
from evalcore.files.run_travel import TRAFFIC_TABLES
from evalcore.regression.gate import run_gate
from evalcore.regression.report import to_dict
from evalcore.store import Store


def cli(store, *args, capsys):
    code = main(["--store", str(store), *args])
    out, err = capsys.readouterr()
    return code, out, err


def run_id(store_path, name: str) -> str:
    return Store(store_path).query("SELECT run_id FROM runs WHERE name = ?", [name]).iloc[0, 0]


def rows(store_path, table: str, rid: str):
    df = Store(store_path).query(f'SELECT * FROM "{table}" WHERE run_id = ?', [rid])
    return df.sort_values(list(df.columns)).reset_index(drop=True)


@pytest.fixture(scope="module")
def exported(gate_store, tmp_path_factory):
    """base and cand exported (base with a saved threshold decision), and loaded into a fresh store."""
    folder = tmp_path_factory.mktemp("transfer")
    source = folder / "source.duckdb"
    shutil.copy(gate_store, source)
    Store(source).save_decision(run_id(source, "base"), "P", "dense", 0.8, "for the review")
    files = {name: folder / f"{name}.evalcore.zip" for name in ("base", "cand")}
    for name, file in files.items():
        assert main(["--store", str(source), "export-run", name, "-o", str(file)]) == 0
    loaded = folder / "loaded.duckdb"
    for file in files.values():
        assert main(["--store", str(loaded), "load-run", str(file)]) == 0
    return source, files, loaded


def test_every_table_travels_whole(exported):
    source, files, loaded = exported
    manifest = json.loads(zipfile.ZipFile(files["base"]).read("manifest.json"))
    assert manifest["format"] == "evalcore-run" and manifest["format_version"] == FORMAT_VERSION
    assert list(manifest["tables"]) == list(TABLES)
    for name in ("base", "cand"):
        rid = run_id(source, name)
        for table in TABLES:
            a, b = rows(source, table, rid), rows(loaded, table, rid)
            assert len(a) > 0 or table in ("destroyed", "decisions", "failures", *TRAFFIC_TABLES)
            assert a.equals(b), table
    assert manifest["tables"]["decisions"]["rows"] == 1 and manifest["tables"]["hits"]["rows"] == len(
        rows(source, "hits", run_id(source, "base"))
    )
    assert Store(loaded).query("SELECT count(*) FROM embeddings").iloc[0, 0] == 0  # the cache stays home


def test_reimported_runs_gate_identically(exported, capsys):
    source, _, loaded = exported
    for args in (("base", "cand"), ("base:P/dense", "cand"), ("base", "base")):
        here = to_dict(run_gate(Store(source), *args, threshold_from_decision=args[0] == "base:P/dense"))
        there = to_dict(run_gate(Store(loaded), *args, threshold_from_decision=args[0] == "base:P/dense"))
        assert here == there
    a = cli(source, "gate", "--baseline", "base", "--candidate", "cand", "--format", "markdown", capsys=capsys)
    b = cli(loaded, "gate", "--baseline", "base", "--candidate", "cand", "--format", "markdown", capsys=capsys)
    assert a == b and a[0] == 1


def test_loading_the_same_run_again_is_a_no_op(exported, capsys):
    source, files, loaded = exported
    before = Store(loaded).query("SELECT count(*) FROM hits").iloc[0, 0]
    for store in (loaded, source):
        code, out, _ = cli(store, "load-run", str(files["base"]), capsys=capsys)
        assert code == 0 and "identical; nothing loaded" in out
    assert Store(loaded).query("SELECT count(*) FROM hits").iloc[0, 0] == before


def test_a_run_id_stored_with_other_rows_is_refused(exported, tmp_path, capsys):
    source, files, loaded = exported
    path = tmp_path / "changed.duckdb"
    shutil.copy(loaded, path)
    rid = run_id(path, "base")
    Store(path).save_decision(rid, "E", "dense", 0.5, "made here")
    code, out, err = cli(path, "load-run", str(files["base"]), capsys=capsys)
    assert code == 2 and out == "" and err.count("\n") == 1
    assert f"run {rid} is already in" in err and "tables decisions differ" in err
    assert len(rows(path, "decisions", rid)) == 2  # nothing replaced


def damaged(tmp_path, source, change) -> Path:
    """A copy of the run file ``source`` with ``change(members: dict[name, bytes])`` applied."""
    members = {}
    with zipfile.ZipFile(source) as zf:
        for name in zf.namelist():
            members[name] = zf.read(name)
    change(members)
    out = tmp_path / "damaged.evalcore.zip"
    with zipfile.ZipFile(out, "w") as zf:
        for name, data in members.items():
            zf.writestr(name, data)
    return out


def manifest_edit(edit):
    def change(members):
        manifest = json.loads(members["manifest.json"])
        edit(manifest, members)
        members["manifest.json"] = json.dumps(manifest).encode()

    return change


def with_extra_column(manifest, members):
    """runs.parquet with one more column ("colour"), its sha256 updated: a newer schema's file."""
    import hashlib
    import tempfile
    from pathlib import Path

    import duckdb

    with tempfile.TemporaryDirectory() as tmp:
        src, dst = Path(tmp) / "in.parquet", Path(tmp) / "out.parquet"
        src.write_bytes(members["tables/runs.parquet"])
        duckdb.execute(f"COPY (SELECT *, 'blue' AS colour FROM read_parquet('{src}')) TO '{dst}' (FORMAT parquet)")
        members["tables/runs.parquet"] = dst.read_bytes()
    manifest["tables"]["runs"]["sha256"] = hashlib.sha256(members["tables/runs.parquet"]).hexdigest()


@pytest.mark.parametrize(
    "make, message",
    [
        (lambda tmp, f: tmp / "missing.zip", "no such file"),
        (
            lambda tmp, f: (tmp / "t.zip").write_bytes(f.read_bytes()[: f.stat().st_size // 2]) and tmp / "t.zip",
            "not an evalcore run file, or truncated",
        ),
        (
            lambda tmp, f: (tmp / "x.zip").write_bytes(b"PK\x03\x04 definitely not a zip") and tmp / "x.zip",
            "not an evalcore run file, or truncated",
        ),
        (
            lambda tmp, f: damaged(tmp, f, lambda m: m.pop("manifest.json")),
            "not an evalcore run file (no manifest.json)",
        ),
        (
            lambda tmp, f: damaged(tmp, f, manifest_edit(lambda m, _: m.update(format="other-tool"))),
            "not an evalcore run file (format 'other-tool'",
        ),
        (
            lambda tmp, f: damaged(tmp, f, manifest_edit(lambda m, _: m.update(format_version=FORMAT_VERSION + 1))),
            f"run file format version {FORMAT_VERSION + 1} is newer than this evalcore reads "
            f"(format version {FORMAT_VERSION};",
        ),
        (
            lambda tmp, f: damaged(
                tmp, f, lambda m: m.update({"tables/hits.parquet": m["tables/hits.parquet"][:-100]})
            ),
            "tables/hits.parquet does not match its sha256",
        ),
        (
            lambda tmp, f: damaged(tmp, f, manifest_edit(lambda m, _: m["tables"]["queries"].update(rows=3))),
            "tables/queries.parquet holds 49 rows, the manifest says 3",
        ),
        (lambda tmp, f: damaged(tmp, f, manifest_edit(lambda m, _: m["tables"].pop("timings"))), "missing ['timings']"),
        (
            lambda tmp, f: damaged(tmp, f, manifest_edit(with_extra_column)),
            "table runs has column(s) colour this store does not know (file schema version",
        ),
    ],
)
def test_a_bad_file_is_one_line_exit_2_and_nothing_stored(exported, tmp_path, capsys, make, message):
    _, files, _ = exported
    bad = make(tmp_path, files["base"])
    store = tmp_path / "fresh.duckdb"
    code, out, err = cli(store, "load-run", str(bad), capsys=capsys)
    assert code == 2 and out == "" and err.startswith("error: ") and err.count("\n") == 1, err
    assert message in err and "Traceback" not in err
    # only the unknown column is found in the store (after every file check passed): nothing stored
    assert store.exists() == ("colour" in message)
    if store.exists():
        assert Store(store).query("SELECT count(*) FROM runs").iloc[0, 0] == 0


def test_a_failure_while_inserting_leaves_nothing_behind(exported, tmp_path):
    from evalcore.errors import EvalcoreError

    source, files, _ = exported
    path = tmp_path / "clash.duckdb"
    store = Store(path)
    store.migrate()
    decision = Store(source).query("SELECT * FROM decisions").iloc[0]
    with store.transaction() as con:  # another run's decision with the same id: the last table clashes
        con.execute(
            "INSERT INTO decisions (decision_id, run_id, strategy, retriever, threshold, note, created_at) "
            "VALUES (?, 'other-run', 'E', 'dense', 0.1, '', now())",
            [decision["decision_id"]],
        )
    with pytest.raises(EvalcoreError, match="table decisions cannot be stored"):
        load_run(store, files["base"])
    for table in TABLES:
        assert (
            Store(path).query(f'SELECT count(*) FROM "{table}" WHERE run_id = ?', [decision["run_id"]]).iloc[0, 0] == 0
        ), table


def test_export_refuses_an_incomplete_run_and_leaves_no_file(gate_store, tmp_path, capsys):
    path = copy_with_failed_run(gate_store, tmp_path, "zz-failed", "broken", "out of memory")
    out = tmp_path / "broken.evalcore.zip"
    code, _, err = cli(path, "export-run", "zz-failed", "-o", str(out), capsys=capsys)
    assert code == 2 and "is failed: out of memory" in err and not out.exists()
    assert list(tmp_path.glob("*.partial")) == []


def test_export_is_deterministic_in_its_tables(exported, tmp_path):
    source, files, _ = exported
    again = export_run(Store(source), "base", tmp_path / "again.evalcore.zip")
    first = json.loads(zipfile.ZipFile(files["base"]).read("manifest.json"))["tables"]
    second = json.loads(zipfile.ZipFile(again.path).read("manifest.json"))["tables"]
    assert {t: m["sha256"] for t, m in first.items()} == {t: m["sha256"] for t, m in second.items()}


@pytest.mark.parametrize("page", PAGES)
def test_a_loaded_run_shows_on_every_page(exported, tmp_path_factory, page, monkeypatch):
    _, files, _ = exported
    path = tmp_path_factory.getbasetemp() / "only-base.duckdb"
    if not path.exists():
        load_run(Store(path), files["base"])
    at = open_page(path, page, monkeypatch)
    no_exception(at)
    assert at.session_state["run_id"] == run_id(path, "base")
    assert at.title and not at.error
