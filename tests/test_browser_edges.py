"""Rough edges a new user hits first, walked in the real browser (chromium through playwright,
as tests/test_browser.py, on a private copy of the same two-run store):

- New run: a zip made the usual way (``zip -r corpus.zip corpus``) whose questions name
  documents without the folder validates, saying the folder was left out; questions whose
  document id is wrong show each line's reason and the document ids the corpus has.
"""

from __future__ import annotations

import io
import json
import zipfile

from conftest import MINI
from serving import healthy, settled
from test_browser import browser, goto, page, served  # noqa: F401 - the shared app, browser and tab

from evalcore.corpus import load_corpus


def _zip_with_top_folder(folder: str) -> bytes:
    """What ``zip -r corpus.zip corpus`` makes of the mini corpus: a folder entry, then the
    files inside it."""
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as z:
        z.writestr(f"{folder}/", b"")
        for path in sorted((MINI / "corpus").iterdir()):
            z.writestr(f"{folder}/{path.name}", path.read_bytes())
    return out.getvalue()


def _span_questions(document_prefix: str) -> tuple[bytes, list[str]]:
    """Two questions given as exact spans (``document``, ``start``, ``end``) of the mini
    corpus, the document named with ``document_prefix``; and the document ids used."""
    corpus = {d.doc_id: d for d in load_corpus(MINI / "corpus").documents}
    lines, used = [], []
    for n, (doc_id, needle) in enumerate(
        [("install", "The server listens on port 8470 by default."), ("recipes", "Steeping time is given in seconds.")]
    ):
        text = corpus[doc_id].text
        start = text.find(needle)
        assert start >= 0 and text.find(needle, start + 1) == -1, (doc_id, needle)
        document = document_prefix + doc_id
        used.append(document)
        lines.append(
            json.dumps(
                {
                    "id": f"q{n}",
                    "question": f"question {n}?",
                    "document": document,
                    "start": start,
                    "end": start + len(needle),
                }
            )
        )
    return ("\n".join(lines) + "\n").encode(), used


def _upload_and_validate(tab, corpus: tuple[str, bytes] | None, questions: bytes) -> None:
    """Upload ``corpus`` (when given: the corpus uploader adds files) and the questions file
    (replacing the one before), then press Validate."""
    inputs = tab.locator('[data-testid="stFileUploader"] input[type="file"]')
    if corpus is not None:
        inputs.nth(0).set_input_files(files=[{"name": corpus[0], "mimeType": "application/zip", "buffer": corpus[1]}])
        settled(tab)
    inputs.nth(1).set_input_files(
        files=[{"name": "questions.jsonl", "mimeType": "application/octet-stream", "buffer": questions}]
    )
    settled(tab)
    tab.get_by_role("button", name="Validate").click()
    settled(tab)


def test_new_run_a_zip_with_its_top_folder_and_a_wrong_document_id(served, page):  # noqa: F811
    url, _, _ = served
    goto(page, url + "/new_run")
    healthy(page, "new run")
    ids = sorted(d.doc_id for d in load_corpus(MINI / "corpus").documents)

    # zip -r corpus.zip corpus: document ids are the file names, as for the folder itself
    questions, _ = _span_questions("")
    _upload_and_validate(page, ("corpus.zip", _zip_with_top_folder("corpus")), questions)
    healthy(page, "new run: zip with a top folder")
    notes = page.locator('[data-testid="stAlertContentInfo"]').filter(has_text="corpus.zip")
    assert notes.count() == 1, page.locator("body").inner_text()[:3000]
    note = notes.first.inner_text()
    assert "every file is inside the folder corpus/" in note and "left out of the document ids" in note, note
    assert "corpus/install.md is document install" in note, note
    valid = page.locator('[data-testid="stAlertContentSuccess"]')
    assert valid.count() == 1, page.locator("body").inner_text()[:3000]
    assert valid.first.inner_text().startswith("Valid: 4 documents") and "ground truths 2 of 2 valid" in (
        valid.first.inner_text()
    )
    assert page.get_by_role("button", name="Start run").count() == 1

    # the questions still name the folder (as the old zip reading made them): every needle
    # is invalid; each line's reason and the corpus's document ids are shown, no Start button
    wrong, used = _span_questions("corpus/")
    _upload_and_validate(page, None, wrong)  # the same zip, other questions
    healthy(page, "new run: wrong document id")
    error = page.locator('[data-testid="stAlertContentError"]')
    assert error.count() == 1, page.locator("body").inner_text()[:3000]
    assert "no valid in-domain question to score" in error.first.inner_text()
    assert "2 ground truths" in error.first.inner_text()
    table = page.locator('[data-testid="stTable"] table').first
    rows = [
        r.split("\t")
        for r in table.locator("tbody tr").evaluate_all(
            "rows => rows.map(r => [...r.querySelectorAll('td')].map(c => c.innerText).join('\\t'))"
        )
    ]
    assert [r[-1] for r in rows] == [f"document '{d}' not in corpus" for d in used], rows
    assert [r[0] for r in rows] == ["1", "2"], rows  # the questions file's lines
    caption = page.locator('[data-testid="stCaptionContainer"]').filter(has_text="Document ids in this corpus")
    assert caption.count() == 1
    assert caption.first.inner_text() == "Document ids in this corpus (4): " + ", ".join(ids)
    assert page.get_by_role("button", name="Start run").count() == 0
