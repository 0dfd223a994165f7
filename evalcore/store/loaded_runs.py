"""A run loaded from a run file (``load-run``): its tables' rows appended from the file's
parquet members, inside the loader's one transaction (:mod:`evalcore.files.run_files`
checks the file and the store first)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import duckdb


def insert_parquet(con: duckdb.DuckDBPyConnection, table: str, file: Path) -> None:
    """Append every row of the parquet ``file`` to ``table``, its columns matched by name."""
    cols = ", ".join(f'"{c[0]}"' for c in con.execute("DESCRIBE SELECT * FROM read_parquet(?)", [str(file)]).fetchall())
    con.execute(f'INSERT INTO "{table}" ({cols}) SELECT {cols} FROM read_parquet(?)', [str(file)])
