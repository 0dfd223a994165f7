"""Methods: how every figure of the dashboard is defined (docs/METHODS.md, shown here).

An installed evalcore carries the file inside ``evalcore_app`` (the wheel copies it there);
a clone reads it from ``docs/``."""

from __future__ import annotations

import re
from pathlib import Path

import streamlit as st

from evalcore_app.ui import lang
from evalcore_app.ui.lang import _

_PACKAGE = Path(__file__).resolve().parents[1]
_INSTALLED = _PACKAGE / "METHODS.md"
METHODS = _INSTALLED if _INSTALLED.exists() else _PACKAGE.parent / "docs" / "METHODS.md"

st.title(_("Methods"))
if lang.current() != "en":
    st.info(
        _(
            "This page is in English in this version: it is the reference text of docs/METHODS.md. "
            "The other screens, their figures and exports are in your language."
        )
    )
if METHODS.exists():
    text = METHODS.read_text(encoding="utf-8").split("\n", 1)[1]  # our own text; its title is above
    st.markdown(re.sub(r"\[([^\]]+)\]\(([\w.-]+\.md)\)", r"\1 (docs/\2)", text))  # no links that lead nowhere here
else:
    st.warning(_("{name} is missing from this installation.").format(name=METHODS.name))
