"""Question sets for the screens: versions, items resolved against a run's corpus, and the
note Compare shows when two runs used different set versions (evalcore.inputs.qsets holds the rules)."""

from __future__ import annotations

import csv
import io
import json
import re
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from evalcore.chunking import NAMED_STRATEGIES, chunk_document, parse_strategies
from evalcore.configurations import read
from evalcore.errors import InputError
from evalcore.inputs import jsontext, qsets
from evalcore.inputs.corpus import load_corpus
from evalcore.inputs.groundtruth import NeedleIndex, resolve
from evalcore.inputs.suggest import suggest
from evalcore.inputs.uploads import corpus_files
from evalcore.records import Corpus, Document, Question
from evalcore.scoring import destroyed_cut, is_correct

if TYPE_CHECKING:
    from evalcore.inputs.suggest import Candidate
    from evalcore.inputs.uploads import UploadedFile
    from evalcore.store import Store


def versions_note(store: Store, run_id: str, other: str) -> str | None:
    """The sentence Compare shows when two runs used different question-set versions."""
    return qsets.versions_note(store.run(run_id), store.run(other))


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


def check(corpus: Corpus, doc_id: str, start: int, end: int, strategies: Sequence[str]) -> Verdict:
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


def coverage(corpus: Corpus, questions: Sequence[Question]) -> list[dict[str, object]]:
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


def corpus_from_upload(files: Sequence[UploadedFile]) -> Corpus:
    """The corpus of uploaded files (checked as New run checks them), read in a temporary
    folder that is removed again: nothing is kept on the server."""
    docs = corpus_files(files)
    with tempfile.TemporaryDirectory(prefix="evalcore-questions-") as tmp:
        root = Path(tmp) / "corpus"
        for rel, data in docs.files.items():
            target = root / rel
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(data)
        return load_corpus(root)


def export_bytes(qs: qsets.QuestionSet) -> dict[str, bytes]:
    """The files ``dataset export`` writes for a version, as bytes (for a download)."""
    out = {qsets.QUESTIONS_FILE: qsets.to_jsonl([qsets.question_row(q) for q in qs.questions]).encode("utf-8")}
    if qs.ood:
        out[qsets.OOD_FILE] = qsets.to_jsonl([qsets.ood_row(o) for o in qs.ood]).encode("utf-8")
    return out


def run_corpus(store: Store, run_id: str) -> Corpus:
    """The canonical texts a stored run indexed, as a corpus (to author questions on it)."""
    with store.read() as con:
        rows = con.execute(
            "SELECT doc_id, coalesce(title, doc_id), coalesce(source_type, ''), text, coalesce(extractor, ''), "
            "coalesce(extractor_version, ''), coalesce(path, ''), u.corpus_root FROM documents d "
            "JOIN runs u USING (run_id) WHERE run_id = ? AND state = 'indexed' AND text IS NOT NULL ORDER BY doc_id",
            [run_id],
        ).fetchall()
    docs = tuple(Document(r[0], r[1], r[2], r[3], r[4], r[5], r[6]) for r in rows)
    return Corpus(root=str(rows[0][7] or "") if rows else "", documents=docs)


def run_strategies(store: Store, run_id: str) -> list[str]:
    """The named strategies (A-G) of a run, the ones a selection can be checked against."""
    names = str(store.run(run_id).get("strategies") or "").split(",")
    return [n for n in names if n in NAMED_STRATEGIES]


def set_names(store: Store) -> list[str]:
    return qsets.names(store)


def set_versions(store: Store, name: str) -> list[qsets.Version]:
    return qsets.versions(store, name)


def load_set(store: Store, ref: str) -> qsets.QuestionSet:
    return qsets.load(store, ref)


def not_resolving(corpus: Corpus, questions: Sequence[Question]) -> list[dict[str, str]]:
    """The groups of ``questions`` whose needle does not resolve in ``corpus``, with the reason
    (what a run on this corpus would list and exclude)."""
    numbered, _ = qsets.numbered(questions, [])
    _, invalid = resolve(numbered, corpus, "question set")
    return [
        {"group": i.group, "ids": ", ".join(i.query_ids), "line": str(i.line), "needle": i.needle, "reason": i.reason}
        for i in invalid
    ]


@dataclass(frozen=True, slots=True)
class Hit:
    """One hit of a real query under a run's configuration: the chunk and its place."""

    rank: int
    doc_id: str
    section: str
    start: int
    end: int
    score: float
    content: str


def hit_configurations(store: Store, run_id: str) -> tuple[list[str], str | None]:
    """The configurations ``STRATEGY/RETRIEVER`` of a run whose hits a new query can get
    exactly as the run ranked its own (built-in ones: the run's model, chunks, BM25 index and
    cross-encoder), and, when there is none, the one line that says why."""
    configs = read(store, run_id)
    usable = sorted(info.label for info in configs.values() if info.source == "builtin")
    if usable or not configs:
        return usable, None if usable else f"run {run_id} has no configuration with results"
    sources = {info.source for info in configs.values()}
    if sources <= {"import", "python"}:
        why = "has no retriever here (its rankings were made elsewhere: imported, or by a Python function)"
    else:
        why = "ranked with a live search endpoint, which this view does not call"
    return [], f"No hits for real queries: run {run_id} {why}."


def chunk_hits(store: Store, run_id: str, strategy: str, chosen: Sequence[int], scores: Sequence[float]) -> list[Hit]:
    """The stored chunks ``chosen`` (chunk ids, best first) of the run's ``strategy`` as hits
    ranked 1, 2, ... with their ``scores`` (:func:`evalcore.traffic.hits.config_hits`)."""
    with store.read() as con:
        rows = {
            int(r[0]): r[1:]
            for r in con.execute(
                "SELECT chunk_id, doc_id, coalesce(section, ''), start, \"end\", content FROM chunks "
                "WHERE run_id = ? AND strategy = ? AND chunk_id IN (SELECT unnest(?::INTEGER[]))",
                [run_id, strategy, list(chosen)],
            ).fetchall()
        }
    return [
        Hit(rank, rows[c][0], rows[c][1], int(rows[c][2]), int(rows[c][3]), float(scores[rank - 1]), rows[c][4])
        for rank, c in enumerate(chosen, start=1)
        if c in rows and rows[c][2] is not None
    ]


MAX_QUERIES = 200_000  # lines of a real-query list read at most


def read_queries(name: str, data: bytes, column: str = "query") -> list[str]:
    """Distinct non-empty real queries of an uploaded list, in order: one a line (``.txt``), the
    column ``column`` of a CSV file (``.csv``), or the field ``column`` of JSON lines
    (``.jsonl``; a line may also be a JSON string). InputError "NAME:LINE: ..." otherwise."""

    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError:
        raise InputError(f"{name}: not UTF-8 text") from None
    lower = name.lower()
    out: list[str] = []
    if lower.endswith(".csv"):
        reader = csv.DictReader(io.StringIO(text, newline=""))
        if column not in (reader.fieldnames or []):
            raise InputError(f"{name}: no column {column!r} (columns: {', '.join(reader.fieldnames or [])})")
        out = [(row.get(column) or "").strip() for row in reader]
    elif lower.endswith((".jsonl", ".json")):
        for number, line in enumerate(text.splitlines(), start=1):
            if not line.strip():
                continue
            try:
                obj = jsontext.loads(line)
            except json.JSONDecodeError as exc:
                raise InputError(f"{name}:{number}: invalid JSON ({exc.msg})") from None
            value = obj if isinstance(obj, str) else obj.get(column) if isinstance(obj, dict) else None
            if not isinstance(value, str):
                raise InputError(f"{name}:{number}: expected a string field {column!r}")
            out.append(value.strip())
    else:
        out = [line.strip() for line in text.splitlines()]
    distinct = list(dict.fromkeys(q for q in out if q))
    if len(distinct) > MAX_QUERIES:
        raise InputError(f"{name}: {len(distinct):,} queries, more than the {MAX_QUERIES:,} read at once; split it")
    return distinct


def candidates(corpus: Corpus, n: int, seed: int = 0) -> list[Candidate]:
    """``dataset suggest``'s candidates for the screen (evalcore.inputs.suggest)."""
    return suggest(corpus, n, seed=seed)
