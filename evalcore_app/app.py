"""evalcore dashboard: ``evalcore dashboard`` (or ``streamlit run app.py`` in a clone).

Navigation only; each screen is a thin page in screens/ over evalcore.read and evalcore.figures.build,
and draws the shared sidebar itself (screens/_ui.py documents the session state). Streamlit runs
this file as its main script for every page view; the clone's root ``app.py`` calls :func:`main` too.
When ``streamlit run`` starts the server it first imports this file as the module ``app`` and
serves the ``st.App`` assigned below: the dashboard and the HTTP API (``/api/v1``) on one port
(:mod:`evalcore_app.server`).
"""

from __future__ import annotations

import streamlit as st

from evalcore_app import screen


def main() -> None:
    """Draw the navigation and run the page the URL names (``/query?run_id=..`` deep links
    included: a page's URL path is its file's name)."""
    st.set_page_config(page_title="evalcore", page_icon=":material/insights:", layout="wide")
    pages = [
        st.Page(screen("runs"), title="Runs", icon=":material/list:", default=True),
        st.Page(screen("new_run"), title="New run", icon=":material/add_circle:"),
        st.Page(screen("questions"), title="Questions", icon=":material/edit_note:"),
        st.Page(screen("compare"), title="Compare", icon=":material/compare_arrows:"),
        st.Page(screen("distances"), title="Distances", icon=":material/bar_chart:"),
        st.Page(screen("threshold"), title="Threshold", icon=":material/tune:"),
        st.Page(screen("query"), title="Query", icon=":material/search:"),
        st.Page(screen("traffic"), title="Traffic", icon=":material/monitoring:"),
        st.Page(screen("index"), title="Index", icon=":material/inventory_2:"),
        st.Page(screen("export"), title="Export", icon=":material/download:"),
        st.Page(screen("methods"), title="Methods", icon=":material/menu_book:"),
    ]
    st.navigation(pages).run()


if __name__ == "__main__":  # Streamlit runs its main script as __main__
    main()
elif __name__ == "app":  # `streamlit run` imports this file as the server's module: one port for both
    from evalcore_app.server import api_middleware

    app = st.App(__file__, middleware=api_middleware())
