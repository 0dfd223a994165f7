"""Candidate answer spans from a corpus (``evalcore question-set suggest`` and the Questions screen).

A candidate is one sentence of a document's canonical text that would make a good needle:

- **valid**: its text (whitespace runs matching any whitespace run, as needles resolve) occurs
  exactly once in the whole corpus, overlapping occurrences counted, and it lies outside
  heading lines (sentences are taken from paragraphs only: never a heading, a table row or a
  fenced code block);
- **informative**: ``MIN_CHARS`` to ``MAX_CHARS`` characters with at least
  ``MIN_CONTENT_WORDS`` content words (letters, three or more, not a stop word);
- **spread**: documents are visited round robin in a seeded order, so every document with a
  candidate gives one before any gives a second; within a document the sections take turns.

Each candidate carries a *cloze draft*: the sentence with its key phrase blanked (``____``),
as in the inverse-cloze task. The key phrase is the first number or inline code in the
sentence, else its longest run of one to three content words. A draft is a hint for the
person who writes the question, never a question by itself.

``question-set suggest --save-as NAME`` (:func:`save_drafts`) saves the drafts themselves as
pseudo-queries of variant ``cloze``: the one way a draft becomes a question without an edit.

Only the documents a candidate is taken from are split into sentences, and uniqueness is
checked only for the sentences tried, on a whitespace-collapsed copy of the corpus, so a
10,000-document corpus is served in seconds. A document whose next ``MAX_TRIES`` sentences
all occur elsewhere too (boilerplate, copies) gives no further candidate.
"""

from __future__ import annotations

import json
import random
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from evalcore.boundary.files import write_path_atomic
from evalcore.errors import InputError
from evalcore.inputs import question_sets
from evalcore.records import Question

if TYPE_CHECKING:
    from evalcore.inputs.question_sets import Saved
    from evalcore.records import Corpus, Document
    from evalcore.store import Store

MIN_CHARS = 40
MAX_CHARS = 240
MIN_CONTENT_WORDS = 4
MAX_TRIES = 12  # sentences of one document checked for uniqueness before it is given up
BLANK = "____"
_WS = re.compile(r"\s+")
_SEP = "\0"
_HEADING = re.compile(r"^#+ ")
_FENCE = re.compile(r"^\s*(```|~~~)")
_MARKER = re.compile(r"^\s*(?:[-*+>]|\d+[.)])\s+")
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9\"'(\[`])")
_WORD = re.compile(r"[^\W\d_]{3,}")
_KEY = re.compile(r"`[^`\n]+`|\b\d[\d.,:]*\b")
STOP_WORDS = frozenset(
    """
    the and for are but not you all any can had her was one our out has have him his how its may new now
    old see two way who did get let put say she too use that with this from they will would there their
    what which when where your been were into more than then them these those some such only also very
    just over each other about after before because being both could does doing down during few further
    here itself most must off once same should through under until while why yours ourselves themselves
    """.split()
)


@dataclass(frozen=True, slots=True)
class Candidate:
    doc_id: str
    start: int
    end: int
    needle: str
    draft: str
    section: str

    def row(self) -> dict[str, object]:
        return {
            "document": self.doc_id,
            "start": self.start,
            "end": self.end,
            "needle": self.needle,
            "draft": self.draft,
        }


def content_words(text: str) -> list[str]:
    return [w for w in _WORD.findall(text) if w.lower() not in STOP_WORDS]


def cloze(sentence: str) -> str:
    """The sentence with its key phrase replaced by ``____`` (see the module doc)."""
    key = _KEY.search(sentence)
    if key is not None:
        return sentence[: key.start()] + BLANK + sentence[key.end() :]
    best: tuple[int, int] = (0, 0)
    words = list(re.finditer(r"[^\W_]+", sentence))
    for i in range(len(words)):
        for j in range(i, min(i + 3, len(words))):
            run = words[i : j + 1]
            if any(len(w.group()) < 3 or w.group().lower() in STOP_WORDS for w in run):
                break
            span = (run[0].start(), run[-1].end())
            if span[1] - span[0] > best[1] - best[0]:
                best = span
    if best == (0, 0):
        return BLANK
    return sentence[: best[0]] + BLANK + sentence[best[1] :]


def sentences(doc: Document) -> Iterator[tuple[str, int, int]]:
    """``(section, start, end)`` of every informative sentence of a document's paragraphs."""
    text = doc.text
    section = ""
    fenced = False
    para_start: int | None = None
    pos = 0
    lines = text.split("\n")
    paragraphs: list[tuple[str, int, int]] = []
    for line in lines:
        end = pos + len(line)
        if _FENCE.match(line):
            fenced = not fenced
            if para_start is not None:
                paragraphs.append((section, para_start, pos - 1))
                para_start = None
        elif fenced:
            pass
        elif _HEADING.match(line):
            if para_start is not None:
                paragraphs.append((section, para_start, pos - 1))
                para_start = None
            section = line.lstrip("#").strip()
        elif not line.strip() or line.lstrip().startswith("|"):
            if para_start is not None:
                paragraphs.append((section, para_start, pos - 1))
                para_start = None
        elif para_start is None:
            para_start = pos
        pos = end + 1
    if para_start is not None:
        paragraphs.append((section, para_start, len(text)))
    for name, start, end in paragraphs:
        body = text[start:end]
        cuts = [0, *(m.end() for m in _SENTENCE_END.finditer(body)), len(body)]
        for a, b in zip(cuts, cuts[1:], strict=False):
            piece = body[a:b]
            marker = _MARKER.match(piece)
            lead = marker.end() if marker else len(piece) - len(piece.lstrip())
            s, e = start + a + lead, start + a + len(piece.rstrip())
            if e - s < MIN_CHARS or e - s > MAX_CHARS:
                continue
            if len(content_words(text[s:e])) < MIN_CONTENT_WORDS:
                continue
            yield name, s, e


class _Occurrences:
    """Counts a needle's occurrences over the whole corpus, whitespace runs collapsed."""

    def __init__(self, documents: Sequence[Document]) -> None:
        self._text = _SEP.join(_WS.sub(" ", d.text) for d in documents)

    def count(self, needle: str, at_most: int = 2) -> int:
        pattern = " ".join(needle.split())
        n, pos = 0, self._text.find(pattern)
        while pos != -1 and n < at_most:
            n += 1
            pos = self._text.find(pattern, pos + 1)
        return n


def _ordered(doc: Document, rng: random.Random) -> list[tuple[str, int, int]]:
    """The document's sentences, sections taking turns (each section's sentences shuffled)."""
    by_section: dict[str, list[tuple[str, int, int]]] = {}
    for item in sentences(doc):
        by_section.setdefault(item[0], []).append(item)
    groups = list(by_section.values())
    for g in groups:
        rng.shuffle(g)
    rng.shuffle(groups)
    out: list[tuple[str, int, int]] = []
    for i in range(max((len(g) for g in groups), default=0)):
        out.extend(g[i] for g in groups if i < len(g))
    return out


def suggest(corpus: Corpus, n: int, seed: int = 0) -> list[Candidate]:
    """Up to ``n`` valid, informative candidates spread over the documents (module doc)."""
    if n < 1:
        raise InputError(f"-n must be at least 1, got {n}")
    docs = list(corpus.documents)
    order = list(range(len(docs)))
    random.Random(seed).shuffle(order)
    occurrences = _Occurrences(docs)
    queues: dict[int, Iterator[tuple[str, int, int]]] = {}
    out: list[Candidate] = []
    tries: dict[int, int] = {}
    live = order
    while live and len(out) < n:
        still = []
        for k in live:
            if len(out) >= n:
                break
            doc = docs[k]
            if k not in queues:
                queues[k] = iter(_ordered(doc, random.Random(f"{seed}:{doc.doc_id}")))
            for section, s, e in queues[k]:
                tries[k] = tries.get(k, 0) + 1
                if tries[k] > MAX_TRIES:
                    break
                needle = doc.text[s:e]
                if occurrences.count(needle) == 1:
                    out.append(Candidate(doc.doc_id, s, e, needle, cloze(needle), section))
                    still.append(k)
                    tries[k] = 0
                    break
        live = still
    return out


def write_candidates(candidates: Sequence[Candidate], path: str | Path) -> None:
    """The candidates as JSON lines in the file ``path``, whole or not at all, never through a
    symbolic link (:func:`evalcore.boundary.files.write_path_atomic`)."""
    write_path_atomic(path, "".join(json.dumps(c.row(), ensure_ascii=False) + "\n" for c in candidates))


CLOZE = "cloze"  # the variant of saved drafts: every figure can be split by it


def save_drafts(store: Store, name: str, candidates: Sequence[Candidate], *, author: str | None) -> Saved:
    """``question-set suggest --save-as NAME``: the candidates' cloze drafts saved as pseudo-queries,
    in-domain items of variant ``cloze`` (question: the draft; needle: the candidate), as a new
    version of NAME holding its newest version's items too (a new set when NAME is new). A
    candidate whose needle the set already has is left out. The one way a draft becomes a
    question without an edit: asked for explicitly, and labelled so it can be told apart."""
    name = question_sets.check_question_set_name(name)
    found = question_sets.versions(store, name)
    base = question_sets.load_question_set(store, found[-1].label) if found else None
    questions = list(base.questions) if base else []
    ood = list(base.ood) if base else []
    taken = {q.query_id for q in questions} | {q.group for q in questions} | {o.query_id for o in ood}
    needles = {q.needle for q in questions if q.needle is not None}
    n, added = 0, 0
    for c in candidates:
        if c.needle in needles:
            continue
        n += 1
        while f"{CLOZE}-{n:03d}" in taken:
            n += 1
        qid = f"{CLOZE}-{n:03d}"
        questions.append(
            Question(
                query_id=qid,
                question=c.draft,
                group=qid,
                variant=CLOZE,
                needle=c.needle,
                line=0,
                document=c.doc_id,
                start=c.start,
                end=c.end,
            )  # fmt: skip
        )
        needles.add(c.needle)
        added += 1
    if not added:
        raise InputError(f"question set {name!r} already holds every suggested needle: nothing to save")
    return question_sets.save(
        store,
        name,
        questions,
        ood,
        parent=found[-1].version if found else None,
        author=author,
        note=f"{added} cloze pseudo-queries (dataset suggest --save-as)",
        origin="dataset suggest",
    )
