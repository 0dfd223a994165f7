"""The run store: one DuckDB file under ``runs/``, schema in numbered migration files.

Concurrency design. DuckDB lets one process hold a database file open for writing at a
time. Every operation here therefore opens the file, does its work in one transaction
and closes it again, so the lock is held for milliseconds; when another process holds
it, the open is retried with backoff for up to ``lock_timeout`` seconds before a
``StoreError`` is raised. A run buffers its results in memory and writes them in one
transaction at the end, so a reader never sees half a run, and a run that dies leaves
only its ``running`` row, which is marked ``failed`` when the store is next used (looked
at every 2 s at most) because its process no longer exists.
"""
from __future__ import annotations

import json
import logging
import math
import os
import random
import socket
import time
from contextlib import contextmanager
from datetime import datetime, timezone
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterator

from evalcore.errors import StoreError

if TYPE_CHECKING:
    import duckdb
    import pandas as pd

    from evalcore.extractors import Extraction

log = logging.getLogger(__name__)

DEFAULT_STORE = Path("runs") / "evalcore.duckdb"
STATUSES = ("running", "complete", "failed", "cancelled")
REAP_EVERY = 2.0  # seconds between two looks for runs whose process is gone


def default_store_path() -> Path:
    """``$EVALCORE_STORE`` if set, else ``runs/evalcore.duckdb`` under the working directory."""
    return Path(os.environ.get("EVALCORE_STORE", DEFAULT_STORE))


def now() -> datetime:
    return datetime.now(timezone.utc).replace(tzinfo=None)


def migrations() -> list[tuple[int, str, str]]:
    """(number, name, sql) of every ``NNNN_name.sql`` in evalcore/migrations, in order."""
    out = []
    for entry in resources.files("evalcore.migrations").iterdir():
        name = entry.name
        if name.endswith(".sql") and name[:4].isdigit():
            out.append((int(name[:4]), name[:-4], entry.read_text(encoding="utf-8")))
    return sorted(out)


def _is_lock_error(exc: Exception) -> bool:
    text = str(exc).lower()
    return "lock" in text or "conflicting" in text or "being used by another process" in text


def pid_alive(pid: int) -> bool:
    """True when process ``pid`` exists on this host and is not a zombie (Linux /proc state Z)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:
            state = fh.read().rsplit(b")", 1)[1].split()[0]
        return state != b"Z"
    except (OSError, IndexError):
        return True


class Store:
    """A DuckDB run store at ``path``; created and migrated on first use."""

    def __init__(self, path: str | Path | None = None, lock_timeout: float = 60.0) -> None:
        self.path = Path(path) if path is not None else default_store_path()
        self.lock_timeout = lock_timeout
        self._ready = False
        self._reaped_at = -math.inf

    # -- connections -------------------------------------------------------------
    @contextmanager
    def connect(self) -> Iterator[duckdb.DuckDBPyConnection]:
        """A short-lived connection (retried while another process holds the lock)."""
        import duckdb

        self.path.parent.mkdir(parents=True, exist_ok=True)
        deadline = time.monotonic() + self.lock_timeout
        delay = 0.02
        while True:
            try:
                con = duckdb.connect(str(self.path))
                break
            except duckdb.Error as exc:  # IOException on a held lock
                if not _is_lock_error(exc) or time.monotonic() > deadline:
                    raise StoreError(f"{self.path}: cannot open the run store: {exc}") from exc
                time.sleep(delay + random.random() * delay)
                delay = min(delay * 2, 0.5)
        try:
            if not self._ready:
                self._migrate(con)
                self._ready = True
            if time.monotonic() - self._reaped_at > REAP_EVERY:
                self._reap(con)  # a long-lived Store (the dashboard's) sees crashed runs too
                self._reaped_at = time.monotonic()
            yield con
        finally:
            con.close()

    @contextmanager
    def transaction(self) -> Iterator[duckdb.DuckDBPyConnection]:
        """One connection in one transaction: all of it lands, or none of it."""
        with self.connect() as con:
            con.execute("BEGIN TRANSACTION")
            try:
                yield con
            except BaseException:
                con.execute("ROLLBACK")
                raise
            con.execute("COMMIT")

    def _migrate(self, con: duckdb.DuckDBPyConnection) -> list[str]:
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

    def migrate(self) -> list[str]:
        """Apply pending migrations; returns their names (empty when up to date)."""
        with self.connect() as con:
            return self._migrate(con)

    def _reap(self, con: duckdb.DuckDBPyConnection) -> None:
        """Mark runs whose process on this host is gone as failed."""
        host = socket.gethostname()
        rows = con.execute(
            "SELECT run_id, pid FROM runs WHERE status = 'running' AND host = ?", [host]
        ).fetchall()
        for run_id, pid in rows:
            if pid is not None and not pid_alive(int(pid)):
                con.execute(
                    "UPDATE runs SET status = 'failed', finished_at = ?, reason = ? "
                    "WHERE run_id = ? AND status = 'running'",
                    [now(), f"process {pid} ended before the run completed (killed or crashed)", run_id],
                )
                log.warning("run %s: process %s is gone; marked failed", run_id, pid)
        from evalcore.jobs import reap as reap_jobs  # jobs (0002): same rule, job and its run

        reap_jobs(con)

    # -- reads -------------------------------------------------------------------
    def query(self, sql: str, params: list[Any] | None = None) -> pd.DataFrame:
        """Run one read query and return a DataFrame."""
        with self.connect() as con:
            return con.execute(sql, params or []).df()

    def runs(self) -> pd.DataFrame:
        """Every run, newest first."""
        return self.query("SELECT * FROM runs ORDER BY created_at DESC")

    def run(self, run_id: str) -> dict[str, Any]:
        """One run's row as a dict; StoreError naming the id when unknown (prefix allowed)."""
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
        row = df.iloc[0].to_dict()
        row["settings"] = json.loads(row["settings"]) if row.get("settings") else {}
        return row

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
        """Insert a run in state ``running`` (pid and host recorded for crash detection)."""
        row = dict(row, status="running", created_at=row.get("created_at") or now(),
                   pid=os.getpid(), host=socket.gethostname())
        cols = list(row)
        with self.transaction() as con:
            con.execute(
                f"INSERT INTO runs ({', '.join(cols)}) VALUES ({', '.join('?' * len(cols))})",
                [row[c] for c in cols],
            )

    def progress(self, run_id: str, stage: str, fraction: float) -> None:
        with self.connect() as con:
            con.execute(
                "UPDATE runs SET stage = ?, progress = ? WHERE run_id = ? AND status = 'running'",
                [stage, fraction, run_id],
            )

    def finish_run(self, run_id: str, status: str, reason: str | None = None) -> None:
        """Mark a running run failed or cancelled; completed runs are never touched."""
        if status not in ("failed", "cancelled"):
            raise ValueError(f"finish_run: status must be failed or cancelled, not {status!r}")
        with self.connect() as con:
            con.execute(
                "UPDATE runs SET status = ?, reason = ?, finished_at = ? "
                "WHERE run_id = ? AND status = 'running'",
                [status, reason, now(), run_id],
            )

    def complete_run(self, run_id: str, tables: dict[str, pd.DataFrame], updates: dict[str, Any]) -> None:
        """Write every result table of a run and mark it complete, in one transaction."""
        with self.transaction() as con:
            found = con.execute("SELECT status FROM runs WHERE run_id = ?", [run_id]).fetchall()
            status = found[0][0] if found else None
            if status != "running":
                raise StoreError(f"run {run_id} is not running (status {status}); not written")
            for table, df in tables.items():
                if df is None or df.empty:
                    continue
                con.register("_frame", df)
                cols = ", ".join(f'"{c}"' for c in df.columns)
                con.execute(f"INSERT INTO {table} ({cols}) SELECT {cols} FROM _frame")
                con.unregister("_frame")
            updates = dict(updates, status="complete", finished_at=now(), stage=None, progress=1.0)
            sets = ", ".join(f"{k} = ?" for k in updates)
            con.execute(f"UPDATE runs SET {sets} WHERE run_id = ?", [*updates.values(), run_id])

    def save_decision(self, run_id: str, strategy: str, retriever: str, threshold: float, note: str) -> str:
        """Store a chosen threshold with its note; returns the decision id."""
        import uuid

        decision_id = uuid.uuid4().hex[:12]
        with self.transaction() as con:
            con.execute(
                "INSERT INTO decisions VALUES (?, ?, ?, ?, ?, ?, ?)",
                [decision_id, run_id, strategy, retriever, float(threshold), note, now()],
            )
        return decision_id

    # -- embedding cache -----------------------------------------------------------
    def cached_vectors(self, model: str, hashes: list[str]) -> dict[str, tuple[int, list[float]]]:
        """(dim, vector) of each cached text hash under ``model``."""
        if not hashes:
            return {}
        import pandas as pd

        with self.connect() as con:
            con.register("_want", pd.DataFrame({"text_hash": hashes}))
            rows = con.execute(
                "SELECT e.text_hash, e.dim, e.vector FROM embeddings e "
                "JOIN _want w USING (text_hash) WHERE e.model = ?",
                [model],
            ).fetchall()
        return {h: (dim, vec) for h, dim, vec in rows}

    def cache_vectors(self, model: str, dim: int, items: dict[str, list[float]]) -> None:
        if not items:
            return
        import pandas as pd

        df = pd.DataFrame({
            "model": model, "text_hash": list(items), "dim": dim, "vector": list(items.values()),
        })
        with self.transaction() as con:
            con.register("_new", df)
            con.execute(
                "INSERT INTO embeddings SELECT model, text_hash, dim, vector FROM _new "
                "ON CONFLICT DO NOTHING"
            )

    # -- extraction cache (0004) ---------------------------------------------------------
    def cached_extractions(self, keys: list[tuple[str, str, str]]) -> dict[tuple[str, str, str], Extraction]:
        """Cached extractions of ``(file sha256, extractor, version)`` keys; missing keys are absent."""
        if not keys:
            return {}
        import pandas as pd

        from evalcore.extractors import Extraction

        want = pd.DataFrame(keys, columns=["file_hash", "extractor", "extractor_version"]).drop_duplicates()
        with self.connect() as con:
            con.register("_want", want)
            rows = con.execute(
                "SELECT x.file_hash, x.extractor, x.extractor_version, x.title, x.text, x.page_starts, x.notes "
                "FROM extractions x JOIN _want w USING (file_hash, extractor, extractor_version)"
            ).fetchall()
        return {(h, n, v): Extraction(title, text, tuple(starts or ()), tuple(notes or ()))
                for h, n, v, title, text, starts, notes in rows}

    def cache_extractions(self, items: dict[tuple[str, str, str], Extraction]) -> None:
        """Keep extractions for later runs (an existing key is left as it is)."""
        if not items:
            return
        with self.transaction() as con:
            for (file_hash, name, version), x in items.items():
                con.execute(
                    "INSERT INTO extractions VALUES (?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING",
                    [file_hash, name, version, x.title, x.text, list(x.page_starts) or None,
                     list(x.notes) or None, now()],
                )
