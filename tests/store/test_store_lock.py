"""While one process writes a store, no other process may open it for writing: not even after
the writing process has looked at the store's first bytes again (a new ``Store`` object's first
use does, in any thread). POSIX drops every ``fcntl`` lock a process holds on a file when it
closes any descriptor of that file, and DuckDB's lock on a store is such a lock; a look that
opened and closed the file let a second writer in, and one of the two writes could be lost.

Real DuckDB, real processes: the second writer is a ``python`` process of its own."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time

from conftest import ROOT

from evalcore.store import Store
from evalcore.store.identity import check_file

#: A second process that tries to write the store for one second: it prints what happened.
OTHER_WRITER = """
import sys
from evalcore.store import Store
try:
    with Store(sys.argv[1], lock_timeout=1.0).transaction() as con:
        con.execute("INSERT INTO evalcore_store SELECT * FROM evalcore_store LIMIT 1")
    print("wrote")
except Exception as exc:
    print("refused:", exc)
"""


def other_writer(path) -> str:
    done = subprocess.run(
        [sys.executable, "-c", OTHER_WRITER, str(path)],
        capture_output=True,
        text=True,
        timeout=120,
        env=dict(os.environ, PYTHONPATH=str(ROOT)),
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


def marker_rows(path) -> int:
    return int(Store(path).query("SELECT count(*) AS n FROM evalcore_store")["n"][0])


def test_looking_at_the_first_bytes_keeps_the_write_lock(tmp_path):
    path = tmp_path / "evalcore.duckdb"
    Store(path).migrate()
    rows = marker_rows(path)
    with Store(path).transaction() as con:
        con.execute("SELECT count(*) FROM runs").fetchall()
        assert other_writer(path).startswith("refused: ")
        check_file(path)  # what a new Store's first use does
        said = other_writer(path)
        assert said.startswith("refused: ") and "stayed busy" in said, said
    assert marker_rows(path) == rows  # nothing of the other process landed
    assert other_writer(path) == "wrote"  # once this process is done, the other may write
    assert marker_rows(path) == rows + 1


def test_a_new_store_object_in_another_thread_keeps_the_write_lock(tmp_path):
    # as in a server: one thread writes while another thread's new Store reads
    path = tmp_path / "evalcore.duckdb"
    Store(path).migrate()
    rows = marker_rows(path)
    seen: list[int] = []
    with Store(path).transaction() as con:
        con.execute("SELECT count(*) FROM runs").fetchall()
        reader = threading.Thread(target=lambda: seen.append(len(Store(path, lock_timeout=60).runs())))
        reader.start()  # it looks at the file, then waits for the write to end
        time.sleep(0.5)
        said = other_writer(path)
        assert said.startswith("refused: ") and "stayed busy" in said, said
    reader.join(timeout=60)
    assert seen == [0] and marker_rows(path) == rows
