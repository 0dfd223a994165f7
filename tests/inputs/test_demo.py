"""The built-in demo: pydoc_data.topics extractor and its committed ground truth.

The ground-truth checks here are an independent needle checker (a plain regex over the
canonical texts, overlapping matches counted), not a call into evalcore.inputs.groundtruth;
the last test runs evalcore.inputs.groundtruth on the same files and must agree.
"""

from __future__ import annotations

import json
import re
import sys
from collections import Counter
from pathlib import Path

import pytest

from evalcore.errors import InputError
from evalcore.inputs.demo import OOD_PATH, QUESTIONS_PATH, load_demo_corpus, pydoc_topics

HEADING_LINE = re.compile(r"^#+ .*$", re.M)


@pytest.fixture(scope="module")
def raw() -> dict[str, str]:
    """The raw help topics, read independently of the extractor."""
    return pytest.importorskip("pydoc_data.topics", reason="this Python has no pydoc_data").topics


@pytest.fixture(scope="module")
def corpus(raw):
    return load_demo_corpus()


@pytest.fixture(scope="module")
def questions() -> list[dict]:
    return [json.loads(line) for line in QUESTIONS_PATH.read_text("utf-8").splitlines() if line.strip()]


@pytest.fixture(scope="module")
def ood() -> list[dict]:
    return [json.loads(line) for line in OOD_PATH.read_text("utf-8").splitlines() if line.strip()]


# ---------------------------------------------------------------- extractor


def test_heading_levels_follow_first_appearance_of_each_underline():
    raw = (
        "Title here\n**********\n\nIntro text.\n\n\nFirst section\n=============\n\n"
        "Body.\n\nA sub part\n----------\n\nMore.\n\nDeeper\n~~~~~~\n\nx\n\n"
        "Second section\n==============\n\nEnd."
    )
    expected = (
        "# Title here\n\nIntro text.\n\n\n## First section\n\nBody.\n\n### A sub part\n\n"
        "More.\n\n#### Deeper\n\nx\n\n## Second section\n\nEnd."
    )
    assert pydoc_topics.topic_markdown(raw) == (expected, "Title here")


def test_not_headings_transition_indented_short_underline_and_no_blank_before():
    raw = (
        "Title\n*****\n\nSource line\n\n=======================\n\n"  # transition after a blank line
        "   indented\n   ========\n\n"  # indented: a code block
        "Too long a title\n=====\n\n"  # underline shorter than the text
        "para line one\nnot a title\n===========\n"
    )  # no blank line before
    text, title = pydoc_topics.topic_markdown(raw)
    assert title == "Title"
    assert text == raw.replace("Title\n*****", "# Title", 1)


def test_line_endings_and_bom_normalised():
    text, title = pydoc_topics.topic_markdown("\ufeffT\r\n*\r\n\r\nA\rB\r\n")
    assert (text, title) == ("# T\n\nA\nB\n", "T")


def test_topic_without_heading_is_titled_by_its_key():
    doc = pydoc_topics.extract_topic("some-key", "just text\nno heading\n")
    assert doc.title == "some-key"
    assert doc.text == "just text\nno heading\n"


def test_one_document_per_topic_with_stamp_and_path(corpus, raw):
    assert corpus.root == "pydoc_data.topics"
    assert [d.doc_id for d in corpus.documents] == sorted(raw)
    assert corpus.failed == ()
    for d in corpus.documents:
        assert (d.source_type, d.extractor, d.extractor_version) == ("pydoc-topic", "pydoc-topics", "1")
        assert d.path == f"pydoc_data.topics:{d.doc_id}"


def _raw_headings(raw: str) -> list[tuple[str, str]]:
    """(heading text, underline char) straight from the raw rst, by a separate regex."""
    pattern = re.compile(r"(?:^|(?<=\n\n))(\S[^\n]*)\n([*=\-~^])\2*(?=\n|$)")
    return [
        (m.group(1), m.group(2))
        for m in pattern.finditer(raw)
        if len(m.group(0)) - len(m.group(1)) - 1 >= len(m.group(1))
    ]


def test_titles_and_section_counts_match_the_raw_underlines(corpus, raw):
    for d in corpus.documents:
        heads = _raw_headings(raw[d.doc_id])
        assert heads and heads[0][1] == "*", d.doc_id  # every 3.11 topic opens with a *-heading
        assert d.title == heads[0][0], d.doc_id
        assert d.sections == sum(1 for _, ch in heads if ch == "="), d.doc_id
        md = [line for line in d.text.split("\n") if HEADING_LINE.match(line)]
        assert [line.split(" ", 1)[1] for line in md] == [h for h, _ in heads], d.doc_id


def test_canonical_text_is_the_raw_text_without_underlines(corpus, raw):
    """Dropping the heading marks from the canonical text gives back the raw lines minus underlines."""
    for d in corpus.documents:
        raw_lines = raw[d.doc_id].split("\n")
        underline_at = set()
        for i in range(1, len(raw_lines)):
            if (
                re.fullmatch(r"([*=\-~])\1*", raw_lines[i])
                and raw_lines[i - 1].strip()
                and not raw_lines[i - 1][0].isspace()
                and (i < 2 or not raw_lines[i - 2].strip())
            ):
                underline_at.add(i)
        expected = [line for i, line in enumerate(raw_lines) if i not in underline_at]
        got = [re.sub(r"^#+ ", "", line) for line in d.text.split("\n")]
        assert got == expected, d.doc_id


def test_deterministic(corpus):
    assert load_demo_corpus().fingerprint == corpus.fingerprint


def test_missing_pydoc_data_is_an_input_error(monkeypatch):
    monkeypatch.setitem(sys.modules, "pydoc_data.topics", None)  # makes the import fail
    with pytest.raises(InputError, match="pydoc_data"):
        pydoc_topics.load_pydoc_corpus()


# ---------------------------------------------------------------- ground truth checker


def needle_hits(needle: str, text: str) -> list[tuple[int, int]]:
    """All (start, end) matches of a needle, any whitespace run equal to any other, overlapping counted."""
    body = r"\s+".join(re.escape(part) for part in needle.split())
    return [(m.start(), m.start() + len(m.group(1))) for m in re.finditer(f"(?=({body}))", text)]


def touches_heading(text: str, start: int, end: int) -> bool:
    return any(m.start() < end and start < m.end() + 1 for m in HEADING_LINE.finditer(text))


def test_files_have_exactly_the_documented_fields(questions, ood):
    for q in questions:
        assert set(q) == {"id", "question", "needle", "group", "variant"}, q
        assert q["variant"] in {"course", "ticket"}, q
        assert q["question"].strip() and q["needle"].strip(), q
    for o in ood:
        assert set(o) == {"id", "query", "kind"}, o
        assert o["kind"] in {"near", "far"}, o
        assert o["query"].strip(), o


def test_ids_unique_across_both_files(questions, ood):
    ids = [q["id"] for q in questions] + [o["id"] for o in ood]
    assert [i for i, n in Counter(ids).items() if n > 1] == []


def test_every_group_has_one_course_and_one_ticket_sharing_the_needle(questions):
    groups: dict[str, list[dict]] = {}
    for q in questions:
        groups.setdefault(q["group"], []).append(q)
    assert len(groups) >= 32
    for g, qs in groups.items():
        assert sorted(q["variant"] for q in qs) == ["course", "ticket"], g
        assert len({q["needle"] for q in qs}) == 1, g
        assert qs[0]["question"] != qs[1]["question"], g
        assert {q["id"] for q in qs} == {f"{g}-course", f"{g}-ticket"}, g
    needles = [qs[0]["needle"] for qs in groups.values()]
    assert len(set(needles)) == len(needles), "two groups share a needle"


def test_each_needle_occurs_exactly_once_and_off_headings(corpus, questions):
    problems, topics = [], set()
    for needle in sorted({q["needle"] for q in questions}):
        if not 40 <= len(needle) <= 200:
            problems.append(f"length {len(needle)}: {needle!r}")
        hits = [(d, s, e) for d in corpus.documents for s, e in needle_hits(needle, d.text)]
        if len(hits) != 1:
            problems.append(f"{len(hits)} occurrences {[(d.doc_id, s) for d, s, _ in hits]}: {needle!r}")
            continue
        doc, start, end = hits[0]
        if touches_heading(doc.text, start, end):
            problems.append(f"touches a heading in {doc.doc_id}: {needle!r}")
        topics.add(doc.doc_id)
    assert problems == []
    assert len(topics) >= 20, sorted(topics)


def test_checker_itself_rejects_duplicates_and_headings(corpus):
    """The checker above must be able to fail: a duplicated clause and a heading clause."""
    docs = corpus.by_id()
    # 'if' and 'else' are the same help text, so any clause of it occurs twice
    assert (
        len(
            needle_hits(
                'The "if" statement is used for conditional execution:', "\n".join(d.text for d in corpus.documents)
            )
        )
        >= 2
    )
    text = docs["try"].text
    heading = HEADING_LINE.search(text, 1 + text.index("\n"))  # the first heading after the title
    assert touches_heading(text, heading.start() + 3, heading.start() + 8)
    assert touches_heading(text, heading.end() - 3, heading.end() + 40)
    assert not touches_heading(text, heading.end() + 2, heading.end() + 40)
    assert needle_hits("a   b\nc", "xa b c a\tb  c") == [(1, 6), (7, 13)]


def test_ood_split_is_about_two_to_one(ood):
    kinds = Counter(o["kind"] for o in ood)
    assert len(ood) >= 30
    assert kinds["near"] / len(ood) >= 0.6
    assert kinds["far"] / len(ood) >= 0.25


def test_ood_queries_are_not_needles_of_the_corpus(corpus, ood):
    """A cheap guard: no ood query is itself a clause of the reference."""
    alltext = "\n".join(d.text for d in corpus.documents)
    assert [o["id"] for o in ood if needle_hits(o["query"], alltext)] == []


def test_evalcore_groundtruth_resolves_every_demo_needle(corpus):
    try:
        from evalcore.inputs.groundtruth import load_ground_truth
    except ImportError as exc:  # written in parallel by another engineer
        pytest.skip(f"evalcore.inputs.groundtruth is not importable yet: {exc}")
    gt = load_ground_truth(corpus, QUESTIONS_PATH, OOD_PATH)
    assert [(i.group, i.reason) for i in gt.invalid] == []
    by_id = corpus.by_id()
    for q in gt.questions:
        span = gt.spans[q.group]
        hits = [(d.doc_id, s, e) for d in corpus.documents for s, e in needle_hits(q.needle, d.text)]
        assert hits == [(span.doc_id, span.start, span.end)], q.query_id
        assert " ".join(by_id[span.doc_id].text[span.start : span.end].split()) == " ".join(q.needle.split())
    assert len(gt.ood) == len(OOD_PATH.read_text("utf-8").splitlines())


def test_paths_point_at_committed_files():
    for path in (QUESTIONS_PATH, OOD_PATH):
        assert isinstance(path, Path) and path.is_file(), path
