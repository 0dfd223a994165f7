"""Ground truth: file errors, needle resolution (against a regex oracle), report."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from evalcore.errors import InputError
from evalcore.inputs.groundtruth import NeedleIndex, load_ground_truth, validation_report
from evalcore.records import Corpus, Document, Span


def make_corpus(**texts: str) -> Corpus:
    return Corpus(
        root="mem",
        documents=tuple(
            Document(doc_id=k, title=k, source_type="markdown", text=v, extractor="markdown", extractor_version="1")
            for k, v in texts.items()
        ),
    )


def jsonl(path: Path, rows: list) -> Path:
    lines = [r if isinstance(r, str) else json.dumps(r) for r in rows]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def oracle_occurrences(corpus: Corpus, needle: str) -> list[tuple[str, int, int]]:
    """Independent: a regex with \\s+ between the needle's words, found at every start (lookahead)."""
    words = needle.split()
    pattern = re.compile("(?=(" + r"\s+".join(map(re.escape, words)) + "))")
    return [
        (d.doc_id, m.start(), m.start() + len(m.group(1))) for d in corpus.documents for m in pattern.finditer(d.text)
    ]


CORPUS = make_corpus(
    a="# Title A\n\nThe quick  brown\nfox jumps.\n\n## Setup steps\n\nRun the setup script first.\n",
    b="# Title B\n\nbanana banana and ananas.\nThe cat sat.\n\n### Deep heading here\n\nThe cat sat.\n",
)


def load(tmp_path: Path, questions: list, ood: list | None = None, corpus: Corpus = CORPUS):
    q = jsonl(tmp_path / "questions.jsonl", questions)
    o = jsonl(tmp_path / "ood.jsonl", ood) if ood is not None else None
    return load_ground_truth(corpus, q, o)


# ---------------------------------------------------------------------- resolution


def test_whitespace_runs_match_any_whitespace_run(tmp_path):
    gt = load(tmp_path, [{"id": "q1", "question": "?", "needle": "quick brown fox\tjumps"}])
    text = CORPUS.by_id()["a"].text
    start = text.index("quick")
    assert gt.spans == {"q1": Span("a", start, text.index("jumps.") + len("jumps"))}
    assert [(s.doc_id, s.start, s.end) for s in gt.spans.values()] == oracle_occurrences(
        CORPUS, "quick brown fox jumps"
    )


def test_no_case_folding_and_not_found(tmp_path):
    gt = load(
        tmp_path,
        [
            {"id": "q1", "question": "?", "needle": "the quick brown"},
            {"id": "q2", "question": "?", "needle": "quickbrown"},
        ],
    )
    assert gt.spans == {}
    assert [(i.group, i.reason) for i in gt.invalid] == [("q1", "not found"), ("q2", "not found")]


def test_two_occurrences_in_two_places_are_invalid(tmp_path):
    gt = load(tmp_path, [{"id": "q1", "question": "?", "needle": "The cat sat."}])
    (bad,) = gt.invalid
    assert bad.reason == "found 2 times (doc b line 4, doc b line 8)"
    assert bad.query_ids == ("q1",) and bad.line == 1 and gt.spans == {}


def test_overlapping_occurrences_are_counted(tmp_path):
    # "ana" overlaps itself in "banana" (b[ana]na, ban[ana]) and in "ananas".
    gt = load(tmp_path, [{"id": "q1", "question": "?", "needle": "ana"}])
    expected = len(oracle_occurrences(CORPUS, "ana"))
    assert expected == 6  # b-an-an-a twice (2 each, overlapping) + "ananas" (2, overlapping)
    assert gt.invalid[0].reason.startswith(f"found {expected} times")


def test_needle_touching_heading_lines_is_invalid(tmp_path):
    gt = load(
        tmp_path,
        [
            {"id": "h2", "question": "?", "needle": "Setup steps"},
            {"id": "h3", "question": "?", "needle": "heading here"},
            {"id": "across", "question": "?", "needle": "jumps. ## Setup"},
            {"id": "ok", "question": "?", "needle": "Run the setup script"},
        ],
    )
    reasons = {i.group: i.reason for i in gt.invalid}
    assert reasons["h2"] == "inside a heading line (doc a line 6)"
    assert reasons["across"] == "inside a heading line (doc a line 6)"
    assert reasons["h3"] == "inside a heading line (doc b line 6)"
    assert set(gt.spans) == {"ok"}


def test_exact_spans(tmp_path):
    a = CORPUS.by_id()["a"].text
    run = a.index("Run the setup")
    gt = load(
        tmp_path,
        [
            {"id": "s1", "question": "?", "document": "a", "start": run, "end": run + 3},
            {"id": "s2", "question": "?", "document": "a", "start": 2, "end": 7},  # in "# Title A"
            {"id": "s3", "question": "?", "document": "zzz", "start": 0, "end": 1},
            {"id": "s4", "question": "?", "document": "a", "start": 0, "end": len(a) + 1},
            # ends exactly where the heading line starts: touches nothing
            {"id": "s5", "question": "?", "document": "a", "start": a.index("fox"), "end": a.index("## Setup")},
        ],
    )
    assert gt.spans["s1"] == Span("a", run, run + 3)
    assert gt.spans["s5"] == Span("a", a.index("fox"), a.index("## Setup"))
    reasons = {i.group: i.reason for i in gt.invalid}
    assert reasons["s2"] == "inside a heading line (doc a line 1)"
    assert reasons["s3"] == "document 'zzz' not in corpus"
    assert "beyond the end" in reasons["s4"]


@settings(max_examples=200, deadline=None)
@given(
    text=st.text(alphabet=st.sampled_from(list("ab \n\t\u00a0\u2003.")), max_size=60),
    needle=st.text(alphabet=st.sampled_from(list("ab \n\u3000.")), min_size=1, max_size=6),
)
def test_needle_index_matches_regex_oracle(text, needle):
    corpus = make_corpus(x=text, y=text[::-1])
    if not needle.split():
        assert NeedleIndex(corpus.documents).find(needle) == []
        return
    got = [(o.doc_id, o.start, o.end) for o in NeedleIndex(corpus.documents).find(needle)]
    assert got == oracle_occurrences(corpus, needle)


# --------------------------------------------------------------------- file errors


@pytest.mark.parametrize(
    ("row", "message"),
    [
        ("{not json", "invalid JSON"),
        ("[1, 2]", "expected a JSON object"),
        ({"question": "?", "needle": "x"}, "missing field 'id'"),
        ({"id": 3, "question": "?", "needle": "x"}, "field 'id' must be a string, got 3"),
        ({"id": "q", "needle": "x"}, "missing field 'question'"),
        ({"id": "q", "question": "?"}, "missing field 'needle'"),
        ({"id": "q", "question": "?", "needle": "  "}, "field 'needle' is empty"),
        ({"id": "q", "question": "?", "needle": "x", "document": "a"}, "not both"),
        ({"id": "q", "question": "?", "document": "a", "start": 1}, "missing field 'end'"),
        ({"id": "q", "question": "?", "document": "a", "start": 5, "end": 5}, "0 <= start < end"),
        ({"id": "q", "question": "?", "document": "a", "start": "1", "end": 5}, "must be an integer"),
        ({"id": "q", "question": "?", "document": "a", "start": True, "end": 5}, "must be an integer"),
    ],
)
def test_question_errors_name_file_and_line(tmp_path, row, message):
    with pytest.raises(InputError, match=re.escape(message)) as err:
        load(tmp_path, ["", {"id": "ok", "question": "?", "needle": "Run the setup"}, row])
    assert "questions.jsonl:3:" in str(err.value)


def test_duplicate_ids_within_and_across_files(tmp_path):
    with pytest.raises(InputError, match=r"questions.jsonl:2: duplicate id 'q1' \(first at .*questions.jsonl:1\)"):
        load(tmp_path, [{"id": "q1", "question": "?", "needle": "x"}, {"id": "q1", "question": "?", "needle": "y"}])
    with pytest.raises(InputError, match=r"ood.jsonl:2: duplicate id 'q1'"):
        load(
            tmp_path,
            [{"id": "q1", "question": "?", "needle": "x"}],
            [{"id": "o1", "query": "?", "kind": "far"}, {"id": "q1", "query": "?", "kind": "near"}],
        )


def test_ood_errors(tmp_path):
    with pytest.raises(InputError, match=r"ood.jsonl:1: field 'kind' must be one of near, far, got 'middle'"):
        load(tmp_path, [{"id": "q1", "question": "?", "needle": "x"}], [{"id": "o", "query": "?", "kind": "middle"}])
    with pytest.raises(InputError, match=r"ood.jsonl:1: missing field 'query'"):
        load(tmp_path, [{"id": "q1", "question": "?", "needle": "x"}], [{"id": "o", "kind": "far"}])


def test_group_needle_mismatch_names_both_lines(tmp_path):
    with pytest.raises(InputError) as err:
        load(
            tmp_path,
            [
                {"id": "q1", "question": "?", "needle": "Run the setup", "group": "g"},
                {"id": "q2", "question": "?", "needle": "quick brown", "group": "g"},
            ],
        )
    assert "questions.jsonl:2:" in str(err.value) and "line 1" in str(err.value)


def test_missing_file(tmp_path):
    with pytest.raises(InputError, match="not found"):
        load_ground_truth(CORPUS, tmp_path / "nope.jsonl")


# ------------------------------------------------------------------ groups and report


def test_groups_share_one_span_and_report(tmp_path):
    gt = load(
        tmp_path,
        [
            {"id": "q1", "question": "course?", "needle": "Run the setup script", "group": "g1", "variant": "course"},
            {"id": "q2", "question": "ticket?", "needle": "Run  the\nsetup script", "group": "g1", "variant": "ticket"},
            {"id": "q3", "question": "?", "needle": "The cat sat."},
        ],
        [
            {"id": "o1", "query": "weather?", "kind": "far"},
            {"id": "o2", "query": "pip?", "kind": "near"},
            {"id": "o3", "query": "sports?", "kind": "far"},
        ],
    )
    assert set(gt.spans) == {"g1"}
    assert [q.query_id for q in gt.valid_questions] == ["q1", "q2"]
    assert gt.questions[2].group == "q3" and gt.questions[2].variant == ""
    report = validation_report(CORPUS, gt)
    assert report.to_json()["documents"] == 2 and report.to_json()["sections"] == 1
    assert report.to_json()["characters"] == CORPUS.characters
    assert report.to_json()["ground_truths"] == {"total": 2, "valid": 1, "invalid": 1}
    assert report.to_json()["invalid_ground_truths"][0]["reason"].startswith("found 2 times")
    assert report.to_json()["invalid_ground_truths"][0]["query_ids"] == ["q3"]
    assert report.to_json()["in_domain_queries"] == {"valid": 2, "total": 3}
    assert report.to_json()["failed"] == []
    assert report.to_json()["ood"] == {"near": 1, "far": 2, "total": 3}
