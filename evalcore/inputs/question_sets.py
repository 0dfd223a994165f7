"""Question sets: named, versioned ground truth kept in the run store (the ``question_set*``
tables of migration 0008, written by :mod:`evalcore.store.question_sets`).

A set has versions 1, 2, ...; a version is immutable. Every save makes a new version holding
all its items, with its parent (the version it was edited from), author, time and note, so two
people who edit the same version never overwrite each other: the second save becomes its own
version and :class:`Saved` says which versions were saved from the same parent meanwhile.

Items are the records of today's files: in-domain :class:`~evalcore.records.Question` (id,
question, group, variant, and a needle or an exact span) and off-topic
:class:`~evalcore.records.OODQuery` (id, query, kind). A set is checked like the files are
(ids unique across both kinds, one needle per group, kinds near/far); a problem is an
InputError naming the set, the line (the item's position in the exported file) and the field.

Export and import read and write the canonical JSON lines of :mod:`evalcore.inputs.question_set_files`,
every field an import accepted kept (the names re-exported here are that module's).

Against a corpus a set resolves like question files do (:func:`evalcore.inputs.groundtruth.resolve`),
by its needle text, so a set authored on one corpus version is re-resolved against the
canonical text of the corpus a run uses: items that no longer resolve, or now occur twice, are
listed with the reason and excluded, never dropped silently.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from evalcore import testhooks
from evalcore.authors import clean_author, shown
from evalcore.boundary import text as boundary_text
from evalcore.boundary.files import write_file_atomic
from evalcore.errors import InputError, StoreError
from evalcore.inputs.groundtruth import MAX_TEXT, OOD_KINDS, group_questions, resolve
from evalcore.inputs.question_set_files import MAX_ITEMS as MAX_ITEMS
from evalcore.inputs.question_set_files import OOD_FILE as OOD_FILE
from evalcore.inputs.question_set_files import QUESTIONS_FILE as QUESTIONS_FILE
from evalcore.inputs.question_set_files import ood_row as ood_row
from evalcore.inputs.question_set_files import question_row as question_row
from evalcore.inputs.question_set_files import read_folder as read_folder
from evalcore.inputs.question_set_files import to_jsonl as to_jsonl
from evalcore.records import GroundTruth, OODQuery, Question
from evalcore.store.question_sets import (
    ITEM_COLUMNS,
    OOD_COLUMNS,
    frame,
    insert_version,
    item_rows,
    question_set_names,
    version_rows,
)

if TYPE_CHECKING:
    from evalcore.records import Corpus, Run
    from evalcore.store import Store

MAX_NAME = 100
MAX_NOTE = 2_000  # characters of a version's note
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")


@dataclass(frozen=True, slots=True)
class Version:
    """One stored version of a set (without its items)."""

    name: str
    version: int
    parent: int | None
    author: str | None
    created_at: datetime
    note: str
    origin: str
    questions: int = 0
    ood: int = 0

    @property
    def label(self) -> str:
        return f"{self.name}@{self.version}"


@dataclass(frozen=True, slots=True)
class QuestionSet:
    """A version with its items, in order."""

    version: Version
    questions: tuple[Question, ...]
    ood: tuple[OODQuery, ...]

    def ground_truth(self, corpus: Corpus) -> GroundTruth:
        """The set resolved against ``corpus`` (invalid items listed with the reason)."""
        label = self.version.label
        spans, invalid = resolve(list(self.questions), corpus, label)
        source = {"questions": f"question set {label}", "dataset": self.version.name}
        source["dataset_version"] = str(self.version.version)
        return GroundTruth(questions=self.questions, spans=spans, invalid=tuple(invalid), ood=self.ood, source=source)


@dataclass(frozen=True, slots=True)
class Saved:
    """What a save made: the new version, and the versions other people saved from the same
    parent before it (``siblings``: each is kept; nothing was overwritten)."""

    version: Version
    siblings: tuple[Version, ...] = field(default_factory=tuple)
    latest_before: int | None = None
    lock_seconds: float = 0.0  # how long the store was held for writing

    def message(self) -> str:
        v = self.version
        text = f"saved {v.label}" + (f" (from version {v.parent})" if v.parent else " (a new set)")
        if self.siblings:
            others = ", ".join(f"version {s.version} by {_who(s.author)}" for s in self.siblings)
            text += (
                f"; version {v.parent} was also edited meanwhile ({others}): your save is its own "
                "version, nothing was overwritten"
            )
        return text


def _who(author: str | None) -> str:
    return shown(author)


# ----------------------------------------------------------------------- checking


def check_question_set_name(name: str) -> str:
    """A set name: letters, digits, ``.``, ``_``, ``-``, starting with a letter or digit (the
    rules every name follows, :func:`evalcore.boundary.text.check_name`, and these)."""
    name = boundary_text.check_name(name or "", field="question set name", max_len=MAX_NAME)
    if not _NAME.match(name):
        raise InputError(
            f"question set name {name!r}: use letters, digits, '.', '_' or '-' "
            f"(starting with a letter or digit, at most {MAX_NAME} characters)"
        )
    return name


MAX_VERSION = 2**31 - 1  #: the largest version a set can have (the store's INTEGER column)
_VERSION = re.compile(r"[0-9]{1,10}")  # ASCII digits only: str.isdigit() also takes '²' and '١'


def parse_question_set_ref(ref: str) -> tuple[str, int | None]:
    """``NAME`` or ``NAME@VERSION`` -> (name, version or None for the newest). InputError naming
    the version when it is not plain ASCII digits from 1 to :data:`MAX_VERSION` (``mini@²``,
    ``mini@١``, ``mini@0``, ``mini@1_0``)."""
    name, sep, version = (ref or "").partition("@")
    name = check_question_set_name(name)
    if not sep:
        return name, None
    if not _VERSION.fullmatch(version) or not 1 <= int(version) <= MAX_VERSION:
        shown_version = version if len(version) <= 40 else version[:40] + "..."
        raise InputError(
            f"question set {name}: the version after '@' must be a whole number from 1 to {MAX_VERSION} "
            f"(digits 0-9); got {boundary_text.for_terminal(repr(shown_version))}"
        )
    return name, int(version)


def check_items(questions: Sequence[Question], ood: Sequence[OODQuery], where: str) -> None:
    """InputError "WHERE:LINE: ..." for what read_questions/read_ood refuse in a file."""
    seen: dict[str, str] = {}
    if not questions:
        raise InputError(f"{where}: no questions")
    if len(questions) + len(ood) > MAX_ITEMS:
        raise InputError(f"{where}: {len(questions) + len(ood):,} items, more than the {MAX_ITEMS:,} a set holds")
    for q in questions:
        at = f"{where}:{q.line}"
        _check_texts(at, (("id", q.query_id), ("question", q.question), ("group", q.group), ("variant", q.variant)))
        _check_texts(at, (("needle", q.needle), ("document", q.document)))
        for key, value in (("id", q.query_id), ("question", q.question), ("group", q.group)):
            if not value.strip():
                raise InputError(f"{at}: field {key!r} is empty")
        if q.needle is not None:
            if not q.needle.strip():
                raise InputError(f"{at}: field 'needle' is empty")
        elif q.document is None or q.start is None or q.end is None:
            raise InputError(f"{at}: missing field 'needle' (or 'document', 'start', 'end')")
        elif not 0 <= q.start < q.end:
            raise InputError(f"{at}: span must satisfy 0 <= start < end, got start={q.start}, end={q.end}")
        if q.query_id in seen:
            raise InputError(f"{at}: duplicate id {q.query_id!r} (first at {seen[q.query_id]})")
        seen[q.query_id] = at
    group_questions(list(questions), where)
    for o in ood:
        at = f"{where} (off-topic):{o.line}"
        _check_texts(at, (("id", o.query_id), ("query", o.query), ("kind", o.kind)))
        for key, value in (("id", o.query_id), ("query", o.query)):
            if not value.strip():
                raise InputError(f"{at}: field {key!r} is empty")
        if o.kind not in OOD_KINDS:
            raise InputError(f"{at}: field 'kind' must be one of {', '.join(OOD_KINDS)}, got {o.kind!r}")
        if o.query_id in seen:
            raise InputError(f"{at}: duplicate id {o.query_id!r} (first at {seen[o.query_id]})")
        seen[o.query_id] = at


def _check_texts(at: str, fields: Sequence[tuple[str, object]]) -> None:
    """Each text field as :func:`evalcore.boundary.text.clean_text` checks it (None: absent):
    an item typed on a screen is held to what a file is held to. One quick look at all the
    fields together first; the exact check only when that finds something."""
    texts = [value for _, value in fields if value is not None]
    strings = [value for value in texts if isinstance(value, str)]
    if (
        len(strings) == len(texts)
        and all(len(v) <= MAX_TEXT for v in strings)
        and boundary_text.is_plain("".join(strings))
    ):
        return
    for key, value in fields:
        if value is not None:
            if not isinstance(value, str):
                raise InputError(f"{at}: field {key!r} must be a string, got {type(value).__name__}")
            boundary_text.clean_text(value, field=f"{at}: field {key!r}", max_len=MAX_TEXT)


def numbered(questions: Sequence[Question], ood: Sequence[OODQuery]) -> tuple[list[Question], list[OODQuery]]:
    """The items with ``line`` = their 1-based position (their line in the exported files)."""
    return (
        [q if q.line == i else replace(q, line=i) for i, q in enumerate(questions, start=1)],
        [o if o.line == i else replace(o, line=i) for i, o in enumerate(ood, start=1)],
    )


# ---------------------------------------------------------------------- the store


def _version(row: tuple[Any, ...]) -> Version:
    name, version, parent, author, created_at, note, origin, nq, no = row
    return Version(name, int(version), parent, author, created_at, note or "", origin or "", int(nq), int(no))


def versions(store: Store, name: str | None = None) -> list[Version]:
    """Every version (of ``name``, or of every set), by name then version."""
    return [_version(r) for r in version_rows(store, name)]


def names(store: Store) -> list[str]:
    return question_set_names(store)


def load_question_set(store: Store, ref: str) -> QuestionSet:
    """The items of ``NAME`` (its newest version) or ``NAME@VERSION``; StoreError when unknown."""
    name, wanted = parse_question_set_ref(ref)
    found = versions(store, name)
    if not found:
        known = names(store)
        hint = f" (sets: {', '.join(known)})" if known else " (the store has no question set; see question-set import)"
        raise StoreError(f"no question set {name!r}{hint}")
    if wanted is None:
        version = found[-1]
    else:
        matches = [v for v in found if v.version == wanted]
        if not matches:
            raise StoreError(f"question set {name!r} has no version {wanted} (versions 1 to {found[-1].version})")
        version = matches[0]

    qrows, orows = item_rows(store, name, version.version)
    questions = tuple(
        Question(
            query_id=r[1],
            question=r[2],
            group=r[3],
            variant=r[4],
            needle=r[5],
            line=r[0],
            document=r[6],
            start=r[7],
            end=r[8],
            extra=r[9],
        )  # fmt: skip
        for r in qrows
    )
    ood = tuple(OODQuery(query_id=r[1], query=r[2], kind=r[3], line=r[0], extra=r[4]) for r in orows)
    return QuestionSet(version, questions, ood)


def save(
    store: Store,
    name: str,
    questions: Sequence[Question],
    ood: Sequence[OODQuery],
    *,
    parent: int | None,
    author: str | None,
    note: str = "",
    origin: str = "",
) -> Saved:
    """Store a new version of ``name`` holding exactly these items (checked first; nothing is
    written when a check fails). ``parent``: the version they were edited from (None: a new
    set, refused when the name is taken). The version number is the next free one, taken
    inside the write's transaction, so concurrent saves never collide."""
    name = check_question_set_name(name)
    note = boundary_text.clean_text(note or "", field="note", max_len=MAX_NOTE).strip()
    questions, ood = numbered(questions, ood)
    check_items(questions, ood, f"question set {name}")
    author = clean_author(author)
    items, off_topic = _frames(questions, ood)  # prepared before the store is opened for writing
    done = insert_version(store, name, parent, author, note, origin, items, off_topic)
    made = Version(name, done.version, parent, author, done.created, note, origin, len(questions), len(ood))
    siblings = tuple(v for v in versions(store, name) if v.version in done.siblings)
    return Saved(made, siblings, done.before[-1] if done.before else None, done.lock_seconds)


def _frames(questions: Sequence[Question], ood: Sequence[OODQuery]) -> tuple[Any, Any]:
    """The rows the store inserts, as the frames :func:`evalcore.store.question_sets.frame` makes."""
    items = frame(
        ITEM_COLUMNS,
        {
            "position": [q.line for q in questions],
            "item_id": [q.query_id for q in questions],
            "question": [q.question for q in questions],
            "group_id": [q.group for q in questions],
            "variant": [q.variant for q in questions],
            "needle": [q.needle for q in questions],
            "doc_id": [q.document for q in questions],
            "start": [q.start for q in questions],
            "end": [q.end for q in questions],
            "extra": [q.extra for q in questions],
        },
    )
    off_topic = frame(
        OOD_COLUMNS,
        {
            "position": [o.line for o in ood],
            "item_id": [o.query_id for o in ood],
            "query": [o.query for o in ood],
            "kind": [o.kind for o in ood],
            "extra": [o.extra for o in ood],
        },
    )
    return items, off_topic


def import_folder(
    store: Store,
    folder: str | Path,
    name: str,
    *,
    author: str | None,
    note: str = "",
    said: Callable[[str], None] | None = None,
) -> tuple[Saved, int]:
    """``question-set import``: the folder's files as a new set, or as a new version of ``name``
    (from its newest version). Returns what was saved and the count of non-canonical lines.
    The name and the note are checked before the files are read; ``said`` hears a line as
    each step ends (a progress line for a large set)."""
    name = check_question_set_name(name)
    boundary_text.clean_text(note or "", field="--note", max_len=MAX_NOTE)
    t0 = time.perf_counter()
    questions, ood, other = read_folder(folder, said)
    found = versions(store, name)
    parent = found[-1].version if found else None
    testhooks.pause("question set: versions read")  # between the read and the write's transaction
    saved = save(
        store, name, questions, ood, parent=parent, author=author, note=note, origin=f"import {Path(folder).resolve()}"
    )
    if said:
        said(
            f"stored {saved.version.label} in {time.perf_counter() - t0:.1f} s "
            f"(the store was held for writing {saved.lock_seconds:.2f} s of it)"
        )
    return saved, other


def export_folder(store: Store, ref: str, folder: str | Path) -> tuple[Version, list[Path]]:
    """``question-set export``: write questions.jsonl (and ood.jsonl when the version has off-topic
    items) into ``folder`` (created); refuses to replace an existing file, and never writes
    through a symbolic link (:func:`evalcore.boundary.files.write_file_atomic`)."""
    qs = load_question_set(store, ref)
    folder = Path(folder)
    targets = [(QUESTIONS_FILE, [question_row(q) for q in qs.questions])]
    if qs.ood:
        targets.append((OOD_FILE, [ood_row(o) for o in qs.ood]))
    if folder.is_symlink():
        raise InputError(f"{folder}: is a symbolic link; export into a real folder")
    if folder.exists() and not folder.is_dir():
        raise InputError(f"{folder}: is a file, not a folder")
    for file, _ in targets:
        path = folder / file
        if path.is_symlink():
            raise InputError(f"{path}: is a symbolic link; evalcore never writes through one")
        if path.exists():
            raise InputError(f"{path}: already exists; export into an empty folder")
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise InputError(f"{folder}: cannot write ({exc.strerror or exc})") from None
    written: list[Path] = []
    try:
        for file, rows in targets:
            written.append(write_file_atomic(folder, file, to_jsonl(rows), exist_ok=False))
    except InputError:
        for path in written:  # all the files or none
            path.unlink(missing_ok=True)
        raise
    return qs.version, written


def describe_question_set(qs: QuestionSet) -> dict[str, Any]:
    """What ``question-set show`` prints: the version, its items by group and variant."""
    v = qs.version
    groups = {q.group for q in qs.questions}
    variants: dict[str, int] = {}
    for q in qs.questions:
        variants[q.variant or "(none)"] = variants.get(q.variant or "(none)", 0) + 1
    return {
        "set": v.label,
        "parent": v.parent,
        "author": _who(v.author),
        "created_at": str(v.created_at),
        "note": v.note,
        "origin": v.origin,
        "questions": len(qs.questions),
        "ground_truths": len(groups),
        "variants": variants,
        "documents": len({q.document for q in qs.questions if q.document}),
        "ood": {k: sum(o.kind == k for o in qs.ood) for k in OOD_KINDS},
    }


def _present(value: Any) -> bool:
    """A stored value, not None / NaN / pandas' NA (a runs row read through a DataFrame)."""
    return value is not None and str(value) not in ("", "nan", "<NA>", "None")


def ground_truth_label(run: Run) -> str:
    """Which ground truth a run (its ``runs`` row) used: ``question set NAME@V`` or its files."""
    name, version = run.question_set, run.question_set_version
    if _present(name) and _present(version):
        return f"question set {name}@{int(str(version).split('.')[0])}"
    path = run.questions_path
    return f"question files ({path})" if _present(path) else "question files"


def versions_note(first: Run, second: Run) -> str | None:
    """A sentence when two runs (their ``runs`` rows) did not use the same question-set
    version, else None: what Compare and ``gate`` print beside their figures."""
    a, b = ground_truth_label(first), ground_truth_label(second)
    if a == b or (a.startswith("question files") and b.startswith("question files")):
        return None
    same_set = _present(first.question_set) and first.question_set == second.question_set
    what = (
        f"different versions of question set {first.question_set}"
        if same_set
        else "ground truth from different sources"
    )
    return f"the runs used {what}: {first.run_id} {a}, {second.run_id} {b}"
