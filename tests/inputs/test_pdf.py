"""The PDF extractor on real PDFs: chromium prints of the poetry and mkdocs documentation
(tests/real_documents.py) and, where Debian ships them, TeX manuals. Page locators are
checked against poppler's pdftotext, an independent extractor."""

from __future__ import annotations

import io
import re
import shutil
import subprocess
from pathlib import Path

import pytest
from real_documents import markdown_needles

from evalcore.chunking import chunk_corpus, parse_strategies
from evalcore.errors import InputError
from evalcore.inputs.corpus import load_corpus
from evalcore.inputs.extract import extract_file
from evalcore.inputs.extractors import pdf as pdf_extractor
from evalcore.inputs.groundtruth import NeedleIndex
from evalcore.read.citations import locator, page_range

PDFTOTEXT = shutil.which("pdftotext")
TEX_MANUAL = Path("/usr/share/doc/libtasn1-doc/libtasn1.pdf")


def squash(text: str) -> str:
    """For comparing two extractors: no whitespace, no '#' (our heading marks), no '-' (poppler
    joins a line ending in '-' with the next and drops the hyphen)."""
    return re.sub(r"[\s#-]+", "", text)


def pdftotext_pages(path: Path, pages: int) -> list[str]:
    return [
        subprocess.run(
            [PDFTOTEXT, "-f", str(n), "-l", str(n), str(path), "-"], capture_output=True, text=True, check=True
        ).stdout
        for n in range(1, pages + 1)
    ]


def pdfinfo_pages(path: Path) -> int:
    out = subprocess.run(["pdfinfo", str(path)], capture_output=True, text=True, check=True).stdout
    return int(re.search(r"^Pages:\s+(\d+)", out, re.MULTILINE).group(1))


def confirmed_on_page(part: str, page_text: str) -> bool:
    """Every line of ``part`` is on the page (whitespace and hyphens aside); a line poppler reads
    in another order (table rows, text in columns) counts when each of its words is there."""
    page = squash(page_text)
    return all(
        squash(line) in page or all(squash(w) in page for w in line.split())
        for line in part.split("\n")
        if squash(line)
    )


@pytest.fixture(scope="session")
def pdf_corpora(printed):
    return {name: load_corpus(c.pdf) for name, c in printed.items()}


# --- page locators against pdftotext -------------------------------------------------------------


@pytest.mark.skipif(PDFTOTEXT is None, reason="pdftotext (poppler-utils) is not installed")
def test_every_chunk_is_on_the_page_its_locator_names(printed, pdf_corpora, capsys):
    figures = []
    for name, corpus in pdf_corpora.items():
        assert not corpus.failed
        docs = corpus.by_id()
        pages = {d.doc_id: pdftotext_pages(printed[name].pdf / f"{d.doc_id}.pdf", d.pages) for d in corpus.documents}
        for strategy in parse_strategies("A,E,G:boundaries+header+intro"):
            chunks = chunk_corpus(corpus, strategy)
            misses, spanning = [], 0
            for c in chunks:
                d = docs[c.doc_id]
                first, last = page_range(d.page_starts, c.start, c.end)
                assert locator(c.start, c.end, d.page_starts) == f"#page={first}"
                spanning += first != last
                on_first = d.text[c.start : min(c.end, d.page_starts[first] if first < d.pages else c.end)]
                if not confirmed_on_page(on_first, pages[c.doc_id][first - 1]):
                    misses.append((c.doc_id, first, on_first[:80]))
            figures.append(
                f"{name}/{strategy.name}: {len(chunks) - len(misses)}/{len(chunks)} chunks confirmed "
                f"by pdftotext on their locator page ({spanning} run onto the next page)"
            )
            assert misses == [], misses[:5]
    with capsys.disabled():
        print("\n" + "\n".join(figures))


@pytest.mark.skipif(PDFTOTEXT is None, reason="pdftotext (poppler-utils) is not installed")
def test_page_map_has_every_page_and_each_page_text_is_that_page(printed, pdf_corpora):
    for name, corpus in pdf_corpora.items():
        for d in corpus.documents:
            path = printed[name].pdf / f"{d.doc_id}.pdf"
            assert d.pages == pdfinfo_pages(path)
            assert d.page_starts[0] == 0 and list(d.page_starts) == sorted(set(d.page_starts))
            for n, raw in enumerate(pdftotext_pages(path, d.pages), start=1):
                end = d.page_starts[n] - 2 if n < d.pages else len(d.text)
                assert d.text[end : end + 2] in ("\n\n", "")  # pages are joined with one blank line
                assert confirmed_on_page(d.text[d.page_starts[n - 1] : end], raw), (d.doc_id, n)
                assert d.page_of(d.page_starts[n - 1]) == n


# --- needles from the Markdown source ----------------------------------------------------------


def test_markdown_needles_resolve_in_the_pdf_of_the_same_document(printed, pdf_corpora, capsys):
    """Every sentence of the Markdown prose that the printed PDF holds (by pdftotext) resolves
    exactly where it should; the share is reported. Misses are sentences that are not printed
    (a closed <details> element, an entity written as text).

    Where a line breaks depends on the machine's fonts: a compound whose own hyphen falls at a
    line end ("upper-" / "bound") is joined without it, as PDFium cannot tell it from a word
    hyphenated there (docs/DECISIONS.md, "Hyphenation"). Such a needle resolves with that
    hyphen left out, in its own document; it is counted and reported apart, never as a
    miss."""
    lines = []
    for name, corpus in pdf_corpora.items():
        index = NeedleIndex(corpus.documents)
        found = total = 0
        not_printed, joined = [], []
        for d in corpus.documents:
            whole = (
                squash(
                    subprocess.run(
                        [PDFTOTEXT, str(printed[name].pdf / f"{d.doc_id}.pdf"), "-"], capture_output=True, text=True
                    ).stdout
                )
                if PDFTOTEXT
                else None
            )
            for needle in markdown_needles((printed[name].markdown / f"{d.doc_id}.md").read_text(encoding="utf-8")):
                total += 1
                if any(o.doc_id == d.doc_id for o in index.find(needle)):
                    found += 1
                elif any(
                    o.doc_id == d.doc_id
                    for i, ch in enumerate(needle)
                    if ch == "-"
                    for o in index.find(needle[:i] + needle[i + 1 :])
                ):
                    joined.append(needle)
                else:
                    assert whole is not None and squash(needle) not in whole, (d.doc_id, needle)
                    not_printed.append(needle)
        assert total > 100 and (found + len(joined)) / total >= 0.95
        lines.append(
            f"{name}: {found}/{total} Markdown needles resolve in the PDF ({found / total:.1%}), "
            f"{len(joined)} with a line-end hyphen joined {joined}; not printed: {not_printed}"
        )
    with capsys.disabled():
        print("\n" + "\n".join(lines))


# --- running headers and footers, sections --------------------------------------------------


def test_browser_header_and_footer_repeated_on_every_page_are_removed(printed, pdf_corpora):
    assert printed["poetry"].header_footer
    url = printed["poetry"].html.as_uri()  # the footer prints the page's URL
    for d in pdf_corpora["poetry"].documents:
        if d.pages < 2:  # one page: nothing repeats, so nothing is known to be a running line
            continue
        assert url not in d.text, d.doc_id
        assert not re.search(r"^\d+/\d+/\d+, \d+:\d+ [AP]M", d.text, re.MULTILINE), d.doc_id
        assert not re.search(rf"^\d+/{d.pages}$", d.text, re.MULTILINE), d.doc_id
        if PDFTOTEXT:  # the footer is printed: the rule removed it, not the printer
            assert url in pdftotext_pages(printed["poetry"].pdf / f"{d.doc_id}.pdf", 1)[0]


def _h_texts(html_path: Path, tag: str = "h2") -> list[str]:
    """The page's headings of one level, read with lxml on its own (the oracle for sections)."""
    import lxml.html

    root = lxml.html.parse(str(html_path)).getroot()
    return [" ".join(h.text_content().split()) for h in root.iter(tag)]


def _sections(text: str) -> list[str]:
    return [line[3:] for line in text.split("\n") if line.startswith("## ")]


def test_sections_from_the_outline_are_the_printed_h2_headings(printed, pdf_corpora):
    assert printed["mkdocs"].outline
    for d in pdf_corpora["mkdocs"].documents:
        page = printed["mkdocs"].html / f"{d.doc_id}.html"
        assert _sections(d.text) == _h_texts(page), d.doc_id
        h1 = _h_texts(page, "h1")
        if h1:  # the single top-level outline entry is the title line
            assert d.title == h1[0] and d.text.split("\n").count(f"# {d.title}") == 1, d.doc_id


def test_sections_from_the_layout_without_an_outline(printed, pdf_corpora, capsys):
    """poetry's PDFs have no outline: h1 (the largest size, once, first) is the title and the
    next size down makes the sections. Known limits, listed: a document with one h2 (no
    reliable sections), a heading set in code font only (printed smaller), no h2 at all
    (the next size down, h3, makes the sections)."""
    agree, limits = 0, []
    for d in pdf_corpora["poetry"].documents:
        h2 = _h_texts(printed["poetry"].html / f"{d.doc_id}.html")
        assert d.text.split("\n").count(f"# {d.title}") == 1  # the h1, marked as the title line
        if _sections(d.text) == h2:
            agree += 1
        else:
            limits.append(f"{d.doc_id} ({len(h2)} h2, {len(_sections(d.text))} sections)")
            assert len(h2) < 2 or len(_sections(d.text)) >= len(h2) - 1, d.doc_id
    assert agree >= 12
    with capsys.disabled():
        print(
            f"\nlayout sections equal the h2 headings in {agree} of {len(pdf_corpora['poetry'].documents)} "
            f"documents; the others: {', '.join(limits)}"
        )


# --- a TeX manual Debian ships -------------------------------------------------------------


@pytest.mark.skipif(not TEX_MANUAL.exists(), reason=f"{TEX_MANUAL} is not installed (libtasn1-doc)")
def test_tex_manual_hyphenation_ligatures_page_numbers_and_chapters():
    _, x = extract_file(TEX_MANUAL.read_bytes(), TEX_MANUAL.name)
    assert "\ufffe" not in x.text and not re.search("[\ufb00-\ufb06]", x.text)
    assert "manipulation" in x.text and "manip-" not in x.text  # "manip-" / "ulation" at a line end
    # page numbers stand alone at the top of chapter pages; none is left at a page start
    starts = [x.text[s : s + 4] for s in x.page_starts[4:]]
    assert not any(re.match(r"\d+\n", s) for s in starts), starts
    assert _sections(x.text)[:4] == [
        "1 Introduction",
        "2 ASN.1 structure handling",
        "3 Utilities",
        "4 Function reference",
    ]
    if PDFTOTEXT:
        raw = pdftotext_pages(TEX_MANUAL, 6)[5]
        assert confirmed_on_page(x.text[x.page_starts[5] : x.page_starts[6] - 2], raw)


# --- failures with reasons ---------------------------------------------------------------------


def _encrypt(data: bytes, user: str) -> bytes:
    pypdf = pytest.importorskip("pypdf")
    writer = pypdf.PdfWriter(clone_from=pypdf.PdfReader(io.BytesIO(data)))
    writer.encrypt(user_password=user, owner_password="owner-secret", algorithm="AES-256")
    out = io.BytesIO()
    writer.write(out)
    return out.getvalue()


def _merge(*parts: tuple[bytes, int | None]) -> bytes:
    """Pages from PDFs (page index, or None for a blank page of A4) into one PDF."""
    pypdf = pytest.importorskip("pypdf")
    writer = pypdf.PdfWriter()
    for data, index in parts:
        if index is None:
            writer.add_blank_page(595, 842)
        else:
            writer.add_page(pypdf.PdfReader(io.BytesIO(data)).pages[index])
    out = io.BytesIO()
    writer.write(out)
    return out.getvalue()


def _scan(pdf_path: Path, tmp: Path) -> bytes:
    """A scanned page: page 1 rendered to pixels by poppler, saved as an image-only PDF."""
    from PIL import Image

    if not shutil.which("pdftoppm"):
        pytest.skip("pdftoppm (poppler-utils) is not installed")
    subprocess.run(["pdftoppm", "-r", "60", "-f", "1", "-l", "1", "-png", str(pdf_path), str(tmp / "scan")], check=True)
    out = io.BytesIO()
    Image.open(next(tmp.glob("scan*.png"))).convert("RGB").save(out, format="PDF", resolution=60)
    return out.getvalue()


@pytest.fixture(scope="session")
def bad_pdfs(printed, tmp_path_factory) -> dict[str, bytes]:
    tmp = tmp_path_factory.mktemp("bad-pdfs")
    good_path = printed["poetry"].pdf / "libraries.pdf"
    good = good_path.read_bytes()
    scan = _scan(good_path, tmp)
    return {
        "encrypted.pdf": _encrypt(good, "secret"),
        "owner-only.pdf": _encrypt(good, ""),  # encrypted without a user password: readable
        "scanned.pdf": scan,
        "truncated.pdf": good[: len(good) // 3],
        "renamed.pdf": (printed["poetry"].markdown / "libraries.md").read_bytes(),
        "empty.pdf": b"",
        "blank-page.pdf": _merge((good, 0), (good, None), (good, 1)),
        "half-scanned.pdf": _merge((good, 0), (scan, 0)),
    }


def test_each_bad_pdf_fails_with_its_reason_and_the_rest_of_the_corpus_goes_on(bad_pdfs, printed, tmp_path):
    folder = tmp_path / "corpus"
    folder.mkdir()
    for name, data in bad_pdfs.items():
        (folder / name).write_bytes(data)
    shutil.copy(printed["poetry"].pdf / "faq.pdf", folder / "faq.pdf")
    shutil.copy(printed["poetry"].markdown / "libraries.md", folder / "libraries.md")
    corpus = load_corpus(folder)
    reasons = {f.path: f.reason for f in corpus.failed}
    assert reasons == {
        "encrypted.pdf": "encrypted PDF: it needs a password to open; not extracted",
        "scanned.pdf": "no text layer: the 1 page(s) are images (a scan?); OCR is not done",
        "truncated.pdf": "not a readable PDF (corrupt or truncated: PDFium finds a data format error)",
        "renamed.pdf": "not a PDF (no %PDF- header)",
        "empty.pdf": "empty file",
    }
    docs = corpus.by_id()
    assert sorted(docs) == ["blank-page", "faq", "half-scanned", "libraries", "owner-only"]
    assert docs["blank-page"].notes == ("no text on page(s) 2",)
    assert docs["blank-page"].pages == 3 and docs["blank-page"].page_of(docs["blank-page"].page_starts[2]) == 3
    assert docs["half-scanned"].notes == ("no text on page(s) 2 (page(s) 2 are images, a scan?; OCR is not done)",)
    assert docs["owner-only"].text == load_corpus(printed["poetry"].pdf).by_id()["libraries"].text


def test_the_cheap_upload_check_refuses_what_cannot_be_opened(bad_pdfs):
    for name in ("encrypted.pdf", "truncated.pdf", "renamed.pdf", "empty.pdf"):
        with pytest.raises(InputError, match=re.escape(name)):
            pdf_extractor.check(bad_pdfs[name], name)
    pdf_extractor.check(bad_pdfs["owner-only.pdf"], "owner-only.pdf")
