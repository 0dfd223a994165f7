"""What a run file carries beyond the run's results, and what it says could not travel.

- The run's traffic: its imports, log lines, scored texts with their hits, and the labels
  people gave (:data:`TRAFFIC_TABLES`, keyed by run id like the run's own tables; the query
  texts may hold personal data, and so does the file then).
- The question-set version the run used (``runs.question_set``/``question_set_version``):
  the set's row, the version's row, its items and off-topic queries, under ``sets/`` with the
  manifest's ``question_set`` entry. Loading stores the version unless the store has it
  already; a set of that name made elsewhere, or the same version with other items, is a
  conflict and nothing is loaded.
- ``not_carried``: what the run owns that the file does not hold, each with why; ``load-run``
  reports every entry.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from evalcore.files.run_file_tables import RunFileError, check_values, write_member
from evalcore.read.files.run_members import (
    differences,
    file_set,
    file_set_origin,
    has_job,
    parquet_columns,
    running_imports,
    set_member_rows,
    set_origin,
    used_set,
    version_stored,
)
from evalcore.store.loaded_runs import insert_parquet

if TYPE_CHECKING:
    from pathlib import Path

    import duckdb

#: A run's traffic tables, in insertion order, with the key that orders their rows.
TRAFFIC_TABLES: dict[str, str] = {
    "traffic_imports": "started_at, import_id",
    "traffic_texts": "strategy, retriever, text_hash",
    "traffic_hits": "strategy, retriever, text_hash, rank",
    "traffic_queries": "strategy, retriever, deployment, line_key, occurrence",
    "traffic_labels": "strategy, retriever, text_hash",
}
#: The question-set tables of one version: (the rows of (name, version), the order of rows).
SET_TABLES: dict[str, tuple[str, str]] = {
    "question_sets": ("name = ?", "name"),
    "question_set_versions": ("name = ? AND version = ?", "version"),
    "question_set_items": ("name = ? AND version = ?", "position"),
    "question_set_ood": ("name = ? AND version = ?", "position"),
}
SET_MEMBER = re.compile(r"^sets/[a-z_]+\.parquet$")
#: Always in ``not_carried``: the one thing a run has in a store that never travels.
CACHE = {"what": "the embedding cache", "why": "a stored run never reads it again; a new run embeds its texts again"}


def _params(table: str, name: str, version: int) -> list[Any]:
    return [name] if table == "question_sets" else [name, version]


def export_extras(con: duckdb.DuckDBPyConnection, run_id: str, folder: Path) -> dict[str, Any]:
    """Write the run's question-set version to ``folder`` (members ``sets/<table>.parquet``)
    and return the manifest's ``question_set`` (None when the run used no set, or its version
    is not in the store) and ``not_carried`` entries."""
    not_carried: list[dict[str, str]] = [CACHE]
    entry: dict[str, Any] | None = None
    used = used_set(con, run_id)
    if used is not None:
        name, version = used
        if version_stored(con, name, version):
            tables = {
                t: write_member(con, t, where, _params(t, name, version), order, folder, f"sets/{t}.parquet")
                for t, (where, order) in SET_TABLES.items()
            }
            entry = {"name": name, "version": version, "tables": tables}
        else:
            not_carried.append(
                {
                    "what": f"question set {name} v{version}",
                    "why": "it is not in the exporting store (the run came from a run file that did not carry it)",
                }
            )
    for import_id, source in running_imports(con, run_id):
        not_carried.append(
            {
                "what": f"the rest of traffic import {import_id} ({source})",
                "why": "it was running or interrupted when the run was exported; the lines it had stored travel",
            }
        )
    if has_job(con, run_id):
        not_carried.append({"what": "the job that made the run", "why": "the job queue belongs to the exporting store"})
    return {"question_set": entry, "not_carried": not_carried}


def check_manifest_extras(path: Path, manifest: dict[str, Any], names: set[str]) -> None:
    """The manifest's ``question_set`` (absent or null, or a name, a version and exactly the
    members of :data:`SET_TABLES`, each present in the zip) and ``not_carried`` (a list of
    {what, why} texts) are well formed; RunFileError naming the file otherwise."""
    entry = manifest.get("question_set")
    if entry is not None:
        ok = (
            isinstance(entry, dict)
            and isinstance(entry.get("name"), str)
            and bool(entry["name"])
            and isinstance(entry.get("version"), int)
            and not isinstance(entry["version"], bool)
            and entry["version"] >= 1
            and isinstance(entry.get("tables"), dict)
            and set(entry["tables"]) == set(SET_TABLES)
        )
        if not ok:
            raise RunFileError(f"{path}: manifest.json's question_set entry is malformed")
        for table, meta in entry["tables"].items():
            good = (
                isinstance(meta, dict)
                and isinstance(meta.get("file"), str)
                and SET_MEMBER.match(meta["file"])
                and isinstance(meta.get("rows"), int)
                and meta["rows"] >= 0
                and isinstance(meta.get("sha256"), str)
            )
            if not good or meta["file"] not in names:
                raise RunFileError(
                    f"{path}: manifest.json entry for table {table!r} is malformed or its file is missing"
                )
    notes = manifest.get("not_carried", [])
    if not isinstance(notes, list) or not all(
        isinstance(n, dict) and isinstance(n.get("what"), str) and isinstance(n.get("why"), str) for n in notes
    ):
        raise RunFileError(f"{path}: manifest.json's not_carried is not a list of what and why")


def set_members(manifest: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """{table: manifest entry} of the question-set members ({} when the file carries none)."""
    entry = manifest.get("question_set")
    return dict(entry["tables"]) if entry else {}


def check_set_tables(
    con: duckdb.DuckDBPyConnection, path: Path, manifest: dict[str, Any], files: dict[str, Path]
) -> None:
    """The run's question-set members hold the rows the manifest says, all of the set's one
    version, and they are the version the run's row names; read in the checker's private
    database. A file without a set whose run names one is fine: ``load-run`` reports it."""
    import duckdb

    entry = manifest.get("question_set")
    runs = files["runs"]
    named: tuple[Any, Any] = (None, None)
    if {"question_set", "question_set_version"} <= set(parquet_columns(con, runs)):
        named = file_set(con, runs)
    if entry is None:
        return
    name, version = entry["name"], entry["version"]
    if (named[0], named[1]) != (name, version):
        raise RunFileError(
            f"{path}: it carries question set {name} v{version}, but its run used {named[0]} v{named[1]}; not loaded"
        )
    for table, meta in entry["tables"].items():
        where, _ = SET_TABLES[table]
        try:
            rows, foreign = set_member_rows(con, files[table], where, _params(table, name, version))
        except duckdb.Error as exc:
            raise RunFileError(f"{path}: {meta['file']} is not readable Parquet ({str(exc).splitlines()[0]})") from None
        if rows != meta["rows"]:
            raise RunFileError(f"{path}: {meta['file']} holds {rows} rows, the manifest says {meta['rows']}")
        if foreign:
            raise RunFileError(f"{path}: {meta['file']} holds {foreign} rows of another set than {name} v{version}")
        if table in ("question_sets", "question_set_versions") and rows != 1:
            raise RunFileError(f"{path}: {meta['file']} must hold one row, found {rows}")
    check_values(con, path, entry["tables"], files)


def store_set(
    con: duckdb.DuckDBPyConnection, path: Path, manifest: dict[str, Any], files: dict[str, Path], where: str
) -> str | None:
    """Inside the loader's transaction: store the question-set version the file carries unless
    the store holds it already (then it must be equal). A set of that name made elsewhere (its
    creation time or author differ) is refused: the run's name would mean another set. Returns
    a line for ``load-run`` when the version was stored, else None."""
    entry = manifest.get("question_set")
    if entry is None:
        return None
    name, version = entry["name"], entry["version"]
    stored = set_origin(con, name)
    theirs = file_set_origin(con, files["question_sets"])
    if stored and stored != theirs:
        raise RunFileError(
            f"{path}: the question set {name!r} in {where} is another set than the one its run used "
            f"(made {stored[0][0]} by {stored[0][1] or 'someone unrecorded'}; the run's: made {theirs[0][0]} by "
            f"{theirs[0][1] or 'someone unrecorded'}); not loaded"
        )
    if version_stored(con, name, version):
        differ = differences(
            con,
            files,
            {t: (w, [name, version]) for t, (w, _) in SET_TABLES.items() if t != "question_sets"},
        )
        if differ:
            raise RunFileError(
                f"{path}: question set {name} v{version} in {where} is not the version its run used "
                f"({', '.join(differ)} differ); not loaded"
            )
        return None
    for table in SET_TABLES:
        if table != "question_sets" or not stored:
            insert_parquet(con, table, files[table])
    return f"stored question set {name} v{version}, which the run used"


def load_notes(con: duckdb.DuckDBPyConnection, manifest: dict[str, Any], files: dict[str, Path]) -> list[str]:
    """What ``load-run`` reports of the file's ``not_carried``, one line each; a file of an
    older format that cannot carry the set its run names says so here too."""
    notes = [f"not carried: {n['what']}: {n['why']}" for n in manifest.get("not_carried", [])]
    if manifest.get("question_set") is None and manifest.get("format_version", 0) < 3:
        runs = files["runs"]
        if {"question_set", "question_set_version"} <= set(parquet_columns(con, runs)):
            name, version = file_set(con, runs)
            if name is not None:
                notes.append(
                    f"not carried: question set {name} v{version}: a run file of format version "
                    f"{manifest['format_version']} carries no question sets"
                )
    return notes
