"""The HTML extractor (METHODS.md "The words"): the page's main content, headings as sections.

Parsing is lxml's HTML parser (libxml2; BSD-3, maintained); the main-content rule and the
text rule are ours, measured against trafilatura and readability-lxml on real pages
(``benchmarks/bench_html.py``, figures in docs/DECISIONS.md).

**Decoding**: a BOM decides; else strict UTF-8; else lxml reads the page's own
``<meta charset>`` (libxml2's fallback is Latin-1).

**Never text**: ``script``, ``style``, ``noscript``, ``template``, ``svg``, ``math``,
``iframe``, ``object``, ``canvas``, ``button``, ``select``, ``textarea``, ``form``;
elements that are ``hidden``, ``aria-hidden="true"`` or ``display: none``; permalink
anchors inside headings whose text is only ``#``, ``¶``, ``§`` or ``🔗``.

**Main content**, the first rule that applies:

1. the ``<main>`` element (or ``role="main"``) with the most text; ``nav`` inside it goes;
2. the ``<article>`` with the most text, when it holds at least half of the body's text;
3. the body without ``nav``, ``header``, ``footer``, ``aside`` and the ARIA landmarks
   ``navigation``, ``banner``, ``contentinfo``, ``complementary``, ``search``, and
   without link lists: blocks (``div``, ``ul``, ``ol``, ``section``, ``table``, ``p``)
   with at least 3 links whose link text is at least half of their text (a menu, a
   sidebar table of contents).

**Text**: HTML's whitespace rule inside paragraphs (any run of spaces, tabs and newlines
is one space; ``&nbsp;`` stays); ``pre`` verbatim; a blank line around paragraphs,
headings, lists, tables, block quotes, ``pre`` and ``hr``; a line break at ``br``, list
items, table rows, ``dt``/``dd`` and other blocks; table cells separated by a tab (what
a browser's copy gives). Lines are stripped at the end (and at the start outside
``pre``); at most one blank line in a row. Characters as every extractor cleans them
(:func:`~evalcore.inputs.extractors.plain_characters`: no control character but tab and
newline, no non-character; a C1 code becomes its Windows-1252 character, as HTML reads
``&#x93;``); no Unicode normalisation.

**Headings** (``h1``-``h6`` with text, in the main content): when the highest level used
occurs once and is the first heading, it is the title line (``# ``) and the next level
used makes the sections (``## ``); otherwise the highest level makes the sections. Deeper
levels follow as ``### ``, ``#### ``... by rank (a page with ``h2`` title and ``h3``
sections, as many documentation generators make, reads like Markdown's ``#``/``##``).
Title: the title line, else ``<title>``, else the file name.

Failures: an empty file, a page without text in its main content.
"""

from __future__ import annotations

import codecs
import logging
import re
from pathlib import PurePath
from typing import Any

from evalcore.errors import InputError
from evalcore.inputs.extractors import Extraction, library_version, plain_characters, require_library

logger = logging.getLogger(__name__)

NAME = "html"
RULES = "2"  # 2: one character rule for every extractor
# The library's version is part of the stamp: another lxml can read a file differently.
VERSION = f"{RULES}+lxml-{library_version('lxml')}"

NEVER = (
    "script",
    "style",
    "noscript",
    "template",
    "svg",
    "math",
    "iframe",
    "object",
    "embed",
    "canvas",
    "button",
    "select",
    "textarea",
    "form",
    "input",
    "head",
)
BOILERPLATE = ("nav", "header", "footer", "aside")
LANDMARKS = ("navigation", "banner", "contentinfo", "complementary", "search")
LINK_BLOCKS = ("div", "ul", "ol", "section", "table", "p", "dl")
PERMALINKS = {"#", "¶", "§", "🔗"}
PARAGRAPHS = {
    "p",
    "pre",
    "blockquote",
    "ul",
    "ol",
    "dl",
    "table",
    "hr",
    "figure",
    "h1",
    "h2",
    "h3",
    "h4",
    "h5",
    "h6",
    "details",
    "address",
}
LINES = {
    "div",
    "li",
    "tr",
    "dt",
    "dd",
    "section",
    "article",
    "main",
    "header",
    "footer",
    "nav",
    "aside",
    "caption",
    "figcaption",
    "summary",
    "fieldset",
    "legend",
    "thead",
    "tbody",
    "tfoot",
}
HEADINGS = {f"h{i}": i for i in range(1, 7)}

_XML_DECL = re.compile(r"^\s*<\?xml[^>]*\?>", re.IGNORECASE)
_HTML_SPACE = re.compile(r"[ \t\n\r\f]+")
_HIDDEN_STYLE = re.compile(r"display\s*:\s*none|visibility\s*:\s*hidden", re.IGNORECASE)


# ---------------------------------------------------------------------------- parsing


def decode(data: bytes, filename: str) -> Any:
    """Parse ``data`` into an lxml document (see the module doc for the encoding rule);
    InputError when lxml, the ``html`` extra, is not installed."""
    require_library("lxml.html", "html", filename)
    import lxml.html

    if not data.strip():
        raise InputError(f"{filename}: empty file")
    for bom, codec in (
        (codecs.BOM_UTF8, "utf-8"),
        (codecs.BOM_UTF16_LE, "utf-16-le"),
        (codecs.BOM_UTF16_BE, "utf-16-be"),
    ):
        if data.startswith(bom):
            return _parse(data[len(bom) :].decode(codec, errors="replace"), filename)
    try:
        return _parse(data.decode("utf-8"), filename)
    except UnicodeDecodeError:
        pass
    try:
        return lxml.html.document_fromstring(data, parser=_parser())
    except Exception as exc:  # noqa: BLE001 - libxml2 reports many kinds
        raise InputError(f"{filename}: not readable as HTML ({exc})") from None


def check(data: bytes, filename: str) -> None:
    """InputError when the bytes cannot be an HTML page (the upload check)."""
    if not data.strip():
        raise InputError(f"{filename}: empty file")
    if b"\0" in data and not data.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
        raise InputError(f"{filename}: binary file (NUL byte at offset {data.index(0)})")


def _parse(text: str, filename: str) -> Any:
    import lxml.html

    text = _XML_DECL.sub("", text, count=1)
    if not text.strip():
        raise InputError(f"{filename}: empty file")
    try:
        return lxml.html.document_fromstring(text, parser=_parser())
    except Exception as exc:  # noqa: BLE001
        raise InputError(f"{filename}: not readable as HTML ({exc})") from None


def _parser() -> Any:
    """libxml2's HTML parser with ``huge_tree``: without it a text node over 10 MB is dropped
    without a word (a page with one long paragraph became its title alone). The upload and
    file size limits bound the input instead."""
    import lxml.html

    return lxml.html.HTMLParser(huge_tree=True)


def _tag(el: Any) -> str:
    return el.tag.lower() if isinstance(el.tag, str) else ""


def _drop(el: Any) -> None:
    """Remove ``el`` and its subtree, keeping its tail text."""
    el.drop_tree()


def _text_len(el: Any) -> int:
    return len(" ".join("".join(el.itertext()).split()))


def _hidden(el: Any) -> bool:
    return (
        el.get("hidden") is not None
        or (el.get("aria-hidden") or "").lower() == "true"
        or bool(_HIDDEN_STYLE.search(el.get("style") or ""))
    )


def _clean(root: Any) -> None:
    """Remove what is never text (module doc)."""
    doomed = [el for el in root.iter() if _tag(el) in NEVER or (isinstance(el.tag, str) and _hidden(el))]
    for el in doomed:
        if el.getparent() is not None:
            _drop(el)
    for comment in [el for el in root.iter() if not isinstance(el.tag, str)]:
        if comment.getparent() is not None:
            _drop(comment)


def _link_list(el: Any) -> bool:
    links = el.findall(".//a")
    if len(links) < 3:
        return False
    total = _text_len(el)
    linked = sum(_text_len(a) for a in links)
    return total > 0 and linked >= 0.5 * total


def main_content(root: Any) -> Any:
    """The element holding the page's main content (module doc, rules 1-3)."""
    body = root.find("body")
    if body is None:
        body = root
    mains = [el for el in root.iter() if _tag(el) == "main" or (el.get("role") or "").lower() == "main"]
    if mains:
        main = max(mains, key=_text_len)
        for nav in [el for el in main.iter() if _tag(el) == "nav" or (el.get("role") or "").lower() == "navigation"]:
            if nav is not main and nav.getparent() is not None:
                _drop(nav)
        return main
    articles = [el for el in root.iter() if _tag(el) == "article"]
    if articles:
        article = max(articles, key=_text_len)
        if _text_len(article) >= 0.5 * _text_len(body):
            return article
    doomed = [
        el
        for el in body.iter()
        if el is not body and (_tag(el) in BOILERPLATE or (el.get("role") or "").lower() in LANDMARKS)
    ]
    for el in doomed:
        if el.getparent() is not None:
            _drop(el)
    for el in [el for el in body.iter() if _tag(el) in LINK_BLOCKS and el is not body]:
        if el.getparent() is not None and _link_list(el):
            _drop(el)
    return body


# ------------------------------------------------------------------------------- text


class _Writer:
    """Collects text with pending breaks: 1 = line break, 2 = blank line."""

    def __init__(self) -> None:
        self.parts: list[str] = []
        self.pending = 0
        self.space = False  # a collapsed space waits before the next inline text
        self.at_line_start = True

    def brk(self, n: int) -> None:
        if self.parts:
            self.pending = max(self.pending, n)
        self.space = False

    def inline(self, text: str) -> None:
        if not text:
            return
        collapsed = _HTML_SPACE.sub(" ", text)
        if collapsed.startswith(" "):
            self.space = True
            collapsed = collapsed.lstrip(" ")
        if not collapsed:
            return
        self._flush_break()
        if self.space and not self.at_line_start:
            self.parts.append(" ")
        self.space = collapsed.endswith(" ")
        self.parts.append(collapsed.rstrip(" "))
        self.at_line_start = False

    def cell(self) -> None:
        """A tab between two table cells of one row."""
        if self.parts and not self.pending:
            self.parts.append("\t")
            self.space = False

    def verbatim(self, text: str) -> None:
        text = text.strip("\n")
        if not text.strip():
            return
        self._flush_break()
        self.parts.append(text)
        self.at_line_start = False
        self.space = False

    def _flush_break(self) -> None:
        if self.pending and self.parts:
            self.parts.append("\n" * self.pending)
            self.at_line_start = True
            self.space = False
        self.pending = 0

    def text(self) -> str:
        lines = [line.rstrip() for line in plain_characters("".join(self.parts)).split("\n")]
        out: list[str] = []
        for line in lines:
            if not line.strip():
                if out and out[-1] != "":
                    out.append("")
                continue
            out.append(line)
        while out and out[-1] == "":
            out.pop()
        return "\n".join(out)


def _heading_marks(main: Any) -> tuple[dict[int, int], Any]:
    """heading level -> number of ``#`` (module doc), and the title line's element (or None)."""
    heads = [el for el in main.iter() if _tag(el) in HEADINGS and _heading_text(el)]
    levels = sorted({HEADINGS[_tag(el)] for el in heads})
    if not heads:
        return {}, None
    tops = [el for el in heads if HEADINGS[_tag(el)] == levels[0]]
    title = tops[0] if len(tops) == 1 and heads[0] is tops[0] else None
    deeper = levels[1:] if title is not None else levels
    marks = {levels[0]: 1} if title is not None else {}
    for rank, level in enumerate(deeper):
        marks[level] = min(2 + rank, 6)
    return marks, title


def _heading_text(el: Any) -> str:
    for a in [a for a in el.iter() if _tag(a) == "a"]:
        if " ".join("".join(a.itertext()).split()) in PERMALINKS and a.getparent() is not None:
            _drop(a)
    return " ".join("".join(el.itertext()).split())


def _walk(el: Any, out: _Writer, marks: dict[int, int]) -> None:
    tag = _tag(el)
    if tag in HEADINGS:
        text = _heading_text(el)
        if text:
            out.brk(2)
            out.inline("#" * marks.get(HEADINGS[tag], 6) + " " + text)
            out.brk(2)
        return
    if tag == "pre":
        out.brk(2)
        out.verbatim("".join(el.itertext()))
        out.brk(2)
        return
    if tag == "br":
        out.brk(1)
    elif tag in PARAGRAPHS:
        out.brk(2)
    elif tag in LINES:
        out.brk(1)
    elif tag in ("td", "th") and el.getprevious() is not None:
        out.cell()
    if el.text and tag not in ("br", "hr"):
        out.inline(el.text)
    for child in el:
        _walk(child, out, marks)
        if child.tail:
            out.inline(child.tail)
    if tag in PARAGRAPHS:
        out.brk(2)
    elif tag in LINES:
        out.brk(1)


def extract(data: bytes, filename: str) -> Extraction:
    """Canonical text and title of an HTML page (see the module doc)."""
    root = decode(data, filename)
    head_title = root.findtext(".//title") or ""
    _clean(root)
    main = main_content(root)
    marks, title_el = _heading_marks(main)
    title_text = _heading_text(title_el) if title_el is not None else ""
    out = _Writer()
    _walk(main, out, marks)
    text = out.text()
    if not text.strip():
        raise InputError(f"{filename}: no text in the page's main content")
    title = " ".join(plain_characters(title_text or head_title).split()) or PurePath(filename).stem
    return Extraction(title=title, text=text)
