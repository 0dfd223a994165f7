"""Production's queries posted to a deployment: NDJSON lines ``{id, query, time, label?}``.

Each line is checked on its own (one :class:`LineResult` a line, in order):

- ``id``: the caller's id of the query, a JSON string or a JSON integer, read as one canonical
  text (:func:`canonical_id`): a string is NFC-normalised with the spaces around it stripped,
  an integer is written in decimal (``1`` is ``"1"``, ``0`` is ``"0"``; ``"01"`` stays a text of
  its own); the text then passes :func:`evalcore.boundary.text.check_name` (at most 200
  characters, no control, bidirectional or zero-width character, not starting with ``-``, so a
  negative integer is refused). A number with a fraction or an exponent (``1.0``, ``1e3``),
  ``true``/``false``, ``null``, a list or an object is refused. The id makes the post
  idempotent: an id the deployment has seen before (in an earlier post or earlier in the same
  one, compared as canonical text) is a ``duplicate`` and nothing is stored twice; the results
  give each id as its canonical text. Ids are the deployment's own: two deployments may post
  the same id, and each line is counted for its deployment;
- ``query``: free text (:func:`evalcore.boundary.text.clean_text`: no control character but
  tab and newline), not blank, at most :data:`MAX_QUERY` characters;
- ``time``: an ISO 8601 time or seconds since 1970 (:func:`evalcore.boundary.times.parse_time`);
- ``label`` (optional): ``answerable`` or ``off-topic``.

A line that breaks a rule is a ``problem`` with its reason (naming the field) and is not stored;
the others are ``stored`` in one transaction (:mod:`evalcore.store.traffic.posted`), which also
queues the deployment's replay job unless one is queued already. The store serialises writers
(one process holds the file at a time, retried with backoff; threads of this process take a lock
first), so twenty posts at once store each id exactly once. The replay
(:mod:`evalcore.traffic.posted`) scores the lines against the deployment's configuration in the
job runner, and the Traffic screen shows it as an import named ``deployment NAME``.

Usage::

    results = ingest_traffic("runs/evalcore.duckdb", "production", body.splitlines(), author="key:prod")
"""

from __future__ import annotations

import os
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any, Literal

from evalcore.authors import clean_author
from evalcore.boundary.text import check_name, clean_text
from evalcore.boundary.times import parse_time
from evalcore.embedding.embedder import text_hash
from evalcore.errors import InputError, UnknownDeployment
from evalcore.inputs import jsontext
from evalcore.jobs.queue import dispatch
from evalcore.service.deployments import as_store, check_deployment_name, get_deployment
from evalcore.store.traffic import posted as traffic_posted
from evalcore.traffic.log import parse_label

if TYPE_CHECKING:
    from evalcore.store import Store

MAX_QUERY = 10_000  #: characters of one query
MAX_ID = 200  #: characters of one id
SHOWN = 40
_LOCKS: dict[str, threading.Lock] = {}
_LOCKS_GUARD = threading.Lock()

Status = Literal["stored", "duplicate", "problem"]


@dataclass(frozen=True)
class LineResult:
    """What became of one posted line (1-based): ``stored``, ``duplicate`` (its id was seen
    before) or ``problem`` (``reason`` says which field and why)."""

    line: int
    id: str | None
    status: Status
    reason: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {"line": self.line, "id": self.id, "status": self.status, "reason": self.reason}


@dataclass(frozen=True)
class _Line:
    line: int
    id: str
    at: datetime  # naive UTC
    text: str
    label: str | None


def _lock(store: Store) -> threading.Lock:
    key = os.path.realpath(store.path)
    with _LOCKS_GUARD:
        return _LOCKS.setdefault(key, threading.Lock())


_JSON_TYPES = {bool: "a boolean", list: "a list", dict: "an object"}


def canonical_id(value: Any) -> str:
    """A posted line's id (a JSON value) as its canonical text, the text the post stores and
    compares (see the module docstring): a string NFC-normalised and stripped, an integer in
    decimal (so ``1`` and ``"1"`` are the same id). InputError naming ``id`` for anything else,
    or a text that is not a valid id."""
    if value is None:
        raise InputError("id: missing (each line needs the caller's id of the query)")
    if isinstance(value, int) and not isinstance(value, bool):
        if value < 0:
            raise InputError(f"id: {value} is a negative integer (an integer id is 0 or more)")
        if value >= 10**MAX_ID:  # its decimal text would be too long (and str() of a huge int is slow)
            raise InputError(f"id: an integer of more than {MAX_ID} digits (an id is at most {MAX_ID} characters)")
        return str(value)
    if isinstance(value, float):  # 1.0, 1e3, NaN, Infinity: never read as an integer
        raise InputError(f"id: expected text or an integer, got the number {value!r} (not an integer)")
    if not isinstance(value, str):
        what = next((name for kind, name in _JSON_TYPES.items() if isinstance(value, kind)), type(value).__name__)
        raise InputError(f"id: expected text or an integer, got {what}")
    return check_name(value, field="id", max_len=MAX_ID)


def _parse(number: int, raw: bytes | str) -> _Line | LineResult:
    """One line as a checked query, or its problem."""
    if isinstance(raw, bytes):
        try:
            raw = raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            return LineResult(number, None, "problem", f"not UTF-8 (byte {exc.start + 1})")
    if not raw.strip():
        return LineResult(number, None, "problem", "empty line (each line is one JSON object)")
    try:
        record = jsontext.loads(raw, unique_keys=True)
    except jsontext.DuplicateKey as exc:
        return LineResult(number, None, "problem", f"not JSON: the object names {exc.key[:SHOWN]!r} twice")
    except ValueError as exc:
        if "integer string conversion" in str(exc):  # Python reads at most 4,300 digits of a JSON integer
            return LineResult(number, None, "problem", "not JSON that can be read: a number of more than 4,300 digits")
        return LineResult(number, None, "problem", f"not JSON ({getattr(exc, 'msg', exc)})")
    if not isinstance(record, dict):
        return LineResult(number, None, "problem", f"not a JSON object (a {type(record).__name__})")
    post_id: str | None = None
    try:
        post_id = canonical_id(record.get("id"))
        query = record.get("query")
        if not isinstance(query, str):
            raise InputError("query: missing" if query is None else f"query: expected text, got {type(query).__name__}")
        text = clean_text(query, field="query", max_len=MAX_QUERY)
        if not text.strip():
            raise InputError("query: is empty")
        if "time" not in record:
            raise InputError("time: missing")
        at = parse_time(record["time"], field="time").replace(tzinfo=None)
        try:
            label = parse_label(record.get("label"))
        except ValueError as exc:
            raise InputError(f"label: {exc}") from None
    except InputError as exc:
        return LineResult(number, post_id, "problem", str(exc))
    return _Line(number, post_id, at, text, label)


def check_lines(lines: Sequence[bytes | str]) -> list[_Line | LineResult]:
    """Each line checked (see the module docstring), in order; nothing is stored."""
    return [_parse(n, raw) for n, raw in enumerate(lines, start=1)]


def ingest_traffic(
    store_path: Store | str | os.PathLike[str],
    deployment: str,
    lines: Sequence[bytes | str],
    author: str | None,
    *,
    start: bool = True,
) -> list[LineResult]:
    """Store the posted ``lines`` (the request body's lines, ``body.splitlines()``; a blank
    line is a problem) for ``deployment``, one result a line, and queue their replay against the
    deployment's configuration in the job runner (``start=False``: queue only, start no process).
    :class:`~evalcore.errors.UnknownDeployment` when there is no such deployment; InputError for
    a bad name. Safe to call from many threads and processes at once."""
    import pandas as pd

    name = check_deployment_name(deployment)
    store = as_store(store_path)
    found = get_deployment(store, name)
    if found is None:
        raise UnknownDeployment(f"no deployment {name!r} in this store (point one at a decision first)")
    checked = check_lines(lines)
    first: dict[str, int] = {}
    results: list[LineResult | None] = []
    todo: list[_Line] = []
    for item in checked:
        if isinstance(item, LineResult):
            results.append(item)
        elif item.id in first:
            results.append(LineResult(item.line, item.id, "duplicate", f"id seen before, on line {first[item.id]}"))
        else:
            first[item.id] = item.line
            todo.append(item)
            results.append(None)
    stored: set[str] = set()
    job_id = None
    if todo:
        rows = pd.DataFrame(
            {
                "post_id": [x.id for x in todo],
                "asked_at": pd.Series([x.at for x in todo], dtype="datetime64[us]"),
                "text_hash": [text_hash(x.text) for x in todo],
                "text": [x.text for x in todo],
                "label": pd.Series([x.label for x in todo], dtype=object),
            }
        )
        with _lock(store):
            stored, job_id = traffic_posted.post(store, name, found.run_id, rows, clean_author(author))
    by_line = {x.line: x for x in todo}
    out = []
    for n, result in enumerate(results, start=1):
        if result is None:
            x = by_line[n]
            result = (
                LineResult(n, x.id, "stored")
                if x.id in stored
                else LineResult(n, x.id, "duplicate", "id seen before, in an earlier post")
            )
        out.append(result)
    if job_id is not None and start:
        _start(store, job_id)
    return out


def _start(store: Store, job_id: str) -> None:
    """Start the queued replay job's process when a slot is free (as the New run screen starts a
    run's); otherwise it waits in the queue, holding no process, for the next free slot."""
    dispatch(store)
