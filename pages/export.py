"""Export: every chart of the selected run as PNG and SVG, its data as CSV, with a caption."""
from __future__ import annotations

import streamlit as st

from pages import _ui

ctx = _ui.sidebar()
st.title("Export")
run = _ui.require_run(ctx, need_config=True)
k = int(st.session_state.get("hit_k", 4))
adjust = bool(st.session_state.get("holm", True))
threshold = float(st.session_state.get("threshold", 0.5)) if st.session_state.get("threshold_for") == \
    f"{ctx.run_id}|{ctx.config}" else None
st.caption("Charts use the selections made on the other screens (configuration, hit@k, Holm, threshold). "
           "PNG and SVG are rendered on the server; each caption names run, configuration, n, test, "
           "interval method and date so a slide can be traced back.")
figures = list(_ui.recall_figures(run)) + [_ui.destroyed_figure(run)]
matrix = _ui.guarded(lambda: _ui.matrix_figure(run, k, adjust, None))
if matrix is not None and not matrix.data.empty:
    figures.append(matrix)
figures.append(_ui.distance_figure(run, ctx.config)[0])
if threshold is None:
    sweep = _ui.call("sweep", ctx.run_id, ctx.config)
    suggestion = _ui.guarded(lambda: _ui.pure("suggest", sweep, 3.0, None))
    threshold = suggestion.threshold if suggestion is not None else 0.5
figures += _ui.sweep_figures(run, ctx.config, threshold)[0]
figures.append(_ui.index_figure(run)[0])
for figure in figures:
    with st.container(border=True):
        st.markdown(f"**{figure.title}**")
        st.altair_chart(figure.chart)
        _ui.downloads(figure, ctx.run_id, f"export-{figure.slug}")
