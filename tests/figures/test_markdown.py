"""evalcore.figures.markdown_text: user text put into Markdown shows as its characters, checked by rendering
it with an independent CommonMark renderer (markdown-it-py)."""

from __future__ import annotations

import html
import re

import pytest
from markdown_it import MarkdownIt

from evalcore.figures.markdown_text import code, escape

HOSTILE = [
    "![tracker](http://127.0.0.1:9/pixel.png)",
    "**bold** _i_ <b>html</b> <img src=x onerror=alert(1)> `code`",
    "# heading",
    "- item",
    "12. item",
    "> quote",
    "[link](http://example.com)",
    "<http://example.com> a | b | c ~~strike~~ $x^2$ \\*kept\\*",
]


@pytest.mark.parametrize("text", HOSTILE)
def test_escaped_text_renders_as_its_characters(text):
    rendered = MarkdownIt("commonmark").enable("table").enable("strikethrough").render(escape(text))
    assert re.fullmatch(r"<p>.*</p>\n", rendered, re.S), rendered  # one paragraph, no block
    for tag in ("<img", "<a ", "<strong", "<em", "<h1", "<li", "<code", "<blockquote", "<b>", "<s>"):
        assert tag not in rendered, (tag, rendered)
    shown = html.unescape(re.sub(r"<[^>]+>", "", rendered)).strip().replace("\u200b", "")
    assert shown == " ".join(text.split())


def test_streamlit_codes_and_autolinks_are_broken():
    out = escape("a:b :material/home: :smile: www.a.com a@b.c hit@4")
    assert ":material/" not in out and ":smile:" not in out
    assert "www." not in out and "a@b.c" not in out and "hit@4" in out  # only addresses get the zero-width space
    assert escape("line one\n# two") == "line one # two"


def test_code_fences_longer_than_any_backtick_run():
    assert code("a `b` c") == "``a `b` c``"
    assert code("plain") == "`plain`"
