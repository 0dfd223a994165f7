"""A figure on a screen: the chart as exported, its caption, its PNG/SVG/CSV downloads; and the
link to the Methods screen, where every figure is defined."""

from __future__ import annotations

from typing import Any

import streamlit as st

from evalcore.figures.build import Figure
from evalcore.files import figure_files as export
from evalcore_app import screen
from evalcore_app.ui.lang import _
from evalcore_app.ui.state import SelectionState
from evalcore_app.ui.text import esc


def show_figure(figure: Figure, key: str, on_select: bool = False) -> Any:
    """The chart as exported (same colours: Streamlit's theme off), its caption, its downloads."""
    event = st.altair_chart(
        figure.chart, theme=None, key=f"chart-{key}", width="content", on_select="rerun" if on_select else "ignore"
    )
    st.caption(esc(figure.provenance.stamped().text()))  # dated when drawn, as a file is when written
    downloads(figure, key)
    return event


def downloads(figure: Figure, key: str) -> None:
    """PNG, SVG and CSV download buttons of one figure (rendered when clicked)."""
    run_id = SelectionState().run_id or "run"
    kinds = (
        ("png", export.to_png, "image/png", ":material/image:"),
        ("svg", export.to_svg, "image/svg+xml", ":material/draw:"),
        ("csv", export.to_csv, "text/csv", ":material/table:"),
    )
    for col, (ext, write, mime, icon) in zip(st.columns([1, 1, 1, 5]), kinds, strict=False):  # 4th column: space
        col.download_button(
            ext.upper(),
            data=lambda write=write: write(figure),
            file_name=export.file_name(figure, run_id, ext),
            mime=mime,
            key=f"{ext}-{key}",
            on_click="ignore",
            icon=icon,
        )


def methods_link() -> None:
    """A link to the Methods screen (docs/METHODS.md), where every figure is defined."""
    st.page_link(screen("methods"), label=_("How these figures are defined (Methods)"), icon=":material/menu_book:")
