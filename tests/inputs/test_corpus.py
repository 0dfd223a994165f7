"""Extraction and corpus loading: canonical text rules, titles, failed documents."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import ROOT as REPO

from evalcore.errors import InputError
from evalcore.inputs import extract
from evalcore.inputs.corpus import corpus_stats, load_corpus

DATA = REPO / ".." / "shared" / "data"


def write(path: Path, data: bytes | str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(data, str):
        data = data.encode("utf-8")
    path.write_bytes(data)
    return path


# ------------------------------------------------------------------------ extractor


def test_bom_crlf_and_lone_cr_are_normalised():
    title, text = extract.extract_markdown("\ufeff# Hello\r\n\r\nline one\rline two\r\n", "x.md")
    assert title == "Hello"
    assert text == "# Hello\n\nline one\nline two\n"


def test_only_a_leading_bom_is_removed():
    _, text = extract.extract_markdown("a\ufeffb", "x.md")
    assert text == "a\ufeffb"


def test_front_matter_and_following_blank_lines_are_removed():
    raw = "---\r\ntitle: x\r\nmenu:\r\n  a: 1\r\n---  \r\n\r\n \r\n# Real\r\n\r\nbody\r\n"
    title, text = extract.extract_markdown(raw, "x.md")
    assert (title, text) == ("Real", "# Real\n\nbody\n")


@pytest.mark.parametrize("raw", ["---\nno closing line\n# T\n", "text\n---\nnot: front\n---\nmore"])
def test_text_without_a_leading_closed_block_is_kept(raw):
    assert extract.extract_markdown(raw, "x.md")[1] == raw


def test_title_falls_back_to_file_name():
    assert extract.extract_markdown("## Section only\n\ntext", "dir/my-page.md")[0] == "my-page"
    assert extract.extract_markdown("```\n# comment in code\n```\n\n# Real title\n", "a.md")[0] == "Real title"
    assert extract.extract_markdown("#NoSpace\ntext", "notes.txt")[0] == "notes"


@pytest.mark.parametrize(
    ("data", "reason"),
    [
        (b"", "empty file"),
        (b"abc\x00def", "binary file"),
        (b"caf\xe9 au lait", "not valid UTF-8"),
    ],
)
def test_decode_errors_name_the_file_and_reason(data, reason):
    with pytest.raises(InputError, match=reason) as err:
        extract.decode(data, "bad.md")
    assert "bad.md" in str(err.value)


def test_empty_after_extraction():
    with pytest.raises(InputError, match="empty after extraction"):
        extract.extract_markdown("---\na: 1\n---\n\n  \n", "fm-only.md")


# ----------------------------------------------------------------------------- corpus


def test_load_corpus_ids_types_order_and_failures(tmp_path):
    write(tmp_path / "b.md", "# Bee\n\n## One\n\ntext\n\n## Two\n\nmore\n")
    write(tmp_path / "a" / "z.txt", "plain text file\n")
    write(tmp_path / "a" / "y.markdown", "---\nx: 1\n---\n# Why\n")
    write(tmp_path / "bin.md", b"\x89PNG\r\n\x1a\n\x00\x00")
    write(tmp_path / "latin1.md", "caf\u00e9".encode("latin-1"))
    write(tmp_path / "empty.txt", b"")
    write(tmp_path / "b.txt", "same id as b.md")
    write(tmp_path / "ignored.rst", "not a corpus file")
    write(tmp_path / ".hidden" / "h.md", "# hidden")
    corpus = load_corpus(tmp_path)
    assert [d.doc_id for d in corpus.documents] == ["a/y", "a/z", "b"]
    assert [d.source_type for d in corpus.documents] == ["markdown", "text", "markdown"]
    assert [d.title for d in corpus.documents] == ["Why", "z", "Bee"]
    assert corpus.documents[0].text == "# Why\n"
    assert all((d.extractor, d.extractor_version) == (extract.NAME, extract.VERSION) for d in corpus.documents)
    failed = {f.doc_id: f.reason for f in corpus.failed}
    assert set(failed) == {"bin", "latin1", "empty", "b.txt"}  # "b" is b.md's id: a run stores one row per id
    assert "binary" in failed["bin"]
    assert "UTF-8" in failed["latin1"]
    assert failed["empty"] == "empty file"
    assert "duplicate document id" in failed["b.txt"] and "b.md" in failed["b.txt"]
    stats = corpus_stats(corpus)
    assert stats == {
        "documents": 3,
        "failed": 4,
        "sections": 2,
        "characters": sum(len(d.text) for d in corpus.documents),
    }


def test_missing_or_empty_roots_raise(tmp_path):
    with pytest.raises(InputError, match="not found") as err:
        load_corpus(tmp_path / "nope")
    assert "nope" in str(err.value)
    with pytest.raises(InputError, match="no documents"):
        load_corpus(tmp_path)
    write(tmp_path / "x.md", b"\x00")
    with pytest.raises(InputError, match="no readable documents") as err:
        load_corpus(tmp_path)
    assert "binary" in str(err.value)


def test_real_poetry_docs_corpus():
    root = DATA / "poetry-docs" / "docs"
    if not root.exists():
        pytest.skip(f"{root} not present")
    corpus = load_corpus(root)
    assert len(corpus.documents) == 16 and not corpus.failed
    by_id = corpus.by_id()
    assert by_id["basic-usage"].title == "Basic usage"
    assert by_id["pyproject"].title == "The `pyproject.toml` file"
    for d in corpus.documents:
        raw = (root / d.path).read_text(encoding="utf-8")
        # Independent check: everything from the first "# " heading line on is kept verbatim.
        assert d.text.startswith("# ")
        assert raw.endswith(d.text)
    # SOURCE.txt of the data set counts 92 "## " heading lines in all.
    assert corpus_stats(corpus)["sections"] == 92


# ------------------------------------------------------------------------ discovery safety


def test_symbolic_links_never_lead_out_of_the_corpus_and_nothing_vanishes(tmp_path):
    corpus, secret = tmp_path / "corpus", tmp_path / "home" / "other-user"
    write(corpus / "a.md", "# A\n\n## S\n\nAlpha.\n")
    write(corpus / "docs" / "b.md", "# B\n\n## S\n\nBeta.\n")
    write(secret / "notes.md", "# Notes\n\n## Password\n\nhunter2\n")
    (corpus / "notes.md").symlink_to(secret / "notes.md")  # a file outside
    (corpus / "theirs").symlink_to(secret)  # a folder outside
    (corpus / "also-a.md").symlink_to(corpus / "a.md")  # a file inside: followed
    (corpus / "loop.md").symlink_to(corpus / "loop.md")  # a loop
    (corpus / "gone.md").symlink_to(corpus / "missing.md")  # broken
    (corpus / "docs" / "up").symlink_to(corpus)  # a folder that holds it
    (corpus / "data.csv").symlink_to("/etc/passwd")  # not a document: skipped
    c = load_corpus(corpus)
    assert sorted(d.doc_id for d in c.documents) == ["a", "also-a", "docs/b"]
    failed = {f.path: f.reason for f in c.failed}
    assert failed == {
        "notes.md": "a symbolic link to a place outside the corpus folder; not followed",
        "theirs": "a symbolic link to a place outside the corpus folder; not followed",
        "loop.md": "a symbolic link loop",
        "gone.md": "a broken symbolic link",
        "docs/up/": "a symbolic link loop (it leads back to a folder that holds it)",
    }
    assert not any(str(tmp_path / "home") in reason for reason in failed.values())
    assert "hunter2" not in "".join(d.text for d in c.documents)


def test_failed_documents_never_share_an_id_with_a_document(tmp_path):
    write(tmp_path / "a.md", "# A\n\ntext\n")
    write(tmp_path / "a.txt", "# A again\n\ntext\n")
    c = load_corpus(tmp_path)
    assert [d.doc_id for d in c.documents] == ["a"]
    assert [(f.doc_id, f.path) for f in c.failed] == [("a.txt", "a.txt")]
    assert "duplicate document id 'a'" in c.failed[0].reason
