"""The HTML extractor: real documentation pages (rendered from ../shared/data into a site
template with navigation, sidebar, footer and script; tests/real_documents.py), and small
pages for each rule."""

from __future__ import annotations

import re

import pytest
from real_documents import BOILERPLATE, markdown_needles

from evalcore.errors import InputError
from evalcore.inputs.corpus import load_corpus
from evalcore.inputs.extractors import html as html_extractor
from evalcore.inputs.groundtruth import NeedleIndex


def extract(page: str | bytes, name: str = "page.html"):
    return html_extractor.extract(page.encode("utf-8") if isinstance(page, str) else page, name)


@pytest.fixture(scope="session")
def html_corpora(printed):
    return {name: load_corpus(c.html) for name, c in printed.items()}


def test_main_content_only_and_markdown_needles_resolve(printed, html_corpora, capsys):
    lines = []
    for name, corpus in html_corpora.items():
        assert not corpus.failed and {d.source_type for d in corpus.documents} == {"html"}
        for d in corpus.documents:
            for words in BOILERPLATE:
                assert words not in d.text, (d.doc_id, words)
            assert d.page_starts == () and d.pages is None
        index = NeedleIndex(corpus.documents)
        found = total = 0
        missed = []
        for d in corpus.documents:
            for needle in markdown_needles((printed[name].markdown / f"{d.doc_id}.md").read_text(encoding="utf-8")):
                total += 1
                if any(o.doc_id == d.doc_id for o in index.find(needle)):
                    found += 1
                else:
                    missed.append(needle)
        # the one miss: "&nbsp;" written in the Markdown is a space on the page
        assert missed == [m for m in missed if "&nbsp;" in m] and found / total >= 0.99
        lines.append(f"{name}: {found}/{total} Markdown needles resolve in the HTML page; missed: {missed}")
    with capsys.disabled():
        print("\n" + "\n".join(lines))


def test_sections_are_the_markdown_sections(printed, html_corpora):
    """A page rendered from Markdown has its h1 as title line and its h2 as sections, so its
    ## lines are the Markdown's (inline code marks aside; HTML h2 written in the Markdown count).
    A page without h2 takes its sections from the next level used (poetry's FAQ: h3)."""
    for name, corpus in html_corpora.items():
        markdown = load_corpus(printed[name].markdown).by_id()
        for d in corpus.documents:
            ours = [ln[3:] for ln in d.text.split("\n") if ln.startswith("## ")]
            lines = markdown[d.doc_id].text.split("\n")
            level = next((p for p in ("## ", "### ") if any(ln.startswith(p) for ln in lines)), "## ")
            source = [" ".join(ln[len(level) :].replace("`", "").split()) for ln in lines if ln.startswith(level)]
            if re.search(r"^\s*<h2", markdown[d.doc_id].text, re.MULTILINE):  # an h2 written as HTML
                assert set(source) < set(ours), d.doc_id
            else:
                assert ours == source, d.doc_id
            if d.title != d.doc_id:
                assert d.text.split("\n").count(f"# {d.title}") == 1


def test_main_element_wins_and_nav_inside_it_goes():
    x = extract("""<html><head><title>T</title></head><body>
        <nav><a href="/">Home</a> <a href="/a">A</a> <a href="/b">B</a></nav>
        <main><nav class="toc"><a href="#x">On this page</a></nav>
        <h1>Guide</h1><p>First   paragraph
        over two lines.</p><h2>Install</h2><p>Run <code>pip install x</code>.</p></main>
        <footer>Copyright</footer><script>var x = 1;</script></body></html>""")
    assert x.title == "Guide"
    assert x.text == "# Guide\n\nFirst paragraph over two lines.\n\n## Install\n\nRun pip install x."


def test_without_main_the_body_loses_landmarks_and_link_lists():
    x = extract(
        """<html><body><div id="top" role="banner">Site name</div>
        <div class="sidebar"><ul><li><a href="/1">One</a></li><li><a href="/2">Two</a></li>
        <li><a href="/3">Three</a></li></ul></div>
        <div id="content"><h2>Module</h2><p>Text with <a href="/ref">a link</a> in it.</p>
        <h3>Part one</h3><p>More.</p><h3>Part two</h3><p>Last.</p></div>
        <aside>Related</aside></body></html>""",
        "module.html",
    )
    # h2 is the only top-level heading and the first: the title; h3 make the sections
    assert x.text == "# Module\n\nText with a link in it.\n\n## Part one\n\nMore.\n\n## Part two\n\nLast."
    assert x.title == "Module"


def test_several_top_headings_are_sections_and_the_title_comes_from_the_head():
    x = extract(
        "<title>My page</title><body><article><h1>One</h1><p>a</p><h1>Two</h1><p>b</p>"
        "<h2>Two.1</h2><p>c</p></article></body>"
    )
    assert x.title == "My page"
    assert x.text == "## One\n\na\n\n## Two\n\nb\n\n### Two.1\n\nc"


def test_pre_tables_lists_breaks_permalinks_and_hidden_text():
    x = extract("""<main><h1>T<a class="headerlink" href="#t">¶</a></h1>
        <pre><code>def f():
    return 1
</code></pre>
        <table><tr><th>Name</th><th>Value</th></tr><tr><td>a</td><td>1</td></tr></table>
        <ul><li>first</li><li>second <b>bold</b></li></ul>
        <p>line one<br>line two</p><p hidden>secret</p><p style="display: none">gone</p>
        <div aria-hidden="true">icons</div><p>caf\u00e9&nbsp;au lait</p></main>""")
    assert x.title == "T"
    assert x.text == (
        "# T\n\ndef f():\n    return 1\n\nName\tValue\na\t1\n\nfirst\nsecond bold\n\n"
        "line one\nline two\n\ncaf\u00e9\u00a0au lait"
    )


def test_encoding_from_the_page_and_failures():
    latin = '<html><head><meta charset="iso-8859-1"></head><body><main><p>Caf\xe9 cr\xe8me</p></main></body></html>'
    assert extract(latin.encode("latin-1")).text == "Café crème"
    assert extract("\ufeff<p>bom</p>".encode("utf-8")).text == "bom"
    assert extract('<?xml version="1.0" encoding="utf-8"?><html><body><p>x</p></body></html>').text == "x"
    with pytest.raises(InputError, match=r"^e\.html: empty file$"):
        extract(b"  \n", "e.html")
    with pytest.raises(InputError, match=r"^n\.html: no text in the page's main content$"):
        extract("<html><body><nav><a href='/'>Home</a></nav><script>x()</script></body></html>", "n.html")
    with pytest.raises(InputError, match="binary file"):
        html_extractor.check(b"PK\x03\x04\x00\x00", "z.html")
