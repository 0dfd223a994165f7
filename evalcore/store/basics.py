"""What every store module shares: how DuckDB is opened, the clock, run ids, one row, and a
DuckDB failure as one line."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from evalcore.errors import StoreError

if TYPE_CHECKING:
    import duckdb

# Never fetch or load a DuckDB extension: DuckDB would try to download one for a SQLite file.
DUCKDB_CONFIG: dict[str, str | bool | int | float | list[str]] = {
    "autoinstall_known_extensions": False,
    "autoload_known_extensions": False,
}


def first_row(con: duckdb.DuckDBPyConnection, sql: str, params: list[Any] | None = None) -> tuple[Any, ...] | None:
    """The first row ``sql`` returns (None when it returns none), its result read to the end.
    Never ``fetchone()``: DuckDB 2 keeps a result that was not read to its end open on the
    connection, and the connection's next ``register``, ``unregister`` or ``sql`` then fails
    ("connection has an unfinished result")."""
    rows = con.execute(sql, params).fetchall()
    return tuple(rows[0]) if rows else None


def one_row(con: duckdb.DuckDBPyConnection, sql: str, params: list[Any] | None = None) -> tuple[Any, ...]:
    """The one row a query that always returns one (an aggregate, a PRAGMA) returns (read to
    the end, as :func:`first_row`)."""
    row = first_row(con, sql, params)
    if row is None:
        raise StoreError(f"no row from {sql.split()[0]} ... (a query that always returns one row)")
    return row


def sql_string(value: str) -> str:
    """``value`` as an SQL string literal (single quotes doubled): the one quoting helper, for
    the few statements DuckDB takes no parameter in (``ATTACH``). Everywhere else a value is
    a parameter (``?``), never formatted into the statement."""
    if "\0" in value:
        raise StoreError("a value with a NUL character cannot be given to the store")
    return "'" + value.replace("'", "''") + "'"


def sql_identifier(name: str) -> str:
    """``name`` as a quoted SQL identifier (double quotes doubled)."""
    if "\0" in name:
        raise StoreError("a name with a NUL character cannot be given to the store")
    return '"' + name.replace('"', '""') + '"'


def now() -> datetime:
    return datetime.now(UTC).replace(tzinfo=None)


def new_run_id() -> str:
    """A run id (also a dashboard job's id): local time to the second, then 6 random hex digits."""
    return datetime.now().strftime("%Y%m%d-%H%M%S-") + uuid.uuid4().hex[:6]


def is_lock_error(exc: Exception) -> bool:
    text = str(exc).lower()
    return (
        "lock" in text
        or "conflicting" in text
        or "being used by another process" in text
        or "different configuration" in text
    )  # this process has it open the other way


def first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


def io_reason(exc: BaseException) -> str | None:
    """One line saying why a file operation failed, or None when ``exc`` is not about the
    file (a constraint violation is a bug and keeps its own type)."""
    import duckdb

    text = first_line(exc)
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
