"""A run travels between machines: ``export-run`` writes one file, ``load-run`` stores it again.

The run file (format ``evalcore-run``, version :data:`FORMAT_VERSION`; docs/RUN-FILE.md) is a
zip archive holding

- ``manifest.json``: ``format``, ``format_version``, ``evalcore_version``, ``schema_version``
  (the newest store migration of the exporting store), ``run_id``, ``run_name``,
  ``exported_at``, per table its member ``file``, ``rows``, ``sha256`` and ``columns``, the
  ``question_set`` the run used and ``not_carried`` (:mod:`evalcore.files.run_travel`);
- ``tables/<table>.parquet``: every row of the run in each of :data:`TABLES` (its results,
  decisions and traffic), ordered by the table's key;
- ``sets/<table>.parquet``: the question-set version the run used, when it used one.

Loading verifies everything before the store is touched (a zip, our format, a version we
read, each member's size, sha256 and row count, one complete run, every row of that run),
then inserts all tables in one transaction (:mod:`evalcore.files.run_file_tables` holds the
checks of the members, :mod:`evalcore.files.run_travel` what travels beyond the results). A
run id already in the store is refused unless the stored rows equal the file's, which makes
loading the same file twice a no-op.
Its one write (a loaded run's rows) is :mod:`evalcore.store.loaded_runs`; an export reads the
store read only.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import re
import tempfile
import zipfile
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, BinaryIO

from evalcore import __version__, testhooks
from evalcore.boundary.files import kind_of, write_file_streamed
from evalcore.boundary.text import check_run_name
from evalcore.errors import InputError
from evalcore.files import run_travel
from evalcore.files.run_file_tables import RunFileError, check_run_tables, write_member
from evalcore.inputs import jsontext
from evalcore.read.files.run_members import (
    differences,
    file_run_name,
    other_run_with_id,
    parquet_columns,
    run_named,
    run_stored,
    table_columns,
)
from evalcore.read.refs import resolve_run
from evalcore.store.loaded_runs import insert_parquet
from evalcore.store.migrate import applied_version

if TYPE_CHECKING:
    from evalcore.store import Store

log = logging.getLogger(__name__)

FORMAT = "evalcore-run"
FORMAT_VERSION = 3
MANIFEST = "manifest.json"
MAX_MANIFEST = 16 * 1024 * 1024  # bytes of manifest.json
MAX_UNPACKED = 4 * 1024**3  # bytes all tables of one run file may unpack to (default)
MAX_UNPACKED_ENV = "EVALCORE_MAX_RUN_FILE_BYTES"
MAX_RATIO = 100  # times a member may expand (when over 1 MiB)
#: Every table that holds a run's rows, in insertion order, with the key that orders its rows.
TABLES: dict[str, str] = {
    "runs": "run_id",
    "documents": "doc_id",
    "strategies": "strategy",
    "chunks": "strategy, chunk_id",
    "queries": "query_id",
    "results": "strategy, retriever, query_id",
    "hits": "strategy, retriever, query_id, rank",
    "destroyed": "strategy, group_id",
    "timings": "ALL",
    "decisions": "created_at, decision_id",
    "configurations": "strategy, retriever",
    "failures": "strategy, retriever, query_id",
    **run_travel.TRAFFIC_TABLES,
}
#: Tables each format version holds (a version-1 file, written before runs made elsewhere
#: existed, has no configurations or failures: its configurations read as built-in; a
#: version-2 file has no traffic and no question set).
TABLES_OF_VERSION: dict[int, tuple[str, ...]] = {
    1: tuple(t for t in TABLES if t not in ("configurations", "failures", *run_travel.TRAFFIC_TABLES)),
    2: tuple(t for t in TABLES if t not in run_travel.TRAFFIC_TABLES),
    3: tuple(TABLES),
}
_MEMBER = re.compile(r"^tables/[a-z_]+\.parquet$")


@dataclass(frozen=True, slots=True)
class Transfer:
    """What ``export_run`` wrote or ``load_run`` did: run id and name, rows per table,
    ``loaded`` (False when the same run was already stored and nothing was written), and
    ``notes``: what did not travel, and a question set stored with the run (one line each)."""

    run_id: str
    run_name: str
    rows: dict[str, int]
    path: str
    loaded: bool = True
    notes: tuple[str, ...] = ()

    @property
    def total_rows(self) -> int:
        return sum(self.rows.values())


# --- export ---------------------------------------------------------------------------------


def export_run(store: Store, run: str, path: str | Path) -> Transfer:
    """Write the complete run ``run`` (run id, run name or unique id prefix, as
    :func:`evalcore.read.refs.resolve_run` reads it) to the run file ``path``.

    The file is written next to ``path`` and renamed into place, so a failed export leaves no
    half file, and never through a symbolic link: a missing folder, a link, a folder, a FIFO or a
    device at ``path`` is refused (:func:`evalcore.boundary.files.write_file_streamed`).
    StoreError for an unknown or incomplete run.
    """

    info = resolve_run(store, run)
    run_id = info.run_id
    path = Path(path)
    if path.is_dir():
        raise RunFileError(f"{path}: is a folder; give the run file's name, e.g. {path / (run_id + '.evalcore.zip')}")
    if path.exists() and not path.is_file():
        raise RunFileError(f"{path}: is {kind_of(path.stat().st_mode)}, not a regular file; evalcore writes only files")
    tables: dict[str, dict[str, Any]] = {}
    with tempfile.TemporaryDirectory(prefix="evalcore-export-") as tmp:
        with store.read() as con:
            version = applied_version(con)
            for table, order in TABLES.items():
                tables[table] = write_member(
                    con, table, "run_id = ?", [run_id], order, Path(tmp), f"tables/{table}.parquet"
                )
            extras = run_travel.export_extras(con, run_id, Path(tmp))
        manifest = {
            "format": FORMAT,
            "format_version": FORMAT_VERSION,
            "evalcore_version": __version__,
            "schema_version": version,
            "run_id": run_id,
            "run_name": info.name,
            "exported_at": datetime.now(UTC).isoformat(timespec="seconds"),
            "tables": tables,
            **extras,
        }
        members = {**tables, **run_travel.set_members(manifest)}

        def write(fh: BinaryIO) -> None:
            with zipfile.ZipFile(fh, "w", compression=zipfile.ZIP_STORED) as zf:
                zf.writestr(MANIFEST, json.dumps(manifest, indent=2))
                for table, meta in members.items():
                    zf.write(Path(tmp) / f"{table}.parquet", meta["file"])

        try:
            write_file_streamed(path.parent, path.name, write)
        except InputError as exc:
            raise RunFileError(str(exc)) from None
    notes = tuple(f"not carried: {n['what']}: {n['why']}" for n in extras["not_carried"])
    return Transfer(run_id, info.name, {t: m["rows"] for t, m in tables.items()}, str(path), notes=notes)


# --- load -----------------------------------------------------------------------------------


def read_manifest(path: str | Path) -> dict[str, Any]:
    """The checked manifest of a run file; RunFileError (one line naming the file) when it is
    not a zip, not ours, of a newer format version, or malformed."""
    path = Path(path)
    if not path.is_file():
        raise RunFileError(f"{path}: no such file")
    try:
        with zipfile.ZipFile(path) as zf:
            names = set(zf.namelist())
            if MANIFEST not in names:
                raise RunFileError(f"{path}: not an evalcore run file (no {MANIFEST})")
            size = zf.getinfo(MANIFEST).file_size
            if size > MAX_MANIFEST:
                raise RunFileError(f"{path}: {MANIFEST} declares {size:,} bytes, over the {MAX_MANIFEST:,}-byte limit")
            with zf.open(MANIFEST) as fh:
                data = fh.read(MAX_MANIFEST + 1)
            if len(data) > MAX_MANIFEST:
                raise RunFileError(f"{path}: {MANIFEST} is larger than the {MAX_MANIFEST:,}-byte limit")
            manifest = jsontext.loads(data.decode("utf-8"))
    except (zipfile.BadZipFile, zipfile.LargeZipFile, EOFError, OSError) as exc:
        raise RunFileError(f"{path}: not an evalcore run file, or truncated ({exc})") from None
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise RunFileError(f"{path}: {MANIFEST} is not valid JSON ({exc})") from None
    if not isinstance(manifest, dict) or manifest.get("format") != FORMAT:
        found = manifest.get("format") if isinstance(manifest, dict) else None
        raise RunFileError(f"{path}: not an evalcore run file (format {found!r}, expected {FORMAT!r})")
    version = manifest.get("format_version")
    if isinstance(version, bool) or not isinstance(version, int) or version < 1:
        raise RunFileError(f"{path}: {MANIFEST} has no valid format_version (got {version!r})")
    if version > FORMAT_VERSION:
        raise RunFileError(
            f"{path}: run file format version {version} is newer than this evalcore reads "
            f"(format version {FORMAT_VERSION}; evalcore {manifest.get('evalcore_version', '?')} wrote it); "
            "upgrade evalcore to load it"
        )
    tables = manifest.get("tables")
    if not isinstance(manifest.get("run_id"), str) or not manifest["run_id"] or not isinstance(tables, dict):
        raise RunFileError(f"{path}: {MANIFEST} lacks run_id or tables")
    expected = TABLES_OF_VERSION[version]
    missing = [t for t in expected if t not in tables]
    unknown = [t for t in tables if t not in expected]
    if missing or unknown:
        raise RunFileError(
            f"{path}: {MANIFEST} tables differ from format {version}: "
            f"missing {missing or 'none'}, unknown {unknown or 'none'}"
        )
    for table, meta in tables.items():
        ok = (
            isinstance(meta, dict)
            and isinstance(meta.get("file"), str)
            and _MEMBER.match(meta["file"])
            and isinstance(meta.get("rows"), int)
            and meta["rows"] >= 0
            and isinstance(meta.get("sha256"), str)
        )
        if not ok or meta["file"] not in names:
            raise RunFileError(f"{path}: {MANIFEST} entry for table {table!r} is malformed or its file is missing")
    run_travel.check_manifest_extras(path, manifest, names)
    return manifest


def max_unpacked() -> int:
    """The most bytes a run file may unpack to: ``$EVALCORE_MAX_RUN_FILE_BYTES`` or 4 GiB."""
    raw = os.environ.get(MAX_UNPACKED_ENV, "").strip()
    if not raw:
        return MAX_UNPACKED
    if not raw.isdigit() or int(raw) < 1:
        raise RunFileError(f"{MAX_UNPACKED_ENV} must be a positive number of bytes, got {raw!r}")
    return int(raw)


def _sizes(path: Path, zf: zipfile.ZipFile, manifest: dict[str, Any]) -> None:
    """The members' declared sizes, before anything is written: within the cap in all, and
    none expanding more than :data:`MAX_RATIO` times (Parquet is compressed already; a member
    that deflates far more is a zip bomb)."""
    cap, total = max_unpacked(), 0
    for meta in _members(manifest).values():
        info = zf.getinfo(meta["file"])
        total += info.file_size
        if info.file_size > 1 << 20 and info.file_size > MAX_RATIO * max(info.compress_size, 1):
            raise RunFileError(
                f"{path}: {meta['file']} expands to {info.file_size:,} bytes from {info.compress_size:,} "
                f"(over {MAX_RATIO} times); refusing a possible zip bomb"
            )
    if total > cap:
        raise RunFileError(
            f"{path}: its tables unpack to {total:,} bytes, over the {cap:,}-byte limit (${MAX_UNPACKED_ENV})"
        )


def _members(manifest: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """{table: manifest entry} of every member: the run's tables, then the question set's."""
    return {**manifest["tables"], **run_travel.set_members(manifest)}


def _unpack(path: Path, manifest: dict[str, Any], folder: Path) -> dict[str, Path]:
    """Extract each table's member into ``folder`` and check its sha256; {table: file}. The
    declared sizes are checked first, the actual bytes while streaming (a member that holds
    more than its header says is refused at that byte)."""
    out = {}
    try:
        with zipfile.ZipFile(path) as zf:
            _sizes(path, zf, manifest)
            for table, meta in _members(manifest).items():
                target = folder / f"{table}.parquet"
                declared = zf.getinfo(meta["file"]).file_size
                h = hashlib.sha256()
                written = 0
                with zf.open(meta["file"]) as src, open(target, "wb") as dst:
                    for block in iter(lambda: src.read(1 << 20), b""):
                        written += len(block)
                        if written > declared:
                            raise RunFileError(
                                f"{path}: {meta['file']} expands beyond the {declared:,} bytes its header "
                                "declares; refusing a possible zip bomb"
                            )
                        h.update(block)
                        dst.write(block)
                if h.hexdigest() != meta["sha256"]:
                    raise RunFileError(
                        f"{path}: {meta['file']} does not match its sha256 in {MANIFEST} "
                        "(the file was changed or damaged)"
                    )
                out[table] = target
    except (zipfile.BadZipFile, EOFError, OSError) as exc:
        raise RunFileError(f"{path}: damaged or truncated ({exc})") from None
    return out


def _verify(path: Path, manifest: dict[str, Any], files: dict[str, Path]) -> list[str]:
    """Every member checked in a private in-memory database (the store is not touched); the
    lines ``load-run`` reports of what did not travel."""
    import duckdb

    con = duckdb.connect()
    try:
        check_run_tables(con, path, manifest, files)
        run_travel.check_set_tables(con, path, manifest, files)
        return run_travel.load_notes(con, manifest, files)
    finally:
        con.close()


def load_run(store: Store, path: str | Path) -> Transfer:
    """Verify the run file ``path`` and insert its run into ``store`` in one transaction, with
    the question-set version it used when the store lacks it.

    RunFileError (nothing stored) for a file that is not a run file, damaged, truncated, of a
    newer format version, holding a column this store does not know, whose run id is
    already stored with other rows, or whose question set conflicts with the store's. When the
    stored run equals the file's, nothing is written and the result's ``loaded`` is False.
    The result's ``notes`` say what the file could not carry.
    """
    import duckdb

    path = Path(path)
    manifest = read_manifest(path)
    run_id = manifest["run_id"]
    rows = {t: int(m["rows"]) for t, m in manifest["tables"].items()}
    run_name = str(manifest.get("run_name", ""))
    with tempfile.TemporaryDirectory(prefix="evalcore-load-") as tmp:
        files = _unpack(path, manifest, Path(tmp))
        notes = _verify(path, manifest, files)
        with store.transaction() as con:
            mine = applied_version(con)
            for table, file in files.items():
                known = table_columns(con, table)
                extra = [c for c in parquet_columns(con, file) if c not in known]
                if extra:
                    raise RunFileError(
                        f"{path}: table {table} has column(s) {', '.join(extra)} this store does not know "
                        f"(file schema version {manifest.get('schema_version')}, store schema version {mine}); "
                        "upgrade evalcore to load it"
                    )
            name = file_run_name(con, files["runs"])
            if name:
                try:
                    check_run_name(name, field=f"{path}: its run name")
                except InputError as exc:
                    raise RunFileError(f"{exc}; not loaded") from None
            shadow = run_named(con, run_id, run_id)
            if shadow:
                raise RunFileError(
                    f"{path}: its run id {run_id!r} is the name of run {shadow} in {store.path}; loading it "
                    "would make that name mean another run; not loaded"
                )
            if name and other_run_with_id(con, name, run_id):
                raise RunFileError(
                    f"{path}: its run name {name!r} is the id of another run in {store.path}; not loaded"
                )
            stored_set = run_travel.store_set(con, path, manifest, files, str(store.path))
            if stored_set:
                notes.append(stored_set)
            if run_stored(con, run_id):
                differ = differences(con, files, {t: ("run_id = ?", [run_id]) for t in manifest["tables"]})
                if differ:
                    raise RunFileError(
                        f"{path}: run {run_id} is already in {store.path} with other rows "
                        f"(tables {', '.join(differ)} differ); not loaded"
                    )
                return Transfer(run_id, run_name, rows, str(path), loaded=False, notes=tuple(notes))
            for table in manifest["tables"]:
                try:
                    insert_parquet(con, table, files[table])
                except duckdb.Error as exc:
                    raise RunFileError(
                        f"{path}: table {table} cannot be stored ({str(exc).splitlines()[0]}); nothing was loaded"
                    ) from None
            testhooks.pause("loading a run")  # inside the transaction: a kill here must leave nothing
    log.info("loaded run %s from %s", run_id, path)
    return Transfer(run_id, run_name, rows, str(path), notes=tuple(notes))
