"""evalcore dashboard: `streamlit run app.py`.

Navigation only; each screen is a thin page in pages/ over evalcore.read and evalcore.figures,
and draws the shared sidebar itself (pages/_ui.py documents the session state).
"""
from __future__ import annotations

import streamlit as st

st.set_page_config(page_title="evalcore", page_icon=":material/insights:", layout="wide")

PAGES = [
    st.Page("pages/runs.py", title="Runs", icon=":material/list:", default=True),
    st.Page("pages/new_run.py", title="New run", icon=":material/add_circle:"),
    st.Page("pages/compare.py", title="Compare", icon=":material/compare_arrows:"),
    st.Page("pages/distances.py", title="Distances", icon=":material/bar_chart:"),
    st.Page("pages/threshold.py", title="Threshold", icon=":material/tune:"),
    st.Page("pages/query.py", title="Query", icon=":material/search:"),
    st.Page("pages/index.py", title="Index", icon=":material/inventory_2:"),
    st.Page("pages/export.py", title="Export", icon=":material/download:"),
    st.Page("pages/methods.py", title="Methods", icon=":material/menu_book:"),
]
st.navigation(PAGES).run()
