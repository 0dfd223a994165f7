"""A question set's files: the canonical JSON lines ``question-set export`` writes and
``question-set import`` reads (:mod:`evalcore.inputs.question_sets` keeps the sets themselves).

Export writes each item in the canonical form evalcore itself writes: one
``json.dumps(obj, ensure_ascii=False)`` a line, keys ``id, question, needle, group, variant``
(or ``id, question, document, start, end, group, variant`` for an exact span), and
``id, query, kind`` for off-topic queries, each followed by the item's other fields as the
file gave them (an importer's ``answer`` beside its offsets, a tag): nothing an import
accepted is dropped. A file in that form comes back byte for byte; another layout comes back
with the same content in that form (``question-set import`` says how many lines that concerns).
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from evalcore.boundary.files import read_user_file
from evalcore.errors import InputError
from evalcore.inputs.groundtruth import MAX_FILE_BYTES, group_questions, read_ood, read_questions
from evalcore.records import OODQuery, Question

QUESTIONS_FILE = "questions.jsonl"
OOD_FILE = "ood.jsonl"
MAX_ITEMS = 1_000_000  # items (questions and off-topic queries together) of one version


def question_row(q: Question) -> dict[str, Any]:
    """The canonical JSON object of an in-domain item (what export writes): evalcore's fields,
    then the item's other fields as they were given (``extra``)."""
    if q.needle is not None:
        row: dict[str, Any] = {
            "id": q.query_id,
            "question": q.question,
            "needle": q.needle,
            "group": q.group,
            "variant": q.variant,
        }
    else:
        row = {
            "id": q.query_id,
            "question": q.question,
            "document": q.document,
            "start": q.start,
            "end": q.end,
            "group": q.group,
            "variant": q.variant,
        }
    return _with_extra(row, q.extra)


def ood_row(o: OODQuery) -> dict[str, Any]:
    return _with_extra({"id": o.query_id, "query": o.query, "kind": o.kind}, o.extra)


def _with_extra(row: dict[str, Any], extra: str | None) -> dict[str, Any]:
    if extra:
        row.update({k: v for k, v in json.loads(extra).items() if k not in row})
    return row


def to_jsonl(rows: Sequence[dict[str, Any]]) -> str:
    return "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows)


def read_folder(
    folder: str | Path, said: Callable[[str], None] | None = None
) -> tuple[list[Question], list[OODQuery], int]:
    """questions.jsonl (required) and ood.jsonl (optional) of ``folder``, read and checked as
    ``run --questions/--ood`` reads them; also the number of lines not in the canonical form.
    ``said`` hears a line when each file has been read (for a progress line)."""
    folder = Path(folder)
    if not folder.is_dir():
        raise InputError(f"{folder}: not a folder (expected one holding {QUESTIONS_FILE} and optionally {OOD_FILE})")
    qpath, opath = folder / QUESTIONS_FILE, folder / OOD_FILE
    has_ood = opath.exists() or opath.is_symlink()  # a dangling link is reported, not skipped
    seen: dict[str, str] = {}
    t0 = time.perf_counter()
    questions = read_questions(qpath, seen)
    if len(questions) > MAX_ITEMS:
        raise InputError(f"{qpath}: {len(questions):,} questions, more than the {MAX_ITEMS:,} a set holds")
    if said:
        said(f"read {len(questions):,} questions from {qpath} ({time.perf_counter() - t0:.1f} s)")
    ood = read_ood(opath, seen) if has_ood else []
    if said and has_ood:
        said(f"read {len(ood):,} off-topic queries from {opath}")
    group_questions(questions, qpath)
    other = _non_canonical(qpath, [question_row(q) for q in questions], [q.line for q in questions])
    if has_ood:
        other += _non_canonical(opath, [ood_row(o) for o in ood], [o.line for o in ood])
    return questions, ood, other


def _non_canonical(path: Path, rows: list[dict[str, Any]], lines: list[int]) -> int:
    """Lines of ``path`` that export will not write back byte for byte (another key order,
    escaped characters, a missing field filled with its default; blank lines and a byte
    order mark count once). Lines are split at ``\n`` only, as the file was read."""
    raw = read_user_file(path, field="", max_bytes=MAX_FILE_BYTES).read_bytes()
    if raw == to_jsonl(rows).encode("utf-8"):
        return 0
    text = [line.removesuffix("\r") for line in raw.decode("utf-8-sig").split("\n")]
    differ = sum(
        1 for row, line in zip(rows, lines, strict=True) if json.dumps(row, ensure_ascii=False) != text[line - 1]
    )
    return max(differ, 1)
