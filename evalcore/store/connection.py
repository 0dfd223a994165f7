"""The run store: one DuckDB file under ``runs/``, schema in numbered migration files.

Identity. A store is a DuckDB file whose ``schema_migrations`` table names evalcore's own
migrations (and, from migration 0003, holds the ``evalcore_store`` marker). Before
evalcore ever opens a file for writing it reads its first bytes and then opens it read
only: a file that is not a DuckDB database, a DuckDB database of another program, a
damaged file or a store written by a newer evalcore is refused with one line and left
byte for byte as it was. A new store is built in a temporary file in the same folder and
linked into place only when complete, so a failure (a full disk) leaves nothing behind.

Concurrency. DuckDB lets one process hold a database file open for writing at a time.
Every operation therefore opens the file, does its work in one transaction and closes
it again, so the lock is held for milliseconds; when another process holds it, the open
is retried with backoff for up to ``lock_timeout`` seconds before a ``StoreError`` is
raised. Reads open the file read only, so they work on a full disk, and reading a store
that does not exist yet sees an empty store without creating a file.

Ownership. This module is the one writer of ``runs`` and the one place that reaps: a run
or job whose process on this host is gone is marked ``failed`` (looked at every 2 s at
most, by any process that uses the store). A run buffers its results in memory and
writes them in one transaction at the end, so a reader never sees half a run.
"""

from __future__ import annotations

import json
import logging
import math
import os
import random
import socket
import time
import uuid
from collections.abc import Callable, Iterator, Mapping
from contextlib import closing, contextmanager
from datetime import UTC, datetime, timedelta
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, Any

from evalcore.errors import StoreError

if TYPE_CHECKING:
    import duckdb
    import pandas as pd

    from evalcore.inputs.extractors import Extraction

log = logging.getLogger(__name__)

DEFAULT_STORE = Path("runs") / "evalcore.duckdb"
STATUSES = ("running", "complete", "failed", "cancelled")
REAP_EVERY = 2.0  # seconds between two looks for runs whose process is gone
NEVER_STARTED_SECONDS = 120  # a queued job with no process after this long is failed
APPLICATION = "evalcore"
MAGIC = b"DUCK"  # bytes 8-11 of every DuckDB database file
# Never fetch or load a DuckDB extension: DuckDB would try to download one for a SQLite file.
_CONFIG: dict[str, str | bool | int | float | list[str]] = {
    "autoinstall_known_extensions": False,
    "autoload_known_extensions": False,
}


def default_store_path() -> Path:
    """``$EVALCORE_STORE`` if set, else ``runs/evalcore.duckdb`` under the working directory."""
    return Path(os.environ.get("EVALCORE_STORE", DEFAULT_STORE))


def one_row(con: duckdb.DuckDBPyConnection, sql: str, params: list[Any] | None = None) -> tuple[Any, ...]:
    """The one row a query that always returns one (an aggregate, a PRAGMA) returns."""
    row = con.execute(sql, params).fetchone()
    if row is None:
        raise StoreError(f"no row from {sql.split()[0]} ... (a query that always returns one row)")
    return row


def now() -> datetime:
    return datetime.now(UTC).replace(tzinfo=None)


def new_run_id() -> str:
    """A run id (also a dashboard job's id): local time to the second, then 6 random hex digits."""
    return datetime.now().strftime("%Y%m%d-%H%M%S-") + uuid.uuid4().hex[:6]


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


def _is_lock_error(exc: Exception) -> bool:
    text = str(exc).lower()
    return (
        "lock" in text
        or "conflicting" in text
        or "being used by another process" in text
        or "different configuration" in text
    )  # this process has it open the other way


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


def _io_reason(exc: BaseException) -> str | None:
    """One line saying why a file operation failed, or None when ``exc`` is not about the
    file (a constraint violation is a bug and keeps its own type)."""
    import duckdb

    text = _first_line(exc)
    if isinstance(exc, OSError):
        text = exc.strerror or text
    elif not (
        isinstance(exc, (duckdb.IOException, duckdb.OutOfMemoryException))
        or (isinstance(exc, duckdb.TransactionException) and "could not write" in text.lower())
    ):
        return None
    if "no space left" in text.lower() or "disk full" in text.lower():
        return "the disk is full (No space left on device)"
    return text


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


def check_file(path: Path) -> None:
    """StoreError unless ``path`` starts like a DuckDB database (read: its first 12 bytes)."""
    try:
        with open(path, "rb") as fh:
            head = fh.read(12)
    except IsADirectoryError:
        raise StoreError(f"{path}: is a folder, not a run store file") from None
    except OSError as exc:
        raise StoreError(f"{path}: cannot read the run store ({exc.strerror or exc})") from None
    if not head:
        raise StoreError(f"{path}: empty file, not a run store; left unchanged (move it away or choose another store)")
    if len(head) < 12 or head[8:12] != MAGIC:
        raise StoreError(f"{path}: not a DuckDB database, so not an evalcore run store; left unchanged")


def _missing_parent(path: Path) -> Path | None:
    """The nearest existing ancestor of ``path`` when it is not a folder, else None."""
    for parent in path.parents:
        if parent.exists():
            return None if parent.is_dir() else parent
    return None


class Store:
    """A DuckDB run store at ``path``; created (atomically) and migrated on first write."""

    def __init__(self, path: str | Path | None = None, lock_timeout: float = 60.0) -> None:
        self.path = Path(path) if path is not None else default_store_path()
        self.lock_timeout = lock_timeout
        self._ready = False
        self._reaped_at = -math.inf

    # -- opening ------------------------------------------------------------------
    def _open(
        self, read_only: bool, path: Path | None = None, doing: str = "cannot open the run store"
    ) -> duckdb.DuckDBPyConnection:
        """A raw connection, retried while another process (or thread) holds the file."""
        import duckdb

        target = str(path or self.path)
        deadline = time.monotonic() + self.lock_timeout
        delay = 0.02
        while True:
            try:
                return duckdb.connect(target, read_only=read_only, config=_CONFIG)
            except duckdb.Error as exc:
                if _is_lock_error(exc) and time.monotonic() < deadline:
                    time.sleep(delay + random.random() * delay)
                    delay = min(delay * 2, 0.5)
                    continue
                if _is_lock_error(exc):
                    raise StoreError(
                        f"{self.path}: the run store stayed busy for {self.lock_timeout:g} s ({_first_line(exc)})"
                    ) from None
                raise self._unreadable(exc, doing) from None

    def _unreadable(self, exc: Exception, doing: str) -> StoreError:
        first = _first_line(exc)
        if "not a valid duckdb" in first.lower() or "could not read enough bytes" in first.lower():
            return StoreError(f"{self.path}: the run store is damaged or truncated ({first}); left unchanged")
        return StoreError(f"{self.path}: {doing}: {_io_reason(exc) or first}")

    def _inspect(self) -> set[int]:
        """Applied migration numbers, read without writing a byte; StoreError (one line, the
        file unchanged) for anything that is not an evalcore store this code can use."""
        import duckdb

        check_file(self.path)
        with closing(self._open(read_only=True)) as con:
            try:
                tables = {
                    r[0]
                    for r in con.execute(
                        "SELECT table_name FROM information_schema.tables WHERE table_schema = 'main'"
                    ).fetchall()
                }
                rows = (
                    con.execute("SELECT version, name FROM schema_migrations").fetchall()
                    if "schema_migrations" in tables
                    else []
                )
                marked = "evalcore_store" in tables and bool(
                    one_row(con, "SELECT count(*) FROM evalcore_store WHERE application = ?", [APPLICATION])[0]
                )
                block_size, used = one_row(con, "PRAGMA database_size")[2:5:2]  # size, used blocks
                # while this connection holds the file no writer runs, so the WAL is stable; with
                # one, the block count includes the blocks it added in memory
                checkpointed = not Path(f"{self.path}.wal").exists()
                size = self.path.stat().st_size
            except duckdb.Error as exc:
                raise self._unreadable(exc, "cannot read the run store") from None
        # a truncated file can still open (its header is whole), but it cannot hold all its used blocks
        if checkpointed and size < int(block_size) * int(used):
            raise StoreError(
                f"{self.path}: the run store is damaged or truncated ({size:,} bytes for {used} "
                f"blocks of {block_size:,} in use); left unchanged"
            )
        known = {number: name for number, name, _ in migrations()}
        ours = marked or ((1, known[1]) in rows and "runs" in tables)
        if not ours:
            raise StoreError(
                f"{self.path}: a DuckDB database that is not an evalcore run store; refusing to use it (left unchanged)"
            )
        applied = {int(v) for v, _ in rows}
        newer = sorted(applied - set(known))
        if newer:
            raise StoreError(
                f"{self.path}: this store has schema version {max(newer)}, newer than this "
                f"evalcore knows (schema version {max(known)}); upgrade evalcore to use it "
                "(left unchanged)"
            )
        return applied

    def _create(self) -> list[str]:
        """Build a new store in a temporary file beside ``path`` and link it into place; on
        any failure the temporary file is removed and nothing is left behind."""
        folder = self.path.parent
        try:
            folder.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise StoreError(f"{self.path}: cannot create the run store: {exc.strerror or exc}") from None
        tmp = folder / f".{self.path.name}.{uuid.uuid4().hex[:8]}.tmp"
        try:
            with closing(self._open(read_only=False, path=tmp, doing="cannot create the run store")) as con:
                applied = self._migrate(con)
                con.execute("CHECKPOINT")
            with open(tmp, "rb") as fh:
                os.fsync(fh.fileno())
            try:
                os.link(tmp, self.path)  # fails when another process made the store first: use theirs
            except FileExistsError:
                applied = []
            except OSError:  # a file system without hard links
                if self.path.exists():
                    applied = []
                else:
                    os.replace(tmp, self.path)
            try:
                dfd = os.open(folder, os.O_RDONLY)
                try:
                    os.fsync(dfd)
                finally:
                    os.close(dfd)
            except OSError:
                pass
            return applied
        except Exception as exc:
            reason = _io_reason(exc)
            if reason is None and not isinstance(exc, StoreError):
                raise
            raise StoreError(
                str(exc) if reason is None else f"{self.path}: cannot create the run store: {reason}"
            ) from None
        finally:
            for leftover in (tmp, tmp.with_name(tmp.name + ".wal")):
                try:
                    leftover.unlink()
                except FileNotFoundError:
                    pass
                except OSError:
                    log.warning("could not remove %s", leftover)

    def _ensure(self, write: bool) -> list[str] | None:
        """Check (and, for a write, create or migrate) the store once per Store object.
        Returns the names of the migrations applied now; None when there is no store yet
        and ``write`` is False."""
        if self._ready:
            return []
        if not self.path.exists():
            blocker = _missing_parent(self.path)
            if blocker is not None:
                raise StoreError(f"{self.path}: {blocker} is a file, not a folder")
            if not write:
                return None
            applied = self._create()
        else:
            done = self._inspect()
            applied = []
            if any(number not in done for number, _, _ in migrations()):
                with closing(self._open(read_only=False)) as con, self._translated("cannot upgrade the run store"):
                    applied = self._migrate(con)
        self._ready = True
        return applied

    @contextmanager
    def _translated(self, doing: str) -> Iterator[None]:
        """File errors (a full disk, a failed read) as one-line StoreErrors."""
        try:
            yield
        except StoreError:
            raise
        except Exception as exc:
            if _io_reason(exc) is None:
                raise
            raise self._unreadable(exc, doing) from exc

    # -- connections -------------------------------------------------------------
    @contextmanager
    def connect(self) -> Iterator[duckdb.DuckDBPyConnection]:
        """A short-lived read-write connection (retried while another process holds the
        lock); creates the store when there is none yet."""
        self._ensure(write=True)
        self._reap_if_due()  # a long-lived Store (the dashboard's) sees crashed runs too
        with self._session(self._open(read_only=False), "cannot write the run store") as con:
            yield con

    @contextmanager
    def read(self) -> Iterator[duckdb.DuckDBPyConnection]:
        """A short-lived read-only connection; works on a full disk. When there is no store
        yet, an empty in-memory store (nothing is created on disk)."""
        import duckdb

        if self._ensure(write=False) is None:
            con = duckdb.connect(":memory:", config=_CONFIG)
            self._migrate(con)
        else:
            self._reap_if_due()
            con = self._open(read_only=True)
        with self._session(con, "cannot read the run store") as con:
            yield con

    @contextmanager
    def _session(self, con: duckdb.DuckDBPyConnection, doing: str) -> Iterator[duckdb.DuckDBPyConnection]:
        try:
            with self._translated(doing):
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
        """Create or upgrade the store; returns the migrations applied (empty when up to date)."""
        self._ready = False
        return self._ensure(write=True) or []

    # -- reaping -----------------------------------------------------------------
    def _dead(self, con: duckdb.DuckDBPyConnection) -> bool:
        """Whether any running run or queued/running job of this host has lost its process,
        or a queued job never got one."""
        host = socket.gethostname()
        pids = con.execute(
            "SELECT pid FROM runs WHERE status = 'running' AND host = ? AND pid IS NOT NULL UNION ALL "
            "SELECT pid FROM jobs WHERE status IN ('queued', 'running') AND host = ? AND pid IS NOT NULL",
            [host, host],
        ).fetchall()
        if any(not pid_alive(int(pid)) for (pid,) in pids):
            return True
        stale = now() - timedelta(seconds=NEVER_STARTED_SECONDS)
        return bool(
            one_row(
                con, "SELECT count(*) FROM jobs WHERE status = 'queued' AND pid IS NULL AND created_at < ?", [stale]
            )[0]
        )

    def _reap_if_due(self) -> None:
        """At most every ``REAP_EVERY`` seconds: look (read only) for dead runs and jobs; open
        for writing only when there is one to mark, and only as far as the disk allows."""
        if time.monotonic() - self._reaped_at <= REAP_EVERY:
            return
        self._reaped_at = time.monotonic()
        try:
            with closing(self._open(read_only=True)) as con:
                if not self._dead(con):
                    return
            with closing(self._open(read_only=False)) as con:
                self._reap(con)
        except Exception as exc:  # noqa: BLE001 - best effort: a read must still work
            log.warning("%s: could not mark dead runs failed: %s", self.path, exc)

    def _reap(self, con: duckdb.DuckDBPyConnection) -> list[str]:
        """Mark runs and jobs whose process on this host is gone as failed (a job with its
        still-running run), and queued jobs that never got a process (no pid after
        ``NEVER_STARTED_SECONDS``); returns the ids marked."""
        host = socket.gethostname()
        gone = []
        for job_id, run_id, pid in con.execute(
            "SELECT job_id, run_id, pid FROM jobs WHERE status IN ('queued', 'running') AND host = ? "
            "AND pid IS NOT NULL",
            [host],
        ).fetchall():
            if pid_alive(int(pid)):
                continue
            reason = f"process {pid} ended before the job finished (killed or crashed)"
            con.execute(
                "UPDATE jobs SET status = 'failed', finished_at = ?, reason = ? "
                "WHERE job_id = ? AND status IN ('queued', 'running')",
                [now(), reason, job_id],
            )
            con.execute(
                "UPDATE runs SET status = 'failed', finished_at = ?, reason = ? "
                "WHERE run_id = ? AND status = 'running'",
                [now(), reason, run_id],
            )
            log.warning("job %s: process %s is gone; marked failed", job_id, pid)
            gone.append(job_id)
        stale = now() - timedelta(seconds=NEVER_STARTED_SECONDS)
        for (job_id,) in con.execute(
            "SELECT job_id FROM jobs WHERE status = 'queued' AND pid IS NULL AND created_at < ?", [stale]
        ).fetchall():
            con.execute(
                "UPDATE jobs SET status = 'failed', finished_at = ?, reason = ? WHERE job_id = ?",
                [now(), f"its process never started (no pid after {NEVER_STARTED_SECONDS} s)", job_id],
            )
            gone.append(job_id)
        for run_id, pid in con.execute(
            "SELECT run_id, pid FROM runs WHERE status = 'running' AND host = ? AND pid IS NOT NULL", [host]
        ).fetchall():
            if pid_alive(int(pid)):
                continue
            con.execute(
                "UPDATE runs SET status = 'failed', finished_at = ?, reason = ? "
                "WHERE run_id = ? AND status = 'running'",
                [now(), f"process {pid} ended before the run completed (killed or crashed)", run_id],
            )
            log.warning("run %s: process %s is gone; marked failed", run_id, pid)
            gone.append(run_id)
        return gone

    def reap(self, con: duckdb.DuckDBPyConnection | None = None) -> list[str]:
        """Reap dead runs and jobs now (inside ``con``'s transaction when given); returns their ids."""
        if con is not None:
            return self._reap(con)
        with self.transaction() as own:
            return self._reap(own)

    # -- reads -------------------------------------------------------------------
    def query(self, sql: str, params: list[Any] | None = None) -> pd.DataFrame:
        """Run one read query and return a DataFrame (read only: works on a full disk)."""
        with self.read() as con:
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
        row = {str(k): v for k, v in df.iloc[0].to_dict().items()}
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
        """Insert a run in state ``running`` (pid and host recorded for crash detection).
        ConfigError for a run name with control characters (nothing is written)."""
        from evalcore.errors import ConfigError, control_characters

        if control_characters(str(row.get("name") or "")):
            raise ConfigError(f"--name {row.get('name')!r}: a run name without control characters")
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
        except StoreError as exc:
            if str(exc).startswith(f"run {run_id} "):
                raise
            raise StoreError(f"run {run_id} was not stored: {exc}") from exc

    def _write_run(
        self, run_id: str, tables: dict[str, pd.DataFrame], updates: dict[str, Any], check: Callable[[], None]
    ) -> None:
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
                check()
            check()
            updates = dict(updates, status="complete", finished_at=now(), stage=None, progress=1.0)
            sets = ", ".join(f"{k} = ?" for k in updates)
            con.execute(f"UPDATE runs SET {sets} WHERE run_id = ?", [*updates.values(), run_id])

    def save_decision(
        self,
        run_id: str,
        strategy: str,
        retriever: str,
        threshold: float,
        note: str,
        author: str | None = None,
        claim: Mapping[str, Any] | None = None,
    ) -> str:
        """Store a chosen threshold with its note, who chose it (``author``, None: not recorded)
        and the threshold claim it was made under (``claim``: the JSON object of
        :class:`evalcore.measures.claim.Claim`); returns the decision id."""
        decision_id = uuid.uuid4().hex[:12]
        c = dict(claim or {})
        with self.transaction() as con:
            con.execute(
                "INSERT INTO decisions (decision_id, run_id, strategy, retriever, threshold, note, created_at, "
                "author, max_bluff_rate, max_lost_rate, confidence, n_ood, n_answerable, bluff_status, "
                "lost_status, bluff_ok_up_to, lost_ok_above, claim_method, claim) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                [
                    decision_id,
                    run_id,
                    strategy,
                    retriever,
                    float(threshold),
                    note,
                    now(),
                    author,
                    c.get("max_bluff_rate"),
                    c.get("max_lost_rate"),
                    c.get("confidence"),
                    c.get("n_ood"),
                    c.get("n_answerable"),
                    c.get("bluff_status"),
                    c.get("lost_status"),
                    c.get("bluff_ok_up_to"),
                    c.get("lost_ok_above"),
                    c.get("method"),
                    json.dumps(c) if c else None,
                ],
            )
        return decision_id

    def compact(self) -> int:
        """Rewrite the store into a fresh file and put it in place (bytes before and after).

        DuckDB keeps deleted rows and freed blocks in the file until they are reused, so after
        deleting data that must not survive (``traffic forget``), the whole store is copied
        (``COPY FROM DATABASE``: tables, keys, views) into a new file beside it, checkpointed,
        synced and renamed over the old one; the old file's pages go with it. The copy runs
        while this process holds the store open for writing, so no other writer can slip in."""
        before = self.path.stat().st_size if self.path.exists() else 0
        tmp = self.path.with_name(f".{self.path.name}.{uuid.uuid4().hex[:8]}.compact")
        try:
            with self.connect() as con:
                con.execute("CHECKPOINT")
                source = one_row(con, "SELECT current_database()")[0]
                con.execute(f"ATTACH '{tmp}' AS evalcore_fresh")
                con.execute(f'COPY FROM DATABASE "{source}" TO evalcore_fresh')
                con.execute("DETACH evalcore_fresh")
                with open(tmp, "rb") as fh:
                    os.fsync(fh.fileno())
                os.replace(tmp, self.path)
            wal = Path(f"{self.path}.wal")
            if wal.exists() and wal.stat().st_size == 0:
                wal.unlink()
        finally:
            for leftover in (tmp, tmp.with_name(tmp.name + ".wal")):
                try:
                    leftover.unlink()
                except FileNotFoundError:
                    pass
        self._ready = False
        return before

    # -- embedding cache -----------------------------------------------------------
    def cached_vectors(self, model: str, hashes: list[str]) -> dict[str, tuple[int, list[float]]]:
        """(dim, vector) of each cached text hash under ``model``."""
        if not hashes:
            return {}
        import pandas as pd

        with self.read() as con:
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

        df = pd.DataFrame(
            {
                "model": model,
                "text_hash": list(items),
                "dim": dim,
                "vector": list(items.values()),
            }
        )
        with self.transaction() as con:
            con.register("_new", df)
            con.execute("INSERT INTO embeddings SELECT model, text_hash, dim, vector FROM _new ON CONFLICT DO NOTHING")

    # -- extraction cache (0004) ---------------------------------------------------------
    def cached_extractions(self, keys: list[tuple[str, str, str]]) -> dict[tuple[str, str, str], Extraction]:
        """Cached extractions of ``(file sha256, extractor, version)`` keys; missing keys are absent."""
        if not keys:
            return {}
        import pandas as pd

        from evalcore.inputs.extractors import Extraction

        want = pd.DataFrame(keys, columns=["file_hash", "extractor", "extractor_version"]).drop_duplicates()
        with self.read() as con:
            con.register("_want", want)
            rows = con.execute(
                "SELECT x.file_hash, x.extractor, x.extractor_version, x.title, x.text, x.page_starts, x.notes "
                "FROM extractions x JOIN _want w USING (file_hash, extractor, extractor_version)"
            ).fetchall()
        return {
            (h, n, v): Extraction(title, text, tuple(starts or ()), tuple(notes or ()))
            for h, n, v, title, text, starts, notes in rows
        }

    def cache_extractions(self, items: dict[tuple[str, str, str], Extraction]) -> None:
        """Keep extractions for later runs (an existing key is left as it is)."""
        if not items:
            return
        with self.transaction() as con:
            for (file_hash, name, version), x in items.items():
                con.execute(
                    "INSERT INTO extractions VALUES (?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING",
                    [
                        file_hash,
                        name,
                        version,
                        x.title,
                        x.text,
                        list(x.page_starts) or None,
                        list(x.notes) or None,
                        now(),
                    ],
                )
