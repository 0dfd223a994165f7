"""The corpus's language on the New run screen: one line, in the reader's language, when the
validated corpus is not English and the chosen retrievers or the default model do not read it
(evalcore.inputs.language says when). Not a page: New run draws it after Validate."""

from __future__ import annotations

import streamlit as st

from evalcore.inputs.language import DEFAULT_MODEL, CorpusLanguage, LanguageHint, language_hint, language_name
from evalcore.retrieval.names import analyzer_label
from evalcore.run.spec import RunSpec
from evalcore_app import ui
from evalcore_app.ui import lang
from evalcore_app.ui.lang import _, ngettext


def notice(language: CorpusLanguage | None, spec: RunSpec) -> None:
    """The line for a validated spec (nothing when there is nothing to say); the spec is
    never changed."""
    hint = language_hint(language, spec.retrievers, spec.models)
    if hint is not None:
        st.info(ui.esc(language_note(hint)), icon=":material/translate:")


def language_note(hint: LanguageHint) -> str:
    """One line, in the reader's language, on a corpus the chosen retrievers or the default
    model do not read (evalcore.inputs.language says when); the run stays as chosen."""
    tr = lang.tr()
    found = hint.language
    if found.mixed:
        shares = ", ".join(f"{code} {tr.percent(share)}" for code, share in found.shares[:3])
        parts = [_("The corpus mixes languages ({shares} of the sampled text).").format(shares=shares)]
    else:
        parts = [
            _("The corpus reads as {language} ({share} of the sampled text).").format(
                language=language_name(found.code, lang.current()), share=tr.percent(found.share)
            )
        ]
    if hint.plain:
        parts.append(
            ngettext(
                "{plain} keeps only its a-z0-9 words: choose {analyzer} under BM25 languages ({instead}).",
                "{plain} keep only its a-z0-9 words: choose {analyzer} under BM25 languages ({instead}).",
                len(hint.plain),
            ).format(
                plain=", ".join(hint.plain), analyzer=analyzer_label(hint.analyzer), instead=", ".join(hint.instead)
            )
        )
    if hint.default_model:
        parts.append(
            _("The default model {model} is English-only: a multilingual model folder reads it better.").format(
                model=DEFAULT_MODEL
            )
        )
    return " ".join(parts)
