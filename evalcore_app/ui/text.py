"""User text on the screens, shown safely: escaped for Markdown, or as plain HTML-escaped text;
and the error guard (a named error becomes a message, not a traceback)."""

from __future__ import annotations

import html
from collections.abc import Callable
from typing import Any

import streamlit as st

from evalcore.errors import EvalcoreError
from evalcore.figures import markdown_text as markdown
from evalcore_app.ui.lang import _


def esc(text: object) -> str:
    """User text for a Markdown context (captions, labels): escaped, never markup."""
    return markdown.escape(text)


def rank_text(rank: object) -> str:
    """A first correct rank for a table cell: ``"3"``, or ``"none"`` when there is none (None,
    NaN or pandas' NA: no correct chunk among the hits)."""
    if rank is None or str(rank) in ("<NA>", "nan"):
        return _("none")
    return str(int(rank))  # type: ignore[call-overload]


def plain(text: str, *, small: bool = False, strong: bool = False, testid: str = "") -> None:
    """A line of text that may hold user text, shown as text (HTML-escaped, no Markdown);
    ``testid`` names it for the browser tests."""
    style = "font-size:0.875rem;color:rgba(49,51,63,0.7);" if small else ""
    body = f"<b>{html.escape(text)}</b>" if strong else html.escape(text)
    attr = f" data-testid='{html.escape(testid)}'" if testid else ""
    st.html(f"<div{attr} style='{style}margin-bottom:0.5rem;overflow-wrap:anywhere'>{body}</div>")


def show_error(exc: Exception) -> None:
    """An error's message as text: it may name a file, a query or a value a user chose, so it
    is escaped for Markdown (``st.error`` reads Markdown)."""
    st.error(esc(exc))


def guarded(fn: Callable[[], Any]) -> Any:
    """Run ``fn``; a named evalcore error or ValueError becomes a message, not a traceback."""
    try:
        return fn()
    except (EvalcoreError, ValueError) as exc:
        show_error(exc)
        return None
