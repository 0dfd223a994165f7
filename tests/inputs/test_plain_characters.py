"""The character rule every extractor applies (evalcore.inputs.extractors.plain_characters):
extracted text holds no non-character and no control character but tab and newline; PDFium's
line-end hyphen mark, whatever the machine's fonts, never reaches the canonical text."""

from __future__ import annotations

import unicodedata

import pytest
from reliability.pdfs import deflate, pdf

from evalcore.inputs.extract import extract_file
from evalcore.inputs.extractors import pdf as pdf_extractor
from evalcore.inputs.extractors import plain_characters

NON_CHARACTERS = ["\ufffe", "\uffff", "\ufdd0", "\ufdef", "\U0001fffe", "\U0001ffff", "\U0010fffe", "\U0010ffff"]
CONTROLS = ["\x00", "\x02", "\x03", "\x07", "\x0b", "\x0c", "\x1b", "\x7f", "\x81", "\x9d"]


def _unwanted(text: str) -> list[str]:
    """Every non-character, surrogate and control character (tab and newline aside) in ``text``."""
    return [
        f"U+{ord(ch):04X}"
        for ch in text
        if (ord(ch) & 0xFFFE) == 0xFFFE
        or 0xFDD0 <= ord(ch) <= 0xFDEF
        or unicodedata.category(ch) in ("Cc", "Cs")
        and ch not in "\t\n"
    ]


def test_non_characters_and_controls_go_tab_and_newline_stay():
    dirty = "a" + "b".join(NON_CHARACTERS + CONTROLS) + "c\tcol\r\nnext\rlast\n"
    clean = plain_characters(dirty)
    assert _unwanted(clean) == []
    assert clean == "a" + "b" * (len(NON_CHARACTERS + CONTROLS) - 1) + "c\tcol\nnext\nlast\n"
    assert _unwanted(dirty) != []  # the check above can fail


def test_pdfium_marks_stand_for_what_they_mean():
    assert plain_characters("manip\ufffeulation") == "manipulation"  # a line-end hyphen, lines joined
    assert plain_characters("manip\x02ulation") == "manipulation"  # the same hyphen as PDFium's char code
    # C1 codes from a font without a Unicode map: the Windows-1252 characters they stand for
    assert plain_characters("\x93quoted\x94 \x96 dash \x97 \x85") == "“quoted” – dash — …"


def test_a_surrogate_goes():
    assert plain_characters("a\ud800b") == "ab"


def _two_lines(first: str, second: str) -> bytes:
    """A one-page PDF in Helvetica (a standard font every PDF reader carries: no machine font
    decides the layout) with ``first`` and ``second`` on two lines, as a browser prints a
    compound broken at its own hyphen."""
    stream = b"BT /F1 12 Tf 72 720 Td (%s) Tj 0 -16 Td (%s) Tj ET" % (first.encode(), second.encode())
    return pdf(deflate([stream]))


def test_a_compound_broken_at_its_hyphen_holds_no_mark():
    pdfium = pytest.importorskip("pypdfium2")
    data = _two_lines("we ask for an increased upper-", "bound first.")
    doc = pdfium.PdfDocument(data)
    textpage = doc[0].get_textpage()
    raw = textpage.get_text_range()
    doc.close()
    assert "\ufffe" in raw  # PDFium marks the line-end hyphen (the case another machine's print hit)
    _, extraction = extract_file(data, "faq.pdf")
    assert _unwanted(extraction.text) == []
    assert "we ask for an increased upperbound first." in extraction.text  # the documented join
    assert pdf_extractor.clean(raw) == "we ask for an increased upperbound first."


@pytest.mark.parametrize("artefact", NON_CHARACTERS + CONTROLS)
def test_html_holds_no_artefact(artefact):
    page = f"<html><body><main><h1>T{artefact}itle</h1><p>one{artefact}two</p></main></body></html>"
    _, extraction = extract_file(page.encode("utf-8", "surrogatepass"), "page.html")
    assert _unwanted(extraction.text) == [] and _unwanted(extraction.title) == []
    assert extraction.text.startswith("# T") and "one" in extraction.text and "two" in extraction.text
