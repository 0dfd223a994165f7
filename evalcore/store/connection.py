"""The run store's connections: one DuckDB file under ``runs/``, opened for a moment at a time.

Concurrency. DuckDB lets one process hold a database file open for writing at a time.
Every operation therefore opens the file, does its work in one transaction and closes
it again, so the lock is held for milliseconds; when another process holds it, the open
is retried with backoff for up to ``lock_timeout`` seconds before a ``StoreError`` is
raised. Reads open the file read only, so they work on a full disk, and reading a store
that does not exist yet sees an empty store without creating a file.

Reaping. This module is the one place that reaps: a run, job or traffic import whose process on
this host is gone is marked ``failed`` (looked at every 2 s at most, by any process that uses
the store).
Which module writes which table: :mod:`evalcore.store` (its package docstring).
"""

from __future__ import annotations

import logging
import math
import os
import random
import socket
import threading
import time
import uuid
from collections.abc import Iterator
from contextlib import closing, contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from evalcore.errors import StoreBusy, StoreError
from evalcore.store.basics import (
    DUCKDB_CONFIG,
    first_line,
    io_reason,
    is_lock_error,
    now,
    one_row,
    sql_identifier,
    sql_string,
)
from evalcore.store.identity import CONNECTING, create, held, inspect, missing_parent, release
from evalcore.store.migrate import apply, migrations

if TYPE_CHECKING:
    import duckdb
    import pandas as pd

log = logging.getLogger(__name__)

DEFAULT_STORE = Path("runs") / "evalcore.duckdb"
STATUSES = ("running", "complete", "failed", "cancelled")
REAP_EVERY = 2.0  # seconds between two looks for runs whose process is gone


#: A shared read connection (:func:`reading`) older than this is closed when a read ends (or
#: when the next read finds it idle), so that a long block lets writers in between its reads.
SHARED_READ_SECONDS = 2.0

_THREAD = threading.local()  # this thread's shared read connections (reading()), by file


class _Shared:
    """One thread's read-only connection to one store file, shared by the reads of a
    :func:`reading` block: each read gets its own cursor on it."""

    def __init__(self, con: duckdb.DuckDBPyConnection) -> None:
        self.con = con
        self.opened = time.monotonic()
        self.users = 0

    def stale(self) -> bool:
        return self.users == 0 and time.monotonic() - self.opened > SHARED_READ_SECONDS

    def close(self) -> None:
        release(self.con)


@contextmanager
def reading() -> Iterator[None]:
    """A burst of reads (one page view): inside the block, this thread's reads of a store share
    one read-only connection to its file, opened at the first read and closed when the block
    ends, instead of opening the file for every read. An open builds DuckDB's catalog of
    functions, about 15 ms, and a page view reads the store 5 to 25 times.

    While the shared connection is open, a writer waits as it waits for any reader: other
    processes and threads retry (``lock_timeout``), and a write in this thread closes it first.
    A block therefore holds the file while it runs, so it is kept to one page view; and once the
    connection is :data:`SHARED_READ_SECONDS` old it is closed as soon as a read ends (the next
    read opens a new one). Nested blocks are one block. What a block reads cannot change under
    it: no one writes the file while its connection is open."""
    if getattr(_THREAD, "shared", None) is not None:
        yield
        return
    _THREAD.shared = {}
    try:
        yield
    finally:
        shared: dict[str, _Shared] = _THREAD.shared
        _THREAD.shared = None
        for one in shared.values():
            one.close()


def _drop_shared(path: Path) -> None:
    """Close this thread's idle shared read connection to ``path`` (before it writes there)."""
    shared: dict[str, _Shared] | None = getattr(_THREAD, "shared", None)
    if not shared:
        return
    key = os.path.realpath(path)
    one = shared.get(key)
    if one is not None and one.users == 0:
        del shared[key]
        one.close()


#: Tables whose running rows name the process that writes them (table, id column, what the
#: log calls a row, what a dead process left unfinished): the reaper marks a row failed when
#: its process on this host is gone. Fixed names, never a user's value.
_PROCESS_TABLES = (
    ("runs", "run_id", "run", "the run completed"),
    ("traffic_imports", "import_id", "traffic import", "the import finished"),
)


def default_store_path() -> Path:
    """``$EVALCORE_STORE`` if set, else ``runs/evalcore.duckdb`` under the working directory."""
    return Path(os.environ.get("EVALCORE_STORE", DEFAULT_STORE))


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


class Connection:
    """A DuckDB run store at ``path``: its connections, created (atomically) and migrated on first write."""

    def __init__(self, path: str | Path | None = None, lock_timeout: float = 60.0) -> None:
        self.path = Path(path) if path is not None else default_store_path()
        self.lock_timeout = lock_timeout
        self._ready = False
        self._reaped_at = -math.inf

    # -- opening ------------------------------------------------------------------
    def _open(
        self, read_only: bool, path: Path | None = None, doing: str = "cannot open the run store"
    ) -> duckdb.DuckDBPyConnection:
        """A raw connection, retried while another process (or thread) holds the file; close it
        with :func:`~evalcore.store.identity.release` (:meth:`_opened` does)."""
        import duckdb

        target = str(path or self.path)
        if not read_only:
            _drop_shared(path or self.path)  # this thread's own shared reader would keep it out
        deadline = time.monotonic() + self.lock_timeout
        delay = 0.02
        while True:
            try:
                with CONNECTING:
                    return held(duckdb.connect(target, read_only=read_only, config=DUCKDB_CONFIG), Path(target))
            except duckdb.Error as exc:
                if is_lock_error(exc) and time.monotonic() < deadline:
                    time.sleep(delay + random.random() * delay)
                    delay = min(delay * 2, 0.5)
                    continue
                if is_lock_error(exc):
                    raise StoreBusy(
                        f"{self.path}: the run store stayed busy for {self.lock_timeout:g} s ({first_line(exc)})"
                    ) from None
                raise self._unreadable(exc, doing) from None

    @contextmanager
    def _opened(
        self, read_only: bool, path: Path | None = None, doing: str = "cannot open the run store"
    ) -> Iterator[duckdb.DuckDBPyConnection]:
        """:meth:`_open`, released at the end of the block."""
        con = self._open(read_only, path, doing)
        try:
            yield con
        finally:
            release(con)

    def _unreadable(self, exc: Exception, doing: str) -> StoreError:
        first = first_line(exc)
        if "not a valid duckdb" in first.lower() or "could not read enough bytes" in first.lower():
            return StoreError(f"{self.path}: the run store is damaged or truncated ({first}); left unchanged")
        return StoreError(f"{self.path}: {doing}: {io_reason(exc) or first}")

    def _ensure(self, write: bool) -> list[str] | None:
        """Check (and, for a write, create or migrate) the store once per Store object.
        Returns the names of the migrations applied now; None when there is no store yet
        and ``write`` is False."""
        if self._ready:
            return []
        if not self.path.exists():
            blocker = missing_parent(self.path)
            if blocker is not None:
                raise StoreError(f"{self.path}: {blocker} is a file, not a folder")
            if not write:
                return None
            applied = create(self)
        else:
            done = inspect(self)
            applied = []
            if any(number not in done for number, _, _ in migrations()):
                with self._opened(read_only=False) as con, self._translated("cannot upgrade the run store"):
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
            if io_reason(exc) is None:
                raise
            raise self._unreadable(exc, doing) from exc

    # -- connections -------------------------------------------------------------
    @contextmanager
    def connect(self) -> Iterator[duckdb.DuckDBPyConnection]:
        """A short-lived read-write connection (retried while another process holds the
        lock); creates the store when there is none yet."""
        self._ensure(write=True)
        with self._session(self._open(read_only=False), "cannot write the run store") as con:
            self._reap_due(con)  # a long-lived Store (the dashboard's) sees crashed runs too
            yield con

    @contextmanager
    def read(self) -> Iterator[duckdb.DuckDBPyConnection]:
        """A short-lived read-only connection; works on a full disk. It never creates a store
        (when there is none yet: an empty in-memory store, nothing on disk), never takes the
        write lock and never reaps (the readers of run and job status call :meth:`reap_if_due`
        themselves). Only a store of an older schema is upgraded once, on its first use."""
        import duckdb

        if not self._ready and getattr(_THREAD, "shared", None) is None:
            # this Store's first read checks the file first: one connection for both
            with reading(), self.read() as con:
                yield con
            return
        if self._ensure(write=False) is None:
            con = duckdb.connect(":memory:", config=DUCKDB_CONFIG)
            self._migrate(con)
            with self._session(con, "cannot read the run store") as con:
                yield con
            return
        with self._read_only() as con, self._translated("cannot read the run store"):
            yield con

    @contextmanager
    def _read_only(self) -> Iterator[duckdb.DuckDBPyConnection]:
        """A read-only connection to the file, closed afterwards (a read's, and the store's
        first check's, :func:`inspect`): inside :func:`reading`, a cursor on this thread's
        shared connection; else one of its own."""
        shared = self._shared()
        if shared is None:
            with self._opened(read_only=True) as con:
                yield con
            return
        con = shared.con.cursor()
        shared.users += 1
        try:
            with closing(con):
                yield con
        finally:
            shared.users -= 1
            if shared.stale():  # old enough: let writers in now rather than at the block's end
                _drop_shared(self.path)

    def _shared(self) -> _Shared | None:
        """Inside :func:`reading`: this thread's shared read connection to the store, opened
        now if there is none (or the one there is too old); else None."""
        shared: dict[str, _Shared] | None = getattr(_THREAD, "shared", None)
        if shared is None:
            return None
        key = os.path.realpath(self.path)
        one = shared.get(key)
        if one is None or one.stale():
            _drop_shared(self.path)
            one = shared[key] = _Shared(self._open(read_only=True))
        return one

    @contextmanager
    def _session(self, con: duckdb.DuckDBPyConnection, doing: str) -> Iterator[duckdb.DuckDBPyConnection]:
        try:
            with self._translated(doing):
                yield con
        finally:
            release(con)

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
        return apply(con)

    def migrate(self) -> list[str]:
        """Create or upgrade the store; returns the migrations applied (empty when up to date)."""
        self._ready = False
        return self._ensure(write=True) or []

    # -- reaping -----------------------------------------------------------------
    def _dead(self, con: duckdb.DuckDBPyConnection) -> bool:
        """Whether any running run or queued/running job of this host has lost its process."""
        host = socket.gethostname()
        pids = con.execute(
            "SELECT pid FROM runs WHERE status = 'running' AND host = ? AND pid IS NOT NULL UNION ALL "
            "SELECT pid FROM jobs WHERE status IN ('queued', 'running') AND host = ? AND pid IS NOT NULL UNION ALL "
            "SELECT pid FROM traffic_imports WHERE status = 'running' AND host = ? AND pid IS NOT NULL",
            [host, host, host],
        ).fetchall()
        return any(not pid_alive(int(pid)) for (pid,) in pids)

    def reap_if_due(self) -> None:
        """:meth:`_reap_due` for a reader: nothing when there is no store (none is created)."""
        if self._ensure(write=False) is not None:
            self._reap_due()

    def _reap_due(self, writer: duckdb.DuckDBPyConnection | None = None) -> None:
        """At most every ``REAP_EVERY`` seconds: look for dead runs and jobs and mark them.
        Every write connection does it on itself (``writer``: no second open of the file, which
        costs tens of milliseconds), and so do the readers that show whether a run or job is
        still running (:meth:`Store.runs`, :meth:`Store.run`, the run and job overviews), so a
        long-lived Store (the dashboard's) sees crashed runs too; no other read does. A reader
        looks read only (inside :func:`reading`, on the block's shared connection: a page view
        opens the file once) and opens for writing only when there is one to mark, and only as
        far as the disk allows."""
        if time.monotonic() - self._reaped_at <= REAP_EVERY:
            return
        self._reaped_at = time.monotonic()
        try:
            if writer is not None:
                if self._dead(writer):
                    self._reap(writer)
                return
            with self._read_only() as con:
                if not self._dead(con):
                    return
            with self._opened(read_only=False) as con:
                self._reap(con)
        except Exception as exc:  # noqa: BLE001 - best effort: a read or write must still work
            log.warning("%s: could not mark dead runs failed: %s", self.path, exc)

    def _reap(self, con: duckdb.DuckDBPyConnection) -> list[str]:
        """Mark runs, jobs and traffic imports whose process on this host is gone as failed (a
        job with its still-running run); returns the ids marked. A queued job has no process
        until it is given a slot (evalcore.store.jobs), so one without a pid is waiting, not dead."""
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
        # a run and a traffic import record their process the same way: one rule for both
        for table, key, what, unfinished in _PROCESS_TABLES:
            for item_id, pid in con.execute(
                f"SELECT {key}, pid FROM {table} WHERE status = 'running' AND host = ? AND pid IS NOT NULL", [host]
            ).fetchall():
                if pid_alive(int(pid)):
                    continue
                con.execute(
                    f"UPDATE {table} SET status = 'failed', finished_at = ?, reason = ? "
                    f"WHERE {key} = ? AND status = 'running'",
                    [now(), f"process {pid} ended before {unfinished} (killed or crashed)", item_id],
                )
                log.warning("%s %s: process %s is gone; marked failed", what, item_id, pid)
                gone.append(item_id)
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
                con.execute(f"ATTACH {sql_string(str(tmp))} AS evalcore_fresh")
                con.execute(f"COPY FROM DATABASE {sql_identifier(source)} TO evalcore_fresh")
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
