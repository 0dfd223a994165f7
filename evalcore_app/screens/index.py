"""Index: health per strategy and the documents with their state and stamp."""

from __future__ import annotations

import streamlit as st

from evalcore.figures import build as figures
from evalcore.read import index
from evalcore_app import ui
from evalcore_app.ui import lang
from evalcore_app.ui.lang import _, ngettext

ctx = ui.context()
store = ui.store()
st.title(_("Index health"))
run = ui.require_run(ctx)
figure = ui.cached(figures.index_figure, store, ctx.run_id, lang.tr())
health = figure.detail
if health.empty:
    st.info(_("This run has no strategies recorded."))
else:
    st.dataframe(
        health,
        hide_index=True,
        column_config={
            "header_share": st.column_config.NumberColumn(_("header share"), format="percent"),
            "norm_max_diff": st.column_config.NumberColumn(
                _("normalisation check"),
                format="%.2e",
                help=_("max |L2²/2 − (1 − cos)| over 200 × 200 chunk pairs; ~1e-6 when vectors are unit length"),
            ),
            "over_window": st.column_config.NumberColumn(_("over 256 window")),
        },
    )
    ui.show_figure(figure, "index")

over = ui.cached(index.over_window_chunks, store, ctx.run_id)
measured = health.empty or bool(health["over_window"].notna().any())  # a run ranked elsewhere: not measured
st.subheader(_("Chunks over the 256-piece window ({n})").format(n=len(over) if measured else _("not measured")))
st.caption(_("The model cuts these silently: the words past the window are never embedded."))
if not measured:
    st.info(_("Not measured: this run was ranked elsewhere, so no chunk was embedded by the model here."))
elif over.empty:
    st.success(_("No chunk is over the window."))
else:
    st.dataframe(over, hide_index=True)

unlocated = ui.cached(index.unlocated_chunks, store, ctx.run_id)
if not unlocated.empty:  # only a run made elsewhere has them
    st.subheader(_("Chunks that could not be located ({n})").format(n=len(unlocated)))
    st.caption(
        _(
            "The other system's chunk file names these, but their text or offsets were not found in the "
            "corpus: they are kept in the rankings and never count as correct."
        )
    )
    st.dataframe(unlocated, hide_index=True, column_config={"reason": st.column_config.TextColumn(width="large")})

destroyed = ui.cached(index.destroyed_list, store, ctx.run_id)
st.subheader(_("Destroyed ground truths ({n})").format(n=len(destroyed)))
if destroyed.empty:
    st.success(_("Every ground truth lies whole in some chunk."))
else:
    st.caption(
        _(
            "No chunk holds these needles whole, so no retriever can find them. "
            "`before | after` shows the cut that split a needle."
        )
    )
    st.dataframe(
        destroyed.assign(split=destroyed["before_cut"] + " | " + destroyed["after_cut"]),
        hide_index=True,
        column_order=[
            "strategy",
            "group_id",
            "doc_id",
            "why",
            "start",
            "end",
            "cut",
            "context_before",
            "split",
            "context_after",
        ],
    )

docs = ui.cached(index.documents, store, ctx.run_id)
st.subheader(_("Documents ({n})").format(n=len(docs)))
stale = int(docs["stale"].sum())
failed = int((docs["state"] == "failed").sum())
if stale:
    st.warning(
        ngettext(
            "{n} document was indexed under an older stamp (stale): re-run to refresh it.",
            "{n} documents were indexed under an older stamp (stale): re-run to refresh them.",
            stale,
        ).format(n=stale)
    )
if failed:
    st.error(
        ngettext(
            "{n} document failed; its reason is listed below.",
            "{n} documents failed; their reasons are listed below.",
            failed,
        ).format(n=failed)
    )
st.dataframe(docs, hide_index=True)
ui.methods_link()
