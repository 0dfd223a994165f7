"""Chunking: agreement with the seed's chunkDocument (run in Node), hand cases, invariants."""

from __future__ import annotations

import json
import random
import re
import shutil
import subprocess
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from evalcore.chunking import (
    JS_WHITESPACE,
    STANDARD_STRATEGIES,
    boundary_ranges,
    chunk_corpus,
    chunk_document,
    js_trim,
    parse_strategies,
)
from evalcore.errors import ConfigError
from evalcore.inputs.corpus import load_corpus
from evalcore.records import Document, Strategy

REPO = Path(__file__).resolve().parents[1]
ORACLE = REPO / "tests" / "oracle"
DATA = REPO / ".." / "shared" / "data"
SEED = REPO / ".." / "shared" / "seed" / "rag-in-production.de.txt"
NODE = shutil.which("node") or ("/usr/bin/node" if Path("/usr/bin/node").exists() else None)


def run_seed(jobs: list[dict]) -> list[list[dict]]:
    """Run the seed's chunkDocument in Node on a batch of {doc, title, target}."""
    if NODE is None:
        pytest.skip("node is not installed")
    done = subprocess.run(
        [NODE, str(ORACLE / "run_chunk.mjs")],
        input=json.dumps(jobs),
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
    )
    return json.loads(done.stdout)


def doc(text: str, title: str = "T", doc_id: str = "d") -> Document:
    return Document(
        doc_id=doc_id, title=title, source_type="markdown", text=text, extractor="markdown", extractor_version="1"
    )


def as_seed(chunks) -> list[tuple]:
    return [(c.text, c.content, c.section, c.start, c.end) for c in chunks]


def seed_tuples(ref: list[dict]) -> list[tuple]:
    return [(c["text"], c["content"], c["section"], c["from"], c["to"]) for c in ref]


# ------------------------------------------------------------------- the oracle files


def test_oracle_ts_is_the_seed_verbatim():
    if not SEED.exists():
        pytest.skip("seed chapter not present")
    ts = (ORACLE / "chunk.ts").read_text(encoding="utf-8")
    code = ts[ts.index("export interface Chunked") :]
    assert code in SEED.read_text(encoding="utf-8")


def test_oracle_mjs_is_chunk_ts_without_types():
    ts = (ORACLE / "chunk.ts").read_text(encoding="utf-8")
    body = ts[ts.index("export function chunkDocument") :]
    deletions = [
        ("(doc: string, docTitle: string, target = 512): Chunked[] {", "(doc, docTitle, target = 512) {"),
        ("const out: Chunked[] = [];", "const out = [];"),
        ("m.index!", "m.index"),
        ("(from: number, to: number) =>", "(from, to) =>"),
        ("let open: [number, number] | null = null;", "let open = null;"),
        ("let cur: [number, number] | null = null;", "let cur = null;"),
    ]
    for typed, plain in deletions:
        assert typed in body
        body = body.replace(typed, plain)
    mjs = (ORACLE / "chunk.mjs").read_text(encoding="utf-8")
    assert mjs[mjs.index("export function chunkDocument") :] == body


# ------------------------------------------------------- agreement on the real corpora


@pytest.mark.parametrize("corpus_name", ["poetry-docs", "mkdocs-docs"])
def test_boundaries_agree_with_seed_on_real_corpus(corpus_name, record_property):
    root = DATA / corpus_name / "docs"
    if not root.exists():
        pytest.skip(f"{root} not present")
    corpus = load_corpus(root)
    refs = run_seed([{"doc": d.text, "title": d.title, "target": 512} for d in corpus.documents])
    compared = 0
    for d, ref in zip(corpus.documents, refs, strict=True):
        ours = chunk_document(d, STANDARD_STRATEGIES["E"])
        assert len(ours) == len(ref), d.doc_id
        for i, (a, b) in enumerate(zip(as_seed(ours), seed_tuples(ref), strict=True)):
            assert a == b, f"{d.doc_id} chunk {i}"
        # C has the same cuts without the header.
        plain = chunk_document(d, STANDARD_STRATEGIES["C"])
        assert [(c.content, c.start, c.end, c.text) for c in plain] == [
            (c["content"], c["from"], c["to"], c["content"]) for c in ref
        ]
        compared += len(ref)
    assert compared > 0
    record_property("documents_compared", len(corpus.documents))
    record_property("chunks_compared", compared)
    print(f"\n{corpus_name}: {len(corpus.documents)} documents, {compared} chunks agree with the seed")


def _random_doc(rng: random.Random) -> str:
    """Markdown-ish text with the characters where JS and Python differ."""
    words = ["alpha", "beta", "gamma", "x", "Ünïcode", "a.b", "e.g.", "why?", "yes!", "...", "“q”"]
    spaces = [" ", " ", " ", "\t", "\u00a0", "\u3000", "\ufeff", "\u2028", "\x1c", "\x85", "\u200a", "\v"]
    blocks = []
    for _ in range(rng.randint(0, 12)):
        kind = rng.random()
        if kind < 0.2:
            blocks.append("## " + rng.choice(["Intro", " Spaced title \u00a0", "A?", "\ufeffB", "x##"]))
        elif kind < 0.25:
            blocks.append(rng.choice(["#  Title", "##", "## ", "###  Sub", "  ## not"]))
        else:
            sentence_count = rng.randint(1, 25)
            text = ""
            for _ in range(sentence_count):
                text += " ".join(rng.choice(words) for _ in range(rng.randint(1, 9)))
                text += rng.choice([".", "!", "?", ". ", "?! ", "\n", " ", rng.choice(spaces)])
            blocks.append(text)
    seps = ["\n\n", "\n", "\n\n\n", "\n \n", "\r\n\r\n", "\n\u2028\n"]
    return "".join(b + rng.choice(seps) for b in blocks) + rng.choice(["", "\n", "  "])


def test_boundaries_agree_with_seed_on_random_texts():
    rng = random.Random(20240501)
    jobs = [{"doc": _random_doc(rng), "title": "Doc", "target": rng.choice([16, 40, 80, 200, 512])} for _ in range(400)]
    refs = run_seed(jobs)
    compared = 0
    for job, ref in zip(jobs, refs, strict=True):
        strategy = Strategy("E", boundaries=True, header=True, size=job["target"])
        ours = chunk_document(doc(job["doc"], title="Doc"), strategy)
        assert as_seed(ours) == seed_tuples(ref), repr(job["doc"])
        compared += len(ref)
    assert compared > 1000


def test_offsets_are_code_points_with_astral_characters():
    text = "## Emoji 😀\n\nSmile 😀 please.\n\nAnother 🎉 paragraph here."
    ref = run_seed([{"doc": text, "title": "T😀", "target": 512}])[0]
    ours = chunk_document(doc(text, title="T😀"), STANDARD_STRATEGIES["E"])
    assert as_seed(ours) == seed_tuples(ref)
    assert text[ours[0].start : ours[0].end] == "Smile 😀 please.\n\nAnother 🎉 paragraph here."


# ------------------------------------------------------------------------ hand cases


def test_boundaries_hand_case_packs_paragraphs_and_splits_long_one():
    p1 = "a" * 10
    p2 = "b" * 10
    long = "One two. Three four! Five six?"  # sentences of 9, 12 and 10 (with the newline)
    text = f"# Title\n\nIntro.\n\n## S1\n{p1}\n\n{p2}\n\n{long}\n## S2\n\n  tail  \n"
    got = boundary_ranges(text, target=22)
    s1 = text.index(p1)
    expected = [
        ("S1", s1, s1 + 22),  # p1 + blank line + p2 = 22 chars
        ("S1", text.index("One"), text.index("!") + 1),  # 9 + 12 = 21 <= 22; +10 > 22
        ("S1", text.index("Five"), text.index("?") + 1),
        ("S2", text.index("tail"), text.index("tail") + 4),
    ]
    assert got == expected
    # Text before the first "## " is not chunked (seed behaviour).
    assert all(start > text.index("## S1") for _, start, _ in got)


def test_header_and_overlap_texts():
    text = "## Setup\n\n" + "word " * 150 + "\n\n## Next\n\nLast paragraph."
    d = doc(text, title="Guide")
    e = chunk_document(d, STANDARD_STRATEGIES["E"])
    f = chunk_document(d, STANDARD_STRATEGIES["F"])
    assert e[0].header == "[Guide > Setup]\n"
    assert e[-1].text == "[Guide > Next]\nLast paragraph."
    last = f[-1]
    assert last.evidence_start == last.start - 64
    assert last.text == "[Guide > Next]\n" + text[last.start - 64 : last.end]
    nodocs = chunk_document(doc("Just text, no sections.", title="Plain"), STANDARD_STRATEGIES["E"])
    assert [c.text for c in nodocs] == ["[Plain]\nJust text, no sections."]


def test_blind_hand_case():
    text = "## A\n" + "x" * 10 + "\n## B\n" + " " * 8 + "yy"
    d = doc(text)
    chunks = chunk_document(d, Strategy("b", boundaries=False, header=True, overlap=3, size=8))
    spans = [(c.start, c.end) for c in chunks]
    assert len(text) == 31
    assert spans == [(0, 8), (8, 16), (16, 24), (24, 31)]
    assert [c.section for c in chunks] == ["A", "A", "B", "B"]
    assert chunks[1].text == "[T > A]\n" + text[5:16]
    assert chunks[0].evidence_start == 0
    ws = doc("abc" + " " * 5 + "\n" * 4)
    assert [(c.start, c.end) for c in chunk_document(ws, Strategy("b", False, False, 0, 3))] == [(0, 3)]


def test_js_trim_matches_javascript_whitespace():
    assert js_trim("\ufeff x \u00a0") == "x"
    assert js_trim("\x1cx\x85") == "\x1cx\x85"  # Python's str.strip() would remove these
    if NODE:
        js = subprocess.run(
            [
                NODE,
                "-e",
                "let s='';for(let c=0;c<0x10000;c++){const ch=String.fromCharCode(c);"
                "if(ch.trim()==='')s+=ch;}process.stdout.write(JSON.stringify(s))",
            ],
            capture_output=True,
            text=True,
            check=True,
        )
        assert set(json.loads(js.stdout)) == set(JS_WHITESPACE)


# -------------------------------------------------------------------- strategy specs


def test_standard_strategies():
    assert [(s.name, s.boundaries, s.header, s.overlap, s.size) for s in STANDARD_STRATEGIES.values()] == [
        ("A", False, False, 0, 512),
        ("B", False, False, 64, 512),
        ("C", True, False, 0, 512),
        ("D", True, False, 64, 512),
        ("E", True, True, 0, 512),
        ("F", True, True, 64, 512),
    ]


def test_parse_strategies():
    assert [s.name for s in parse_strategies("A, c,E")] == ["A", "C", "E"]
    custom = parse_strategies("wide:boundaries+header+overlap=32+size=800,blind+size=100")
    assert custom[0] == Strategy("wide", boundaries=True, header=True, overlap=32, size=800)
    assert custom[1] == Strategy("blind+size=100", boundaries=False, header=False, overlap=0, size=100)
    assert parse_strategies("boundaries+overlap")[0].overlap == 64


def test_g_is_a_named_default_strategy():
    from evalcore.chunking import DEFAULT_STRATEGIES, NAMED_STRATEGIES

    g = Strategy("G", boundaries=True, header=True, overlap=0, size=512, intro=True)
    assert parse_strategies("G") == [g] == parse_strategies("g")
    assert parse_strategies("G:boundaries+header+intro") == [g]  # spelled out with its own recipe
    assert [s.name for s in parse_strategies(DEFAULT_STRATEGIES)] == list("ABCDEFG") == list(NAMED_STRATEGIES)
    with pytest.raises(ConfigError, match="G is a named strategy"):
        parse_strategies("G:boundaries+header")


@pytest.mark.parametrize(
    "bad",
    [
        "H",
        "",
        "boundaries+colour",
        "blind+size=0",
        "blind+overlap=600",
        "A,A",
        "blind+size=x",
        "A:boundaries",
        ":blind",
    ],
)
def test_parse_strategies_rejects(bad):
    with pytest.raises(ConfigError) as err:
        parse_strategies(bad)
    if bad in ("H", ""):
        assert "A, B, C, D, E, F, G" in str(err.value)


# --------------------------------------------------------------------------- invariants

_texts = st.lists(
    st.one_of(
        st.sampled_from(["## Head", "## Other one", "# Title", "", "\n", "  "]),
        st.text(alphabet=st.sampled_from(list("ab .!?\n\t\u00a0é")), min_size=0, max_size=120),
    ),
    max_size=12,
).map(lambda parts: "\n\n".join(parts))


@settings(max_examples=150, deadline=None)
@given(text=_texts, size=st.integers(5, 120), overlap=st.integers(0, 4), boundaries=st.booleans(), header=st.booleans())
def test_chunk_invariants(text, size, overlap, boundaries, header):
    d = doc(text, title="Ti")
    strategy = Strategy("x", boundaries=boundaries, header=header, overlap=overlap, size=size)
    chunks = chunk_document(d, strategy)
    prev_end = 0
    for c in chunks:
        assert text[c.start : c.end] == c.content
        assert c.evidence_start == max(0, c.start - overlap)
        assert c.text == c.header + text[c.evidence_start : c.end]
        assert (c.header != "") == header
        assert c.start >= prev_end and c.end > c.start
        prev_end = c.end
    if not boundaries:
        # Blind chunks tile the text except for skipped whitespace-only pieces.
        expected = [
            (i, min(i + size, len(text))) for i in range(0, len(text), size) if text[i : i + size].strip(JS_WHITESPACE)
        ]
        assert [(c.start, c.end) for c in chunks] == expected
    else:
        for c in chunks:
            assert c.content == js_trim(c.content) and c.content
        # Never cut inside a paragraph that fits (the parts above are joined by blank lines,
        # so headings are paragraphs of their own).
        cuts = {p for c in chunks for p in (c.start, c.end)}
        for m in re.finditer(r"[^\n](?:[^\n]|\n(?!\n))*", text):
            if m.end() - m.start() < size:
                assert not any(
                    m.start() < p < m.end()
                    and text[m.start() : p].strip(JS_WHITESPACE)
                    and text[p : m.end()].strip(JS_WHITESPACE)
                    for p in cuts
                ), m.group()


def test_chunk_corpus_keeps_document_order():
    root = DATA / "poetry-docs" / "docs"
    if not root.exists():
        pytest.skip(f"{root} not present")
    corpus = load_corpus(root)
    chunks = chunk_corpus(corpus, STANDARD_STRATEGIES["A"])
    order = [d.doc_id for d in corpus.documents]
    seen = list(dict.fromkeys(c.doc_id for c in chunks))
    assert seen == order
    assert sum(len(chunk_document(d, STANDARD_STRATEGIES["A"])) for d in corpus.documents) == len(chunks)


# --------------------------------------------------------------- the intro ingredient


def _intro_oracle(d: Document, target: int = 512) -> list[tuple]:
    """The seed's chunkDocument on the introduction alone (after its `# Title` line),
    offsets shifted into the document, then the seed on the whole document."""
    import re as _re

    first = _re.search(r"(?m)^## ", d.text)
    jobs = [{"doc": d.text, "title": d.title, "target": target}]
    skip = 0
    if first and first.start() > 0:
        intro = d.text[: first.start()]
        m = _re.match(r"# [^\n\r\u2028\u2029]+\n", intro)
        skip = m.end() if m else 0
        jobs.append({"doc": intro[skip:], "title": d.title, "target": target})
    refs = run_seed(jobs)
    head = [
        (c["text"], c["content"], c["section"], c["from"] + skip, c["to"] + skip)
        for c in (refs[1] if len(refs) > 1 else [])
    ]
    return head + seed_tuples(refs[0])


def test_intro_chunks_are_the_seeds_chunks_of_the_introduction():
    text = (
        "# Guide\n\nIntro paragraph one.\n\nIntro paragraph two.\n\n## First\n\nBody one.\n\n## Second\n\nBody two.\n"
    )
    d = doc(text, title="Guide")
    ours = chunk_document(d, parse_strategies("x:boundaries+header+intro")[0])
    assert [c.content for c in ours] == ["Intro paragraph one.\n\nIntro paragraph two.", "Body one.", "Body two."]
    assert ours[0].section == "" and ours[0].text.startswith("[Guide]\n")
    assert as_seed(ours) == _intro_oracle(d)
    # without intro: the seed's own chunks, which leave the introduction out
    assert [c.content for c in chunk_document(d, STANDARD_STRATEGIES["C"])] == ["Body one.", "Body two."]


@pytest.mark.parametrize("corpus_name", ["poetry-docs", "mkdocs-docs"])
def test_intro_agrees_with_seed_oracle_on_real_corpus(corpus_name):
    root = DATA / corpus_name / "docs"
    if not root.exists():
        pytest.skip(f"{root} not present")
    corpus = load_corpus(root)
    strategy = parse_strategies("x:boundaries+header+intro")[0]
    extra = 0
    for d in corpus.documents:
        ours = as_seed(chunk_document(d, strategy))
        assert ours == _intro_oracle(d), d.doc_id
        extra += len(ours) - len(chunk_document(d, STANDARD_STRATEGIES["E"]))
    assert extra > 0


def test_intro_is_refused_for_blind():
    with pytest.raises(ConfigError, match="intro goes with boundaries"):
        parse_strategies("blind+intro")


@settings(max_examples=500, deadline=None)
@given(st.text(alphabet="ab \n.", max_size=120))
def test_paragraph_pattern_matches_the_seeds_one_character_form(text):
    """The paragraph regex is written with runs for memory (a 30 MB line needed 3.5 GB in the
    one-character form); its matches are the seed's /[^\\n]([^\\n]|\\n(?!\\n))*/g exactly."""
    import re

    from evalcore.chunking import _PARAGRAPH

    seed = re.compile(r"[^\n](?:[^\n]|\n(?!\n))*")
    assert [m.span() for m in _PARAGRAPH.finditer(text)] == [m.span() for m in seed.finditer(text)]
