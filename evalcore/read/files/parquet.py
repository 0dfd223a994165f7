"""A Parquet file a user gives (a traffic log), read by DuckDB in a private in-memory database
(no other dependency, no extension installed): its row count and its rows, a batch at a time.
The store is not touched."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from evalcore.errors import InputError
from evalcore.store.basics import one_row


def parquet_row_count(path: Path) -> int | None:
    """Rows in the Parquet file ``path``; None when DuckDB cannot read it."""
    import duckdb

    with duckdb.connect(":memory:", config={"autoinstall_known_extensions": False}) as con:
        try:
            found = one_row(con, "SELECT count(*) FROM read_parquet(?)", [str(path)])
        except duckdb.Error:
            return None
    return int(found[0])


def parquet_rows(path: Path, columns: Callable[[list[str]], list[str]], batch: int) -> Iterator[list[tuple[Any, ...]]]:
    """The rows of the Parquet file ``path``, ``batch`` at a time, each ``(file row number
    from 0, *values)`` of the columns that ``columns`` picks from the file's column names (it
    may raise to refuse the file). InputError when the file is not Parquet."""
    import duckdb

    con = duckdb.connect(":memory:", config={"autoinstall_known_extensions": False})
    try:
        try:
            names = [r[0] for r in con.execute("DESCRIBE SELECT * FROM read_parquet(?)", [str(path)]).fetchall()]
        except duckdb.Error as exc:
            raise InputError(f"{path}: not a Parquet file ({str(exc).splitlines()[0]})") from None
        cols = ", ".join('"' + c.replace('"', '""') + '"' for c in columns(names))
        cursor = con.execute(
            f"SELECT file_row_number, {cols} FROM read_parquet(?, file_row_number = true)", [str(path)]
        )
        while rows := cursor.fetchmany(batch):
            yield rows
    finally:
        con.close()
