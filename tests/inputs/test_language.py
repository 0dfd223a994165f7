"""The corpus's main language (evalcore.inputs.language): read from a bounded, deterministic,
length-weighted sample by py3langid's packaged model, mapped to a BM25 analyzer, and the hint
that names it when the retrievers asked for do not read the corpus.

The Russian and German corpora are short texts of our own (tests/fixtures/languages); the
XQuAD articles of ../shared/data are read when they are there."""

from __future__ import annotations

import json

import pytest
from conftest import FIXTURES, MINI, shared_data

from evalcore.inputs.corpus import load_corpus
from evalcore.inputs.language import (
    DEFAULT_MODEL,
    MIN_SAMPLE_LETTERS,
    SAMPLE_WINDOWS,
    SNOWBALL,
    WINDOW_CHARS,
    CorpusLanguage,
    analyzer_for,
    detect_language,
    hint_line,
    language_hint,
    language_name,
    read_language,
    sample_windows,
)
from evalcore.records import Corpus, Document
from evalcore.retrieval.bm25 import UNICODE, languages

LANGUAGES = FIXTURES / "languages"


def texts_of(folder) -> list[str]:
    return [d.text for d in load_corpus(folder).documents]


def corpus_of(texts: list[str]) -> Corpus:
    docs = tuple(Document(f"doc{i:03d}", f"doc{i:03d}", "markdown", t, "test", "1") for i, t in enumerate(texts))
    return Corpus("mem", docs)


def found(code: str, share: float = 1.0, english: float = 0.0, shares=None) -> CorpusLanguage:
    return CorpusLanguage(code, share, english, 1000, 4, tuple(shares or [(code, share)]))


@pytest.mark.parametrize(("folder", "code"), [("ru", "ru"), ("de", "de")])
def test_the_fixture_corpora_read_as_their_language(folder, code):
    language = detect_language(load_corpus(LANGUAGES / folder / "corpus"))
    assert language is not None
    assert language.code == code and language.share > 0.9 and language.english == 0.0
    assert not language.is_english and not language.mixed
    assert language.letters >= MIN_SAMPLE_LETTERS and language.windows >= 2


def test_the_mini_corpus_reads_as_english_and_nothing_is_said():
    language = detect_language(load_corpus(MINI / "corpus"))
    assert language is not None and language.code == "en" and language.is_english
    for retrievers in (["bm25"], ["dense", "bm25", "hybrid"], ["rerank"]):
        assert language_hint(language, retrievers) is None


@pytest.mark.parametrize(("name", "code"), [("xquad.de.json", "de"), ("xquad.en.json", "en")])
def test_ten_xquad_articles_read_as_their_language(name, code):
    data = json.loads((shared_data("xquad") / name).read_text(encoding="utf-8"))
    texts = ["\n\n".join(p["context"] for p in article["paragraphs"]) for article in data["data"][:10]]
    language = detect_language(corpus_of(texts))
    assert language is not None and language.code == code and language.share > 0.95


def test_the_sample_is_bounded_and_spread_over_the_text():
    huge = ("Das ist ein langer Satz über die Stadt und ihre Brücken. " * 200_000)[:10_000_000]
    windows = sample_windows([huge])
    assert len(windows) == SAMPLE_WINDOWS
    assert all(len(w) == WINDOW_CHARS for w in windows)
    starts = [huge.index(w) for w in windows[:1]]  # the text repeats: the first window opens near the start
    assert starts[0] < len(huge) // SAMPLE_WINDOWS
    # many documents: still at most SAMPLE_WINDOWS windows, each inside one document
    docs = [f"Dokument {i}: " + "Wort " * (i % 50) for i in range(5000)]
    windows = sample_windows(docs)
    assert len(windows) <= SAMPLE_WINDOWS and all(any(w in d for d in docs) for w in windows)


def test_each_window_lies_in_one_document_and_empty_ones_hold_none():
    texts = ["a" * 10, "", "b" * 700, "", "c" * 2000, ""]
    windows = sample_windows(texts)
    assert len(windows) == -(-2710 // WINDOW_CHARS)  # one window per WINDOW_CHARS of text
    assert all(len(w) <= WINDOW_CHARS and len(set(w)) == 1 for w in windows)
    assert [w[0] for w in windows] == ["b", "c", "c", "c", "c"]  # by length: the 10 letters of "a" weigh little
    assert sample_windows(["x" * 100]) == ["x" * 100]
    assert sample_windows([]) == [] and sample_windows(["", ""]) == []


def test_the_same_corpus_in_any_order_reads_the_same():
    texts = texts_of(LANGUAGES / "de" / "corpus") + texts_of(MINI / "corpus")
    first = detect_language(corpus_of(texts))
    docs = corpus_of(texts).documents
    shuffled = Corpus("mem", tuple(reversed(docs)))
    assert detect_language(shuffled) == first == detect_language(corpus_of(texts))


def test_long_documents_weigh_more_than_many_short_ones():
    german = " ".join(texts_of(LANGUAGES / "de" / "corpus"))
    english = texts_of(MINI / "corpus")
    long_german = corpus_of([german * 40, *english])  # one long German text, four short English ones
    language = detect_language(long_german)
    assert language is not None and language.code == "de" and language.share > 0.5
    long_english = corpus_of([" ".join(english) * 40, german])
    language = detect_language(long_english)
    assert language is not None and language.is_english


def test_no_letters_no_language():
    assert read_language([]) is None
    assert read_language(["1234 5678, 3.14 / 2.71 == 42; {} [] () <> " * 20]) is None
    assert read_language(["Hallo Welt"]) is None  # fewer letters than the sample needs


def test_every_iso_code_maps_to_a_stemmer_pystemmer_has():
    known = set(languages())
    assert set(SNOWBALL.values()) <= known
    assert analyzer_for("ru") == "russian" and analyzer_for("de") == "german" and analyzer_for("id") == "indonesian"
    assert analyzer_for("ja") == UNICODE and analyzer_for("uk") == UNICODE and analyzer_for("") == UNICODE


HINTS = [
    # (case, language, retrievers, models, expected (analyzer, plain, instead, default_model) or None)
    ("plain bm25 on Russian", found("ru"), ["bm25"], [], ("russian", ("bm25",), ("bm25:russian",), False)),
    (
        "the run's default retrievers",
        found("ru"),
        ["dense", "bm25", "hybrid"],
        [],
        ("russian", ("bm25", "hybrid"), ("bm25:russian", "hybrid:russian"), True),
    ),
    ("dense alone", found("de"), ["dense"], [], ("german", (), (), True)),
    ("dense with a model folder", found("de"), ["dense"], ["/models/multi"], None),
    ("the analyzer already chosen", found("ru"), ["bm25:russian", "dense"], ["/m"], None),
    ("plain beside its analyzer (a comparison)", found("ru"), ["bm25", "bm25:russian"], [], None),
    ("another language's analyzer", found("ru"), ["bm25:german"], [], None),
    ("rerank reads bm25 and the model", found("nl"), ["rerank"], [], ("dutch", ("rerank",), ("rerank:dutch",), True)),
    ("no stemmer for the language", found("ja"), ["bm25"], [], ("unicode", ("bm25",), ("bm25:unicode",), False)),
    (
        "mixed languages",
        found("ru", 0.45, 0.0, [("ru", 0.45), ("de", 0.4), ("fr", 0.15)]),
        ["bm25"],
        [],
        ("unicode", ("bm25",), ("bm25:unicode",), False),
    ),
    ("English", found("en", 1.0, 1.0), ["dense", "bm25"], [], None),
    ("mostly English", found("en", 0.6, 0.6, [("en", 0.6), ("de", 0.4)]), ["bm25"], [], None),
    ("nothing to tell", None, ["dense", "bm25"], [], None),
]


@pytest.mark.parametrize(("case", "language", "retrievers", "models", "expected"), HINTS, ids=[h[0] for h in HINTS])
def test_the_hint_names_what_to_use(case, language, retrievers, models, expected):
    hint = language_hint(language, retrievers, models)
    seen = None if hint is None else (hint.analyzer, hint.plain, hint.instead, hint.default_model)
    assert seen == expected


def test_the_line_names_the_analyzer_and_the_english_only_model():
    line = hint_line(language_hint(found("ru", 0.97, 0.01), ["dense", "bm25", "hybrid"]))
    assert "\n" not in line
    assert "Russian (ru, 97% of the sampled text)" in line
    assert "use bm25:russian, hybrid:russian" in line
    assert f"{DEFAULT_MODEL} is English-only" in line
    only_model = hint_line(language_hint(found("de"), ["dense"]))
    assert "German" in only_model and "bm25" not in only_model and "English-only" in only_model
    mixed = hint_line(language_hint(found("ru", 0.45, 0.0, [("ru", 0.45), ("de", 0.4)]), ["bm25"]))
    assert "mixes languages (ru 45%, de 40% of the sampled text)" in mixed and "bm25:unicode" in mixed


def test_language_names_in_the_readers_language():
    assert language_name("ru") == "Russian" and language_name("ru", "de") == "Russisch"
    assert language_name("de", "nl") == "Duits"
    assert language_name("zz-not-a-code") == "zz-not-a-code" and language_name("") == ""
