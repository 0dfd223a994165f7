"""Which file is a run store: recognised before anything is written, and created whole or not at all.

A store is a DuckDB file whose ``schema_migrations`` table names evalcore's own migrations
(and, from migration 0003, holds the ``evalcore_store`` marker). Before evalcore ever opens a
file for writing it reads its first bytes and then opens it read only: a file that is not a
DuckDB database, a DuckDB database of another program, a damaged file or a store written by a
newer evalcore is refused with one line and left byte for byte as it was. A new store is built
in a temporary file in the same folder and linked into place only when complete, so a failure
(a full disk) leaves nothing behind.
"""

from __future__ import annotations

import logging
import os
import stat
import threading
import uuid
from contextlib import AbstractContextManager
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from evalcore.boundary.files import kind_of
from evalcore.errors import StoreError
from evalcore.store.basics import io_reason, one_row
from evalcore.store.migrate import migrations

if TYPE_CHECKING:
    import duckdb

log = logging.getLogger(__name__)

APPLICATION = "evalcore"
MAGIC = b"DUCK"  # bytes 8-11 of every DuckDB database file


#: One ``duckdb.connect`` of a store file at a time in this process, and no read of a store's
#: first bytes (:func:`check_file`) while one happens. DuckDB's Python package keeps one database
#: instance per file while any connection to it is open; the connect that creates the instance
#: publishes it to the other threads *before* it has registered ``pandas_scan`` in it, so a
#: second thread's connect could get the instance early and its ``register`` of a data frame
#: failed with "Table Function with name pandas_scan does not exist" (seen under twenty
#: concurrent traffic posts). Held for a connect or a read of 12 bytes (milliseconds), never
#: while waiting out another process's lock.
CONNECTING = threading.Lock()

#: The file (device, inode) of each DuckDB connection to a store this process holds, by the
#: connection's ``id`` (:func:`held`, :func:`release`).
_HELD: dict[int, tuple[int, int]] = {}


def held(con: duckdb.DuckDBPyConnection, path: Path) -> duckdb.DuckDBPyConnection:
    """Count ``con``, just connected to ``path`` (under :data:`CONNECTING`), as holding that file
    until :func:`release` closes it; returns ``con``."""
    try:
        info = os.stat(path)
    except OSError:  # gone already (a temporary file renamed): nothing to protect by its name
        return con
    _HELD[id(con)] = (info.st_dev, info.st_ino)
    return con


def release(con: duckdb.DuckDBPyConnection) -> None:
    """Close a connection (one :func:`held` counted, or any other)."""
    try:
        con.close()
    finally:
        with CONNECTING:
            _HELD.pop(id(con), None)


def _holding(path: Path) -> bool:
    """Whether this process holds a DuckDB connection to the file at ``path`` (call under
    :data:`CONNECTING`)."""
    try:
        info = os.stat(path)
    except OSError:
        return False
    return (info.st_dev, info.st_ino) in _HELD.values()


class StoreFile(Protocol):
    """What identity needs of a store: its path, a raw open, its error wording and its migrations."""

    path: Path

    def _opened(
        self, read_only: bool, path: Path | None = None, doing: str = "cannot open the run store"
    ) -> AbstractContextManager[duckdb.DuckDBPyConnection]: ...

    def _read_only(self) -> AbstractContextManager[duckdb.DuckDBPyConnection]: ...

    def _unreadable(self, exc: Exception, doing: str) -> StoreError: ...

    def _migrate(self, con: duckdb.DuckDBPyConnection) -> list[str]: ...


def check_file(path: Path) -> None:
    """StoreError unless ``path`` is a regular file (after symbolic links) that starts like a
    DuckDB database (read: its first 12 bytes), and its write-ahead log, when there is one, a
    regular file too. A FIFO, a device or a socket is refused at once, never opened for a
    blocking read.

    Not read while this process holds a DuckDB connection to the file (it is DuckDB's file
    then): POSIX drops every ``fcntl`` lock a process holds on a file when the process closes
    *any* descriptor of it, and DuckDB's lock on a store is such a lock. Reading the first bytes
    of a store that another thread (or this one) was writing let another process open it for
    writing at the same time, so that one of the two processes' writes could be lost. The read
    and every connect of a store take turns (:data:`CONNECTING`)."""
    with CONNECTING:
        if not _holding(path):
            _check_head(path)


def _check_head(path: Path) -> None:
    """:func:`check_file`'s checks: the log's kind, then the file's kind and first bytes."""
    wal = path.with_name(path.name + ".wal")
    try:
        info = os.stat(wal)
    except OSError:
        info = None
    if info is not None and not stat.S_ISREG(info.st_mode):
        raise StoreError(f"{wal}: is {kind_of(info.st_mode)}, not a run store's log file")
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except IsADirectoryError:
        raise StoreError(f"{path}: is a folder, not a run store file") from None
    except OSError as exc:
        raise StoreError(f"{path}: cannot read the run store ({exc.strerror or exc})") from None
    mode = os.fstat(fd).st_mode
    if not stat.S_ISREG(mode):
        os.close(fd)
        raise StoreError(f"{path}: is {kind_of(mode)}, not a run store file")
    with os.fdopen(fd, "rb") as fh:
        try:
            head = fh.read(12)
        except OSError as exc:
            raise StoreError(f"{path}: cannot read the run store ({exc.strerror or exc})") from None
    if not head:
        raise StoreError(f"{path}: empty file, not a run store; left unchanged (move it away or choose another store)")
    if len(head) < 12 or head[8:12] != MAGIC:
        raise StoreError(f"{path}: not a DuckDB database, so not an evalcore run store; left unchanged")


def missing_parent(path: Path) -> Path | None:
    """The nearest existing ancestor of ``path`` when it is not a folder, else None."""
    for parent in path.parents:
        if parent.exists():
            return None if parent.is_dir() else parent
    return None


def inspect(store: StoreFile) -> set[int]:
    """Applied migration numbers, read without writing a byte; StoreError (one line, the
    file unchanged) for anything that is not an evalcore store this code can use."""
    import duckdb

    check_file(store.path)
    with store._read_only() as con:
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
            checkpointed = not Path(f"{store.path}.wal").exists()
            size = store.path.stat().st_size
        except duckdb.Error as exc:
            raise store._unreadable(exc, "cannot read the run store") from None
    # a truncated file can still open (its header is whole), but it cannot hold all its used blocks
    if checkpointed and size < int(block_size) * int(used):
        raise StoreError(
            f"{store.path}: the run store is damaged or truncated ({size:,} bytes for {used} "
            f"blocks of {block_size:,} in use); left unchanged"
        )
    known = {number: name for number, name, _ in migrations()}
    ours = marked or ((1, known[1]) in rows and "runs" in tables)
    if not ours:
        raise StoreError(
            f"{store.path}: a DuckDB database that is not an evalcore run store; refusing to use it (left unchanged)"
        )
    applied = {int(v) for v, _ in rows}
    newer = sorted(applied - set(known))
    if newer:
        raise StoreError(
            f"{store.path}: this store has schema version {max(newer)}, newer than this "
            f"evalcore knows (schema version {max(known)}); upgrade evalcore to use it "
            "(left unchanged)"
        )
    return applied


def create(store: StoreFile) -> list[str]:
    """Build a new store in a temporary file beside ``path`` and link it into place; on
    any failure the temporary file is removed and nothing is left behind."""
    folder = store.path.parent
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise StoreError(f"{store.path}: cannot create the run store: {exc.strerror or exc}") from None
    tmp = folder / f".{store.path.name}.{uuid.uuid4().hex[:8]}.tmp"
    try:
        with store._opened(read_only=False, path=tmp, doing="cannot create the run store") as con:
            applied = store._migrate(con)
            con.execute("CHECKPOINT")
        with open(tmp, "rb") as fh:
            os.fsync(fh.fileno())
        try:
            os.link(tmp, store.path)  # fails when another process made the store first: use theirs
        except FileExistsError:
            applied = []
        except OSError:  # a file system without hard links
            if store.path.exists():
                applied = []
            else:
                os.replace(tmp, store.path)
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
        reason = io_reason(exc)
        if reason is None and not isinstance(exc, StoreError):
            raise
        raise StoreError(
            str(exc) if reason is None else f"{store.path}: cannot create the run store: {reason}"
        ) from None
    finally:
        for leftover in (tmp, tmp.with_name(tmp.name + ".wal")):
            try:
                leftover.unlink()
            except FileNotFoundError:
                pass
            except OSError:
                log.warning("could not remove %s", leftover)
