"""The traffic tables (migrations 0007, 0014): imports, log lines, scored texts, their hits and labels.
:mod:`evalcore.traffic.replay` reads and scores a log; these are its writes, and ``forget``'s
deletions (the store file is rewritten afterwards by :meth:`Connection.compact`)."""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING, Any

from evalcore.store.basics import now, one_row
from evalcore.store.caches import forget_vectors
from evalcore.store.responses import forget_requests
from evalcore.store.traffic.posted import forget_posted

if TYPE_CHECKING:
    import pandas as pd

    from evalcore.store.connection import Connection

#: the labels a stored traffic query may carry (``traffic_queries.label``, ``traffic_labels.label``)
LABELS = ("answerable", "off-topic")

#: an import's counts, in the order of ``counts`` below: lines, added, already, problems,
#: new_texts, problem_lines (JSON)
COUNTS = "lines = ?, added = ?, already = ?, problems = ?, new_texts = ?, problem_lines = ?"


def _insert(con: Any, table: str, frame: pd.DataFrame | None) -> None:
    if frame is None or frame.empty:
        return
    con.register("_frame", frame)
    cols = ", ".join(f'"{c}"' for c in frame.columns)
    con.execute(f"INSERT INTO {table} ({cols}) SELECT {cols} FROM _frame ON CONFLICT DO NOTHING")
    con.unregister("_frame")


def write_batch(
    store: Connection,
    row: dict[str, Any] | None,
    lines: pd.DataFrame,
    texts: pd.DataFrame | None,
    hits: pd.DataFrame | None,
    import_id: str,
    counts: list[Any],
    labels: pd.DataFrame | None = None,
) -> None:
    """One batch in one transaction: the import's row (its first batch), its lines, its new
    texts and their hits, the labels the log gives to lines stored before without one
    (``labels``: run_id, strategy, retriever, deployment, asked_at, text_hash, occurrence, label),
    the import's counts. A line's identity is its configuration, its ``deployment`` (``""`` for
    an imported log's lines), its time, text and occurrence (migration 0014): a line that
    identity holds already is left as it is."""
    with store.transaction() as con:
        if row is not None:
            cols = list(row)
            con.execute(
                f"INSERT INTO traffic_imports ({', '.join(cols)}) VALUES ({', '.join('?' * len(cols))})",
                [row[c] for c in cols],
            )
        _insert(con, "traffic_texts", texts)
        _insert(con, "traffic_hits", hits)
        _insert(con, "traffic_queries", lines)
        if labels is not None and not labels.empty:
            con.register("_labels", labels)
            same = " AND ".join(
                f"traffic_queries.{c} = l.{c}"
                for c in ("run_id", "strategy", "retriever", "deployment", "asked_at", "text_hash", "occurrence")
            )
            con.execute(
                "UPDATE traffic_queries SET label = l.label FROM _labels l "
                f"WHERE {same} AND traffic_queries.label IS NULL"
            )
            con.unregister("_labels")
        con.execute(f"UPDATE traffic_imports SET {COUNTS} WHERE import_id = ?", [*counts, import_id])


def finish_import(store: Connection, import_id: str, status: str, counts: list[Any]) -> None:
    """An import's end: its status, when, and its final counts."""
    with store.transaction() as con:
        con.execute(
            f"UPDATE traffic_imports SET status = ?, finished_at = ?, {COUNTS} WHERE import_id = ?",
            [status, now(), *counts, import_id],
        )


def write_label(store: Connection, key: list[str], text_hash: str, label: str | None, author: str | None) -> None:
    """Label one stored text of configuration ``key`` (run id, strategy, retriever); None removes it."""
    with store.transaction() as con:
        con.execute(
            "DELETE FROM traffic_labels WHERE run_id = ? AND strategy = ? AND retriever = ? AND text_hash = ?",
            [*key, text_hash],
        )
        if label is not None:
            con.execute(
                "INSERT INTO traffic_labels VALUES (?, ?, ?, ?, ?, ?, ?)",
                [*key, text_hash, label, author, now()],
            )


def delete_lines_before(
    store: Connection, before: datetime, run_id: str | None = None, requests: pd.DataFrame | None = None
) -> tuple[int, int]:
    """Delete every log line asked before ``before`` (of one run, or all) and the texts no
    remaining line uses, with their hits and labels, the embedding cache's vectors of those
    texts (:func:`evalcore.store.caches.forget_vectors`), the lines posted to deployments then
    (:func:`evalcore.store.traffic.posted.forget_posted`) and the response cache's answers to
    ``requests`` (method, url, body: :func:`evalcore.store.responses.forget_requests`), in one
    transaction; returns (lines, texts)."""
    where = "asked_at < ?" + (" AND run_id = ?" if run_id else "")
    params: list[Any] = [before] + ([run_id] if run_id else [])
    orphan = (
        "NOT EXISTS (SELECT 1 FROM traffic_queries q WHERE q.run_id = {t}.run_id AND q.strategy = {t}.strategy "
        "AND q.retriever = {t}.retriever AND q.text_hash = {t}.text_hash)"
    )
    with store.transaction() as con:
        lines = int(one_row(con, f"SELECT count(*) FROM traffic_queries WHERE {where}", params)[0])
        con.execute(f"DELETE FROM traffic_queries WHERE {where}", params)
        forgotten = con.execute(f"SELECT DISTINCT text_hash FROM traffic_texts t WHERE {orphan.format(t='t')}").df()
        texts = int(one_row(con, f"SELECT count(*) FROM traffic_texts t WHERE {orphan.format(t='t')}")[0])
        for table in ("traffic_hits", "traffic_labels", "traffic_texts"):
            con.execute(f"DELETE FROM {table} WHERE {orphan.format(t=table)}")
        con.register("_forgotten", forgotten)
        forget_vectors(con, "_forgotten")
        con.unregister("_forgotten")
        forget_posted(con, before, run_id)
        if requests is not None and not requests.empty:
            con.register("_requests", requests)
            forget_requests(con, "_requests")
            con.unregister("_requests")
    return lines, texts
