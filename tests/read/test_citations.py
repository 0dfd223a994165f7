"""Citations: locators slice the canonical text, quotes are content, the prompt is the seed's."""

from __future__ import annotations

import json
import re
import shutil
import subprocess

import pytest

from evalcore.read.citations import (
    NoAnswer,
    PromptContext,
    Source,
    build_context,
    char_fragment,
    context_for_query,
    media_fragment,
    no_answer,
    page_fragment,
)
from evalcore.records import Chunk

# Canonical text with code points outside the BMP and combining marks before the chunks, so
# byte or UTF-16 offsets would land elsewhere.
CANONICAL = (
    "# Classification 🧪\n\nIntro with ümlauts and e\u0301 and 𝔘𝔫𝔦𝔠𝔬𝔡𝔢.\n\n"
    "## How many test examples do I need?\n\n"
    "With 64 queries a recall of 0.5 carries an interval of about ±0.12.\n\n"
    "## Three splits, and the leak\n\n"
    "Never tune on the test set 🙈; keep a validation split.\n"
)


def chunk_of(phrase: str, section: str) -> Chunk:
    start = CANONICAL.index(phrase)
    end = start + len(phrase)
    header = f"[Classification 🧪 > {section}]\n"
    overlap = CANONICAL[max(0, start - 64) : start]
    return Chunk(
        "04-classification", section, header + overlap + phrase, phrase, start, end, max(0, start - 64), header
    )


CHUNKS = [
    chunk_of(
        "With 64 queries a recall of 0.5 carries an interval of about ±0.12.", "How many test examples do I need?"
    ),
    chunk_of("Never tune on the test set 🙈; keep a validation split.", "Three splits, and the leak"),
    chunk_of("Intro with ümlauts and e\u0301 and 𝔘𝔫𝔦𝔠𝔬𝔡𝔢.", ""),
]
DISTANCES = [0.594, 0.598, 0.7]


def sources() -> list[Source]:
    return [Source.from_chunk(c, "Classification 🧪", d) for c, d in zip(CHUNKS, DISTANCES, strict=True)]


def test_fragment_slices_the_quoted_text_and_quote_is_content_not_text():
    context = build_context("How many test examples do I need?", sources())
    assert [c.index for c in context.citations] == [1, 2, 3]
    for cite, chunk in zip(context.citations, CHUNKS, strict=True):
        start, end = map(int, re.fullmatch(r"#char=(\d+),(\d+)", cite.fragment).groups())
        assert CANONICAL[start:end] == cite.quote == chunk.content
        assert cite.quote != chunk.text and chunk.header not in context.prompt
    assert [c.label for c in context.citations] == [
        "How many test examples do I need?",
        "Three splits, and the leak",
        "Classification 🧪",
    ]
    assert [c.distance for c in context.citations] == DISTANCES


def test_prompt_matches_the_seed_format_by_hand():
    s = sources()[:2]
    expected = (
        "Answer using ONLY the numbered sources below. Cite every claim as [n].\n"
        "If the sources do not contain the answer, say so and stop.\n\n"
        "SOURCES\n"
        "[1] Classification 🧪 - How many test examples do I need?\n" + s[0].content + "\n\n"
        "[2] Classification 🧪 - Three splits, and the leak\n" + s[1].content + "\n\n"
        "QUESTION\nhow many test examples?"
    )
    assert build_context("how many test examples?", s).prompt == expected


SEED_JS = r"""
// The seed's buildContext (types stripped); label() = section, else document name.
function label(chunk) { return chunk.section ? chunk.section : chunk.documentName; }
function buildContext(question, hits) {
  const citations = hits.map((h, i) => ({
    index: i + 1,
    documentId: h.chunk.documentId,
    documentName: h.chunk.documentName,
    locatorLabel: label(h.chunk),
    fragment: `#char=${h.chunk.locator.flow.from},${h.chunk.locator.flow.to}`,
    quote: h.chunk.content,          // the OWN content, never `text`
    cosineDistance: h.cosineDistance,
  }));
  const blocks = citations
    .map((c) => `[${c.index}] ${c.documentName} - ${c.locatorLabel}\n${c.quote}`)
    .join("\n\n");
  const prompt =
    `Answer using ONLY the numbered sources below. Cite every claim as [n].\n` +
    `If the sources do not contain the answer, say so and stop.\n\n` +
    `SOURCES\n${blocks}\n\nQUESTION\n${question}`;
  return { prompt, citations };
}
const input = JSON.parse(require("fs").readFileSync(0, "utf8"));
process.stdout.write(JSON.stringify(buildContext(input.question, input.hits)));
"""


def test_build_context_agrees_with_the_seed_code_run_by_node():
    node = shutil.which("node")
    if node is None:
        pytest.skip("node not installed: the seed's JavaScript cannot be run")
    question = 'what does "±0.12" mean for 64 queries?'
    hits = [
        {
            "chunk": {
                "documentId": c.doc_id,
                "documentName": "Classification 🧪",
                "section": c.section,
                "content": c.content,
                "text": c.text,
                "locator": {"flow": {"from": c.start, "to": c.end}},
            },
            "cosineDistance": d,
        }
        for c, d in zip(CHUNKS, DISTANCES, strict=True)
    ]
    done = subprocess.run(
        [node, "-e", SEED_JS],
        input=json.dumps({"question": question, "hits": hits}),
        capture_output=True,
        text=True,
        encoding="utf-8",
        check=True,
        timeout=60,
    )
    seed = json.loads(done.stdout)
    ours = build_context(question, sources())
    assert ours.prompt == seed["prompt"]
    assert [(c.index, c.doc_id, c.doc_name, c.label, c.fragment, c.quote, c.distance) for c in ours.citations] == [
        (
            c["index"],
            c["documentId"],
            c["documentName"],
            c["locatorLabel"],
            c["fragment"],
            c["quote"],
            c["cosineDistance"],
        )
        for c in seed["citations"]
    ]


def test_no_answer_message_and_gate():
    assert no_answer("what is the offside rule in football", 0.675) == (
        'NO ANSWER: nothing under cosine distance 0.675 for "what is the offside rule in football"'
    )
    result = context_for_query("how do i renew my spanish passport", sources(), 0.5)
    assert isinstance(result, NoAnswer) and not result.answered
    assert result.message == ('NO ANSWER: nothing under cosine distance 0.5 for "how do i renew my spanish passport"')


def test_context_for_query_keeps_hits_under_threshold_from_top_four():
    many = sources() + [Source("d", "D", "S", 0, 1, "x", 0.1)]  # rank 4, very close
    many.append(Source("e", "E", "S", 0, 1, "y", 0.05))  # rank 5: never kept
    result = context_for_query("q", many, 0.598, count_pieces=lambda p: len(p.split()))
    assert isinstance(result, PromptContext) and result.answered
    assert [c.doc_id for c in result.citations] == ["04-classification", "d"]  # 0.598 not kept
    assert [c.index for c in result.citations] == [1, 2]
    assert result.pieces == len(result.prompt.split())
    assert build_context("q", sources()).pieces is None


def test_locator_helpers():
    assert char_fragment(25873, 26272) == "#char=25873,26272"
    assert page_fragment(12) == "#page=12"
    assert media_fragment(132.4, 158.9) == "#t=132.4,158.9"
    assert media_fragment(10) == "#t=10"
    for bad in (
        lambda: char_fragment(5, 4),
        lambda: char_fragment(-1, 3),
        lambda: page_fragment(0),
        lambda: media_fragment(3, 2),
        lambda: build_context("q", []),
    ):
        with pytest.raises(ValueError):
            bad()


def test_source_rejects_a_range_that_does_not_fit_its_content():
    with pytest.raises(ValueError, match="does not hold"):
        Source("d", "D", "S", 10, 12, "abc", 0.3)
