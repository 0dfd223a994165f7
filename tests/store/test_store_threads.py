"""One store used by many threads of one process at once, as the server uses it: every write
connection can take a data frame (``register``), whichever thread opened the file first and
whatever the connection read before (the reaper's look on a write connection)."""

from __future__ import annotations

import math
import threading

import pandas as pd

from evalcore.store import Store

THREADS = 8


def _register_and_count(store: Store, frame: pd.DataFrame) -> int:
    with store.connect() as con:
        con.register("_frame", frame)
        try:
            return int(con.execute("SELECT count(*) FROM _frame").fetchall()[0][0])
        finally:
            con.unregister("_frame")


def test_a_write_connection_takes_a_frame_right_after_the_reaper_looked(tmp_path):
    # The reaper's look on a write connection reads an aggregate; with a result left unread to
    # its end, DuckDB 2 refused the connection's next register ("unfinished result").
    store = Store(tmp_path / "evalcore.duckdb")
    store.migrate()
    for _ in range(3):
        store._reaped_at = -math.inf  # the look is due now
        assert _register_and_count(store, pd.DataFrame({"a": [1, 2, 3]})) == 3


def test_threads_that_open_the_store_together_can_all_register_a_frame(tmp_path):
    # Each round starts with no connection open, so one of the threads creates DuckDB's database
    # instance for the file while the others ask for it: before connects were one at a time, a
    # thread could get the instance before pandas_scan was registered in it (a CatalogException
    # in about a fifth of the connects on two cores).
    store = Store(tmp_path / "evalcore.duckdb")
    store.migrate()
    frame = pd.DataFrame({"a": range(10)})
    errors: list[str] = []
    counts: list[int] = []

    def one(start: threading.Barrier) -> None:
        start.wait()
        try:
            counts.append(_register_and_count(store, frame))
        except Exception as exc:  # noqa: BLE001 - every failure is collected and shown
            errors.append(f"{type(exc).__name__}: {exc}")

    for _ in range(40):
        start = threading.Barrier(THREADS)
        threads = [threading.Thread(target=one, args=(start,)) for _ in range(THREADS)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    assert errors == [], errors[:3]
    assert counts == [10] * (40 * THREADS)
