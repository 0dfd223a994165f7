"""evalcore dashboard: ``evalcore dashboard`` (or ``streamlit run app.py`` in a clone).

The entry: the navigation, grouped in sections, and the frame every page shares. It draws the
sidebar (language, store, run and configuration pickers: :mod:`evalcore_app.ui.sidebar`) once
per page view, before the page runs, and hands it to the page (:mod:`evalcore_app.ui.frame`);
each screen is a thin page in screens/ over evalcore.read and evalcore.figures.build
(evalcore_app/ui/state.py declares the session state). Streamlit runs this file as its main
script for every page view; the clone's root ``app.py`` calls :func:`main` too.
When ``streamlit run`` starts the server it first imports this file as the module ``app`` and
serves the ``st.App`` assigned below: the dashboard and the HTTP API (``/api/v1``) on one port
(:mod:`evalcore_app.server`).
"""

from __future__ import annotations

import streamlit as st

from evalcore.store import reading
from evalcore_app import screen
from evalcore_app.ui import frame, sidebar, url
from evalcore_app.ui.lang import _


def _page(name: str, title: str, icon: str, *, default: bool = False) -> st.Page:
    """Screen ``name``: its URL path is its file's name (``/query``), what users bookmark."""
    return st.Page(screen(name), title=title, icon=icon, default=default)


def main() -> None:
    """Draw the navigation and the sidebar, and run the page the URL names (``/query?run_id=..``
    deep links included: a page's URL path is its file's name)."""
    st.set_page_config(page_title="evalcore", page_icon=":material/insights:", layout="wide")
    traffic = _page("traffic", _("Traffic"), ":material/monitoring:")
    methods = _page("methods", _("Methods"), ":material/menu_book:")
    sections = {  # the order of the pages is the order the sidebar lists them
        _("Runs and inputs"): [
            _page("runs", _("Runs"), ":material/list:", default=True),
            _page("new_run", _("New run"), ":material/add_circle:"),
            _page("questions", _("Questions"), ":material/edit_note:"),
        ],
        _("Results"): [
            _page("compare", _("Compare"), ":material/compare_arrows:"),
            _page("distances", _("Distances"), ":material/bar_chart:"),
            _page("threshold", _("Threshold"), ":material/tune:"),
            _page("query", _("Query"), ":material/search:"),
        ],
        _("Operations"): [
            traffic,
            _page("review", _("Review"), ":material/rate_review:"),
            _page("index", _("Index"), ":material/inventory_2:"),
            _page("export", _("Export"), ":material/download:"),
        ],
        _("Reference"): [methods],
    }
    page = st.navigation(sections)
    with reading():  # the page view's reads share one connection per store (a fragment's rerun reads alone)
        if page is methods:  # the reference text shows no run: the language picker only
            frame.hand(frame.Frame(sidebar.language_only()))
        else:
            deployment = url.deployment_link() if page is traffic else None  # before the sidebar reads the address
            frame.hand(frame.Frame(sidebar.sidebar(), deployment))
        page.run()


if __name__ == "__main__":  # Streamlit runs its main script as __main__
    main()
elif __name__ == "app":  # `streamlit run` imports this file as the server's module: one port for both
    from evalcore_app.server import api_middleware

    app = st.App(__file__, middleware=api_middleware())
