"""The evalcore dashboard (Streamlit): ``evalcore dashboard``, or ``streamlit run app.py`` in a clone.

A package of its own beside :mod:`evalcore`, in the same distribution, so that the library
never imports Streamlit. :data:`APP` is the script Streamlit runs; ``app.py`` holds the
navigation and draws the sidebar once, ``screens/`` holds one file per screen (its URL path is
the file's name), ``ui/`` the frame the pages share and ``partials/`` what a page
draws inside it. Importing this package imports nothing else.
"""

from __future__ import annotations

from pathlib import Path

HERE = Path(__file__).resolve().parent
#: The dashboard's main script, as ``streamlit run`` takes it.
APP = HERE / "app.py"
SCREENS = HERE / "screens"


def screen(name: str) -> str:
    """The path of screen ``name`` ("query") as ``st.Page``, ``st.page_link`` and
    ``st.switch_page`` take it: absolute, so it names the same file whichever script
    Streamlit was started on (this package's ``app.py`` or a clone's root ``app.py``)."""
    return str(SCREENS / f"{name}.py")
