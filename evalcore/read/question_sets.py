"""Question sets for the screens: names, versions and items, the corpus a run indexed (to author a
set on it), the items that do not resolve there, a version's files as bytes, and the note Compare
shows when two runs used different set versions (:mod:`evalcore.inputs.question_sets` holds the rules)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from evalcore.chunking import NAMED_STRATEGIES
from evalcore.inputs import question_sets
from evalcore.inputs.groundtruth import resolve
from evalcore.records import Corpus, Document

if TYPE_CHECKING:
    from evalcore.records import Question
    from evalcore.store import Store


def versions_note_between(store: Store, run_id: str, other: str) -> str | None:
    """The sentence Compare shows when two runs used different question-set versions."""
    return question_sets.versions_note(store.run(run_id), store.run(other))


def export_bytes(qs: question_sets.QuestionSet) -> dict[str, bytes]:
    """The files ``question-set export`` writes for a version, as bytes (for a download)."""
    out = {
        question_sets.QUESTIONS_FILE: question_sets.to_jsonl(
            [question_sets.question_row(q) for q in qs.questions]
        ).encode("utf-8")
    }
    if qs.ood:
        out[question_sets.OOD_FILE] = question_sets.to_jsonl([question_sets.ood_row(o) for o in qs.ood]).encode("utf-8")
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
    return [n for n in store.run(run_id).strategies if n in NAMED_STRATEGIES]


def set_names(store: Store) -> list[str]:
    return question_sets.names(store)


def set_versions(store: Store, name: str) -> list[question_sets.Version]:
    return question_sets.versions(store, name)


def load_set(store: Store, ref: str) -> question_sets.QuestionSet:
    return question_sets.load_question_set(store, ref)


def not_resolving(corpus: Corpus, questions: Sequence[Question]) -> list[dict[str, str]]:
    """The groups of ``questions`` whose needle does not resolve in ``corpus``, with the reason
    (what a run on this corpus would list and exclude)."""
    numbered, _ = question_sets.numbered(questions, [])
    _, invalid = resolve(numbered, corpus, "question set")
    return [
        {"group": i.group, "ids": ", ".join(i.query_ids), "line": str(i.line), "needle": i.needle, "reason": i.reason}
        for i in invalid
    ]
