"""The ``responses`` table (migration 0005): live search endpoints' answers, kept by request
key (:mod:`evalcore.external.responses` decides what is kept and how a key is made)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from evalcore.store.basics import now, one_row

if TYPE_CHECKING:
    import duckdb

    from evalcore.store.connection import Connection


def write_responses(store: Connection, rows: list[tuple[str, str, str, str | None, int, str, float]]) -> None:
    """Store ``(key, method, url, body, status, text, seconds)`` rows in one transaction; a key
    already stored is replaced."""
    stamp = now()
    with store.transaction() as con:
        for key, method, url, body, status, text, seconds in rows:
            con.execute(
                "INSERT OR REPLACE INTO responses VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                [key, method, url, body, status, text, seconds, stamp],
            )


def forget_requests(con: duckdb.DuckDBPyConnection, requests: str) -> int:
    """Inside ``con``'s transaction: delete the kept answers to the requests in the registered
    view or table ``requests`` (columns method, url, body; whichever headers they were sent
    with), for ``traffic forget``; returns how many rows went."""
    where = (
        f"EXISTS (SELECT 1 FROM {requests} w WHERE w.method = responses.method AND w.url = responses.url "
        "AND w.body IS NOT DISTINCT FROM responses.body)"
    )
    found = one_row(con, f"SELECT count(*) FROM responses WHERE {where}")
    con.execute(f"DELETE FROM responses WHERE {where}")
    return int(found[0])


def cached_rows(store: Connection, keys: list[str]) -> list[tuple[str, int, str, float | None]]:
    """``(key, status, text, seconds)`` of the kept answers to ``keys`` (keys not kept are
    absent; read only)."""
    import pandas as pd

    with store.read() as con:
        con.register("_want", pd.DataFrame({"key": keys}))
        return con.execute(
            "SELECT r.key, r.status, r.response, r.seconds FROM responses r JOIN _want w USING (key)"
        ).fetchall()


def kept_count(store: Connection) -> int:
    """How many answers are kept (read only)."""
    return int(store.query("SELECT count(*) AS n FROM responses")["n"].iloc[0])
