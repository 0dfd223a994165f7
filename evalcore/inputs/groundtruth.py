"""Read questions.jsonl / ood.jsonl and resolve needles to spans (METHODS.md "The words").

File format (one JSON object a line, blank lines allowed):

- questions: ``id``, ``question``, and either ``needle`` or the exact span
  ``document``, ``start``, ``end``; optional ``group`` (default: the id) and
  ``variant`` (default ``""``). All queries of one group share one ground truth.
- ood: ``id``, ``query``, ``kind`` (``near`` or ``far``).

Any other field of a line is kept beside the item as it was given (``Question.extra``,
``OODQuery.extra``: the JSON text of those fields), so a question set exported again gives it
back. A text field is normalised to NFC and refused when it holds NUL or another control
character than tab and newline, or more than ``MAX_TEXT`` characters; HTML, a formula or a
bidirectional mark is kept as written and escaped wherever it is shown.

Problems with the files themselves (bad JSON, a missing or ill-typed field, a duplicate
id across both files, two needles in one group) raise InputError ``"FILE:LINE: ..."``.
Problems of a ground truth against the corpus make it *invalid*: it is reported as an
:class:`InvalidNeedle` with its reason and left out of ``spans``, never dropped.

Needle resolution: the needle is stripped and must occur exactly once in all canonical
texts together. Any run of whitespace (Python ``\\s``, i.e. ``str.isspace``) in the
needle matches any run of whitespace in the text, and nothing else is relaxed (no case
folding, no Unicode normalisation). All occurrences are counted, overlapping ones
included. A span that touches a heading line (a line starting with one or more ``#``
and a space) is invalid; exact spans are checked for that too.
"""

from __future__ import annotations

import bisect
import json
import logging
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from evalcore.boundary.files import iter_text_lines
from evalcore.boundary.text import clean_text
from evalcore.errors import InputError, control_characters
from evalcore.inputs import jsontext
from evalcore.records import Corpus, Document, GroundTruth, InvalidNeedle, OODQuery, Question, Span, ValidationReport

logger = logging.getLogger(__name__)

OOD_KINDS = ("near", "far")
QUESTION_FIELDS = ("id", "question", "needle", "document", "start", "end", "group", "variant")
OOD_FIELDS = ("id", "query", "kind")
MAX_FILE_BYTES = 1 << 30  # a question, ood or ranking file is read up to 1 GiB
MAX_TEXT = 100_000  # characters of one text field (a question, a needle, a query)
_WS_RUN = re.compile(r"\s+")
_HEADING_LINE = re.compile(r"^#+ [^\n]*", re.MULTILINE)
_SEP = "\0"  # between documents in the search text; never inside a canonical text
_MAX_LISTED = 5


# ------------------------------------------------------------------------ reading


def read_jsonl(path: Path, max_bytes: int = MAX_FILE_BYTES) -> list[tuple[int, dict[str, Any]]]:
    """``(line number, object)`` for every non-blank line; InputError "FILE:LINE: ..." otherwise.
    The file is read as :func:`evalcore.boundary.files.iter_text_lines` reads a user's file: a
    regular file only (links resolved), at most ``max_bytes``, streamed, UTF-8 checked by line."""
    rows = []
    for number, line in iter_text_lines(path, max_bytes=max_bytes):
        if not line.strip():
            continue
        try:
            obj = jsontext.loads(line)
        except json.JSONDecodeError as exc:
            raise InputError(f"{path}:{number}: invalid JSON ({exc.msg} at column {exc.colno})") from None
        if not isinstance(obj, dict):
            raise InputError(f"{path}:{number}: expected a JSON object, got {type(obj).__name__}")
        rows.append((number, obj))
    return rows


def _field(obj: dict[str, Any], key: str, kind: type, where: str, *, required: bool = True) -> Any:
    """Typed field value; InputError naming ``where`` and the field when missing or ill-typed."""
    if key not in obj or obj[key] is None:
        if required:
            raise InputError(f"{where}: missing field {key!r}")
        return None
    value = obj[key]
    if kind is int:
        ok = isinstance(value, int) and not isinstance(value, bool)
    else:
        ok = isinstance(value, kind)
    if not ok:
        raise InputError(
            f"{where}: field {key!r} must be {'an integer' if kind is int else 'a string'}, got {json.dumps(value)}"
        )
    if kind is str:
        value = clean_text(value, field=f"{where}: field {key!r}", max_len=MAX_TEXT)
        if key not in ("variant",) and not value.strip():
            raise InputError(f"{where}: field {key!r} is empty")
    return value


def _extra(obj: dict[str, Any], known: tuple[str, ...]) -> str | None:
    """The fields of ``obj`` evalcore does not read, as the JSON text of an object in the
    file's order (None when there are none): kept with the item so an export gives them back."""
    rest = {k: v for k, v in obj.items() if k not in known}
    return json.dumps(rest, ensure_ascii=False) if rest else None


def _check_id(query_id: str, where: str, seen: dict[str, str]) -> None:
    if control_characters(query_id):
        raise InputError(f"{where}: id {query_id!r} holds control characters")
    if query_id in seen:
        raise InputError(f"{where}: duplicate id {query_id!r} (first at {seen[query_id]})")
    seen[query_id] = where


def read_questions(path: str | Path, seen: dict[str, str] | None = None) -> list[Question]:
    """Parse questions.jsonl; ``seen`` maps ids to ``FILE:LINE`` across files."""
    path = Path(path)
    seen = {} if seen is None else seen
    out: list[Question] = []
    for number, obj in read_jsonl(path):
        where = f"{path}:{number}"
        query_id = _field(obj, "id", str, where)
        question = _field(obj, "question", str, where)
        needle = _field(obj, "needle", str, where, required=False)
        document = _field(obj, "document", str, where, required=False)
        start = _field(obj, "start", int, where, required=False)
        end = _field(obj, "end", int, where, required=False)
        group = _field(obj, "group", str, where, required=False) or query_id
        variant = _field(obj, "variant", str, where, required=False) or ""
        exact = (document, start, end)
        if needle is not None and any(v is not None for v in exact):
            raise InputError(f"{where}: give either 'needle' or 'document'/'start'/'end', not both")
        if needle is None:
            if all(v is None for v in exact):
                raise InputError(f"{where}: missing field 'needle' (or 'document', 'start', 'end')")
            for key, value in zip(("document", "start", "end"), exact, strict=True):
                if value is None:
                    raise InputError(f"{where}: missing field {key!r} (an exact span needs document, start, end)")
            if not 0 <= start < end:
                raise InputError(f"{where}: span must satisfy 0 <= start < end, got start={start}, end={end}")
        _check_id(query_id, where, seen)
        out.append(
            Question(
                query_id=query_id,
                question=question,
                group=group,
                variant=variant,
                needle=needle,
                line=number,
                document=document,
                start=start,
                end=end,
                extra=_extra(obj, QUESTION_FIELDS),
            )
        )
    if not out:
        raise InputError(f"{path}: no questions")
    return out


def read_ood(path: str | Path, seen: dict[str, str] | None = None) -> list[OODQuery]:
    """Parse ood.jsonl; ``kind`` must be ``near`` or ``far``."""
    path = Path(path)
    seen = {} if seen is None else seen
    out: list[OODQuery] = []
    for number, obj in read_jsonl(path):
        where = f"{path}:{number}"
        query_id = _field(obj, "id", str, where)
        query = _field(obj, "query", str, where)
        kind = _field(obj, "kind", str, where)
        if kind not in OOD_KINDS:
            raise InputError(f"{where}: field 'kind' must be one of {', '.join(OOD_KINDS)}, got {kind!r}")
        _check_id(query_id, where, seen)
        out.append(OODQuery(query_id=query_id, query=query, kind=kind, line=number, extra=_extra(obj, OOD_FIELDS)))
    return out


# --------------------------------------------------------------------- resolution


def _truth_key(q: Question) -> tuple[str | int | None, ...]:
    if q.needle is not None:
        return ("needle", " ".join(q.needle.split()))
    return ("span", q.document, q.start, q.end)


def _describe_key(key: tuple[str | int | None, ...]) -> str:
    return repr(key[1]) if key[0] == "needle" else f"{key[1]}#char={key[2]},{key[3]}"


def group_questions(questions: list[Question], path: str | Path) -> dict[str, list[Question]]:
    """Questions by group, in first-appearance order; InputError when a group's needles differ
    (compared with whitespace runs collapsed)."""
    groups: dict[str, list[Question]] = {}
    for q in questions:
        members = groups.setdefault(q.group, [])
        if members and _truth_key(members[0]) != _truth_key(q):
            first = members[0]
            raise InputError(
                f"{path}:{q.line}: group {q.group!r} has a different needle than at line {first.line} "
                f"({_describe_key(_truth_key(q))} vs {_describe_key(_truth_key(first))})"
            )
        members.append(q)
    return groups


@dataclass(frozen=True, slots=True)
class _Occurrence:
    doc_id: str
    start: int
    end: int


class NeedleIndex:
    """Whitespace-collapsed search text over a whole corpus, for fast needle lookup.

    Every whitespace run of every canonical text becomes one space; documents are joined
    with NUL. A stripped, collapsed needle is then found with ``str.find`` (C speed), and
    positions map back to canonical offsets through the removed-run table.
    """

    def __init__(self, documents: tuple[Document, ...]) -> None:
        parts: list[str] = []
        self._doc_starts: list[int] = []
        self._docs: list[Document] = list(documents)
        self._run_pos: list[list[int]] = []  # per doc: collapsed position of each run
        self._removed: list[list[int]] = []  # per doc: chars removed before run i (cumulative)
        self._headings: list[list[tuple[int, int]]] = []
        offset = 0
        for doc in self._docs:
            pieces, run_pos, removed, total, last = [], [], [0], 0, 0
            for m in _WS_RUN.finditer(doc.text):
                pieces.append(doc.text[last : m.start()])
                run_pos.append(m.start() - total)
                total += len(m.group()) - 1
                removed.append(total)
                pieces.append(" ")
                last = m.end()
            pieces.append(doc.text[last:])
            collapsed = "".join(pieces)
            self._doc_starts.append(offset)
            parts.append(collapsed)
            offset += len(collapsed) + 1
            self._run_pos.append(run_pos)
            self._removed.append(removed)
            self._headings.append([(m.start(), m.end()) for m in _HEADING_LINE.finditer(doc.text)])
        self._text = _SEP.join(parts)
        self._position = {doc.doc_id: k for k, doc in enumerate(self._docs)}

    def _to_canonical(self, k: int, pos: int) -> int:
        """Collapsed position of a non-whitespace char in doc k -> canonical offset."""
        return pos + self._removed[k][bisect.bisect_left(self._run_pos[k], pos)]

    def find(self, needle: str) -> list[_Occurrence]:
        """All occurrences (overlapping included) of ``needle`` up to whitespace runs."""
        pattern = " ".join(needle.split())
        if not pattern or _SEP in pattern:
            return []
        out = []
        pos = self._text.find(pattern)
        while pos != -1:
            k = bisect.bisect_right(self._doc_starts, pos) - 1
            local = pos - self._doc_starts[k]
            start = self._to_canonical(k, local)
            end = self._to_canonical(k, local + len(pattern) - 1) + 1
            out.append(_Occurrence(self._docs[k].doc_id, start, end))
            pos = self._text.find(pattern, pos + 1)
        return out

    def heading_touched(self, doc_id: str, start: int, end: int) -> int | None:
        """1-based line number of the first heading line that ``[start, end)`` overlaps, else None.

        A heading line is ``[line start, line end)`` without its newline.
        """
        k = self._position.get(doc_id)
        if k is None:
            return None
        lines = self._headings[k]
        i = bisect.bisect_right(lines, (start, float("inf"))) - 1  # last heading starting <= start
        for h_start, h_end in lines[max(i, 0) :]:
            if h_start >= end:
                break
            if start < h_end:
                return self._docs[k].text.count("\n", 0, h_start) + 1
        return None


def _line_of(text: str, offset: int) -> int:
    return text.count("\n", 0, offset) + 1


def resolve(
    questions: list[Question],
    corpus: Corpus,
    path: str | Path = "questions.jsonl",
) -> tuple[dict[str, Span], list[InvalidNeedle]]:
    """Resolve each group's ground truth to exactly one span (see module doc).

    Returns ``(spans by group, invalid ground truths)``. Reasons: ``not found``,
    ``found N times (doc a line 3, ...)``, ``inside a heading line (doc x line 12)``,
    ``document 'x' not in corpus``, ``span ... beyond the end of document 'x' (N characters)``.
    """
    index = NeedleIndex(corpus.documents)
    docs = corpus.by_id()
    spans: dict[str, Span] = {}
    invalid: list[InvalidNeedle] = []
    for group, members in group_questions(questions, path).items():
        first = members[0]
        ids = tuple(q.query_id for q in members)

        def bad(
            reason: str, needle: str, *, group: str = group, ids: tuple[str, ...] = ids, line: int = first.line
        ) -> None:
            invalid.append(InvalidNeedle(group=group, query_ids=ids, needle=needle, reason=reason, line=line))

        if first.needle is not None:
            needle = first.needle
            found = index.find(needle)
            if not found:
                bad("not found", needle)
                continue
            if len(found) > 1:
                where = ", ".join(
                    f"doc {o.doc_id} line {_line_of(docs[o.doc_id].text, o.start)}" for o in found[:_MAX_LISTED]
                )
                more = ", ..." if len(found) > _MAX_LISTED else ""
                bad(f"found {len(found)} times ({where}{more})", needle)
                continue
            span = Span(found[0].doc_id, found[0].start, found[0].end)
        else:
            # read_questions gives a question without a needle all of document, start and end
            assert first.document is not None and first.start is not None and first.end is not None
            needle = f"{first.document}#char={first.start},{first.end}"
            doc = docs.get(first.document)
            if doc is None:
                bad(f"document {first.document!r} not in corpus", needle)
                continue
            if first.end > len(doc.text):
                bad(
                    f"span {first.start}..{first.end} beyond the end of document {doc.doc_id!r} "
                    f"({len(doc.text)} characters)",
                    needle,
                )
                continue
            span = Span(doc.doc_id, first.start, first.end)
        line = index.heading_touched(span.doc_id, span.start, span.end)
        if line is not None:
            bad(f"inside a heading line (doc {span.doc_id} line {line})", needle)
            continue
        spans[group] = span
    return spans, invalid


def load_ground_truth(corpus: Corpus, questions_path: str | Path, ood_path: str | Path | None = None) -> GroundTruth:
    """Read both files (ids unique across them) and resolve every group's needle."""
    seen: dict[str, str] = {}
    questions = read_questions(questions_path, seen)
    ood = read_ood(ood_path, seen) if ood_path is not None else []
    spans, invalid = resolve(questions, corpus, questions_path)
    for item in invalid:
        logger.warning("invalid ground truth %s (line %d): %s", item.group, item.line, item.reason)
    source = {"questions": str(questions_path)}
    if ood_path is not None:
        source["ood"] = str(ood_path)
    return GroundTruth(questions=tuple(questions), spans=spans, invalid=tuple(invalid), ood=tuple(ood), source=source)


def validation_report(corpus: Corpus, gt: GroundTruth) -> ValidationReport:
    """What the CLI's ``validate`` prints: corpus counts, failed documents (with reasons),
    ground truths total/valid/invalid, the invalid ones with reasons, in-domain queries
    valid/total, ood queries near/far (:class:`~evalcore.records.ValidationReport`)."""
    return ValidationReport.of(corpus, gt)
