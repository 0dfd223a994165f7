"""Fixtures of the read side's tests: the engine-made store (tests/conftest.py), read-only
or as a private copy for tests that write."""

from __future__ import annotations

import shutil

import pytest

from evalcore.store import Store


@pytest.fixture(scope="module")
def store(engine_store) -> Store:
    return Store(engine_store)


@pytest.fixture()
def scratch(engine_store, tmp_path) -> Store:
    """A private copy of the engine store, for tests that write."""
    path = tmp_path / "copy.duckdb"
    shutil.copy(engine_store, path)
    return Store(path)
