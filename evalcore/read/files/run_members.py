"""The statements of a run file (:mod:`evalcore.files.run_files`): a store table's rows copied
into a Parquet member; a member's columns, row counts and impossible values, read in the
loader's private in-memory DuckDB; and, inside the loader's transaction, what the store holds
already (the run, a run of that name, the question-set version) and whether its rows equal
the file's. Every function takes the caller's connection; none writes to a store (the loaded
rows are written by :mod:`evalcore.store.loaded_runs`)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from evalcore.store.basics import one_row

if TYPE_CHECKING:
    from pathlib import Path

    import duckdb


def _literal(text: str | Path) -> str:
    """A SQL string literal (for the file name COPY needs as a literal)."""
    return "'" + str(text).replace("'", "''") + "'"


# --- a store's tables -----------------------------------------------------------------------


def table_columns(con: duckdb.DuckDBPyConnection, table: str) -> dict[str, str]:
    """{column: type} of a store table, in order."""
    return {name: str(kind) for name, kind, *_ in con.execute(f'DESCRIBE "{table}"').fetchall()}


def copy_rows(
    con: duckdb.DuckDBPyConnection, table: str, where: str, params: list[Any], order: str, target: Path
) -> int:
    """Write the rows of store ``table`` that ``where`` (with ``params``) selects, ordered by
    ``order``, to the Parquet file ``target``; how many rows that is."""
    con.execute(
        f'COPY (SELECT * FROM "{table}" WHERE {where} ORDER BY {order}) '
        f"TO {_literal(target)} (FORMAT parquet, COMPRESSION zstd)",
        params,
    )
    return int(one_row(con, f'SELECT count(*) FROM "{table}" WHERE {where}', params)[0])


def used_set(con: duckdb.DuckDBPyConnection, run_id: str) -> tuple[str, int] | None:
    """The question set (name, version) a stored run used, or None (it read question files)."""
    name, version = one_row(con, "SELECT question_set, question_set_version FROM runs WHERE run_id = ?", [run_id])
    return (str(name), int(version)) if name is not None and version is not None else None


def version_stored(con: duckdb.DuckDBPyConnection, name: str, version: int) -> bool:
    """Whether the store holds version ``version`` of question set ``name``."""
    return bool(
        one_row(con, "SELECT count(*) FROM question_set_versions WHERE name = ? AND version = ?", [name, version])[0]
    )


def set_origin(con: duckdb.DuckDBPyConnection, name: str) -> list[tuple[Any, ...]]:
    """(created_at, author) of the stored question set ``name`` (no row when there is none)."""
    return [
        tuple(r) for r in con.execute("SELECT created_at, author FROM question_sets WHERE name = ?", [name]).fetchall()
    ]


def running_imports(con: duckdb.DuckDBPyConnection, run_id: str) -> list[tuple[str, str]]:
    """(import id, source) of the run's traffic imports still running (or interrupted), by id."""
    return [
        (import_id, source)
        for import_id, source in con.execute(
            "SELECT import_id, source FROM traffic_imports WHERE run_id = ? AND status = 'running' ORDER BY import_id",
            [run_id],
        ).fetchall()
    ]


def has_job(con: duckdb.DuckDBPyConnection, run_id: str) -> bool:
    """Whether a job of the store's queue made the run."""
    return bool(one_row(con, "SELECT count(*) FROM jobs WHERE run_id = ?", [run_id])[0])


def run_stored(con: duckdb.DuckDBPyConnection, run_id: str) -> bool:
    """Whether the store holds run ``run_id``."""
    return bool(one_row(con, "SELECT count(*) FROM runs WHERE run_id = ?", [run_id])[0])


def run_named(con: duckdb.DuckDBPyConnection, name: str, run_id: str) -> str | None:
    """The first run id (in order) of a stored run other than ``run_id`` named ``name``, or None."""
    found = one_row(con, "SELECT min(run_id) FROM runs WHERE name = ? AND run_id <> ?", [name, run_id])[0]
    return str(found) if found else None


def other_run_with_id(con: duckdb.DuckDBPyConnection, run_id: str, but: str) -> bool:
    """Whether the store holds a run of id ``run_id`` other than ``but``."""
    return bool(one_row(con, "SELECT count(*) FROM runs WHERE run_id = ? AND run_id <> ?", [run_id, but])[0])


# --- a run file's members (Parquet) -----------------------------------------------------------


def parquet_columns(con: duckdb.DuckDBPyConnection, file: Path) -> list[str]:
    """The column names of a Parquet file, in order."""
    return [c[0] for c in con.execute("DESCRIBE SELECT * FROM read_parquet(?)", [str(file)]).fetchall()]


def run_member_rows(con: duckdb.DuckDBPyConnection, file: Path, run_id: str) -> tuple[int, int]:
    """Rows of a run table's member, and how many of them belong to another run than ``run_id``."""
    rows, foreign = one_row(
        con,
        "SELECT count(*), count(*) FILTER (run_id IS DISTINCT FROM ?) FROM read_parquet(?)",
        [run_id, str(file)],
    )
    return rows, foreign


def set_member_rows(con: duckdb.DuckDBPyConnection, file: Path, where: str, params: list[Any]) -> tuple[int, int]:
    """Rows of a question-set table's member, and how many of them ``where`` (with ``params``:
    the set's name and version) does not select."""
    rows, foreign = one_row(
        con,
        f"SELECT count(*), count(*) FILTER (NOT coalesce({where}, false)) FROM read_parquet(?)",
        [*params, str(file)],
    )
    return rows, foreign


def run_statuses(con: duckdb.DuckDBPyConnection, file: Path) -> Any:
    """The statuses of the rows of the ``runs`` member, as one list."""
    return one_row(con, "SELECT list(status) FROM read_parquet(?)", [str(file)])[0]


def file_run_name(con: duckdb.DuckDBPyConnection, file: Path) -> str:
    """The run name of the ``runs`` member (``""`` when it has none)."""
    return str(one_row(con, "SELECT any_value(name) FROM read_parquet(?)", [str(file)])[0] or "")


def file_set(con: duckdb.DuckDBPyConnection, file: Path) -> tuple[Any, Any]:
    """(question_set, question_set_version) the ``runs`` member names (the member must have
    both columns)."""
    name, version = one_row(con, "SELECT question_set, question_set_version FROM read_parquet(?)", [str(file)])
    return name, version


def file_set_origin(con: duckdb.DuckDBPyConnection, file: Path) -> list[tuple[Any, ...]]:
    """(created_at, author) of the ``question_sets`` member's rows."""
    return [tuple(r) for r in con.execute("SELECT created_at, author FROM read_parquet(?)", [str(file)]).fetchall()]


def rows_where(con: duckdb.DuckDBPyConnection, file: Path, condition: str) -> int:
    """How many rows of a member the SQL ``condition`` is true for."""
    return int(one_row(con, f"SELECT count(*) FROM read_parquet(?) WHERE {condition}", [str(file)])[0])


# --- both -----------------------------------------------------------------------------------


def differences(
    con: duckdb.DuckDBPyConnection, files: dict[str, Path], where: dict[str, tuple[str, list[Any]]]
) -> list[str]:
    """Tables whose stored rows (``where[table]``: the SQL condition and its parameters that
    select them) differ from the file's, compared on the file's columns."""
    out = []
    for table, (cond, params) in where.items():
        file = files[table]
        cols = ", ".join(f'"{c}"' for c in parquet_columns(con, file))
        mine = f'SELECT {cols} FROM "{table}" WHERE {cond}'
        theirs = f"SELECT {cols} FROM read_parquet(?)"
        diff = one_row(
            con,
            f"SELECT (SELECT count(*) FROM ({theirs} EXCEPT ALL {mine})) + "
            f"(SELECT count(*) FROM ({mine} EXCEPT ALL {theirs}))",
            [str(file), *params, *params, str(file)],
        )[0]
        if diff:
            out.append(table)
    return out
