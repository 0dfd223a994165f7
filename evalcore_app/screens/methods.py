"""Methods: how every figure of the dashboard is defined (docs/METHODS.md, shown here).

An installed evalcore carries the file inside ``evalcore_app`` (the wheel copies it there);
a clone reads it from ``docs/``."""

from __future__ import annotations

import re
from pathlib import Path

import streamlit as st

_PACKAGE = Path(__file__).resolve().parents[1]
_INSTALLED = _PACKAGE / "METHODS.md"
METHODS = _INSTALLED if _INSTALLED.exists() else _PACKAGE.parent / "docs" / "METHODS.md"

st.title("Methods")
if METHODS.exists():
    text = METHODS.read_text(encoding="utf-8").split("\n", 1)[1]  # our own text; its title is above
    st.markdown(re.sub(r"\[([^\]]+)\]\(([\w.-]+\.md)\)", r"\1 (docs/\2)", text))  # no links that lead nowhere here
else:
    st.warning(f"{METHODS.name} is missing from this installation.")
