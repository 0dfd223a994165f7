"""What a screen keeps (evalcore_app/ui/cache.py): a table that ``cached`` handed out and a
screen passes on to another cached call is keyed by where it came from, so a rerun does not
hash its rows again; a write to the store still reaches both calls. Real DuckDB, Streamlit's
own cache (outside a server, as the library runs it in bare mode)."""

from __future__ import annotations

import gc

import pandas as pd

from dashboard.test_app import copy  # noqa: F401 - a copy of the engine store, per test
from evalcore.read import decisions
from evalcore.records import Configuration
from evalcore.store import Store
from evalcore_app.ui import cache

CALLS: list[str] = []


def _table(store: Store) -> pd.DataFrame:
    CALLS.append("table")
    return store.query("SELECT run_id, threshold FROM decisions ORDER BY created_at")


def _count(table: pd.DataFrame) -> int:
    CALLS.append("count")
    return len(table)


def test_a_handed_out_table_is_keyed_by_its_origin_and_a_write_reaches_it(copy, engine_run_id):  # noqa: F811
    store = Store(copy)
    decisions.save_decision(store, engine_run_id, Configuration("E", "dense"), 0.4, "first")
    CALLS.clear()
    first = cache.cached(_table, store)
    again = cache.cached(_table, store)
    assert again is not first and again.equals(first)  # each caller gets its own copy
    # keyed by where it came from (the function, the store's path and stamp), not by its rows
    origin = ("result", f"{__name__}._table", ((cache._key(store),), ()))
    assert cache._key(first) == cache._key(again) == origin
    n = cache.cached(_count, first)
    assert cache.cached(_count, again) == n  # another copy of the same result: no new call
    assert CALLS == ["table", "count"]

    decisions.save_decision(store, engine_run_id, Configuration("E", "dense"), 0.5, "second")  # a new stamp
    more = cache.cached(_table, store)
    assert cache.cached(_count, more) == n + 1
    assert CALLS == ["table", "count", "table", "count"]

    # a table the screen made itself is keyed by its content, as before
    made = pd.DataFrame({"run_id": ["a", "b"]})
    assert cache.cached(_count, made) == 2 and cache.cached(_count, made.copy()) == 2
    assert CALLS[-1] == "count" and CALLS.count("count") == 3


def test_a_copy_that_is_gone_leaves_no_origin_behind(copy):  # noqa: F811
    store = Store(copy)
    table = cache.cached(_table, store)
    mine = id(table)
    assert cache._ORIGINS[mine][0] == f"{__name__}._table"
    del table
    gc.collect()
    assert mine not in cache._ORIGINS  # no cached() call since: nothing else took the id
