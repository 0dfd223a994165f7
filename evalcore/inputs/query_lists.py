"""A list of real queries uploaded on a screen (Triage, Traffic): one query a line, a CSV column
or a JSON lines field, read into distinct non-empty queries."""

from __future__ import annotations

import csv
import io
import json

from evalcore.errors import InputError
from evalcore.inputs import jsontext

MAX_QUERIES = 200_000  # lines of a real-query list read at most


def read_queries(name: str, data: bytes, column: str = "query") -> list[str]:
    """Distinct non-empty real queries of an uploaded list, in order: one a line (``.txt``), the
    column ``column`` of a CSV file (``.csv``), or the field ``column`` of JSON lines
    (``.jsonl``; a line may also be a JSON string). InputError "NAME:LINE: ..." otherwise."""
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError:
        raise InputError(f"{name}: not UTF-8 text") from None
    lower = name.lower()
    out: list[str] = []
    if lower.endswith(".csv"):
        reader = csv.DictReader(io.StringIO(text, newline=""))
        if column not in (reader.fieldnames or []):
            raise InputError(f"{name}: no column {column!r} (columns: {', '.join(reader.fieldnames or [])})")
        out = [(row.get(column) or "").strip() for row in reader]
    elif lower.endswith((".jsonl", ".json")):
        for number, line in enumerate(text.splitlines(), start=1):
            if not line.strip():
                continue
            try:
                obj = jsontext.loads(line)
            except json.JSONDecodeError as exc:
                raise InputError(f"{name}:{number}: invalid JSON ({exc.msg})") from None
            value = obj if isinstance(obj, str) else obj.get(column) if isinstance(obj, dict) else None
            if not isinstance(value, str):
                raise InputError(f"{name}:{number}: expected a string field {column!r}")
            out.append(value.strip())
    else:
        out = [line.strip() for line in text.splitlines()]
    distinct = list(dict.fromkeys(q for q in out if q))
    if len(distinct) > MAX_QUERIES:
        raise InputError(f"{name}: {len(distinct):,} queries, more than the {MAX_QUERIES:,} read at once; split it")
    return distinct
