"""The schema's migrations: the numbered ``migrations/NNNN_name.sql`` files, applied in order."""

from __future__ import annotations

import logging
from importlib import resources
from typing import TYPE_CHECKING

from evalcore.store.basics import now, one_row

if TYPE_CHECKING:
    import duckdb

log = logging.getLogger(__name__)


def migrations() -> list[tuple[int, str, str]]:
    """(number, name, sql) of every ``NNNN_name.sql`` in evalcore/store/migrations, in order."""
    out = []
    for entry in resources.files("evalcore.store.migrations").iterdir():
        name = entry.name
        if name.endswith(".sql") and name[:4].isdigit():
            out.append((int(name[:4]), name[:-4], entry.read_text(encoding="utf-8")))
    return sorted(out)


def schema_version() -> int:
    """The newest migration this code knows."""
    return migrations()[-1][0]


def apply(con: duckdb.DuckDBPyConnection) -> list[str]:
    """Apply every migration ``con``'s database lacks, each in its own transaction; returns their names."""
    con.execute(
        "CREATE TABLE IF NOT EXISTS schema_migrations ("
        "version INTEGER PRIMARY KEY, name VARCHAR NOT NULL, applied_at TIMESTAMP NOT NULL)"
    )
    done = {row[0] for row in con.execute("SELECT version FROM schema_migrations").fetchall()}
    applied = []
    for number, name, sql in migrations():
        if number in done:
            continue
        con.execute("BEGIN TRANSACTION")
        try:
            con.execute(sql)
            con.execute("INSERT INTO schema_migrations VALUES (?, ?, ?)", [number, name, now()])
        except BaseException:
            con.execute("ROLLBACK")
            raise
        con.execute("COMMIT")
        applied.append(name)
        log.info("applied migration %s", name)
    return applied


def applied_version(con: duckdb.DuckDBPyConnection) -> int:
    """The newest migration applied to the store ``con`` reads (0 for none)."""
    return int(one_row(con, "SELECT coalesce(max(version), 0) FROM schema_migrations")[0])
