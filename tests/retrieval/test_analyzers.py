"""BM25 analyzers (bm25:LANG, bm25:unicode) against an independent BM25 written here.

The oracle is a few lines: its own regex and NFC casefolding, PyStemmer's ``stemWords`` on
the whole token list (no cache), and BM25 summed posting by posting in pure Python. It is
run on real text in four languages: the German and English XQuAD paragraphs and questions,
and the French, Spanish and Dutch translations of GNU coreutils' messages (the gettext
catalogs Debian installs; skipped when absent). Ranks are compared through
``rank_block``, the path a run takes.
"""

from __future__ import annotations

import gettext
import json
import math
import re
import unicodedata
from collections import Counter
from pathlib import Path

import numpy as np
import pytest
import Stemmer

from evalcore.errors import ConfigError
from evalcore.retrieval.bm25 import BM25, Analyzer
from evalcore.retrieval.names import analyzers_of, parse_retrievers, split_retriever
from evalcore.retrieval.ranking import rank_block
from tests.conftest import shared_data

K1, B = 1.2, 0.75
TOP = 10


def oracle_tokens(text: str, lang: str) -> list[str]:
    words = re.findall(r"\w+", unicodedata.normalize("NFC", text).casefold())
    return words if lang == "unicode" else Stemmer.Stemmer(lang).stemWords(words)


def oracle_scores(docs: list[str], queries: list[str], lang: str) -> list[list[float]]:
    bags = [Counter(oracle_tokens(d, lang)) for d in docs]
    lengths = [sum(b.values()) for b in bags]
    avg, n = sum(lengths) / len(lengths), len(docs)
    df = Counter(t for b in bags for t in b)
    out = []
    for q in queries:
        s = [0.0] * n
        for t in oracle_tokens(q, lang):  # a repeated query token counts each time
            if t in df:
                idf = math.log(1 + (n - df[t] + 0.5) / (df[t] + 0.5))
                for i, b in enumerate(bags):
                    f = b.get(t, 0)
                    if f:
                        s[i] += idf * f * (K1 + 1) / (f + K1 * (1 - B + B * lengths[i] / avg))
        out.append(s)
    return out


def oracle_top(row: list[float]) -> list[int]:
    """Matched chunks by score, ties by chunk order: the first TOP."""
    return sorted((i for i, v in enumerate(row) if v > 0), key=lambda i: (-row[i], i))[:TOP]


def evalcore_top(docs: list[str], queries: list[str], retriever: str) -> tuple[list[list[int]], np.ndarray]:
    """Top hits of ``retriever`` as a run ranks them (dense vectors are random: not read)."""
    rng = np.random.default_rng(0)
    vec = rng.normal(size=(len(docs) + len(queries), 8)).astype(np.float32)
    vec /= np.linalg.norm(vec, axis=1, keepdims=True)
    index = BM25.build(docs, analyzer=split_retriever(retriever)[1])
    ranked = rank_block(
        vec[len(docs) :],
        vec[: len(docs)],
        [np.zeros(0, dtype=np.int64)] * len(queries),
        [retriever],
        TOP,
        bm25=index,
        qtexts=queries,
    )[retriever]
    return [list(r) for r in ranked.top_ids], index.scores(queries)


def xquad(lang: str) -> tuple[list[str], list[str]]:
    data = json.loads((shared_data("xquad") / f"xquad.{lang}.json").read_text("utf-8"))
    paragraphs = [p for a in data["data"] for p in a["paragraphs"]]
    questions = [q["question"] for p in paragraphs for q in p["qas"]]
    return [p["context"] for p in paragraphs], questions[::10]


def coreutils(locale: str) -> tuple[list[str], list[str]]:
    path = Path(f"/usr/share/locale/{locale}/LC_MESSAGES/coreutils.mo")
    if not path.exists():
        pytest.skip(f"{path} is not present")
    with path.open("rb") as fh:
        catalog = gettext.GNUTranslations(fh)._catalog  # type: ignore[attr-defined]
    docs = sorted({str(v) for k, v in catalog.items() if k and isinstance(v, str) and v.strip()})
    queries = [" ".join(d.split()[:6]) for d in docs[::50]]
    return docs, queries


CASES = [
    ("xquad-de", "german"),
    ("xquad-de", "unicode"),
    ("xquad-en", "english"),
    ("coreutils-fr", "french"),
    ("coreutils-es", "spanish"),
    ("coreutils-nl", "dutch"),
]


@pytest.mark.parametrize(("source", "lang"), CASES)
def test_ranks_equal_an_independent_bm25(source, lang):
    kind, code = source.split("-")
    docs, queries = xquad(code) if kind == "xquad" else coreutils(code)
    tops, scores = evalcore_top(docs, queries, f"bm25:{lang}")
    oracle = oracle_scores(docs, queries, lang)
    np.testing.assert_allclose(scores, np.array(oracle), rtol=1e-12, atol=1e-12)
    assert tops == [
        oracle_top(row) + [i for i in range(len(docs)) if row[i] == 0][: TOP - len(oracle_top(row))] for row in oracle
    ]
    assert sum(1 for row in oracle if any(row)) >= 0.9 * len(queries)  # the queries really match
    # the same queries in NFD form, and in capitals, read the same
    index = BM25.build(docs, analyzer=lang)
    assert np.array_equal(index.scores([unicodedata.normalize("NFD", q) for q in queries]), scores)
    upper = [q for q in queries if q.upper().casefold() == q.casefold()]
    assert len(upper) >= 0.9 * len(queries)
    assert np.array_equal(index.scores([q.upper() for q in upper]), index.scores(upper))


def test_case_nfd_and_inflection_on_german_text():
    docs, _ = xquad("de")
    docs = docs[:120]
    size = next(d for d in docs if "Größe" in d)  # "Größe": ß and ö
    # case and sharp s: casefold("GRÖSSE") == casefold("Größe") == "grösse"
    for query in ("GRÖSSE", unicodedata.normalize("NFD", "Größe"), "größe"):
        for lang in ("german", "unicode"):
            ours = BM25.build(docs, analyzer=lang).scores([query, "Größe"])
            assert np.array_equal(ours[0], ours[1]), (query, lang)
            assert ours[0][docs.index(size)] > 0
    # the chapter's tokenizer splits the word at every letter outside a-z
    chapter = BM25.build(docs)
    assert Analyzer("")("Größe GRÖSSE") == ["gr", "e", "gr", "sse"]
    assert not np.array_equal(*chapter.scores(["Größe", unicodedata.normalize("NFD", "Größe")]))
    # a corpus in NFD form is read as the same corpus
    nfd = [unicodedata.normalize("NFD", d) for d in docs]
    assert np.array_equal(
        BM25.build(nfd, analyzer="german").scores(["Universitäten"]),
        BM25.build(docs, analyzer="german").scores(["Universitäten"]),
    )
    # inflection: a plural query finds the paragraphs that hold only the singular
    singular = [i for i, d in enumerate(docs) if "Universität" in d and "Universitäten" not in d]
    assert singular
    german = BM25.build(docs, analyzer="german").scores(["Universitäten"])[0]
    plain = BM25.build(docs, analyzer="unicode").scores(["Universitäten"])[0]
    assert all(german[i] > 0 for i in singular) and all(plain[i] == 0 for i in singular)
    assert Analyzer("german")("Universitäten Universität") == Stemmer.Stemmer("german").stemWords(
        ["universitäten", "universität"]
    )


def test_retriever_names_and_unknown_language():
    assert parse_retrievers("dense,bm25,bm25:german,hybrid:german,rerank:german") == [
        "dense",
        "bm25",
        "bm25:german",
        "hybrid:german",
        "rerank:german",
    ]
    assert analyzers_of(["dense", "bm25", "hybrid:german", "bm25:german", "rerank"]) == ["", "german"]
    with pytest.raises(ConfigError) as err:
        parse_retrievers("bm25:klingon")
    message = str(err.value)
    assert "\n" not in message and "'klingon'" in message
    assert all(lang in message for lang in ("german", "dutch", "indonesian", "french", "unicode"))
    for bad in ("dense:german", "bm25:", "hybrid:german:x"):
        with pytest.raises(ConfigError):
            parse_retrievers(bad)


def test_rerank_follows_the_hybrid_of_its_analyzer():
    """rerank:german reorders the top 25 of hybrid:german, rerank those of hybrid (one block,
    both indexes); the scorer here puts the highest chunk id first."""
    from evalcore.retrieval.rerank import RERANK_DEPTH, rerank_order

    docs, queries = xquad("de")
    queries = queries[:12]
    rng = np.random.default_rng(1)
    vec = rng.normal(size=(len(docs) + len(queries), 8)).astype(np.float32)
    vec /= np.linalg.norm(vec, axis=1, keepdims=True)
    indexes = {"": BM25.build(docs), "german": BM25.build(docs, analyzer="german")}
    names = ["hybrid", "hybrid:german", "rerank", "rerank:german"]
    top = 30
    ranked = rank_block(
        vec[len(docs) :],
        vec[: len(docs)],
        [np.zeros(0, dtype=np.int64)] * len(queries),
        names,
        top,
        bm25=indexes,
        qtexts=queries,
        rerank=lambda i, ids: [float(c) for c in ids],
    )
    assert list(ranked) == names
    for hybrid, rerank in (("hybrid", "rerank"), ("hybrid:german", "rerank:german")):
        for head, got in zip(ranked[hybrid].top_ids, ranked[rerank].top_ids, strict=True):
            expected = rerank_order(head, [float(c) for c in head[:RERANK_DEPTH]])
            assert list(got) == list(expected[:top])
    assert any(
        list(a) != list(b) for a, b in zip(ranked["hybrid"].top_ids, ranked["hybrid:german"].top_ids, strict=True)
    )
