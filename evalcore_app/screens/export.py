"""Export: every chart of the current selection as PNG, SVG and CSV, each with its caption
and provenance, and the review pack (all of them in one zip with a summary)."""

from __future__ import annotations

import streamlit as st

from evalcore.figures import build as figures
from evalcore.figures import review
from evalcore.files import figure_files as export
from evalcore.measures.rounding import threshold_text
from evalcore_app import ui
from evalcore_app.ui import lang
from evalcore_app.ui.lang import _

ctx = ui.context()
tr = lang.tr()
st.title(_("Export"))
run = ui.require_run(ctx, need_config=True)
selection = ui.guarded(lambda: ui.selection(ctx))
if selection is None:
    st.stop()
compared = ", ".join(s.label(len({x.run_id for x in selection.sides}) > 1) for s in selection.sides)
ui.plain(
    (
        _("Compared at hit@{k} (Holm-adjusted p): {compared}.")
        if selection.adjust
        else _("Compared at hit@{k} (unadjusted p): {compared}.")
    ).format(k=selection.k, compared=compared or _("nothing")),
    testid="export-compared",
)
ui.plain(
    _("Threshold t = {t} for {label} · {source}").format(
        t=lang.tr().decimal_text(threshold_text(selection.threshold, 4)),
        label=selection.configuration.label,
        source=lang.source(selection.threshold_source),
    ),
    testid="threshold-state",
)
st.caption(
    _(
        "These are the charts the other screens show now (Compare: configurations, hit@k, Holm; "
        "sidebar and Threshold: configuration and threshold). Every PNG and SVG has its caption drawn "
        "in; the SVG also carries it as <title>/<desc>, the PNG as text chunks, the CSV as its first lines."
    )
)
if tr.lang != "en":
    st.caption(
        _(
            "Charts, captions and summary.md are in {language}; the CSV files keep machine-readable values "
            "('.' decimals, ISO dates, English column names) and say so in their first lines."
        ).format(language=tr.name)
    )
store = ui.store()  # bound now: the pack is built on click, outside this run and its session state
shown = ui.guarded(
    lambda: figures.selection_figures(store, selection, call=lambda fn, *args: ui.cached(fn, store, *args), tr=tr)
)
if not shown:
    st.stop()


def _pack() -> bytes:
    return export.review_pack(
        shown, ctx.run_id, lambda files: review.review_summary(store, selection, shown, files, tr)
    )


st.download_button(
    _("Download the review pack (zip)"),
    data=_pack,
    file_name=export.pack_name(ctx.run_id, selection.configuration.label, selection.threshold),
    mime="application/zip",
    key="review-pack",
    on_click="ignore",
    type="primary",
    icon=":material/folder_zip:",
    help=_("Every chart below as PNG, SVG and CSV, and summary.md: the decision and the comparison they support."),
)
for figure in shown:
    with st.container(border=True):
        st.markdown(f"**{ui.esc(figure.title)}**")
        ui.show_figure(figure, f"export-{figure.slug}")
ui.methods_link()
