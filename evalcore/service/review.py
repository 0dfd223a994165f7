"""The review sample for people and annotation tools: the next sampled lines to label, and
labels given to them (``GET /deployments/{name}/review``, ``POST /deployments/{name}/labels``,
the Review screen). The sample itself is drawn by :mod:`evalcore.traffic.sampling`; a review
read first draws the frames of the periods that have ended without one.

**A label** is ``{"line_id", "label", "hits_hold_answer"}`` (and optionally ``"role"``):

- ``line_id``: a sampled line's id as the review read gives it (``FRAME-aRANK`` or
  ``FRAME-rRANK``), of this deployment's sample;
- ``label``: ``off-topic`` or ``answerable``;
- ``hits_hold_answer``: for an answerable line, whether its hits hold the answer (``true``,
  ``false``, or ``null``/absent: not known); an off-topic line takes none (``null``/absent);
- ``role`` (optional): ``first`` or ``second``; without it, a line without a label gets its first
  label, and a line whose first label is another author's, offered to a second person, gets its
  second label.

Each label is checked on its own (one :class:`LabelResult` a label, in order): a label that
breaks a rule is a ``problem`` naming the field, and is not stored; the others land together in
one transaction. A label its author gave already is ``unchanged``; a different label by the same
author replaces it (``updated``: a correction). A second label must come from another author than
the first's, and only for a line offered to a second person; second labels never enter an
estimate. A line id given twice in one request is a problem the second time.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any

from evalcore.boundary.text import check_identifier
from evalcore.errors import InputError
from evalcore.read.traffic.review import ReviewLine, next_lines
from evalcore.read.traffic.review_periods import parse_line_id, utc_now, version_span
from evalcore.store.review import ROLES, LabelWrite, LineRef, LineState, write_labels
from evalcore.traffic.sampling import ensure_drawn, period_of

if TYPE_CHECKING:
    from evalcore.store import Store

#: the most labels one request may hold
MAX_LABELS = 1000
#: the most lines one review read gives
MAX_LIMIT = 100
LABELS = ("off-topic", "answerable")
FIELDS = ("line_id", "label", "hits_hold_answer", "role")
MAX_AUTHOR = 200
_SHOWN = 40


def _shown(value: object) -> str:
    text = repr(value)
    return text if len(text) <= _SHOWN else text[:_SHOWN] + "..."


def check_deployment(name: str) -> str:
    """A deployment's name as the review routes take it (InputError naming ``name``)."""
    return check_identifier(name, field="name", max_len=100)


def draw_missing(store: Store, name: str, version: int | None = None, author: str | None = None) -> int:
    """Draw the frames of the version's periods that have ended without one (see the module
    docstring); how many were drawn. UnknownDeployment for a deployment that is not there."""
    return ensure_drawn(store, check_deployment(name), version, author=author)


def review_lines(
    store: Store,
    name: str,
    *,
    period: str | None = None,
    limit: int = 10,
    author: str | None = None,
    version: int | None = None,
    now: datetime | None = None,
) -> list[ReviewLine]:
    """The next sampled lines of deployment ``name``'s version (default: the current one) to
    label (:func:`evalcore.read.traffic.review.next_lines`), of the review period holding the day
    ``period`` (``YYYY-MM-DD``) only when given: InputError naming ``period`` for a text that is
    no day, a day outside the version or a period not ended. Reads only (call
    :func:`draw_missing` first)."""
    if not 1 <= int(limit) <= MAX_LIMIT:
        raise InputError(f"limit: an integer in [1, {MAX_LIMIT}], got {limit!r}")
    span = version_span(store, check_deployment(name), version)
    at = now if now is not None else utc_now()
    start = period_of(span, period, at).start if period is not None else None
    return next_lines(store, span.deployment, span.version, start, int(limit), author)


@dataclass(frozen=True, slots=True)
class LabelResult:
    """What became of one label of a request (``index`` 1-based): ``stored``, ``updated``,
    ``unchanged`` or ``problem`` (``reason`` says why, ``field`` names the field)."""

    index: int
    line_id: str | None
    status: str
    role: str | None = None
    reason: str | None = None
    field: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "index": self.index,
            "line_id": self.line_id,
            "status": self.status,
            "role": self.role,
            "reason": self.reason,
            "field": self.field,
        }


@dataclass(frozen=True, slots=True)
class _Wanted:
    index: int
    line_id: str
    ref: LineRef
    label: str
    hits_hold_answer: bool | None
    role: str | None


def _problem(index: int, line_id: object, where: str, reason: str) -> LabelResult:
    shown = line_id if isinstance(line_id, str) and len(line_id) <= 100 else None
    return LabelResult(index, shown, "problem", reason=f"labels[{index - 1}].{where}: {reason}", field=where)


def _read(index: int, item: object) -> _Wanted | LabelResult:
    """One label of a request, checked (see the module docstring)."""
    if not isinstance(item, Mapping):
        return _problem(index, None, "label", f"an object {{line_id, label, hits_hold_answer}}, got {_shown(item)}")
    line = item.get("line_id")
    unknown = sorted(str(k) for k in item if k not in FIELDS)
    if unknown:
        return _problem(index, line, _shown(unknown[0])[1:-1], f"no such field (a label holds {', '.join(FIELDS)})")
    if not isinstance(line, str):
        return _problem(index, None, "line_id", f"a sampled line's id (a string), got {_shown(line)}")
    ref = parse_line_id(line)
    if ref is None:
        return _problem(index, line, "line_id", f"{_shown(line)} is no line id of a review sample (FRAME-aRANK)")
    label = item.get("label")
    if not isinstance(label, str) or label not in LABELS:
        return _problem(index, line, "label", f"'off-topic' or 'answerable', got {_shown(label)}")
    held = item.get("hits_hold_answer")
    if held is not None and not isinstance(held, bool):
        return _problem(index, line, "hits_hold_answer", f"true, false or null, got {_shown(held)}")
    if label == "off-topic" and held is not None:
        return _problem(index, line, "hits_hold_answer", "an off-topic line takes none (null): it has no answer")
    role = item.get("role")
    if role is not None and role not in ROLES:
        return _problem(index, line, "role", f"'first' or 'second' (or none), got {_shown(role)}")
    return _Wanted(index, line, ref, label, held, role if isinstance(role, str) else None)


def _decide(
    name: str, wanted: list[_Wanted], author: str, state: dict[LineRef, LineState], out: dict[int, LabelResult]
) -> list[LabelWrite]:
    """The writes of the checked labels ``wanted`` on what the store holds (``state``); each
    label's result into ``out``."""
    writes = []
    for w in wanted:
        s = state.get(w.ref)
        if s is None or s.deployment != name:
            out[w.index] = _problem(w.index, w.line_id, "line_id", f"not a sampled line of deployment {name!r}")
            continue
        first, second = s.first, s.second_label
        role = w.role or ("first" if first is None or first.author == author else "second")
        where = "role" if w.role else "line_id"
        if role == "first":
            if first is not None and first.author != author:
                reason = "holds a first label by another author already (it may take a second label, by role 'second')"
                out[w.index] = _problem(w.index, w.line_id, where, reason)
                continue
            held = first
        else:
            if first is None:
                out[w.index] = _problem(w.index, w.line_id, where, "has no first label yet: give it one first")
                continue
            if first.author == author:
                reason = f"a second label comes from another author than the first label's ({author})"
                out[w.index] = _problem(w.index, w.line_id, where, reason)
                continue
            if not s.second:
                out[w.index] = _problem(w.index, w.line_id, where, "is not offered to a second person")
                continue
            if second is not None and second.author != author:
                out[w.index] = _problem(w.index, w.line_id, where, "holds a first and a second label already")
                continue
            held = second
        if held is not None and (held.label, held.hits_hold_answer) == (w.label, w.hits_hold_answer):
            out[w.index] = LabelResult(w.index, w.line_id, "unchanged", role)
            continue
        writes.append(LabelWrite(w.ref, role, w.label, w.hits_hold_answer, author, insert=held is None))
        out[w.index] = LabelResult(w.index, w.line_id, "stored" if held is None else "updated", role)
    return writes


def label_lines(store: Store, name: str, labels: Sequence[object], author: str) -> list[LabelResult]:
    """Store ``labels`` (see the module docstring) by ``author`` for deployment ``name``'s
    sample: one result a label, in order; the valid ones land in one transaction. InputError for
    more than :data:`MAX_LABELS` labels, none, or no author."""
    name = check_deployment(name)
    if not author or not isinstance(author, str) or len(author) > MAX_AUTHOR or "\x00" in author:
        raise InputError("author: who labels (at most 200 characters)")
    if not labels:
        raise InputError("labels: give at least one label")
    if len(labels) > MAX_LABELS:
        raise InputError(f"labels: {len(labels):,} labels, more than the {MAX_LABELS:,} one request may hold")
    version_span(store, name)  # UnknownDeployment for a deployment that is not there
    out: dict[int, LabelResult] = {}
    wanted: list[_Wanted] = []
    seen: set[LineRef] = set()
    for index, item in enumerate(labels, start=1):
        got = _read(index, item)
        if isinstance(got, LabelResult):
            out[index] = got
        elif got.ref in seen:
            out[index] = _problem(index, got.line_id, "line_id", "given twice in this request (the first is taken)")
        else:
            seen.add(got.ref)
            wanted.append(got)
    if wanted:
        write_labels(store, [w.ref for w in wanted], lambda state: _decide(name, wanted, author, state, out))
    return [out[i] for i in range(1, len(labels) + 1)]
