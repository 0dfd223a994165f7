"""``evalcore.store.reading``: the reads of one block (a page view) share one read-only
connection to the store file. Observed from outside: while the block's connection is open,
another process cannot open the file for writing; before the block, after it, and between
plain reads it can; a write in the block's own thread goes through at once."""

from __future__ import annotations

import subprocess
import sys
import threading

import pandas as pd
import pytest

from evalcore.store import Store, connection, reading

#: Another process asks for the file once, for writing, and says whether it got it.
PROBE = """
import sys, duckdb
try:
    duckdb.connect(sys.argv[1]).close()
    print("free")
except duckdb.Error as exc:
    print("held" if "lock" in str(exc).lower() else f"error: {exc}")
"""


def other_process_can_write(path) -> str:
    done = subprocess.run([sys.executable, "-c", PROBE, str(path)], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


@pytest.fixture()
def store(tmp_path) -> Store:
    s = Store(tmp_path / "evalcore.duckdb")
    s.start_run({"run_id": "r1", "name": "one"})
    return s


def test_a_block_holds_the_file_from_its_first_read_to_its_end(store):
    assert store.run("r1").name == "one"
    assert other_process_can_write(store.path) == "free"  # a plain read closed the file again
    with reading():
        assert other_process_can_write(store.path) == "free"  # nothing read yet: nothing open
        for _ in range(5):
            assert store.run("r1").name == "one"
            assert len(store.query("SELECT * FROM runs")) == 1
        assert other_process_can_write(store.path) == "held"  # the reads' one connection
    assert other_process_can_write(store.path) == "free"


def test_a_write_in_the_block_goes_through_at_once_and_the_next_read_sees_it(tmp_path):
    store = Store(tmp_path / "evalcore.duckdb", lock_timeout=5)
    store.start_run({"run_id": "r1", "name": "one"})
    with reading():
        assert store.run("r1").run_id == "r1"
        # the block's own connection would keep a writer out for lock_timeout: a StoreError
        store.start_run({"run_id": "r2", "name": "two"})
        assert sorted(store.query("SELECT run_id FROM runs")["run_id"]) == ["r1", "r2"]
        assert other_process_can_write(store.path) == "held"  # shared again after the write


def test_an_old_connection_is_closed_when_a_read_ends(store, monkeypatch):
    monkeypatch.setattr(connection, "SHARED_READ_SECONDS", 0.0)
    with reading():
        assert store.run("r1").name == "one"
        assert other_process_can_write(store.path) == "free"  # closed at the read's end: writers get in


def test_threads_reading_in_blocks_while_others_write(tmp_path):
    store = Store(tmp_path / "evalcore.duckdb")
    store.migrate()
    errors: list[str] = []

    def reader() -> None:
        try:
            for _ in range(20):
                with reading():
                    for _ in range(3):
                        store.query("SELECT count(*) FROM runs")
        except Exception as exc:  # noqa: BLE001 - every failure is collected and shown
            errors.append(f"reader: {type(exc).__name__}: {exc}")

    def writer(n: int) -> None:
        try:
            for i in range(10):
                store.start_run({"run_id": f"w{n}-{i}", "name": "w"})
        except Exception as exc:  # noqa: BLE001
            errors.append(f"writer: {type(exc).__name__}: {exc}")

    threads = [threading.Thread(target=reader) for _ in range(3)] + [
        threading.Thread(target=writer, args=(n,)) for n in range(2)
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == [], errors[:3]
    assert len(store.query("SELECT run_id FROM runs")) == 20
    frame = pd.DataFrame({"a": [1]})
    with reading(), store.connect() as con:  # a frame registered on a write connection in a block
        con.register("_f", frame)
        assert con.execute("SELECT count(*) FROM _f").fetchall() == [(1,)]
        con.unregister("_f")


def test_a_stores_first_read_checks_the_file_on_the_connection_it_reads_with(store, monkeypatch):
    """A new Store checks the file (an evalcore store, of a schema this code knows) before its
    first read: on the connection that read then uses, so the file is opened once, not twice;
    and it is closed again after that read, as after any plain read."""
    import duckdb

    opened: list[str] = []
    real = duckdb.connect

    def counted(database=":memory:", *args, **kwargs):
        opened.append(str(database))
        return real(database, *args, **kwargs)

    monkeypatch.setattr(duckdb, "connect", counted)
    fresh = Store(store.path)
    assert fresh.query("SELECT name FROM runs")["name"].tolist() == ["one"]
    assert opened == [str(store.path)]
    assert other_process_can_write(store.path) == "free"
    assert len(fresh.query("SELECT * FROM runs")) == 1  # checked once: each later read opens once
    assert opened == [str(store.path)] * 2
    with pytest.raises(Exception, match="not an evalcore run store"):
        other = store.path.with_name("other.duckdb")
        real(str(other)).execute("CREATE TABLE t (x INTEGER)").close()
        Store(other).query("SELECT 1")


def test_the_dead_run_check_of_a_block_reads_on_the_blocks_connection(store, monkeypatch):
    """Listing runs looks for runs whose process is gone (at most every few seconds): inside a
    block, on the block's connection, so a page view that lists runs opens the file once; it
    opens the file for writing only when there is a dead run to mark."""
    import duckdb

    store.query("SELECT 1")  # checked once
    opened: list[bool] = []
    real = duckdb.connect

    def counted(database=":memory:", *args, **kwargs):
        opened.append(bool(kwargs.get("read_only")))
        return real(database, *args, **kwargs)

    monkeypatch.setattr(duckdb, "connect", counted)
    monkeypatch.setattr(store, "_reaped_at", float("-inf"))  # the check is due
    with reading():
        assert store.runs()["run_id"].tolist() == ["r1"]  # r1 runs in this (living) process
        assert store.run("r1").status == "running"
    assert opened == [True]
    with store.connect() as con:  # r1's process is gone now: the next check marks it
        con.execute("UPDATE runs SET pid = ? WHERE run_id = 'r1'", [2**22 + 12345])
    opened.clear()
    monkeypatch.setattr(store, "_reaped_at", float("-inf"))
    with reading():
        assert store.run("r1").status == "failed"
    # the block's read; one write to mark it (which closed the block's connection to take the
    # file); the block's reads go on, on a connection opened again
    assert opened == [True, False, True]
