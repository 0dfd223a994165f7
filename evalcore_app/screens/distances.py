"""Distances: in-domain against out-of-domain distances for one configuration."""

from __future__ import annotations

import math

import streamlit as st

from evalcore.figures import build as figures
from evalcore_app.screens import _ui

ctx = _ui.sidebar()
store = _ui.store()
st.title("Distances")
run = _ui.require_run(ctx, need_config=True)
figure = _ui.cached(figures.distance_figure, store, ctx.run_id, ctx.config)
frame, summary = figure.detail
if frame.empty:
    st.info("No distances stored for this configuration.")
    st.stop()
st.markdown(
    f"Configuration **{_ui.esc(ctx.config.label)}** · {summary.axis} of each in-domain query to its answer "
    "(the best-ranked correct chunk) and of its top hit, against the top hit of each out-of-domain query."
)
_ui.plain(f"n: {summary.n_text()}.", small=True, testid="distance-n")
cols = st.columns(4)
cols[0].metric("Worst in-domain answer", "n/a" if math.isnan(summary.worst_in) else f"{summary.worst_in:.3f}")
cols[1].metric("Best out-of-domain top hit", "n/a" if math.isnan(summary.best_out) else f"{summary.best_out:.3f}")
cols[2].metric(
    "Answers in the overlap",
    f"{summary.overlap_in} of {summary.n_answer}",
    help="In-domain answers at or beyond the best out-of-domain top hit",
)
cols[3].metric(
    "Off-topic hits in the overlap",
    f"{summary.overlap_out} of {summary.n_out}",
    help="Out-of-domain top hits at or within the worst in-domain answer",
)
if summary.n_out == 0:
    st.warning("This run has no out-of-domain queries: only the in-domain distances are shown.")
elif summary.separated:
    st.success(
        "The groups are separated: a threshold between the two marks keeps every answer and refuses every "
        "out-of-domain query."
    )
else:
    st.warning("The groups overlap (shaded band): no threshold keeps every answer without a bluff.")
if figure.chart is not None:
    _ui.show_figure(figure, "distances")
scored = not summary.lower_is_closer  # the retriever's own score, not a distance
with st.expander("Per-query scores" if scored else "Per-query distances"):
    st.dataframe(frame.rename(columns={"distance": "score"}) if scored else frame, hide_index=True)
_ui.methods_link()
