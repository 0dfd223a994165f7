"""The run store: migrations, crash handling, immutability, a killed process."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import duckdb
import pytest
import zygote
from conftest import MINI_ARGS, ROOT

from evalcore.errors import StoreError
from evalcore.store import Store
from evalcore.store.migrate import migrations


def test_migrations_are_numbered_recorded_and_idempotent(tmp_path):
    path = tmp_path / "s.duckdb"
    names = [m[1] for m in migrations()]
    assert names[0] == "0001_initial" and [m[0] for m in migrations()] == sorted(m[0] for m in migrations())
    Store(path).migrate()
    assert Store(path).migrate() == []  # second time: nothing to apply
    con = duckdb.connect(str(path))
    rows = con.execute("SELECT version, name FROM schema_migrations").fetchall()
    con.close()
    assert rows == [(m[0], m[1]) for m in migrations()]


def test_unknown_and_ambiguous_run_ids_are_clear_errors(tmp_path):
    s = Store(tmp_path / "s.duckdb")
    s.start_run({"run_id": "20260101-a", "name": "x"})
    s.start_run({"run_id": "20260101-b", "name": "y"})
    with pytest.raises(StoreError, match="no run 'zzz'"):
        s.run("zzz")
    with pytest.raises(StoreError, match="ambiguous"):
        s.run("20260101")
    assert s.run("20260101-a").name == "x"


def test_complete_runs_are_immutable(tmp_path):
    import pandas as pd

    s = Store(tmp_path / "s.duckdb")
    s.start_run({"run_id": "r1", "name": "x"})
    s.complete_run("r1", {}, {"new_embeddings": 0})
    s.finish_run("r1", "failed", "late failure")  # ignored: only running runs change
    assert s.run("r1").status == "complete" and s.run("r1").reason is None
    with pytest.raises(StoreError, match="not running"):
        s.complete_run(
            "r1", {"timings": pd.DataFrame([{"run_id": "r1", "stage": "x", "seconds": 1.0, "items": 1}])}, {}
        )
    assert s.query("SELECT count(*) AS n FROM timings")["n"][0] == 0


def test_a_write_that_fails_midway_leaves_nothing_half_written(tmp_path):
    import pandas as pd

    s = Store(tmp_path / "s.duckdb")
    s.start_run({"run_id": "r1", "name": "x"})
    good = pd.DataFrame([{"run_id": "r1", "stage": "index", "seconds": 1.0, "items": 1}])
    bad = pd.DataFrame([{"run_id": "r1", "strategy": "A"}])  # violates NOT NULL columns
    with pytest.raises(duckdb.Error):
        s.complete_run("r1", {"timings": good, "strategies": bad}, {})
    assert s.query("SELECT count(*) AS n FROM timings")["n"][0] == 0
    assert s.run("r1").status == "running"


def test_a_run_whose_process_is_gone_is_marked_failed(tmp_path):
    s = Store(tmp_path / "s.duckdb")
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    s.start_run({"run_id": "r1", "name": "x"})
    with s.connect() as con:
        con.execute("UPDATE runs SET pid = ? WHERE run_id = 'r1'", [proc.pid])
    fresh = Store(tmp_path / "s.duckdb")
    run = fresh.run("r1")
    assert run.status == "failed" and f"process {proc.pid} ended" in run.reason


def _wait_for_running(store: Store, proc, timeout: float = 120.0) -> str:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise AssertionError(f"the run ended before it could be interrupted: {proc.returncode}")
        try:
            runs = store.runs()
        except StoreError:
            runs = None
        if runs is not None and (runs["status"] == "running").any():
            row = runs[runs["status"] == "running"].iloc[0]
            if row["stage"] and "retrieval" in str(row["stage"]) or row["progress"] and row["progress"] > 0.05:
                return str(row["run_id"])
        time.sleep(0.05)
    raise AssertionError("the run never reached its middle")


@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGTERM])
def test_killing_a_run_midway_leaves_it_failed_and_the_next_run_works(tmp_path, sig):
    path = tmp_path / "s.duckdb"
    cmd = [
        sys.executable,
        "-m",
        "evalcore",
        "--store",
        str(path),
        "run",
        *MINI_ARGS,
        "-q",
        "--strategies",
        "A,B,C,D,E,F,X:blind+size=300,H:boundaries+size=300",
    ]
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    proc = zygote.start(cmd[3:], env)
    store = Store(path)
    run_id = _wait_for_running(store, proc)
    proc.send_signal(sig)
    proc.wait(timeout=60)
    after = Store(path)  # a new store object reaps dead runs when it opens
    run = after.run(run_id)
    assert run.status == "failed"
    assert (
        run.reason.startswith("interrupted by SIGTERM during ")
        if sig == signal.SIGTERM
        else ("ended before the run completed" in run.reason)
    )
    assert after.query("SELECT count(*) AS n FROM results WHERE run_id = ?", [run_id])["n"][0] == 0
    done = zygote.run([*cmd[3:-1], "A"], env, timeout=300)
    assert done.returncode == 0, done.stderr
    statuses = Store(path).runs()["status"].tolist()
    assert sorted(statuses) == ["complete", "failed"]


def test_a_long_lived_store_notices_a_run_that_died_later(tmp_path):
    s = Store(tmp_path / "s.duckdb")
    s.migrate()  # first look: nothing running
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    s.start_run({"run_id": "r1", "name": "x"})
    with s.connect() as con:
        con.execute("UPDATE runs SET pid = ? WHERE run_id = 'r1'", [proc.pid])
    time.sleep(2.1)  # the same Store object (as the dashboard keeps one) looks again
    assert s.run("r1").status == "failed"


# --- creation: nothing on disk until a write, and then whole (identity cases: tests/reliability) ----


def test_a_write_marks_a_dead_run_failed_on_its_own_connection(tmp_path, monkeypatch):
    """A writer (a run's progress, another run's start) reaps in the connection it opened
    for its write: the file is opened once, and the dead run is failed all the same."""
    path = tmp_path / "s.duckdb"
    s = Store(path)
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    s.start_run({"run_id": "r1", "name": "x"})
    with s.connect() as con:
        con.execute("UPDATE runs SET pid = ? WHERE run_id = 'r1'", [proc.pid])
    opens: list[bool] = []
    real = duckdb.connect

    def counted(*args, **kwargs):
        opens.append(bool(kwargs.get("read_only")))
        return real(*args, **kwargs)

    monkeypatch.setattr(duckdb, "connect", counted)
    fresh = Store(path)
    fresh.start_run({"run_id": "r2", "name": "y"})  # a write: the first use of this Store reaps
    monkeypatch.setattr(duckdb, "connect", real)
    assert opens.count(False) == 1 and opens.count(True) <= 1  # the store's check, then one write
    con = duckdb.connect(str(path), read_only=True)
    rows = dict(con.execute("SELECT run_id, status FROM runs").fetchall())
    con.close()
    assert rows == {"r1": "failed", "r2": "running"}


def test_reading_a_store_that_does_not_exist_creates_nothing(tmp_path):
    path = tmp_path / "runs" / "s.duckdb"
    assert Store(path).runs().empty
    assert not (tmp_path / "runs").exists()


def test_a_new_store_appears_whole_or_not_at_all(tmp_path, monkeypatch):
    path = tmp_path / "s.duckdb"
    calls = []

    def failing(self, con):
        calls.append(1)
        raise duckdb.IOException('IO Error: Could not write file "x": No space left on device')

    monkeypatch.setattr(Store, "_migrate", failing)
    with pytest.raises(StoreError, match="cannot create the run store: the disk is full"):
        Store(path).migrate()
    assert calls and list(tmp_path.iterdir()) == []  # no store, no temporary file, no WAL
    monkeypatch.undo()
    assert Store(path).migrate() == [m[1] for m in migrations()]


# --- reads are read only: no write open, no lock, no new file, the store's bytes unchanged ----------


class WatchedStore(Store):
    """A real Store that records how each connection was opened (read only or for writing)."""

    def __init__(self, path):
        super().__init__(path)
        self.opens: list[bool] = []

    def _open(self, read_only, path=None, doing="cannot open the run store"):
        self.opens.append(read_only)
        return super()._open(read_only, path, doing)


def test_reads_open_the_store_read_only_and_change_no_byte(engine_store, engine_run_id, tmp_path):
    import hashlib

    from evalcore import jobs
    from evalcore.external import responses
    from evalcore.files.run_files import export_run
    from evalcore.read.compare import pair_queries
    from evalcore.records import Configuration, RunConfiguration

    path = tmp_path / "copy.duckdb"
    path.write_bytes(engine_store.read_bytes())
    before = hashlib.sha256(path.read_bytes()).hexdigest()
    store = WatchedStore(path)
    dense, bm25 = (RunConfiguration(engine_run_id, Configuration("E", r)) for r in ("dense", "bm25"))
    test, queries = pair_queries(store, dense, bm25, 1)  # the won/lost list: a read of its own
    assert len(queries) == test.wins + test.losses
    assert responses.cached_responses(store, ["no-such-key"]) == {}
    assert jobs.jobs_overview(store).empty
    assert export_run(store, engine_run_id, tmp_path / "run.evalcore.zip").run_id == engine_run_id
    assert store.opens and all(store.opens), store.opens  # every open was read only
    assert hashlib.sha256(path.read_bytes()).hexdigest() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["copy.duckdb", "run.evalcore.zip"]  # no WAL


def test_reads_of_a_store_that_does_not_exist_create_nothing(tmp_path):
    from evalcore import jobs
    from evalcore.external import responses

    store = WatchedStore(tmp_path / "runs" / "s.duckdb")
    assert responses.cached_responses(store, ["k"]) == {} and responses.count(store) == 0
    assert jobs.jobs_overview(store).empty and store.runs().empty
    assert store.opens == [] and not (tmp_path / "runs").exists()
