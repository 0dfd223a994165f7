"""``evalcore dataset suggest``: candidates are valid needles by a check made here (the span's
text occurs once in the corpus, overlapping occurrences and whitespace runs counted as needle
resolution counts them; no heading line touched) and cover every document before any gets a
second."""

from __future__ import annotations

import json
import re

from conftest import MINI, shared_data

from evalcore.cli import main
from evalcore.inputs.corpus import load_corpus
from evalcore.inputs.suggest import BLANK, MAX_CHARS, MIN_CHARS, suggest


def occurrences(needle: str, texts: list[str]) -> int:
    pattern = re.compile("(?=" + r"\s+".join(re.escape(w) for w in needle.split()) + ")")
    return sum(len(pattern.findall(t)) for t in texts)


def touches_heading(text: str, start: int, end: int) -> bool:
    pos = 0
    for line in text.split("\n"):
        if pos < end and start < pos + len(line) and re.match(r"#+ ", line):
            return True
        pos += len(line) + 1
    return False


def test_candidates_are_valid_needles_spread_over_every_document(tmp_path, capsys):
    corpus = load_corpus(shared_data("poetry-docs", "docs"))
    docs = {d.doc_id: d.text for d in corpus.documents}
    n = 3 * len(docs)
    found = suggest(corpus, n, seed=7)
    assert len(found) == n
    texts = list(docs.values())
    for c in found:
        assert docs[c.doc_id][c.start : c.end] == c.needle
        assert occurrences(c.needle, texts) == 1, c
        assert not touches_heading(docs[c.doc_id], c.start, c.end), c
        assert MIN_CHARS <= len(c.needle) <= MAX_CHARS and c.needle == c.needle.strip()
        head, _, tail = c.draft.partition(BLANK)
        assert c.draft != c.needle and c.needle.startswith(head) and c.needle.endswith(tail)
    order = [c.doc_id for c in found]
    assert set(order[: len(docs)]) == set(docs)  # every document once before any twice
    firsts = [order.index(d) for d in docs]
    seconds = [i for i, d in enumerate(order) if order.index(d) != i]
    assert max(firsts) < min(seconds)
    # a document's candidates come from its different sections before one repeats
    spread = 0
    for doc_id in docs:
        sections = [c.section for c in found if c.doc_id == doc_id]
        distinct = len(set(sections))
        assert len(set(sections[:distinct])) == distinct, (doc_id, sections)
        spread += distinct > 1
    assert spread >= len(docs) // 2
    assert [c.row() for c in suggest(corpus, n, seed=7)] == [c.row() for c in found]
    assert [c.row() for c in suggest(corpus, n, seed=8)] != [c.row() for c in found]


def test_the_command_writes_one_candidate_object_a_line(tmp_path, capsys):
    out = tmp_path / "candidates.jsonl"
    assert main(["dataset", "suggest", "--corpus", str(MINI / "corpus"), "-n", "6", "--seed", "3", "-o", str(out)]) == 0
    assert capsys.readouterr().out.startswith(f"wrote 6 candidate(s) from 4 of 4 documents to {out}")
    rows = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
    assert [list(r) for r in rows] == [["document", "start", "end", "needle", "draft"]] * 6
    texts = {d.doc_id: d.text for d in load_corpus(MINI / "corpus").documents}
    assert all(texts[r["document"]][r["start"] : r["end"]] == r["needle"] for r in rows)
    assert len({r["document"] for r in rows[:4]}) == 4
    assert main(["dataset", "suggest", "--corpus", str(MINI / "corpus"), "-n", "0", "-o", str(out)]) == 2
    assert "-n must be an integer in [1, 100000]; got '0'" in capsys.readouterr().err


def test_drafts_are_saved_as_cloze_pseudo_queries_only_when_asked(tmp_path, capsys):
    from evalcore.inputs import question_sets
    from evalcore.inputs.suggest import CLOZE
    from evalcore.store import Store

    store = tmp_path / "s.duckdb"
    assert main(["--store", str(store), "dataset", "import", str(MINI), "--name", "mini"]) == 0
    assert main(["--store", str(store), "dataset", "suggest", "--corpus", str(MINI / "corpus"), "-n", "5"]) == 2
    assert "needs -o FILE (the candidates) or --save-as NAME" in capsys.readouterr().err
    out = tmp_path / "candidates.jsonl"
    argv = ["--store", str(store), "dataset", "suggest", "--corpus", str(MINI / "corpus"), "-n", "5", "--seed", "3"]
    assert main([*argv, "-o", str(out), "--save-as", "mini"]) == 0
    printed = capsys.readouterr().out
    before, after = (
        question_sets.load_question_set(Store(store), "mini@1"),
        question_sets.load_question_set(Store(store), "mini@2"),
    )
    known = {q.needle for q in before.questions}
    rows = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
    rows = [r for r in rows if r["needle"] not in known]  # a needle the set has already is left out
    assert 0 < len(rows) <= 5
    assert (
        f"saved mini@2 (from version 1): {len(before.questions) + len(rows)} questions, {len(rows)} of them new "
        "cloze pseudo-queries (variant cloze)" in printed
    )
    assert after.questions[: len(before.questions)] == before.questions and after.ood == before.ood
    drafts = after.questions[len(before.questions) :]
    assert [(q.question, q.needle, q.variant) for q in drafts] == [(r["draft"], r["needle"], CLOZE) for r in rows]
    assert all(BLANK in q.question and q.group == q.query_id for q in drafts)
    assert question_sets.describe_question_set(after)["variants"][CLOZE] == len(
        rows
    )  # every figure can be split by this variant
    gt = after.ground_truth(load_corpus(MINI / "corpus"))
    assert {q.group for q in drafts} <= set(gt.spans)  # each draft's needle resolves where it was suggested
    assert all((gt.spans[q.group].doc_id, gt.spans[q.group].start) == (q.document, q.start) for q in drafts)
    # asked again: the same needles are in the set already, nothing is saved
    assert main([*argv, "--save-as", "mini"]) == 2
    assert "already holds every suggested needle: nothing to save" in capsys.readouterr().err
    assert [v.version for v in question_sets.versions(Store(store), "mini")] == [1, 2]
