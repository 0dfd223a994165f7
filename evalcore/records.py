"""Small typed records shared by every layer.

Offsets are Unicode code point offsets into a document's canonical text, half-open
``[start, end)`` (METHODS.md "The words"). Field names follow the field: ``doc_id``,
``query_id``, ``chunk_id``, ``run_id``.

This is the ground floor: it imports no other evalcore module, so every package may use it.
:class:`Extraction` (what an extractor made of one file) lives here because both the extractors
(:mod:`evalcore.inputs.extractors`, which re-exports it) and the extraction cache
(:mod:`evalcore.store.caches`) use it, and ``inputs/`` stands above ``store/``.
"""

from __future__ import annotations

import bisect
import hashlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from itertools import pairwise
from typing import Any, SupportsFloat, SupportsInt, cast

# --- what an extractor made of one file (plain data: the extractors in inputs/ make it, the
# extraction cache in store/ keeps it; both stand above this module) ----------------------------


@dataclass(frozen=True, slots=True)
class Extraction:
    """What an extractor made of one file.

    ``page_starts[i]`` is the offset in ``text`` where page ``i + 1`` begins (paged formats
    only; empty otherwise): the page map. ``notes`` are things a reader of the document
    should know that did not stop it (e.g. pages without text).
    """

    title: str
    text: str
    page_starts: tuple[int, ...] = ()
    notes: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        check_page_starts(self.page_starts, len(self.text))


def check_page_starts(page_starts: tuple[int, ...], length: int) -> None:
    """ValueError unless the page map starts at 0 and rises strictly within the text."""
    if not page_starts:
        return
    if page_starts[0] != 0:
        raise ValueError(f"page map must start at offset 0, got {page_starts[0]}")
    for a, b in pairwise(page_starts):
        if b <= a:
            raise ValueError(f"page map must rise strictly, got {a} then {b}")
    if page_starts[-1] > length:
        raise ValueError(f"page map offset {page_starts[-1]} is beyond the text ({length} characters)")


def page_of(page_starts: Sequence[int] | None, offset: int) -> int | None:
    """1-based page of the character at ``offset``; None for a document without pages.

    The blank line that joins two pages belongs to the page before it.
    """
    if page_starts is None or len(page_starts) == 0:
        return None
    return max(1, bisect.bisect_right(page_starts, offset))


@dataclass(frozen=True, slots=True)
class Document:
    """One extracted document: canonical text plus the stamp of the extractor that made it.

    ``page_starts`` is the page map of a paged document (PDF): page ``i + 1`` begins at
    offset ``page_starts[i]`` (empty for other formats). ``notes`` tell what extraction
    met without failing (e.g. pages without text); ``file_hash`` is the sha256 of the
    file's bytes ("" when the document did not come from a file).
    """

    doc_id: str
    title: str
    source_type: str
    text: str
    extractor: str
    extractor_version: str
    path: str = ""
    page_starts: tuple[int, ...] = ()
    notes: tuple[str, ...] = ()
    file_hash: str = ""

    @property
    def pages(self) -> int | None:
        """Number of pages (None for a document without pages)."""
        return len(self.page_starts) or None

    def page_of(self, offset: int) -> int | None:
        """1-based page of the character at ``offset`` (None without pages)."""
        return page_of(self.page_starts, offset)

    @property
    def sections(self) -> int:
        """Number of ``## `` section headings."""
        return sum(1 for line in self.text.split("\n") if line.startswith("## "))


@dataclass(frozen=True, slots=True)
class FailedDocument:
    """A document that could not be read or extracted, with the reason."""

    doc_id: str
    path: str
    reason: str


@dataclass(frozen=True, slots=True)
class Corpus:
    """The documents of one corpus; failed ones are kept beside, never dropped silently."""

    root: str
    documents: tuple[Document, ...]
    failed: tuple[FailedDocument, ...] = ()

    @property
    def fingerprint(self) -> str:
        """sha256 over ids, extractor stamps and canonical texts, in id order."""
        h = hashlib.sha256()
        for d in sorted(self.documents, key=lambda d: d.doc_id):
            for part in (d.doc_id, d.extractor, d.extractor_version, d.text):
                h.update(part.encode("utf-8"))
                h.update(b"\0")
        return h.hexdigest()

    @property
    def characters(self) -> int:
        return sum(len(d.text) for d in self.documents)

    def by_id(self) -> dict[str, Document]:
        return {d.doc_id: d for d in self.documents}


@dataclass(frozen=True, slots=True)
class Strategy:
    """A chunking strategy made of three independent ingredients (METHODS.md "The words")."""

    name: str
    boundaries: bool
    header: bool
    overlap: int = 0
    size: int = 512
    intro: bool = False  # boundaries: also chunk the text before the first ## heading

    def describe(self) -> str:
        parts = ["boundaries" if self.boundaries else "blind"]
        if self.intro:
            parts.append("intro")
        if self.header:
            parts.append("header")
        if self.overlap:
            parts.append(f"overlap {self.overlap}")
        return "+".join(parts) + f" ({self.size} chars)"


@dataclass(frozen=True, slots=True)
class Chunk:
    """One chunk of one document.

    ``text`` is what is embedded and searched (header + overlap + content);
    ``content`` = canonical[start:end] is what is quoted back to users;
    the evidence range ``[evidence_start, end)`` is the document range ``text`` holds.
    ``header`` is the header line prefix of ``text`` ("" when the strategy has none).
    """

    doc_id: str
    section: str
    text: str
    content: str
    start: int
    end: int
    evidence_start: int
    header: str = ""


@dataclass(frozen=True, slots=True)
class Question:
    """One in-domain query as read from questions.jsonl (needle not yet resolved)."""

    query_id: str
    question: str
    group: str
    variant: str
    needle: str | None
    line: int
    document: str | None = None
    start: int | None = None
    end: int | None = None
    extra: str | None = None  # the line's other fields, as the JSON text of an object (None: none)


@dataclass(frozen=True, slots=True)
class OODQuery:
    """One out-of-domain query from ood.jsonl; ``kind`` is ``near`` or ``far``."""

    query_id: str
    query: str
    kind: str
    line: int
    extra: str | None = None  # the line's other fields, as the JSON text of an object (None: none)


@dataclass(frozen=True, slots=True)
class Span:
    """A resolved ground truth: exactly one span of one document's canonical text."""

    doc_id: str
    start: int
    end: int


@dataclass(frozen=True, slots=True)
class InvalidNeedle:
    """A ground truth that cannot be scored, with the reason; excluded, never dropped silently."""

    group: str
    query_ids: tuple[str, ...]
    needle: str
    reason: str
    line: int


@dataclass(frozen=True, slots=True)
class GroundTruth:
    """Questions with their resolved spans, invalid needles and out-of-domain queries."""

    questions: tuple[Question, ...]
    spans: dict[str, Span]  # group -> span, valid groups only
    invalid: tuple[InvalidNeedle, ...]
    ood: tuple[OODQuery, ...]
    source: dict[str, str] = field(default_factory=dict)  # "questions"/"ood" -> path

    @property
    def valid_questions(self) -> tuple[Question, ...]:
        return tuple(q for q in self.questions if q.group in self.spans)


@dataclass(frozen=True, slots=True)
class Hit:
    """One ranked hit. Every hit, from any retriever, carries its cosine distance."""

    rank: int
    chunk_id: int
    distance: float
    score: float
    correct: bool = False


@dataclass(frozen=True, slots=True, order=True)
class Configuration:
    """A chunking strategy x retriever pair, labelled ``"E/dense"``.

    One label rule for every screen, file and message: :attr:`label` writes it and
    :meth:`parse` reads it back. Retriever names never hold a ``/``; a strategy name may
    (the label is split at its last ``/``).
    """

    strategy: str
    retriever: str

    def __post_init__(self) -> None:
        if not self.strategy or not self.retriever or "/" in self.retriever:
            raise ValueError(
                f"a configuration needs a strategy and a retriever without '/', got "
                f"{self.strategy!r} x {self.retriever!r}"
            )

    @property
    def label(self) -> str:
        return f"{self.strategy}/{self.retriever}"

    def __str__(self) -> str:
        return self.label

    @classmethod
    def parse(cls, label: str) -> Configuration:
        """``"E/dense"`` -> ``Configuration("E", "dense")``; ValueError naming the label otherwise."""
        strategy, sep, retriever = str(label).strip().rpartition("/")
        if not sep or not strategy or not retriever:
            raise ValueError(f"configuration must look like 'STRATEGY/RETRIEVER' (e.g. 'E/dense'), got {label!r}")
        return cls(strategy, retriever)


@dataclass(frozen=True, slots=True, order=True)
class RunConfiguration:
    """A configuration of one stored run: what a comparison across runs pairs.

    Labelled by the configuration first, then the run (``"E/dense · run demo 20261129-…"``),
    so a label cut short by a chart axis still names the configuration.
    """

    run_id: str
    configuration: Configuration
    run_name: str = field(default="", compare=False)

    def label(self, with_run: bool = True) -> str:
        """``"E/dense"``, or with the run: ``"E/dense · run demo 20261129-225237-0ff462"``."""
        if not with_run:
            return self.configuration.label
        name = f"{self.run_name} " if self.run_name else ""
        return f"{self.configuration.label} · run {name}{self.run_id}"


def _missing(value: object) -> bool:
    """None, or a missing value as a data frame reads it (NaN, NaT)."""
    return value is None or value != value


def _text(value: object) -> str | None:
    return None if _missing(value) else str(value)


def _whole(value: object) -> int | None:
    return None if _missing(value) else int(cast("SupportsInt", value))


def _names(value: object) -> tuple[str, ...]:
    return tuple(s for s in str(value).split(",") if s) if not _missing(value) else ()


@dataclass(frozen=True, slots=True)
class Run:
    """One stored run: its row of ``runs`` (:meth:`evalcore.store.Store.run`,
    :func:`evalcore.read.refs.resolve_run`), typed.

    ``strategies`` and ``retrievers`` are the names the run was asked for, in its order;
    ``settings`` the run's sizes, k list, seed and versions (empty for a run without them);
    a missing value (a run that stopped early has no model) is None. ``row`` is the row as
    it was read (:meth:`to_json`).
    """

    run_id: str
    name: str
    status: str
    created_at: datetime | None = None
    reason: str | None = None
    stage: str | None = None
    progress: float | None = None
    finished_at: datetime | None = None
    pid: int | None = None
    host: str | None = None
    corpus_root: str | None = None
    corpus_fingerprint: str | None = None
    questions_path: str | None = None
    ood_path: str | None = None
    model: str | None = None
    model_dim: int | None = None
    pipeline_version: str | None = None
    strategies: tuple[str, ...] = ()
    retrievers: tuple[str, ...] = ()
    rerank_note: str | None = None
    new_embeddings: int | None = None
    cached_embeddings: int | None = None
    settings: Mapping[str, Any] = field(default_factory=dict)
    question_set: str | None = None
    question_set_version: int | None = None
    row: Mapping[str, Any] = field(default_factory=dict, compare=False, repr=False)

    @classmethod
    def from_row(cls, row: Mapping[str, Any]) -> Run:
        """The run of a ``runs`` row (``settings`` already parsed from its JSON text)."""

        def when(key: str) -> datetime | None:
            value = row.get(key)
            return None if _missing(value) else value

        progress = row.get("progress")
        return cls(
            run_id=str(row["run_id"]),
            name=str(row["name"]),
            status=str(row["status"]),
            created_at=when("created_at"),
            reason=_text(row.get("reason")),
            stage=_text(row.get("stage")),
            progress=None if _missing(progress) else float(cast("SupportsFloat", progress)),
            finished_at=when("finished_at"),
            pid=_whole(row.get("pid")),
            host=_text(row.get("host")),
            corpus_root=_text(row.get("corpus_root")),
            corpus_fingerprint=_text(row.get("corpus_fingerprint")),
            questions_path=_text(row.get("questions_path")),
            ood_path=_text(row.get("ood_path")),
            model=_text(row.get("model")),
            model_dim=_whole(row.get("model_dim")),
            pipeline_version=_text(row.get("pipeline_version")),
            strategies=_names(row.get("strategies")),
            retrievers=_names(row.get("retrievers")),
            rerank_note=_text(row.get("rerank_note")),
            new_embeddings=_whole(row.get("new_embeddings")),
            cached_embeddings=_whole(row.get("cached_embeddings")),
            settings=row.get("settings") or {},
            question_set=_text(row.get("question_set")),
            question_set_version=_whole(row.get("question_set_version")),
            row=dict(row),
        )

    def to_json(self) -> dict[str, Any]:
        """The row as it was read (``settings`` parsed): what a run looked like as a dict."""
        return dict(self.row)


@dataclass(frozen=True, slots=True)
class ValidationReport:
    """What checking a corpus and its ground truth found (``evalcore validate``, the New run
    screen, a job before it is queued): corpus counts, the documents that failed (with their
    reasons), the ground truths and in-domain queries that can be scored, the invalid needles
    (with their lines and reasons), and the out-of-domain queries near and far.

    :meth:`to_json` is what ``evalcore validate --json`` prints (lists at the top level, so a
    printer shows one line an item), the attributes as JSON.
    """

    documents: int
    failed: tuple[FailedDocument, ...]
    sections: int
    characters: int
    ground_truths: int  # distinct groups of the in-domain questions
    valid_ground_truths: int
    invalid: tuple[InvalidNeedle, ...]
    valid_queries: int
    queries: int
    ood_near: int
    ood_far: int
    ood: int  # every out-of-domain query

    @classmethod
    def of(cls, corpus: Corpus, gt: GroundTruth) -> ValidationReport:
        return cls(
            documents=len(corpus.documents),
            failed=corpus.failed,
            sections=sum(d.sections for d in corpus.documents),
            characters=corpus.characters,
            ground_truths=len({q.group for q in gt.questions}),
            valid_ground_truths=len(gt.spans),
            invalid=gt.invalid,
            valid_queries=len(gt.valid_questions),
            queries=len(gt.questions),
            ood_near=sum(q.kind == "near" for q in gt.ood),
            ood_far=sum(q.kind == "far" for q in gt.ood),
            ood=len(gt.ood),
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "documents": self.documents,
            "failed": [{"doc_id": f.doc_id, "path": f.path, "reason": f.reason} for f in self.failed],
            "sections": self.sections,
            "characters": self.characters,
            "ground_truths": {
                "total": self.ground_truths,
                "valid": self.valid_ground_truths,
                "invalid": len(self.invalid),
            },
            "invalid_ground_truths": [
                {
                    "group": i.group,
                    "query_ids": list(i.query_ids),
                    "needle": i.needle,
                    "reason": i.reason,
                    "line": i.line,
                }
                for i in self.invalid
            ],
            "in_domain_queries": {"valid": self.valid_queries, "total": self.queries},
            "ood": {"near": self.ood_near, "far": self.ood_far, "total": self.ood},
        }
