"""Small typed records shared by every layer.

Offsets are Unicode code point offsets into a document's canonical text, half-open
``[start, end)`` (METHODS.md "The words"). Field names follow the field: ``doc_id``,
``query_id``, ``chunk_id``, ``run_id``.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field

from evalcore.inputs.extractors import page_of


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
