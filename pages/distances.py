"""Distances: in-domain against out-of-domain distances for one configuration."""
from __future__ import annotations

import math

import streamlit as st

from pages import _ui

ctx = _ui.sidebar()
st.title("Distances")
run = _ui.require_run(ctx, need_config=True)
figure, frame, summary = _ui.distance_figure(run, ctx.config)
if frame.empty:
    st.info("No distances stored for this configuration.")
    st.stop()
st.caption(f"Configuration **{ctx.config}** · cosine distance of each in-domain query to its answer "
           "(best-ranked correct chunk) and of its top hit, against the top hit of each out-of-domain query.")
cols = st.columns(4)
cols[0].metric("Worst in-domain answer", "n/a" if math.isnan(summary.worst_in) else f"{summary.worst_in:.3f}")
cols[1].metric("Best out-of-domain top hit", "n/a" if math.isnan(summary.best_out) else f"{summary.best_out:.3f}")
cols[2].metric("Answers at or beyond the best ood", summary.overlap_in, help=f"of {summary.n_in} in-domain answers")
cols[3].metric("Ood hits at or within the worst answer", summary.overlap_out, help=f"of {summary.n_out} out-of-domain queries")
if summary.n_out == 0:
    st.warning("This run has no out-of-domain queries: only the in-domain distances are shown.")
elif summary.separated:
    st.success("The groups are separated: a threshold between the two marks keeps every answer and refuses every "
               "out-of-domain query.")
else:
    st.warning("The groups overlap (shaded band): no threshold keeps every answer without a bluff.")
st.altair_chart(figure.chart)
_ui.downloads(figure, ctx.run_id, "distances")
with st.expander("Per-query distances"):
    st.dataframe(frame, hide_index=True)
