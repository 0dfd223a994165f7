"""A run file's tables, each one Parquet member: writing a member from the store (read only),
and what ``load-run`` verifies of the members before the store is touched (each is Parquet
holding the rows its manifest says, every row of the run's tables belongs to the run, the run
is complete, every value a reader relies on is possible).

The checks read the unpacked members in a private in-memory DuckDB; nothing here writes to a store.
Every statement is in :mod:`evalcore.read.files.run_members` (with the comparison of stored rows
with a file's: loading the same file twice is a no-op, other rows a refusal).
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import TYPE_CHECKING, Any

from evalcore.errors import EvalcoreError
from evalcore.read.files.run_members import (
    copy_rows,
    parquet_columns,
    rows_where,
    run_member_rows,
    run_statuses,
    table_columns,
)

if TYPE_CHECKING:
    import duckdb


class RunFileError(EvalcoreError):
    """A run file is unreadable, truncated, foreign, of a newer format, or conflicts with the store."""


def sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def write_member(
    con: duckdb.DuckDBPyConnection, table: str, where: str, params: list[Any], order: str, folder: Path, member: str
) -> dict[str, Any]:
    """Write the rows of store ``table`` that ``where`` (with ``params``) selects, ordered by
    ``order``, to ``folder/<table>.parquet``; its manifest entry (``file`` is ``member``,
    ``rows``, ``sha256``, ``columns``)."""
    target = folder / f"{table}.parquet"
    rows = copy_rows(con, table, where, params, order, target)
    return {"file": member, "rows": rows, "sha256": sha256(target), "columns": table_columns(con, table)}


def check_run_tables(
    con: duckdb.DuckDBPyConnection, path: Path, manifest: dict[str, Any], files: dict[str, Path]
) -> None:
    """Each run table's member is Parquet with the manifest's row count, and every row belongs
    to the run; the run is complete; every value is possible (:data:`VALUE_CHECKS`)."""
    import duckdb

    run_id = manifest["run_id"]
    for table, meta in manifest["tables"].items():
        file, member = files[table], meta["file"]
        try:
            if "run_id" not in parquet_columns(con, file):
                raise RunFileError(f"{path}: {member} has no run_id column")
            rows, foreign = run_member_rows(con, file, run_id)
        except duckdb.Error as exc:
            raise RunFileError(f"{path}: {member} is not readable Parquet ({str(exc).splitlines()[0]})") from None
        if rows != meta["rows"]:
            raise RunFileError(f"{path}: {member} holds {rows} rows, the manifest says {meta['rows']}")
        if foreign:
            raise RunFileError(f"{path}: {member} holds {foreign} rows of another run than {run_id}")
    status = run_statuses(con, files["runs"])
    if status != ["complete"]:
        raise RunFileError(f"{path}: the runs table must hold one complete run, found {status}")
    check_values(con, path, manifest["tables"], files)


_CONTROL = r"[\x00-\x1f\x7f]"
_NAME_BAD = r"[\x00-\x20\x7f/]"  # a strategy or retriever labels STRATEGY/RETRIEVER
_LABELS = "('answerable', 'off-topic')"
#: (table, columns the check needs, SQL true for a row that cannot be, what is wrong)
VALUE_CHECKS: list[tuple[str, tuple[str, ...], str, str]] = [
    (
        "runs",
        ("run_id",),
        f"run_id = '' OR regexp_matches(run_id, '{_CONTROL}')",
        "an empty run id or control characters in it",
    ),
    ("runs", ("name",), f"regexp_matches(name, '{_CONTROL}')", "control characters in the run name"),
    ("hits", ("rank",), "rank < 1", "a rank below 1"),
    ("hits", ("distance",), "isnan(distance) OR isinf(distance)", "a distance that is not a finite number"),
    ("hits", ("score",), "isnan(score) OR isinf(score)", "a score that is not a finite number"),
    ("results", ("first_correct_rank",), "first_correct_rank < 1", "a first_correct_rank below 1"),
    (
        "results",
        ("answer_distance", "top_distance"),
        "isnan(answer_distance) OR isinf(answer_distance) OR isnan(top_distance) OR isinf(top_distance)",
        "a distance that is not a finite number",
    ),
    ("results", ("domain",), "domain NOT IN ('in', 'out')", "a domain other than in or out"),
    ("queries", ("domain",), "domain NOT IN ('in', 'out')", "a domain other than in or out"),
    (
        "queries",
        ("query_id",),
        f"query_id = '' OR regexp_matches(query_id, '{_CONTROL}')",
        "an empty query id or control characters in it",
    ),
    ("chunks", ("start", "end"), 'start < 0 OR "end" < start', "offsets outside 0 <= start <= end"),
    (
        "documents",
        ("doc_id",),
        f"doc_id = '' OR regexp_matches(doc_id, '{_CONTROL}')",
        "an empty document id or control characters in it",
    ),
    ("decisions", ("threshold",), "isnan(threshold) OR isinf(threshold)", "a threshold that is not a finite number"),
    ("traffic_hits", ("rank",), "rank < 1", "a rank below 1"),
    (
        "traffic_hits",
        ("distance", "score"),
        "isnan(distance) OR isinf(distance) OR isnan(score) OR isinf(score)",
        "a distance or score that is not a finite number",
    ),
    ("traffic_queries", ("label",), f"label NOT IN {_LABELS}", "a label other than answerable or off-topic"),
    (
        "traffic_queries",
        ("deployment",),
        f"regexp_matches(deployment, '{_CONTROL}')",
        "control characters in the name of the deployment that posted a line",
    ),
    ("traffic_labels", ("label",), f"label NOT IN {_LABELS}", "a label other than answerable or off-topic"),
    (
        "traffic_imports",
        ("status",),
        "status NOT IN ('running', 'complete', 'failed')",
        "a status other than running, complete or failed",
    ),
    (
        "question_sets",
        ("name",),
        f"name = '' OR regexp_matches(name, '{_CONTROL}')",
        "an empty set name or control characters in it",
    ),
    ("question_set_versions", ("version",), "version < 1", "a version below 1"),
    (
        "question_set_items",
        ("start", "end"),
        'start < 0 OR "end" < start',
        "offsets outside 0 <= start <= end",
    ),
    ("question_set_ood", ("kind",), "kind NOT IN ('near', 'far')", "a kind other than near or far"),
]
for _table in (
    "strategies",
    "chunks",
    "results",
    "hits",
    "destroyed",
    "decisions",
    "configurations",
    "failures",
    "traffic_imports",
    "traffic_texts",
    "traffic_hits",
    "traffic_queries",
    "traffic_labels",
):
    VALUE_CHECKS.append(
        (
            _table,
            ("strategy",),
            f"strategy = '' OR regexp_matches(strategy, '{_NAME_BAD}')",
            "a strategy name with '/', whitespace or control characters",
        )
    )
for _table in (
    "results",
    "hits",
    "decisions",
    "configurations",
    "failures",
    "traffic_imports",
    "traffic_texts",
    "traffic_hits",
    "traffic_queries",
    "traffic_labels",
):
    VALUE_CHECKS.append(
        (
            _table,
            ("retriever",),
            f"retriever = '' OR regexp_matches(retriever, '{_NAME_BAD}')",
            "a retriever name with '/', whitespace or control characters",
        )
    )


def check_values(
    con: duckdb.DuckDBPyConnection, path: Path, members: dict[str, dict[str, Any]], files: dict[str, Path]
) -> None:
    """Every value a reader relies on is possible: ranks from 1, finite distances and scores,
    names that can label a configuration, ids without control characters, known labels.
    RunFileError naming the member, the column's problem and the count of rows otherwise."""
    for table, needs, bad, what in VALUE_CHECKS:
        if table not in files or table not in members:
            continue
        if not set(needs) <= set(parquet_columns(con, files[table])):
            continue
        n = rows_where(con, files[table], bad)
        if n:
            raise RunFileError(f"{path}: {members[table]['file']}: {n} row(s) with {what}; not loaded")
