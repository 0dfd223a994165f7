"""The ``runs`` table and a run's lifecycle: started (running), its progress, then complete
(every result table in one transaction), failed or cancelled; read back as rows.

A run buffers its results in memory and writes them in one transaction at the end, so a reader
never sees half a run. A run whose process is gone is marked failed by the reaper
(:mod:`evalcore.store.connection`).
"""

from __future__ import annotations

import json
import logging
import os
import signal
import socket
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, NoReturn

from evalcore import signals
from evalcore.boundary.text import check_run_name
from evalcore.errors import (
    Cancelled,
    ConfigError,
    EvalcoreError,
    Interrupted,
    NotRunning,
    StoreError,
    control_characters,
)
from evalcore.records import Run
from evalcore.store.basics import now
from evalcore.store.connection import Connection

if TYPE_CHECKING:
    import pandas as pd

log = logging.getLogger(__name__)


class Runs(Connection):
    """The writer and reader of ``runs``: a run's row from start to end."""

    # -- reads -------------------------------------------------------------------
    def runs(self) -> pd.DataFrame:
        """Every run, newest first (runs whose process is gone marked failed first)."""
        self.reap_if_due()
        return self.query("SELECT * FROM runs ORDER BY created_at DESC")

    def run(self, run_id: str) -> Run:
        """One run's row as a :class:`~evalcore.records.Run`; StoreError naming the id when
        unknown (prefix allowed). A run whose process is gone is marked failed first."""
        self.reap_if_due()
        df = self.query(
            "SELECT * FROM runs WHERE run_id = ? OR run_id LIKE ? ORDER BY created_at DESC",
            [run_id, run_id + "%"],
        )
        exact = df[df["run_id"] == run_id]
        if len(exact) == 1:
            df = exact
        if len(df) == 0:
            raise StoreError(f"no run {run_id!r} in {self.path}")
        if len(df) > 1:
            raise StoreError(f"run id {run_id!r} is ambiguous: {', '.join(df['run_id'])}")
        row = {str(k): v for k, v in df.iloc[0].to_dict().items()}
        row["settings"] = json.loads(row["settings"]) if row.get("settings") else {}
        return Run.from_row(row)

    def latest_complete(self, name: str | None = None) -> str | None:
        sql = "SELECT run_id FROM runs WHERE status = 'complete'"
        params: list[Any] = []
        if name is not None:
            sql += " AND name = ?"
            params.append(name)
        df = self.query(sql + " ORDER BY created_at DESC LIMIT 1", params)
        return None if df.empty else str(df.iloc[0, 0])

    # -- writes ------------------------------------------------------------------
    def start_run(self, row: dict[str, Any]) -> None:
        """Insert a run in state ``running`` (pid and host recorded for crash detection).
        ConfigError for a run name with control characters, InputError for one that breaks
        another rule of names (:func:`evalcore.boundary.text.check_name`: a leading ``-``, over
        200 characters); nothing is written."""
        if control_characters(str(row.get("name") or "")):
            raise ConfigError(f"--name {row.get('name')!r}: a run name without control characters")
        if row.get("name"):
            row = dict(row, name=check_run_name(str(row["name"])))
        row = dict(
            row, status="running", created_at=row.get("created_at") or now(), pid=os.getpid(), host=socket.gethostname()
        )
        cols = list(row)
        with self.transaction() as con:
            con.execute(
                f"INSERT INTO runs ({', '.join(cols)}) VALUES ({', '.join('?' * len(cols))})",
                [row[c] for c in cols],
            )

    def progress(self, run_id: str, stage: str, fraction: float | None) -> None:
        """Set a running run's stage text and overall progress (0..1; None keeps it)."""
        with self.connect() as con:
            con.execute(
                "UPDATE runs SET stage = ?, progress = coalesce(?, progress) WHERE run_id = ? AND status = 'running'",
                [stage, fraction, run_id],
            )

    def finish_run(self, run_id: str, status: str, reason: str | None = None) -> None:
        """Mark a running run failed or cancelled; completed runs are never touched."""
        if status not in ("failed", "cancelled"):
            raise ValueError(f"finish_run: status must be failed or cancelled, not {status!r}")
        with self.connect() as con:
            con.execute(
                "UPDATE runs SET status = ?, reason = ?, finished_at = ? WHERE run_id = ? AND status = 'running'",
                [status, reason, now(), run_id],
            )

    def complete_run(
        self,
        run_id: str,
        tables: dict[str, pd.DataFrame],
        updates: dict[str, Any],
        before_commit: Callable[[], None] | None = None,
    ) -> None:
        """Write every result table of a run and mark it complete, in one transaction.

        ``before_commit`` is called after each table and before the commit; whatever it
        raises (an interrupt) rolls the whole write back. A full disk is a StoreError
        naming the run; nothing of it is written."""
        check = before_commit or (lambda: None)
        try:
            self._write_run(run_id, tables, updates, check)
        except NotRunning:
            raise
        except StoreError as exc:
            raise StoreError(f"run {run_id} was not stored: {exc}") from exc

    def _write_run(
        self, run_id: str, tables: dict[str, pd.DataFrame], updates: dict[str, Any], check: Callable[[], None]
    ) -> None:
        with self.transaction() as con:
            found = con.execute("SELECT status FROM runs WHERE run_id = ?", [run_id]).fetchall()
            status = found[0][0] if found else None
            if status != "running":
                raise NotRunning(f"run {run_id} is not running (status {status}); not written")
            for table, df in tables.items():
                if df is None or df.empty:
                    continue
                con.register("_frame", df)
                cols = ", ".join(f'"{c}"' for c in df.columns)
                con.execute(f"INSERT INTO {table} ({cols}) SELECT {cols} FROM _frame")
                con.unregister("_frame")
                check()
            check()
            updates = dict(updates, status="complete", finished_at=now(), stage=None, progress=1.0)
            sets = ", ".join(f"{k} = ?" for k in updates)
            con.execute(f"UPDATE runs SET {sets} WHERE run_id = ?", [*updates.values(), run_id])


def fail_run(store: Runs, run_id: str, stage: str, exc: BaseException) -> NoReturn:
    """Mark the run failed (or cancelled) with its reason where the store can be written,
    then raise: a signal as Interrupted naming it, the stage and the run; anything else as it was.
    Every kind of run ends this way (built-in ones in evalcore.run.runner, runs made elsewhere in
    evalcore.external)."""
    signum = signals.received()
    if signum is not None:
        reason = f"interrupted by {signal.Signals(signum).name} during {stage}"
    elif isinstance(exc, KeyboardInterrupt):
        reason = "interrupted (Ctrl-C)"
    elif isinstance(exc, EvalcoreError):
        reason = str(exc)
    else:
        reason = f"{type(exc).__name__}: {exc}"
    status = "cancelled" if signum is None and isinstance(exc, Cancelled) else "failed"
    try:  # a short lock wait: a run that cannot be marked now is marked by the reaper later
        Runs(store.path, lock_timeout=10.0).finish_run(run_id, status, reason)
        marked = f"run {run_id} marked {status}"
    except Exception as err:  # noqa: BLE001 - the original error matters more
        log.info("could not mark run %s %s: %s", run_id, status, err)
        marked = f"run {run_id} could not be marked {status} now (it will be once the store can be written)"
        if isinstance(exc, EvalcoreError) and not isinstance(exc, Interrupted):
            raise type(exc)(f"{exc}; {marked}") from exc
    if signum is not None:
        raise Interrupted(signum, f"during {stage}", marked) from None
    raise exc


def configuration_rows(store: Connection, run_id: str) -> pd.DataFrame:
    """Every configuration with results in ``run_id`` (or failures): strategy, retriever and its
    ``configurations`` row's source, score_kind, gate_on, model, chunker, detail (null where the
    run has no row for it; the model then is the run's)."""
    return store.query(
        """
        WITH have AS (SELECT DISTINCT strategy, retriever FROM results WHERE run_id = ?
                      UNION SELECT DISTINCT strategy, retriever FROM failures WHERE run_id = ?)
        SELECT h.strategy, h.retriever, c.source, c.score_kind, c.gate_on,
               coalesce(c.model, CASE WHEN c.source IS NULL THEN u.model END) AS model,
               coalesce(c.chunker, h.strategy) AS chunker, c.detail
        FROM have h
        LEFT JOIN configurations c ON c.run_id = ? AND c.strategy = h.strategy AND c.retriever = h.retriever
        LEFT JOIN runs u ON u.run_id = ?
        """,
        [run_id, run_id, run_id, run_id],
    )


def failure_rows(store: Connection, run_id: str) -> pd.DataFrame:
    """Queries the run's configurations could not answer: strategy, retriever, query_id,
    domain, reason, attempts, text (the query), in configuration and query order."""
    return store.query(
        "SELECT f.strategy, f.retriever, f.query_id, f.domain, f.reason, f.attempts, q.text "
        "FROM failures f LEFT JOIN queries q ON q.run_id = f.run_id AND q.query_id = f.query_id "
        "WHERE f.run_id = ? ORDER BY f.strategy, f.retriever, f.query_id",
        [run_id],
    )
