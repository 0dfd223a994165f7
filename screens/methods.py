"""Methods: how every figure of the dashboard is defined (docs/METHODS.md, shown here)."""
from __future__ import annotations

import re
from pathlib import Path

import streamlit as st

METHODS = Path(__file__).resolve().parents[1] / "docs" / "METHODS.md"

st.title("Methods")
if METHODS.exists():
    text = METHODS.read_text(encoding="utf-8").split("\n", 1)[1]  # our own text; its title is above
    st.markdown(re.sub(r"\[([^\]]+)\]\(([\w.-]+\.md)\)", r"\1 (docs/\2)", text))  # no links that lead nowhere here
else:
    st.warning(f"{METHODS.name} is missing from this installation.")
