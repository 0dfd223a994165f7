"""Reading a query log (csv, jsonl or parquet) a batch at a time, for ``traffic import``.

Each usable line gives a :class:`LogLine`: its line number (csv, jsonl: the physical line
where the record starts, 1-based; parquet: the row, 1-based), its time in UTC, the query text
and an optional label (``answerable`` or ``off-topic``). A line without the query field, with
an unparsable time, an unknown label or bytes that are not UTF-8 is a :class:`LogProblem`
naming its line; the others are read on. Memory stays bounded: lines are yielded in batches.

Times are read by :func:`evalcore.boundary.times.parse_time`: ISO 8601 text
(``2026-11-02T09:15:00Z``, ``2026-11-02 09:15:00+01:00``; a time without an offset is read as
UTC) or a number of seconds since 1970-01-01 UTC, from 1970-01-01 to 9999-12-31 UTC once the
offset is applied. A time outside that range, a date that does not exist, a word, a boolean,
NaN, an infinity or a list is a :class:`LogProblem` naming its line, never an exception.

Fields: ``query``, ``time`` and ``label`` are read by default (each can be renamed; a log
without a ``label`` field simply has no labels). What a line *is* (its identity, see
:func:`evalcore.traffic.replay.line_key`) never depends on these options.
"""

from __future__ import annotations

import csv
import math
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from evalcore.boundary.times import parse_time
from evalcore.errors import InputError
from evalcore.inputs import jsontext
from evalcore.read.files.parquet import parquet_row_count, parquet_rows

FORMATS = ("csv", "jsonl", "parquet")
BATCH = 16384
_LABEL_ALIASES = {
    "answerable": "answerable",
    "in": "answerable",
    "in-domain": "answerable",
    "off-topic": "off-topic",
    "offtopic": "off-topic",
    "off_topic": "off-topic",
    "out": "off-topic",
    "ood": "off-topic",
}


@dataclass(frozen=True, slots=True)
class LogLine:
    line: int
    at: datetime  # naive, UTC
    text: str
    label: str | None


@dataclass(frozen=True, slots=True)
class LogProblem:
    line: int
    reason: str

    def describe(self) -> str:
        return f"line {self.line}: {self.reason}"


@dataclass(frozen=True, slots=True)
class LogFields:
    """Which field holds the query, the time and (optionally) the label."""

    query: str = "query"
    time: str = "time"
    label: str | None = "label"


def infer_format(path: str | Path, given: str | None = None) -> str:
    """``csv``, ``jsonl`` or ``parquet``: ``given``, else from the file name (``.json``,
    ``.ndjson`` read as jsonl; ``.gz`` is not read). InputError naming the file otherwise."""
    if given:
        fmt = given.strip().lower()
        if fmt not in FORMATS:
            raise InputError(f"--format must be one of {', '.join(FORMATS)}, got {given!r}")
        return fmt
    suffix = Path(path).suffix.lower()
    found = {".csv": "csv", ".jsonl": "jsonl", ".ndjson": "jsonl", ".json": "jsonl", ".parquet": "parquet"}.get(suffix)
    if found is None:
        raise InputError(f"{path}: cannot tell the log's format from its name; give --format csv|jsonl|parquet")
    return found


def parse_label(value: Any) -> str | None:
    """``answerable`` / ``off-topic`` (a few spellings accepted), None when empty; ValueError otherwise."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return None
    text = str(value).strip().lower()
    if not text:
        return None
    found = _LABEL_ALIASES.get(text)
    if found is None:
        raise ValueError(f"label must be answerable or off-topic, got {str(value)[:40]!r}")
    return found


def _record(line: int, record: dict[str, Any], fields: LogFields) -> LogLine | LogProblem:
    text = record.get(fields.query)
    if text is None or (isinstance(text, float) and math.isnan(text)):
        return LogProblem(line, f"no {fields.query!r} field")
    text = str(text)
    if not text.strip():
        return LogProblem(line, f"empty {fields.query!r} field")
    if fields.time not in record:
        return LogProblem(line, f"no {fields.time!r} field")
    try:
        at = parse_time(record[fields.time], field=fields.time).replace(tzinfo=None)
        label = parse_label(record.get(fields.label)) if fields.label else None
    except (InputError, ValueError) as exc:
        return LogProblem(line, str(exc))
    return LogLine(line, at, text, label)


def count_lines(path: Path, fmt: str) -> int | None:
    """Log lines (rows) in the file, for the progress bar: newlines counted, read in blocks."""
    if fmt == "parquet":
        return parquet_row_count(path)
    n = 0
    last = b"\n"
    with open(path, "rb") as fh:
        while block := fh.read(1 << 20):
            n += block.count(b"\n")
            last = block[-1:]
    n += last != b"\n"
    return n - 1 if fmt == "csv" else n  # the csv header


def _decoded(path: Path, problems: list[LogProblem], where: list[int]) -> Iterator[str]:
    """The file's lines decoded as UTF-8; a line that is not is a LogProblem and is left out."""
    with open(path, "rb") as fh:
        for number, raw in enumerate(fh, start=1):
            where[0] = number
            try:
                text = raw.decode("utf-8")
            except UnicodeDecodeError as exc:
                problems.append(LogProblem(number, f"not UTF-8 (byte {exc.start + 1})"))
                continue
            if number == 1:
                text = text.removeprefix("\ufeff")
            yield text


def read_log(path: str | Path, fmt: str, fields: LogFields, batch: int = BATCH) -> Iterator[list[LogLine | LogProblem]]:
    """Batches of usable lines and problems, in file order (see the module docstring)."""
    path = Path(path)
    if not path.is_file():
        raise InputError(f"{path}: no such log file")
    if fmt == "parquet":
        yield from _parquet(path, fields, batch)
        return
    problems: list[LogProblem] = []
    where = [0]
    out: list[LogLine | LogProblem] = []
    if fmt == "jsonl":
        for text in _decoded(path, problems, where):
            out += problems
            problems.clear()
            if not text.strip():
                continue
            try:
                record = jsontext.loads(text)
            except ValueError as exc:
                out.append(LogProblem(where[0], f"not JSON ({getattr(exc, 'msg', exc)})"))
                continue
            if not isinstance(record, dict):
                out.append(LogProblem(where[0], "not a JSON object"))
                continue
            out.append(_record(where[0], record, fields))
            if len(out) >= batch:
                yield out
                out = []
        out += problems
    else:
        lines = _decoded(path, problems, where)
        reader = csv.DictReader(lines)
        try:
            names = reader.fieldnames or []
        except csv.Error as exc:
            raise InputError(f"{path}: not a CSV file ({exc})") from None
        if fields.query not in names:
            raise InputError(
                f"{path}: no {fields.query!r} column in the header (columns: {', '.join(names) or 'none'}); "
                "give --query-field"
            )
        start = where[0] + 1
        while True:
            try:
                row = next(reader)
            except StopIteration:
                break
            except csv.Error as exc:
                out += problems
                problems.clear()
                out.append(LogProblem(start, f"not CSV ({exc})"))
                start = where[0] + 1
                continue
            out += problems
            problems.clear()
            record = {k: v for k, v in row.items() if k is not None}
            if fields.time in names and record.get(fields.time) is None:
                record.pop(fields.time, None)
            out.append(_record(start, record, fields))
            start = where[0] + 1
            if len(out) >= batch:
                yield out
                out = []
        out += problems
    if out:
        yield out


def _parquet(path: Path, fields: LogFields, batch: int) -> Iterator[list[LogLine | LogProblem]]:
    """Rows of a Parquet file, read by DuckDB (no other dependency) a batch at a time."""
    wanted: list[str] = []

    def pick(names: list[str]) -> list[str]:
        if fields.query not in names:
            raise InputError(
                f"{path}: no {fields.query!r} column (columns: {', '.join(names) or 'none'}); give --query-field"
            )
        wanted[:] = [c for c in (fields.query, fields.time, fields.label) if c and c in names]
        return wanted

    for rows in parquet_rows(path, pick, batch):
        yield [_record(int(r[0]) + 1, dict(zip(wanted, r[1:], strict=True)), fields) for r in rows]
