"""The reliability suite, issue 47: the corpus's language, read by ``validate`` (and so by
``run`` and the New run screen) from whatever corpus it is handed. One table row per case: an
empty corpus, numbers and code only, mixed languages, a huge document, text that is not valid.
Each ends with the command's usual outcome and at most one language line, never a traceback,
and names an analyzer only for text that is really in a language."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import FIXTURES
from test_reliability import check, evalcore

from evalcore.inputs.language import SAMPLE_WINDOWS, WINDOW_CHARS, detect_language, sample_windows
from evalcore.records import Corpus, Document

RU = (FIXTURES / "languages" / "ru" / "corpus" / "sad.md").read_text(encoding="utf-8")
DE = (FIXTURES / "languages" / "de" / "corpus" / "bibliothek.md").read_text(encoding="utf-8")
FR = (
    "Le jardin public ouvre chaque matin à huit heures et ferme le soir à neuf heures. En hiver, "
    "les portes ferment plus tôt parce que les allées ne sont pas éclairées. Les chiens restent en laisse.\n"
)
CODE = (Path(__file__).resolve().parents[2] / "evalcore" / "inputs" / "language.py").read_text(encoding="utf-8")
TABLE = "| 1 | 2 | 3 |\n|---|---|---|\n| 12.5 | 3,000 | 2024-01-01 |\n" * 40

#: (case, the corpus's files, expected outcome)
CORPORA: list[tuple[str, dict[str, str | bytes], str]] = [
    ("empty corpus", {"a.md": b""}, "exit 2, no language line"),
    ("numbers and tables only", {"a.md": "# Table\n\n" + TABLE}, "exit 0, no language line"),
    ("source code only", {"a.md": "```python\n" + CODE + "\n```\n"}, "exit 0, no language line"),
    ("symbols and emoji only", {"a.md": "🙂🚀🎉 ✓✓✓ → ← ★☆ " * 200}, "exit 0, no language line"),
    ("mixed languages, none most", {"ru.md": RU * 3, "de.md": DE * 3, "fr.md": FR * 4}, "exit 0, bm25:unicode"),
    (
        "a file that is not UTF-8 beside Russian",
        {"bad.md": b"\xff\xfe\xc3(" * 100, "ru.md": RU},
        "exit 0, bm25:russian",
    ),
    ("Russian in capitals", {"a.md": RU.upper()}, "exit 0, bm25:russian"),
    ("Russian with zero-width and bidi marks", {"a.md": RU.replace(" ", " \u200b\u202e")}, "exit 0, bm25:russian"),
    ("Russian with combining accents", {"a.md": RU.replace("а", "а\u0301")}, "exit 0, bm25:russian"),
    ("Russian with a NUL byte (a binary file)", {"a.md": RU + "\x00"}, "exit 2, no language line"),
    ("a huge Russian document (5 MB)", {"a.md": RU * 6_000}, "exit 0, bm25:russian"),
    (
        "Russian heading, a long English body",
        {"a.md": "# Городской сад\n\n" + "The garden opens at eight. " * 800},
        "exit 0, no language line",
    ),
]


def outcome(folder: Path) -> str:
    questions = folder.parent / f"{folder.name}.jsonl"
    questions.write_text('{"id": "q", "question": "x?", "needle": "x", "group": "g"}\n', encoding="utf-8")
    ran = evalcore("validate", "--corpus", str(folder), "--questions", str(questions), "--retrievers", "bm25")
    lines = [line for line in ran.err.splitlines() if line.startswith("note: the corpus")]
    if "Traceback" in ran.err or len(lines) > 1:
        return f"exit {ran.code}, broken: {ran.err[-300:]}"
    if not lines:
        return f"exit {ran.code}, no language line"
    named = [word for word in lines[0].replace(";", " ").split() if word.startswith("bm25:")]
    return f"exit {ran.code}, {' '.join(named) or lines[0]}"


@pytest.mark.parametrize(("case", "files", "expected"), CORPORA, ids=[c for c, _, _ in CORPORA])
def test_hostile_corpus_language(tmp_path, case, files, expected):
    folder = tmp_path / "corpus"
    folder.mkdir()
    for name, content in files.items():
        path = folder / name
        path.write_bytes(content if isinstance(content, bytes) else content.encode("utf-8", "surrogatepass"))
    check(f"corpus language: {case}", expected, outcome(folder))


def test_hostile_text_in_memory_never_breaks_detection():
    """Text no file could hand in (lone surrogates, every control character) and a document of
    50 million characters: detection ends with a language or None, reading a bounded sample."""
    odd = "".join(chr(c) for c in range(32)) + "\ud800\udfff" + "\ufffe\uffff" + "\u0301" * 500
    for case, texts, expected in [
        ("lone surrogates and controls", [odd * 10], "none"),
        ("Russian with lone surrogates", [RU.replace(" ", " \ud800 ") * 5], "ru"),
        ("50 million characters", [RU * 100_000], "ru"),
        ("100,000 tiny documents", ["да"] * 100_000, "none"),
    ]:
        corpus = Corpus("mem", tuple(Document(f"d{i}", "", "markdown", t, "t", "1") for i, t in enumerate(texts)))
        read = sum(len(w) for w in sample_windows([d.text for d in corpus.documents]))
        language = detect_language(corpus)
        observed = "none" if language is None else language.code
        if read > SAMPLE_WINDOWS * WINDOW_CHARS:
            observed = f"read {read} characters"
        check(f"corpus language: {case}", expected, observed)
