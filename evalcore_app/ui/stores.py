"""Which store the dashboard shows: the operator's ($EVALCORE_STORE, else runs/evalcore.duckdb)
or another ``*.duckdb`` file that already exists in its folder, never a path a user typed."""

from __future__ import annotations

from pathlib import Path

import streamlit as st

from evalcore.store import Store
from evalcore.store.connection import default_store_path
from evalcore_app.ui.state import SelectionState


def store_choices() -> list[str]:
    """The stores a user may pick: the operator's default and the other ``*.duckdb`` files that
    already exist in its folder. Never a path a user typed."""
    default = default_store_path()
    folder = default.parent
    found = sorted(str(p) for p in folder.glob("*.duckdb") if p.is_file()) if folder.is_dir() else []
    return [str(default)] + [p for p in found if Path(p).resolve() != default.resolve()]


def store_path() -> str:
    """The store shown (the session's choice when it is still one of :func:`store_choices`)."""
    choices = store_choices()
    view = SelectionState()
    if view.store_path not in choices:
        view.store_path = choices[0]
    return view.store_path or choices[0]


#: How long a page waits for a store another process holds before it says the store is busy
#: (and reads it again a few seconds later): evalcore's own writers hold it for milliseconds,
#: a run's final write for seconds at most.
LOCK_WAIT_SECONDS = 10.0


@st.cache_resource(show_spinner=False)
def get_store(path: str) -> Store:
    return Store(path, lock_timeout=LOCK_WAIT_SECONDS)


def store() -> Store:
    return get_store(store_path())
