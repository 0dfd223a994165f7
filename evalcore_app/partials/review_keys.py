"""The Review screen's keyboard shortcuts: a components-v2 element with no assets of its own
(nothing loads from the internet) that listens for single keys on the page and hands each to
Python as a trigger value ``{"key", "line", "press"}``, naming the line it was pressed for.
Not a page: the Review screen draws it once per run (:func:`listen`).

A key typed into a field (a select box, a text input) is the field's; a key with Ctrl, Alt or
Meta, or a held key's repeats, are ignored. Each draw replaces the listener of the one before."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import streamlit as st

from evalcore_app.ui.state import Review

KEYS_JS = """
export default function(component) {
    const { data, setTriggerValue } = component;
    const doc = window.document;
    const previous = window.__evalcoreReviewKeys;
    if (previous) doc.removeEventListener('keydown', previous, true);
    const handler = (event) => {
        if (event.ctrlKey || event.metaKey || event.altKey || event.repeat) return;
        const target = event.target;
        if (target && target.closest && target.closest('input, textarea, select, [contenteditable="true"]')) return;
        const key = (event.key || '').toLowerCase();
        if (!data.line || !data.keys.includes(key)) return;
        event.preventDefault();
        window.__evalcoreReviewPresses = (window.__evalcoreReviewPresses || 0) + 1;
        setTriggerValue('key', { key: key, line: data.line, press: window.__evalcoreReviewPresses });
    };
    window.__evalcoreReviewKeys = handler;
    doc.addEventListener('keydown', handler, true);
    return () => {
        doc.removeEventListener('keydown', handler, true);
        if (window.__evalcoreReviewKeys === handler) window.__evalcoreReviewKeys = null;
    };
}
"""
_keyboard = st.components.v2.component("evalcore.review_keys", html="", js=KEYS_JS, isolate_styles=False)


def pressed() -> tuple[str, str] | None:
    """The key just pressed and the line id it was pressed for (read in the key's callback)."""
    value = Review.keys.get()
    got = value.get("key") if hasattr(value, "get") else getattr(value, "key", None)
    if not isinstance(got, dict):
        return None
    return str(got.get("key", "")), str(got.get("line", ""))


def listen(line_id: str | None, keys: Sequence[str], on_key: Callable[[], None]) -> None:
    """Listen for ``keys`` pressed for the line ``line_id`` (None: no line, no key is taken);
    ``on_key`` runs before the next run, and reads the key with :func:`pressed`."""
    _keyboard(data={"line": line_id or "", "keys": list(keys)}, key=Review.keys.name, on_key_change=on_key)
