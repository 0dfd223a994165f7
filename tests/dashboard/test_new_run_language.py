"""The New run page on a corpus that is not English (AppTest): after Validate, one line names
the analyzer and says the default model is English-only, in the reader's language; an
English corpus gets no such line, and the validated run is the one that was chosen."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import FIXTURES, MINI, ROOT
from streamlit.testing.v1 import AppTest

APP = str(ROOT / "app.py")
LANGUAGES = FIXTURES / "languages"


def validated(store_path: Path, monkeypatch, folder: Path, questions: Path, analyzers=None, lang=None) -> AppTest:
    monkeypatch.setenv("EVALCORE_STORE", str(store_path))
    at = AppTest.from_file(APP, default_timeout=120)
    if lang:
        at.query_params["lang"] = lang
    at.run()
    at.switch_page("evalcore_app/screens/new_run.py")
    at.run()
    corpus_up, questions_up, _ood = at.file_uploader
    corpus_up.set_value([(p.name, p.read_bytes(), "text/markdown") for p in sorted(folder.iterdir())])
    questions_up.set_value(("questions.jsonl", questions.read_bytes(), "application/jsonl"))
    at.multiselect(key="nr_strategies").set_value(["E"])
    at.multiselect(key="nr_retrievers").set_value(["dense", "bm25"])
    if analyzers is not None:
        at.multiselect(key="nr_languages").set_value(analyzers)
    at.run()
    at.button(key="nr_validate").click()
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    assert [*at.success, *at.warning], [e.value for e in at.error]  # validated
    return at


def language_lines(at: AppTest, words: tuple[str, ...]) -> list[str]:
    return [e.value for e in at.info if any(w in e.value for w in words)]


def russian(tmp_path, monkeypatch, **kw) -> AppTest:
    folder = LANGUAGES / "ru"
    return validated(
        tmp_path / "runs" / "evalcore.duckdb", monkeypatch, folder / "corpus", folder / "questions.jsonl", **kw
    )


def test_a_russian_corpus_is_told_its_analyzer_and_the_run_stays_as_chosen(tmp_path, monkeypatch):
    at = russian(tmp_path, monkeypatch)
    (line,) = language_lines(at, ("corpus reads",))
    assert "Russian" in line and "bm25:russian" in line and "all-MiniLM-L6-v2 is English-only" in line
    assert at.session_state["nr_prepared"].spec.retrievers == ("dense", "bm25")  # said, never applied


def test_with_the_russian_analyzer_only_the_model_is_left_to_say(tmp_path, monkeypatch):
    at = russian(tmp_path, monkeypatch, analyzers=["russian"])
    (line,) = language_lines(at, ("corpus reads",))
    assert "English-only" in line and "bm25" not in line
    assert at.session_state["nr_prepared"].spec.retrievers == ("dense", "bm25:russian")


@pytest.mark.parametrize(
    ("lang", "words"),
    [("de", ("Russisch", "wählen Sie russian", "kennt nur Englisch")), ("nl", ("Russisch", "kies russian", "Engels"))],
)
def test_the_line_is_in_the_readers_language(tmp_path, monkeypatch, lang, words):
    at = russian(tmp_path, monkeypatch, lang=lang)
    (line,) = language_lines(at, ("bm25:russian",))
    assert all(w in line for w in words), line
    assert "corpus reads" not in line and "English-only" not in line


def test_an_english_corpus_gets_no_language_line(tmp_path, monkeypatch):
    at = validated(tmp_path / "runs" / "evalcore.duckdb", monkeypatch, MINI / "corpus", MINI / "questions.jsonl")
    assert not language_lines(at, ("corpus reads", "English-only", "mixes languages"))
