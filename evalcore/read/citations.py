"""Citations and the prompt (METHODS.md "One query"); the seed's ``buildContext`` is the reference.

The hits that pass the gate are numbered [1]..[n]. Each citation carries the document id and
name, a label (the section, or the document name when the chunk has no section), a locator
fragment, the quote and the distance.

Locators (METHODS.md "One query" and "The words"): a chunk of a paged document (PDF: its page
map ``page_starts``) is cited as ``#page=N``, N the page of its first content character; its label ends with the
pages it covers (``p. 3``, or ``pp. 3-4`` for a chunk that runs onto the next page). Any
other chunk is cited as ``#char=from,to`` over the canonical text (RFC 5147). The quote is
the chunk's ``content`` — its own words at ``[start, end)`` of the canonical text — never
the embedded ``text`` (which holds a header and overlap that are not at that place). The
model only ever sees numbers: it never writes a link or a document name. No model is
called here.
"""

from __future__ import annotations

import logging
import math
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Protocol

from evalcore.inputs.extractors import page_of
from evalcore.measures.threshold import COSINE, DEFAULT_TOP, Axis, gate

log = logging.getLogger(__name__)

INSTRUCTIONS = (
    "Answer using ONLY the numbered sources below. Cite every claim as [n].\n"
    "If the sources do not contain the answer, say so and stop.\n\n"
)


def _number(value: float) -> str:
    """Shortest text that reads back as the same number: 0.675 -> "0.675", 12.0 -> "12"."""
    x = float(value)
    if not math.isfinite(x):
        raise ValueError(f"expected a finite number, got {value!r}")
    return str(int(x)) if x.is_integer() else repr(x)


def _offset(value: object, name: str) -> int:
    if isinstance(value, bool) or not hasattr(value, "__index__") or int(value) < 0:
        raise ValueError(f"{name} must be a non-negative integer, got {value!r}")
    return int(value)


def char_fragment(start: int, end: int) -> str:
    """RFC 5147 text fragment ``#char=start,end``: code point offsets, half-open."""
    start, end = _offset(start, "start"), _offset(end, "end")
    if end < start:
        raise ValueError(f"end must not be before start, got [{start}, {end})")
    return f"#char={start},{end}"


def page_fragment(n: int) -> str:
    """PDF open parameter ``#page=N`` (pages count from 1)."""
    if _offset(n, "page") < 1:
        raise ValueError(f"page must be >= 1, got {n!r}")
    return f"#page={int(n)}"


def media_fragment(start: float, end: float | None = None) -> str:
    """W3C media fragment ``#t=start,end`` in seconds (``#t=start`` without an end)."""
    if float(start) < 0:
        raise ValueError(f"start must be >= 0 seconds, got {start!r}")
    if end is None:
        return f"#t={_number(start)}"
    if float(end) <= float(start):
        raise ValueError(f"end must be after start, got {start!r}, {end!r}")
    return f"#t={_number(start)},{_number(end)}"


def page_range(page_starts: Sequence[int] | None, start: int, end: int) -> tuple[int, int] | None:
    """``(first, last)`` 1-based pages of the content ``[start, end)``: the pages of its first
    and last characters. None for a document without a page map."""
    if page_starts is None or len(page_starts) == 0:
        return None
    start, end = _offset(start, "start"), _offset(end, "end")
    first = page_of(page_starts, start)
    last = page_of(page_starts, max(start, end - 1))
    assert first is not None and last is not None  # the page map is not empty
    return first, last


def pages_label(first: int, last: int) -> str:
    """``p. 3`` for one page, ``pp. 3-4`` for a range."""
    return f"p. {first}" if first == last else f"pp. {first}-{last}"


def locator(start: int, end: int, page_starts: Sequence[int] | None = None) -> str:
    """The locator of the content ``[start, end)``: ``#page=N`` (N the page of its first
    character) when the document has a page map, else ``#char=start,end``."""
    pages = page_range(page_starts, start, end)
    return page_fragment(pages[0]) if pages else char_fragment(start, end)


class ChunkLike(Protocol):
    """What :meth:`Source.from_chunk` reads: the fields of :class:`evalcore.records.Chunk`."""

    @property
    def doc_id(self) -> str: ...
    @property
    def section(self) -> str | None: ...
    @property
    def start(self) -> int | None: ...
    @property
    def end(self) -> int | None: ...
    @property
    def content(self) -> str: ...


@dataclass(frozen=True, slots=True)
class Source:
    """One kept hit with its chunk: ``content`` is ``canonical[start:end]`` of document ``doc_id``.

    ValueError when ``[start, end)`` is not a range of ``len(content)`` code points — a
    locator that does not fit its quote would point at the wrong words.
    """

    doc_id: str
    doc_name: str
    section: str | None
    start: int | None  # None (with end) for a chunk made elsewhere that could not be located
    end: int | None
    content: str
    distance: float
    page_starts: tuple[int, ...] = ()  # the document's page map (PDF); empty for text

    def __post_init__(self) -> None:
        if self.start is None and self.end is None:
            return  # not located: quoted as given, no locator
        start, end = _offset(self.start, "start"), _offset(self.end, "end")
        if end - start != len(self.content):
            raise ValueError(
                f"source {self.doc_id!r}: range [{start}, {end}) does not hold the "
                f"{len(self.content)} code points of its content"
            )

    @classmethod
    def from_chunk(cls, chunk: ChunkLike, doc_name: str, distance: float, page_starts: Sequence[int] = ()) -> Source:
        """From an :class:`evalcore.records.Chunk` (or anything with its fields); ``page_starts``
        is its document's page map (``Document.page_starts``)."""
        return cls(
            chunk.doc_id,
            doc_name,
            chunk.section,
            chunk.start,
            chunk.end,
            chunk.content,
            float(distance),
            tuple(page_starts),
        )

    @property
    def pages(self) -> tuple[int, int] | None:
        """``(first, last)`` page of the content, None without a page map (or a location)."""
        if self.start is None or self.end is None:
            return None
        return page_range(self.page_starts, self.start, self.end)


@dataclass(frozen=True, slots=True)
class Citation:
    """One numbered source as shown in the citation table (never shown to the model as a link)."""

    index: int
    doc_id: str
    doc_name: str
    label: str
    fragment: str
    quote: str
    distance: float
    page: int | None = None  # page of the first quoted character (paged documents)
    last_page: int | None = None  # page of the last one (> page when the quote runs on)


_HEADING = re.compile(r"#+( .*)?")


def heading_only(content: str) -> bool:
    """True when ``content`` holds no text beyond heading lines (``# Title``, ``## Section``):
    a title-only chunk (a document's title before a paragraph too long to join it). It has
    nothing to quote, so it is never cited, even when the gate keeps it."""
    lines = [line.strip() for line in content.splitlines() if line.strip()]
    return all(_HEADING.fullmatch(line) for line in lines)


@dataclass(frozen=True, slots=True)
class PromptContext:
    """The prompt for the model, the citation table, and the prompt's token count (None when
    no counter was given). ``uncited``: the ranks (1-based, among the hits given) the gate
    kept but that are not cited, being headings only (:func:`heading_only`)."""

    prompt: str
    citations: tuple[Citation, ...]
    pieces: int | None = None
    uncited: tuple[int, ...] = ()

    @property
    def answered(self) -> bool:
        return True


@dataclass(frozen=True, slots=True)
class NoAnswer:
    """Nothing passed the gate (or only headings did: ``uncited``, as in :class:`PromptContext`):
    the pipeline answers NO ANSWER before any model is called."""

    question: str
    threshold: float
    message: str
    uncited: tuple[int, ...] = ()

    @property
    def answered(self) -> bool:
        return False


def label(source: Source) -> str:
    """The citation label: the chunk's section, or the document name when it has none; for a
    paged document followed by its pages (``Install · p. 3``, ``Install · pp. 3-4``)."""
    name = source.section if source.section else source.doc_name
    pages = source.pages
    return f"{name} · {pages_label(*pages)}" if pages else name


def citation(index: int, source: Source) -> Citation:
    """Citation number ``index`` for ``source``: quote = content, fragment = :func:`locator`."""
    pages = source.pages
    fragment = (
        "" if source.start is None or source.end is None else locator(source.start, source.end, source.page_starts)
    )
    return Citation(
        index,
        source.doc_id,
        source.doc_name,
        label(source),
        fragment,
        source.content,
        float(source.distance),
        pages[0] if pages else None,
        pages[1] if pages else None,
    )


def build_context(
    question: str, sources: Sequence[Source], count_pieces: Callable[[str], int] | None = None
) -> PromptContext:
    """Number ``sources`` [1]..[n] and build the seed's prompt exactly::

        Answer using ONLY the numbered sources below. Cite every claim as [n].
        If the sources do not contain the answer, say so and stop.

        SOURCES
        [1] <doc name> - <label>
        <quote>

        [2] ...

        QUESTION
        <question>

    ``count_pieces`` (e.g. a tokenizer's length) gives ``pieces``. ValueError without sources
    (that case is :func:`no_answer`).
    """
    if not sources:
        raise ValueError(f"no sources for {question!r}: nothing passed the gate, use no_answer()")
    citations = tuple(citation(i, s) for i, s in enumerate(sources, start=1))
    blocks = "\n\n".join(f"[{c.index}] {c.doc_name} - {c.label}\n{c.quote}" for c in citations)
    prompt = f"{INSTRUCTIONS}SOURCES\n{blocks}\n\nQUESTION\n{question}"
    pieces = int(count_pieces(prompt)) if count_pieces is not None else None
    return PromptContext(prompt, citations, pieces)


def no_answer(question: str, threshold: float, axis: Axis = COSINE) -> str:
    """``NO ANSWER: nothing under cosine distance 0.675 for "<question>"`` (for a gate on an
    external retriever's own score: ``nothing with score >= 12.5`` or ``nothing under score 0.4``)."""
    if axis.column == "distance":
        what = f"under cosine distance {_number(threshold)}"
    elif axis.higher_is_closer:
        what = f"with score >= {_number(threshold)}"
    else:
        what = f"under score {_number(threshold)}"
    return f'NO ANSWER: nothing {what} for "{question}"'


def context_for_query(
    question: str,
    hits: Sequence[Source],
    threshold: float,
    top: int = DEFAULT_TOP,
    count_pieces: Callable[[str], int] | None = None,
    axis: Axis = COSINE,
) -> PromptContext | NoAnswer:
    """Gate ``hits`` (in rank order) at ``threshold`` and build the context, or NO ANSWER.

    The gate is :func:`evalcore.measures.threshold.gate`: from the first ``top`` hits, those with
    distance < threshold (or, on an external retriever's score, those the ``axis`` keeps),
    numbered in rank order; a source's ``distance`` holds the value the gate reads. A kept
    hit that is headings only (:func:`heading_only`) is not cited (its rank is in
    ``uncited``); when nothing else was kept the answer is NO ANSWER. Both results have
    ``answered``.
    """
    kept = gate([h.distance for h in hits], threshold, top, axis.higher_is_closer)
    if not kept:
        return NoAnswer(question, float(threshold), no_answer(question, threshold, axis))
    uncited = tuple(i + 1 for i in kept if heading_only(hits[i].content))
    cited = [hits[i] for i in kept if i + 1 not in uncited]
    if not cited:  # only headings passed: no source to give the model
        message = no_answer(question, threshold, axis).replace("NO ANSWER: nothing ", "NO ANSWER: only headings ", 1)
        return NoAnswer(question, float(threshold), message, uncited)
    context = build_context(question, cited, count_pieces)
    return PromptContext(context.prompt, context.citations, context.pieces, uncited)
