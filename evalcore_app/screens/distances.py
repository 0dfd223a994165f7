"""Distances: in-domain against out-of-domain distances for one configuration."""

from __future__ import annotations

import math

import streamlit as st

from evalcore.figures import build as figures
from evalcore_app import ui
from evalcore_app.ui import lang
from evalcore_app.ui.lang import _

ctx = ui.context()
store = ui.store()
st.title(_("Distances"))
run = ui.require_run(ctx, need_config=True)
figure = ui.cached(figures.distance_figure, store, ctx.run_id, ctx.config, lang.tr())
frame, summary = figure.detail
if frame.empty:
    st.info(_("No distances stored for this configuration."))
    st.stop()
st.markdown(
    _(
        "Configuration **{label}** · {axis} of each in-domain query to its answer "
        "(the best-ranked correct chunk) and of its top hit, against the top hit of each out-of-domain query."
    ).format(label=ui.esc(ctx.config.label), axis=_(summary.axis))
)
ui.plain(f"n: {lang.source(summary.n_text())}.", small=True, testid="distance-n")
cols = st.columns(4)
cols[0].metric(_("Worst in-domain answer"), _("n/a") if math.isnan(summary.worst_in) else lang.num(summary.worst_in, 3))
cols[1].metric(
    _("Best out-of-domain top hit"), _("n/a") if math.isnan(summary.best_out) else lang.num(summary.best_out, 3)
)
cols[2].metric(
    _("Answers in the overlap"),
    _("{n} of {m}").format(n=summary.overlap_in, m=summary.n_answer),
    help=_("In-domain answers at or beyond the best out-of-domain top hit"),
)
cols[3].metric(
    _("Off-topic hits in the overlap"),
    _("{n} of {m}").format(n=summary.overlap_out, m=summary.n_out),
    help=_("Out-of-domain top hits at or within the worst in-domain answer"),
)
if summary.n_out == 0:
    st.warning(_("This run has no out-of-domain queries: only the in-domain distances are shown."))
elif summary.separated:
    st.success(
        _(
            "The groups are separated: a threshold between the two marks keeps every answer and refuses every "
            "out-of-domain query."
        )
    )
else:
    st.warning(_("The groups overlap (shaded band): no threshold keeps every answer without a bluff."))
if figure.chart is not None:
    ui.show_figure(figure, "distances")
scored = not summary.lower_is_closer  # the retriever's own score, not a distance
with st.expander("Per-query scores" if scored else "Per-query distances"):
    st.dataframe(frame.rename(columns={"distance": "score"}) if scored else frame, hide_index=True)
ui.methods_link()
