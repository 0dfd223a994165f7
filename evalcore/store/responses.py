"""The ``responses`` table (migration 0005): live search endpoints' answers, kept by request
key (:mod:`evalcore.external.responses` decides what is kept and how a key is made)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from evalcore.store.basics import now

if TYPE_CHECKING:
    from evalcore.store.connection import Connection


def keep(store: Connection, rows: list[tuple[str, str, str, str | None, int, str, float]]) -> None:
    """Store ``(key, method, url, body, status, text, seconds)`` rows in one transaction; a key
    already stored is replaced."""
    stamp = now()
    with store.transaction() as con:
        for key, method, url, body, status, text, seconds in rows:
            con.execute(
                "INSERT OR REPLACE INTO responses VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                [key, method, url, body, status, text, seconds, stamp],
            )
