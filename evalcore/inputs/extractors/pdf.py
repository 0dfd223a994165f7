"""The PDF extractor (METHODS.md "The words"), built on PDFium through pypdfium2 (Apache-2.0 / BSD-3).

Why PDFium: measured against pypdf, pdfminer.six and pdfplumber on real PDFs
(``benchmarks/bench_pdf.py``, figures in docs/DECISIONS.md) it is 10 to 40 times faster at
the same or better text fidelity, and it marks line-end hyphens and gives every
character's box, which the rules below need. PyMuPDF is AGPL and out.

The canonical text of a PDF, in this order:

1. **Lines**: each page's text as PDFium gives it (its reading order, its line breaks);
   each line keeps the vertical extent of its characters (loose boxes, so a line's height
   follows its font size).
2. **Running headers and footers** go: the top-most (bottom-most) line of a page whose
   text, digits replaced by ``0``, is the top-most (bottom-most) line of at least three
   pages (both pages of a two-page document); then the next line the same way, two lines
   deep at each edge. "11/30/26, 9:24 AM FAQ" and "file:///x.html 2/5" on every page of a
   browser print, a page number alone, "Chapter 2: Naming 7" on a chapter's pages.
3. **Characters**: the ones every extractor cleans
   (:func:`~evalcore.inputs.extractors.plain_characters`): PDFium's mark for a hyphen at a
   line end (U+FFFE in its text, U+0002 as the character's code; PDFium has already joined
   the two lines) is removed, so ``manip-`` / ``ulation`` becomes ``manipulation``; a C1
   code (a font without a Unicode map) becomes its Windows-1252 character; other control
   characters, surrogates and non-characters are removed. The Latin ligatures
   U+FB00..U+FB06 become their letters (ﬁ -> fi). Each line is stripped. Nothing else is
   normalised (no NFKC: ², ½, ™ and non-breaking spaces stay as printed). Outline and
   metadata titles are cleaned the same way.
4. **Sections** (``## `` lines, so every chunker works unchanged): from the outline
   (bookmarks) when it has entries: with exactly one top-level entry, that entry is the
   document title (its line gets ``# ``) and its children, if any, are the sections;
   otherwise the top-level entries are. Each entry's heading line is found on its target page (the
   lines whose text, whitespace ignored, spells the entry's title, nearest to the
   entry's position); a heading printed over several lines becomes one line. An entry
   whose text is not found is listed in the notes. Without an outline: from the layout,
   when it is reliable: lines whose font size is at least 1.15 times the body text's
   (the size most characters have) are heading candidates; the largest size is the title
   if it occurs once and first, and the next size makes the sections; at least two
   sections and at most one line in five, or no sections at all. The ``# ``/``## ``
   prefixes are part of the canonical text, so every offset and the page map include them.
5. **Paragraphs**: a blank line between two lines of a page where the gap between them is
   more than 0.6 of the smaller line's height, where the text moves up the page (a new
   column or box), where the font size changes by more than 15 %, and around headings.
6. **Pages** are joined with one blank line; ``page_starts[i]`` is the offset where page
   ``i + 1`` begins, the blank line between two pages belonging to the page before.
   A page without text stays in the map (empty) and is listed in the notes.

Failures (:class:`~evalcore.errors.InputError`, the document is recorded as failed):
an empty file, no ``%PDF-`` header, a file PDFium cannot parse, an encrypted PDF that
needs a password, and a PDF without text on any page (a scan: OCR is not done).
"""

from __future__ import annotations

import logging
import re
from collections import Counter
from dataclasses import dataclass
from pathlib import PurePath
from typing import Any

from evalcore.errors import InputError
from evalcore.inputs.extractors import Extraction, library_version, plain_characters, require_library

logger = logging.getLogger(__name__)

NAME = "pdf"
RULES = "2"  # bump when a rule above changes (2: one character rule for every extractor)
# The library's version is part of the stamp: another PDFium can read a file differently.
VERSION = f"{RULES}+pypdfium2-{library_version('pypdfium2')}"

RUNNING_MIN_PAGES = 3
RUNNING_DEPTH = 2
PARAGRAPH_GAP = 0.6
SIZE_CHANGE = 0.15
HEADING_FACTOR = 1.15
HEADING_MAX_CHARS = 200
MAX_SECTION_SHARE = 0.2

_LIGATURES = str.maketrans(
    {
        "\ufb00": "ff",
        "\ufb01": "fi",
        "\ufb02": "fl",
        "\ufb03": "ffi",
        "\ufb04": "ffl",
        "\ufb05": "st",
        "\ufb06": "st",
    }
)
_LINE = re.compile(r"[^\r\n]+")
_DIGITS = re.compile(r"\d+")
_SPACE = re.compile(r"\s+")


@dataclass(slots=True)
class _Line:
    text: str
    top: float
    bottom: float
    page: int  # 0-based
    size: float = 0.0  # font size: the largest of the sampled characters' (inline code is smaller)
    mark: str = ""  # "" | "# " (title) | "## " (section)

    @property
    def height(self) -> float:
        return max(self.top - self.bottom, 1e-6)


def clean(text: str) -> str:
    """One line's characters after rule 3: hyphen marks removed, ligatures split, no control
    character or non-character left."""
    return plain_characters(text.translate(_LIGATURES)).strip()


def _squash(text: str) -> str:
    return _SPACE.sub("", text).casefold()


def _signature(text: str) -> str:
    return _DIGITS.sub("0", " ".join(text.split())).casefold()


# ----------------------------------------------------------------------------- reading


def open_document(data: bytes, filename: str) -> Any:
    """A ``pypdfium2.PdfDocument``; InputError naming ``filename`` when it cannot be opened
    (or when pypdfium2, the ``pdf`` extra, is not installed)."""
    pdfium = require_library("pypdfium2", "pdf", filename)
    import pypdfium2.raw as pdfium_c

    if not data:
        raise InputError(f"{filename}: empty file")
    if b"%PDF-" not in data[:1024]:
        raise InputError(f"{filename}: not a PDF (no %PDF- header)")
    try:
        return pdfium.PdfDocument(data)
    except pdfium.PdfiumError as exc:
        code = getattr(exc, "err_code", None)
        if code == pdfium_c.FPDF_ERR_PASSWORD:
            raise InputError(f"{filename}: encrypted PDF: it needs a password to open; not extracted") from None
        if code == pdfium_c.FPDF_ERR_SECURITY:
            raise InputError(
                f"{filename}: encrypted PDF with a security handler PDFium does not support; not extracted"
            ) from None
        if code == pdfium_c.FPDF_ERR_FORMAT:
            raise InputError(
                f"{filename}: not a readable PDF (corrupt or truncated: PDFium finds a data format error)"
            ) from None
        raise InputError(f"{filename}: not a readable PDF (PDFium: {exc})") from None


def check(data: bytes, filename: str) -> None:
    """InputError when the bytes cannot be opened as a PDF (the upload check: cheap, no pages
    are read; a PDF without text is found when the corpus is loaded)."""
    open_document(data, filename).close()


def _page_lines(page: Any, index: int) -> list[_Line]:
    """The page's printed lines in PDFium's order, with their vertical extent and font size."""
    import pypdfium2.raw as pdfium_c

    textpage = page.get_textpage()
    try:
        count = textpage.count_chars()
        text = textpage.get_text_range(0, count) if count > 0 else ""
        # code point -> PDFium char index (PDFium counts UTF-16 units)
        wide = any(ord(ch) > 0xFFFF for ch in text)
        units = None
        if wide:
            units, u = [], 0
            for ch in text:
                units.append(u)
                u += 2 if ord(ch) > 0xFFFF else 1
        lines = []
        for m in _LINE.finditer(text):
            printed = [i for i in range(m.start(), m.end()) if not text[i].isspace()]
            if not printed:
                continue
            sample = [units[i] if units else i for i in sorted({printed[0], printed[len(printed) // 2], printed[-1]})]
            boxes = [textpage.get_charbox(i, loose=True) for i in sample]
            top = max(b[3] for b in boxes)
            bottom = min(b[1] for b in boxes)
            size = max(pdfium_c.FPDFText_GetFontSize(textpage.raw, i) for i in sample)
            lines.append(_Line(m.group(), top, bottom, index, size))
        return lines
    finally:
        textpage.close()


def _has_images(page: Any) -> bool:
    import pypdfium2.raw as pdfium_c

    return any(True for _ in page.get_objects(filter=(pdfium_c.FPDF_PAGEOBJ_IMAGE,), max_depth=2))


# ------------------------------------------------------------------ running lines


def remove_running_lines(pages: list[list[_Line]]) -> int:
    """Rule 2, in place; returns how many lines went."""
    n = len(pages)
    if n < 2:
        return 0
    need = min(RUNNING_MIN_PAGES, n)
    removed = 0
    for top in (True, False):
        for _ in range(RUNNING_DEPTH):
            edge = {
                p: (max(lines, key=lambda ln: ln.top) if top else min(lines, key=lambda ln: ln.bottom))
                for p, lines in enumerate(pages)
                if lines
            }
            counts = Counter(_signature(ln.text) for ln in edge.values())
            running = {s for s, c in counts.items() if c >= need}
            if not running:
                break
            for p, line in edge.items():
                if _signature(line.text) in running:
                    pages[p].remove(line)
                    removed += 1
    return removed


# ------------------------------------------------------------------------ headings


def _find_heading(lines: list[_Line], title: str, y: float | None) -> tuple[int, int] | None:
    """``(i, j)``: lines i..j of a page spell ``title`` (whitespace and case ignored), the
    run nearest to height ``y``; None when no run does."""
    want = _squash(title)
    if not want:
        return None
    found = []
    for i in range(len(lines)):
        got = ""
        for j in range(i, len(lines)):
            got += _squash(clean(lines[j].text))
            if not got or not want.startswith(got):
                break
            if got == want:
                found.append((i, j))
                break
    if not found:
        return None
    if y is None:
        return found[0]
    return min(found, key=lambda ij: abs(lines[ij[0]].top - y))


def _merge(lines: list[_Line], i: int, j: int, mark: str) -> None:
    """Lines i..j become one line with ``mark`` (a heading printed over several lines)."""
    first = lines[i]
    first.text = " ".join(clean(ln.text) for ln in lines[i : j + 1])
    first.bottom = min(ln.bottom for ln in lines[i : j + 1])
    first.mark = mark
    del lines[i + 1 : j + 1]


def _outline(doc: Any) -> list[tuple[int, str, int | None, float | None]]:
    """``(level, title, page index, top)`` of every outline entry PDFium can resolve."""
    out = []
    try:
        for mark in doc.get_toc():
            dest = mark.get_dest()
            index = dest.get_index() if dest is not None else None
            top = None
            if dest is not None:
                try:
                    _mode, view = dest.get_view()
                    top = float(view[1]) if len(view) > 1 and view[1] else None
                except Exception:  # noqa: BLE001 - a malformed view only loses the position
                    top = None
            out.append((mark.level, plain_characters(mark.get_title() or ""), index, top))
    except Exception as exc:  # noqa: BLE001 - a broken outline is no reason to fail the document
        logger.warning("outline unreadable: %s", exc)
        return []
    return out


def sections_from_outline(doc: Any, pages: list[list[_Line]], notes: list[str]) -> bool:
    """Rule 4 with an outline; False when the PDF has no usable outline."""
    entries = [
        (level, title, index, top)
        for level, title, index, top in _outline(doc)
        if index is not None and 0 <= index < len(pages) and title.strip()
    ]
    if not entries:
        return False
    levels = Counter(e[0] for e in entries)
    top_level = min(levels)
    title_entry = None
    section_level: int | None = top_level
    if levels[top_level] == 1:
        title_entry = next(e for e in entries if e[0] == top_level)
        section_level = min((lv for lv in levels if lv > top_level), default=None)
    missing = []
    for entry in entries:
        level, title, index, top = entry
        if entry is title_entry:
            mark = "# "
        elif level == section_level:
            mark = "## "
        else:
            continue
        lines = pages[index]
        hit = _find_heading([ln if not ln.mark else _Line("", 0, 0, index) for ln in lines], title, top)
        if hit is None:
            missing.append(f"{title!r} (page {index + 1})")
            continue
        _merge(lines, hit[0], hit[1], mark)
    if missing:
        shown = ", ".join(missing[:5]) + (f" and {len(missing) - 5} more" if len(missing) > 5 else "")
        notes.append(f"outline entries not found in the text, so not sections: {shown}")
    return True


def _size_class(line: _Line) -> float:
    return round(line.size * 2) / 2


def sections_from_layout(pages: list[list[_Line]], notes: list[str]) -> None:
    """Rule 4 without an outline: mark headings from font sizes when that is reliable."""
    everything = [ln for lines in pages for ln in lines]
    if not everything:
        return
    weight: Counter[float] = Counter()
    for ln in everything:
        weight[_size_class(ln)] += len(ln.text)
    body = weight.most_common(1)[0][0]

    def candidate(ln: _Line) -> bool:
        text = clean(ln.text)
        return ln.size >= HEADING_FACTOR * body and len(text) <= HEADING_MAX_CHARS and any(ch.isalpha() for ch in text)

    # a heading printed over several lines: consecutive candidates of one size, close together
    runs: list[tuple[int, int, int]] = []  # (page, i, j)
    for p, lines in enumerate(pages):
        i = 0
        while i < len(lines):
            if not candidate(lines[i]):
                i += 1
                continue
            j = i
            while (
                j + 1 < len(lines)
                and candidate(lines[j + 1])
                and _size_class(lines[j + 1]) == _size_class(lines[i])
                and not _paragraph_break(lines[j], lines[j + 1])
            ):
                j += 1
            runs.append((p, i, j))
            i = j + 1
    if not runs:
        return
    by_size: dict[float, list[tuple[int, int, int]]] = {}
    for run in runs:
        by_size.setdefault(_size_class(pages[run[0]][run[1]]), []).append(run)
    sizes = sorted(by_size, reverse=True)
    title_run = None
    section_size: float | None = sizes[0]
    if len(by_size[sizes[0]]) == 1 and by_size[sizes[0]][0] == runs[0]:
        title_run = runs[0]
        section_size = sizes[1] if len(sizes) > 1 else None
    sections = by_size.get(section_size, []) if section_size is not None else []
    reliable = len(sections) >= 2 and len(sections) <= MAX_SECTION_SHARE * len(everything)
    if not reliable:
        sections = []
        if section_size is not None and by_size.get(section_size):
            notes.append("no outline, and the heading sizes are not clear enough to make sections")
    marks = [(run, "## ") for run in sections] + ([(title_run, "# ")] if title_run else [])
    # merge from the end of each page so earlier indices stay valid
    for (p, i, j), mark in sorted(marks, key=lambda m: (m[0][0], -m[0][1])):
        _merge(pages[p], i, j, mark)


# ---------------------------------------------------------------------- paragraphs


def _paragraph_break(a: _Line, b: _Line) -> bool:
    """Rule 5 between two consecutive lines of one page."""
    if a.mark or b.mark:
        return True
    small = min(a.height, b.height)
    if a.bottom - b.top > PARAGRAPH_GAP * small:
        return True
    if b.top > a.top + 0.5 * small:  # the text moves up: a new column or box
        return True
    return abs(a.size - b.size) > SIZE_CHANGE * max(a.size, b.size)


def page_text(lines: list[_Line]) -> str:
    parts: list[str] = []
    prev: _Line | None = None
    for line in lines:
        text = clean(line.text) if not line.mark else line.text
        if not text:
            continue
        if prev is not None:
            parts.append("\n\n" if _paragraph_break(prev, line) else "\n")
        parts.append(line.mark + text)
        prev = line
    return "".join(parts)


# ------------------------------------------------------------------------ document


def _pages_list(numbers: list[int]) -> str:
    shown = ", ".join(str(n) for n in numbers[:10])
    return shown + (f" and {len(numbers) - 10} more" if len(numbers) > 10 else "")


def extract(data: bytes, filename: str) -> Extraction:
    """Canonical text, page map, title and notes of a PDF (see the module doc)."""
    doc = open_document(data, filename)
    try:
        n = len(doc)
        if n == 0:
            raise InputError(f"{filename}: the PDF has no pages")
        pages: list[list[_Line]] = []
        image_pages: set[int] = set()
        for i in range(n):
            page = doc[i]
            try:
                lines = _page_lines(page, i)
                if not lines and _has_images(page):
                    image_pages.add(i)
            finally:
                page.close()
            pages.append(lines)
        if not any(pages):
            if image_pages:
                raise InputError(f"{filename}: no text layer: the {n} page(s) are images (a scan?); OCR is not done")
            raise InputError(f"{filename}: no text on any of its {n} page(s)")
        notes: list[str] = []
        remove_running_lines(pages)
        if not sections_from_outline(doc, pages, notes):
            sections_from_layout(pages, notes)
        texts = [page_text(lines) for lines in pages]
        metadata_title = " ".join(plain_characters(doc.get_metadata_dict().get("Title") or "").split())
    finally:
        doc.close()
    empty = [i + 1 for i, t in enumerate(texts) if not t]
    if empty:
        scanned = [p for p in empty if p - 1 in image_pages]
        note = f"no text on page(s) {_pages_list(empty)}"
        if scanned:
            note += f" (page(s) {_pages_list(scanned)} are images, a scan?; OCR is not done)"
        notes.append(note)
    starts, offset = [], 0
    for t in texts:
        starts.append(offset)
        offset += len(t) + 2
    text = "\n\n".join(texts)
    marked = next((ln.text for lines in pages for ln in lines if ln.mark == "# "), None)
    title = marked or metadata_title or PurePath(filename).stem
    return Extraction(title=title, text=text, page_starts=tuple(starts), notes=tuple(notes))
