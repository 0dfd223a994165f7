"""The ``traffic_posted`` table (migration 0013): queries production posted to a deployment,
one row per caller's id. :mod:`evalcore.service.ingest` checks the lines and calls
:func:`post`; :mod:`evalcore.traffic.posted` reads the pending ones and marks them replayed
(their text cleared: it lives in ``traffic_texts`` from then on)."""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING, Any

from evalcore.store.basics import now
from evalcore.store.jobs import queue_traffic

if TYPE_CHECKING:
    import duckdb
    import pandas as pd

    from evalcore.store.connection import Connection


def post(
    store: Connection, deployment: str, run_id: str, rows: pd.DataFrame, author: str | None
) -> tuple[set[str], str | None]:
    """Store the lines of ``rows`` (post_id, asked_at, text_hash, text, label; ids distinct)
    whose id the deployment has not seen, in arrival order, and queue the deployment's replay
    job when none is queued yet: one transaction. Returns the ids stored now and the id of the
    job queued now (None when one was queued already or nothing was stored)."""
    with store.transaction() as con:
        con.register("_posted", rows)
        seen = {
            str(r[0])
            for r in con.execute(
                "SELECT p.post_id FROM traffic_posted p JOIN _posted n USING (post_id) WHERE p.deployment = ?",
                [deployment],
            ).fetchall()
        }
        fresh = rows[~rows["post_id"].isin(seen)].reset_index(drop=True)
        job_id = None
        if len(fresh):
            found = con.execute(
                "SELECT coalesce(max(seq), 0) FROM traffic_posted WHERE deployment = ?", [deployment]
            ).fetchall()
            base = int(found[0][0])
            fresh = fresh.assign(seq=range(base + 1, base + 1 + len(fresh)))
            con.unregister("_posted")
            con.register("_fresh", fresh)
            con.execute(
                "INSERT INTO traffic_posted (deployment, post_id, seq, received_at, asked_at, text_hash, text, label, "
                "author) SELECT ?, post_id, seq, ?, asked_at, text_hash, text, label, ? FROM _fresh",
                [deployment, now(), author],
            )
            con.unregister("_fresh")
            job_id = queue_traffic(con, deployment, run_id)
        else:
            con.unregister("_posted")
    return set(fresh["post_id"]), job_id


def pending(store: Connection, deployment: str, limit: int) -> list[tuple[Any, ...]]:
    """The oldest ``limit`` lines of ``deployment`` not replayed yet, in arrival order: post_id,
    seq, asked_at, text_hash, text, label, occurrence (1 + the lines of the deployment posted
    before with the same time and text)."""
    with store.read() as con:
        return con.execute(
            "WITH p AS (SELECT post_id, seq, asked_at, text_hash, text, label, import_id, "
            "row_number() OVER (PARTITION BY asked_at, text_hash ORDER BY seq) AS occurrence "
            "FROM traffic_posted WHERE deployment = ?) "
            "SELECT post_id, seq, asked_at, text_hash, text, label, occurrence FROM p "
            "WHERE import_id IS NULL ORDER BY seq LIMIT ?",
            [deployment, limit],
        ).fetchall()


def mark_replayed(store: Connection, deployment: str, post_ids: list[str], import_id: str) -> None:
    """The lines ``post_ids`` were replayed by ``import_id``: their text is cleared."""
    import pandas as pd

    with store.transaction() as con:
        con.register("_done", pd.DataFrame({"post_id": post_ids}))
        con.execute(
            "UPDATE traffic_posted SET text = NULL, import_id = ? FROM _done d "
            "WHERE traffic_posted.deployment = ? AND traffic_posted.post_id = d.post_id",
            [import_id, deployment],
        )
        con.unregister("_done")


def forget_posted(con: duckdb.DuckDBPyConnection, before: datetime, run_id: str | None) -> None:
    """Inside ``traffic forget``'s transaction: delete the posted lines asked before ``before``
    (of imports of ``run_id`` only, when given; pending lines of every deployment otherwise)."""
    if run_id is None:
        con.execute("DELETE FROM traffic_posted WHERE asked_at < ?", [before])
    else:
        con.execute(
            "DELETE FROM traffic_posted WHERE asked_at < ? AND import_id IN "
            "(SELECT import_id FROM traffic_imports WHERE run_id = ?)",
            [before, run_id],
        )
