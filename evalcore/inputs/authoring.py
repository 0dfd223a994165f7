"""Authoring a question set on a corpus (the Questions screen): a selection checked as a
needle exactly as a run resolves it, a document's sections and which of them a set covers,
search in the corpus, and candidate needles (:mod:`evalcore.inputs.suggest`)."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from evalcore.chunking import chunk_document, parse_strategies
from evalcore.inputs.groundtruth import NeedleIndex, resolve
from evalcore.inputs.suggest import suggest
from evalcore.records import Question
from evalcore.scoring import destroyed_cut, is_correct

if TYPE_CHECKING:
    from evalcore.inputs.suggest import Candidate
    from evalcore.records import Corpus, Document


@dataclass(frozen=True, slots=True)
class Verdict:
    """Whether a selection is a valid needle, and what each strategy does to it."""

    doc_id: str
    start: int
    end: int
    needle: str
    reason: str | None  # None: valid
    destroyed: tuple[tuple[str, int | None], ...] = ()  # (strategy, the cut inside the span)

    @property
    def valid(self) -> bool:
        return self.reason is None

    def sentence(self) -> str:
        if self.reason is not None:
            return f"Not a valid needle: {self.reason}."
        if not self.destroyed:
            return "Valid needle: found once, outside headings; every strategy keeps it whole."
        cuts = ", ".join(
            f"{name} (cut at character {cut})" if cut is not None else name for name, cut in self.destroyed
        )
        return f"Valid needle, but destroyed by {cuts}: no chunk of these strategies holds it whole."


def sections(doc: Document) -> list[tuple[str, int, int]]:
    """``(title, start, end)`` of a document's parts: the text before its first heading line
    ("(start)") and each heading with the text up to the next one."""
    marks = [(m.start(), m.group().lstrip("#").strip()) for m in re.finditer(r"^#+ [^\n]*", doc.text, re.M)]
    out = []
    if not marks or marks[0][0] > 0:
        out.append(("(start)", 0, marks[0][0] if marks else len(doc.text)))
    for i, (pos, title) in enumerate(marks):
        out.append((title or "(untitled)", pos, marks[i + 1][0] if i + 1 < len(marks) else len(doc.text)))
    return [s for s in out if s[2] > s[1]]


def find_documents(corpus: Corpus, phrase: str) -> list[str]:
    """Documents whose id, title or text holds ``phrase`` (case folded), in corpus order."""
    wanted = phrase.strip().casefold()
    return [
        d.doc_id
        for d in corpus.documents
        if not wanted or wanted in d.doc_id.casefold() or wanted in d.title.casefold() or wanted in d.text.casefold()
    ]


def occurrences(corpus: Corpus, phrase: str) -> list[tuple[str, int, int]]:
    """Every occurrence of ``phrase`` (whitespace runs matching as for needles) in the corpus."""
    return [(o.doc_id, o.start, o.end) for o in NeedleIndex(corpus.documents).find(phrase)]


def check_needle(corpus: Corpus, doc_id: str, start: int, end: int, strategies: Sequence[str]) -> Verdict:
    """The selection ``[start, end)`` of ``doc_id`` as a needle: stripped of surrounding
    whitespace, then resolved over the whole corpus exactly as a run resolves it (found once,
    no heading line touched), and chunked with each strategy to list those that destroy it."""
    doc = corpus.by_id()[doc_id]
    start, end = max(0, min(start, end)), min(len(doc.text), max(start, end))
    raw = doc.text[start:end]
    start += len(raw) - len(raw.lstrip())
    end -= len(raw) - len(raw.rstrip())
    needle = doc.text[start:end] if end > start else ""
    if not needle:
        return Verdict(doc_id, start, end, needle, "the selection is empty")
    probe = Question("selection", "?", "selection", "", needle, 1)
    spans, invalid = resolve([probe], corpus, "selection")
    if invalid:
        return Verdict(doc_id, start, end, needle, invalid[0].reason)
    span = spans["selection"]
    if (span.doc_id, span.start, span.end) != (doc_id, start, end):  # cannot happen for a unique needle
        return Verdict(doc_id, start, end, needle, f"resolves elsewhere ({span.doc_id} {span.start}..{span.end})")
    destroyed = []
    for strategy in parse_strategies(list(strategies)) if strategies else []:
        chunks = chunk_document(doc, strategy)
        if not any(is_correct(c, span) for c in chunks):
            destroyed.append((strategy.name, destroyed_cut(chunks, span)))
    return Verdict(doc_id, start, end, needle, None, tuple(destroyed))


def section_coverage(corpus: Corpus, questions: Sequence[Question]) -> list[dict[str, object]]:
    """Per document: its items, its sections and the sections without an item (by where each
    item's needle resolves in this corpus)."""
    spans, _ = resolve(list(questions), corpus, "coverage") if questions else ({}, [])
    by_group: dict[str, int] = {}
    for q in questions:
        by_group[q.group] = by_group.get(q.group, 0) + 1
    rows = []
    for doc in corpus.documents:
        parts = sections(doc)
        mine = [(g, s) for g, s in spans.items() if s.doc_id == doc.doc_id]
        covered = {title for title, a, b in parts for _, s in mine if a <= s.start < b}
        rows.append(
            {
                "document": doc.doc_id,
                "items": sum(by_group[g] for g, _ in mine),
                "sections": len(parts),
                "sections without an item": ", ".join(t for t, _, _ in parts if t not in covered),
            }
        )
    return rows


def candidates(corpus: Corpus, n: int, seed: int = 0) -> list[Candidate]:
    """``question-set suggest``'s candidates for the screen (evalcore.inputs.suggest)."""
    return suggest(corpus, n, seed=seed)
