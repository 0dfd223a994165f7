"""Real PDFs and web pages made from real documents, once per test session.

The Markdown of ../shared/data/poetry-docs and mkdocs-docs is rendered to HTML with
python-markdown inside a page template with the parts a real documentation site has
(navigation, a footer, a script), and Debian's chromium (driven by playwright) prints
each page to PDF:

- **poetry**: browser header and footer ON (date and title at the top, the file URL and
  "page/pages" at the bottom of every page), no outline: the running-line rule and the
  layout rule for sections are exercised;
- **mkdocs**: no header or footer, with the PDF outline (bookmarks) chromium makes from
  the headings: the outline rule is exercised.

Nothing is committed: everything is written under a pytest tmp folder. Tests skip
cleanly when ../shared/data, chromium or playwright is absent.
"""

from __future__ import annotations

import html
import re
from dataclasses import dataclass
from pathlib import Path

import pytest
from built_once import built_once
from serving import CHROMIUM, shared_playwright

TEMPLATE = """<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>{title}</title>
<style>body{{font-family:sans-serif;margin:0}} nav{{background:#eee;padding:8px}}
main{{padding:0 24px}} footer{{color:#555;padding:8px}}</style>
<script>window.analytics = "page view"; console.log("analytics-beacon {slug}");</script></head>
<body>
<header><nav class="site-nav"><a href="/">Home</a> <a href="/docs/">Documentation</a>
<a href="/blog/">Blog</a> <a href="/community/">Community</a></nav></header>
<div class="layout">
<aside class="sidebar"><ul>{sidebar}</ul></aside>
<main><article>
{body}
</article></main>
</div>
<footer><p>Copyright 2026 The {project} authors. Built with a static site generator.</p>
<p><a href="/privacy/">Privacy</a> <a href="/imprint/">Imprint</a></p></footer>
</body></html>
"""
# the boilerplate above: none of it may reach the text of an HTML document
BOILERPLATE = (
    "Documentation Blog Community",
    "Copyright 2026 The",
    "Built with a static site generator",
    "page view",
    "analytics-beacon",
    "Privacy Imprint",
)


@dataclass(frozen=True)
class PrintedCorpus:
    """One corpus in three formats: ``markdown`` (the source files), ``html`` and ``pdf``
    folders with the same relative names, so ``doc_id`` is the same in all three."""

    name: str
    markdown: Path
    html: Path
    pdf: Path
    header_footer: bool
    outline: bool

    def doc_ids(self) -> list[str]:
        return sorted(p.relative_to(self.pdf).with_suffix("").as_posix() for p in self.pdf.rglob("*.pdf"))


def render_page(markdown_text: str, slug: str, project: str, sidebar: list[str]) -> str:
    """A documentation page: the Markdown (canonical text) rendered into the template."""
    import markdown

    from evalcore.inputs.extract import canonical_text, find_title

    text = canonical_text(markdown_text)
    body = markdown.markdown(text, extensions=["fenced_code", "tables", "admonition", "sane_lists"])
    links = "".join(f'<li><a href="/{html.escape(s)}/">{html.escape(s)}</a></li>' for s in sidebar)
    return TEMPLATE.format(
        title=html.escape(find_title(text) or slug), slug=html.escape(slug), body=body, sidebar=links, project=project
    )


def print_corpus(
    browser, name: str, source: Path, out: Path, *, header_footer: bool, outline: bool, skip: tuple[str, ...] = ()
) -> PrintedCorpus:
    files = sorted(p for p in source.rglob("*.md") if p.relative_to(source).as_posix() not in skip)
    rels = [p.relative_to(source).with_suffix("").as_posix() for p in files]
    md_dir, html_dir, pdf_dir = out / name / "markdown", out / name / "html", out / name / "pdf"
    page = browser.new_page()
    for path, rel in zip(files, rels, strict=True):
        for folder in (md_dir, html_dir, pdf_dir):
            (folder / rel).parent.mkdir(parents=True, exist_ok=True)
        raw = path.read_text(encoding="utf-8")
        (md_dir / rel).with_suffix(".md").write_text(raw, encoding="utf-8")
        target = (html_dir / rel).with_suffix(".html")
        target.write_text(render_page(raw, rel, name, rels), encoding="utf-8")
        page.goto(target.as_uri())
        options = {
            "path": str((pdf_dir / rel).with_suffix(".pdf")),
            "format": "A4",
            "outline": outline,
            "tagged": outline,
            "print_background": False,
        }
        if header_footer:
            # chromium's own print header and footer: date and title, URL and page/pages
            options.update(
                display_header_footer=True,
                header_template='<div style="font-size:8px;width:100%;display:flex;justify-content:space-between;'
                'padding:0 24px"><span class="date"></span><span class="title"></span></div>',
                footer_template='<div style="font-size:8px;width:100%;display:flex;justify-content:space-between;'
                'padding:0 24px"><span class="url"></span><span><span class="pageNumber"></span>/'
                '<span class="totalPages"></span></span></div>',
                margin={"top": "60px", "bottom": "60px"},
            )
        page.pdf(**options)
    page.close()
    return PrintedCorpus(name, md_dir, html_dir, pdf_dir, header_footer, outline)


#: The folders of a printed corpus, in the order of PrintedCorpus's fields.
FORMATS = ("markdown", "html", "pdf")


@pytest.fixture(scope="session")
def printed(tmp_path_factory) -> dict[str, PrintedCorpus]:
    """``{"poetry": ..., "mkdocs": ...}``: each corpus as Markdown, HTML and PDF."""
    from conftest import shared_data

    poetry = shared_data("poetry-docs", "docs")
    mkdocs = shared_data("mkdocs-docs", "docs")
    if not CHROMIUM:
        pytest.skip("chromium is not installed (apt-get install chromium)")
    pytest.importorskip("playwright.sync_api")
    pytest.importorskip("markdown")

    def build(out: Path) -> None:
        # through the test process's playwright driver (one a process: serving.shared_playwright)
        browser = shared_playwright().chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox", "--disable-gpu"])
        try:
            print_corpus(browser, "poetry", poetry, out, header_footer=True, outline=False)
            # the release notes alone would be 60 pages; the rest of mkdocs keeps the session short
            print_corpus(
                browser, "mkdocs", mkdocs, out, header_footer=False, outline=True, skip=("about/release-notes.md",)
            )
        finally:
            browser.close()

    # printed once per session, not per worker; read in place: each footer prints its page's URL
    out = built_once(tmp_path_factory, "printed", build, copy=False)
    return {
        "poetry": PrintedCorpus("poetry", *(out / "poetry" / k for k in FORMATS), header_footer=True, outline=False),
        "mkdocs": PrintedCorpus("mkdocs", *(out / "mkdocs" / k for k in FORMATS), header_footer=False, outline=True),
    }


_MARKUP = re.compile(r"[`*_\[\]<>{}|#\\!]|\]\(|https?://")
_SENTENCE = re.compile(r"[A-Z][^.!?\n]{30,200}[.!?](?=\s|$)")


def markdown_needles(markdown_text: str) -> list[str]:
    """Sentences of a Markdown file's prose that carry no Markdown syntax, so they read the
    same in the source and on the rendered page: candidates for needles."""
    from evalcore.inputs.extract import canonical_text

    text = canonical_text(markdown_text)
    out = []
    in_fence = False
    for block in text.split("\n\n"):
        lines = block.split("\n")
        if any(ln.lstrip().startswith(("```", "~~~")) for ln in lines):
            in_fence = not in_fence if sum(ln.lstrip().startswith(("```", "~~~")) for ln in lines) % 2 else in_fence
            continue
        if in_fence or block.lstrip().startswith(("#", "-", "*", ">", "|", "!!!", "    ", "1.", "{{")):
            continue
        for m in _SENTENCE.finditer(block):
            sentence = m.group()
            if not _MARKUP.search(sentence):
                out.append(" ".join(sentence.split()))
    return out
