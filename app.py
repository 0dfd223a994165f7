"""evalcore dashboard: `streamlit run app.py`.

Navigation only; each screen is a thin page in screens/ over evalcore.read and evalcore.figures,
and draws the shared sidebar itself (screens/_ui.py documents the session state).
"""
from __future__ import annotations

import streamlit as st

st.set_page_config(page_title="evalcore", page_icon=":material/insights:", layout="wide")

PAGES = [
    st.Page("screens/runs.py", title="Runs", icon=":material/list:", default=True),
    st.Page("screens/new_run.py", title="New run", icon=":material/add_circle:"),
    st.Page("screens/compare.py", title="Compare", icon=":material/compare_arrows:"),
    st.Page("screens/distances.py", title="Distances", icon=":material/bar_chart:"),
    st.Page("screens/threshold.py", title="Threshold", icon=":material/tune:"),
    st.Page("screens/query.py", title="Query", icon=":material/search:"),
    st.Page("screens/index.py", title="Index", icon=":material/inventory_2:"),
    st.Page("screens/export.py", title="Export", icon=":material/download:"),
    st.Page("screens/methods.py", title="Methods", icon=":material/menu_book:"),
]
st.navigation(PAGES).run()
