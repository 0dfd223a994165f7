"""The session's language: which one, and the text and numbers in it. Not a page.

The language comes from the address (``?lang=de``; kept when moving between screens, as the
run and the configuration are), else from the sidebar's choice in this session, else from the
browser (``st.context.locale``), else English. Changing it changes text only: every figure,
selection and decision lives in session keys that hold no text of any language.

Screens write ``_("English text {n}").format(n=...)`` and ``ngettext(...)``; the English text
is the message id (``tools/i18n_catalog.py`` collects them into ``evalcore/i18n/locales``).
"""

from __future__ import annotations

import streamlit as st

from evalcore.i18n import DEFAULT, LANGUAGES, Translator, language, translator
from evalcore.i18n import N_ as N_  # the pages mark their messages with it, from here
from evalcore.i18n.templates import SOURCES
from evalcore_app.ui.state import Link

KEY = Link.lang.name  #: session key (and URL parameter) of the chosen language (a code of LANGUAGES)


def _from_url() -> None:
    """Apply ``?lang=`` once per distinct value (a later choice in the sidebar wins until the
    address changes)."""
    wanted = language(st.query_params.get(KEY))
    link = Link()
    if wanted is not None and link.lang_param != wanted:
        link.lang = wanted
        link.lang_param = wanted


def current() -> str:
    """The session's language code (see the module docstring)."""
    _from_url()
    chosen = language(Link().lang)
    if chosen is not None:
        return chosen
    try:
        browser = language(st.context.locale)
    except Exception:  # noqa: BLE001 - no browser context (a test run, an older Streamlit)
        browser = None
    return browser or DEFAULT


def tr() -> Translator:
    """The session's translator."""
    return translator(current())


def _(message: str) -> str:
    """``message`` (English, the message id) in the session's language."""
    return tr().gettext(message)


def ngettext(singular: str, plural: str, n: int) -> str:
    """The plural form of a message for ``n`` in the session's language."""
    return tr().ngettext(singular, plural, n)


def num(value: float, digits: int = 3) -> str:
    """A figure with ``digits`` decimals in the session's locale (``0,114``)."""
    return tr().number(value, digits)


def pct(value: float, digits: int = 0) -> str:
    """A share as a percentage in the session's locale (``14 %``)."""
    return tr().percent(value, digits)


def figures(text: str) -> str:
    """The decimals of a sentence the library wrote (already rounded) in the session's locale."""
    return tr().numbers_in(text)


def source(text: str) -> str:
    """A sentence the library wrote about a choice (:data:`evalcore.i18n.templates.SOURCES`) in
    the session's language."""
    return tr().rewrite(text, SOURCES)


def _write_url() -> None:
    """Keep the chosen language in the address (only when one was chosen: a browser's own
    language needs no parameter)."""
    chosen = language(Link().lang)
    if chosen is not None and st.query_params.get(KEY) != chosen:
        st.query_params[KEY] = chosen
    if chosen is not None:
        Link().lang_param = chosen


def selector() -> None:
    """The sidebar's language picker (each language named in its own words)."""
    code = current()
    codes = list(LANGUAGES)

    def changed() -> None:
        st.session_state[KEY] = st.session_state["w_" + KEY]
        _write_url()

    st.session_state["w_" + KEY] = code
    st.selectbox(
        "Language / Sprache / Taal / Bahasa",
        codes,
        key="w_" + KEY,
        format_func=LANGUAGES.get,
        on_change=changed,
    )
    _write_url()
