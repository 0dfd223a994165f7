"""Runs: every run in the store; pick the one the other screens show."""

from __future__ import annotations

import streamlit as st

from evalcore.measures.rounding import threshold_text
from evalcore.read import decisions, runs
from evalcore_app import ui
from evalcore_app.ui import lang
from evalcore_app.ui.lang import _

ctx = ui.context()
store = ui.store()
st.title(_("Runs"))
if ctx.run is None:
    ui.no_runs_message(ctx)
    st.stop()

COLUMNS = {
    "run_id": st.column_config.TextColumn(_("run"), width="medium"),
    "name": st.column_config.TextColumn(_("name")),
    "state": st.column_config.TextColumn(_("state"), width="medium"),
    "created_at": st.column_config.DatetimeColumn(_("date"), format="YYYY-MM-DD HH:mm"),
    "duration_s": st.column_config.NumberColumn(_("duration (s)"), format="%.1f"),
    "in_domain": st.column_config.NumberColumn(_("in-domain queries")),
    "out_of_domain": st.column_config.NumberColumn(_("out-of-domain queries")),
    "invalid": st.column_config.NumberColumn(_("invalid needles")),
    "failed_documents": st.column_config.NumberColumn(_("failed docs")),
    "rerank_note": st.column_config.TextColumn(_("rerank")),
}
ORDER = [
    "name",
    "state",
    "created_at",
    "duration_s",
    "strategies",
    "retrievers",
    "documents",
    "characters",
    "sections",
    "in_domain",
    "out_of_domain",
    "invalid",
    "failed_documents",
    "model",
    "rerank_note",
    "run_id",
]


def selected(row: dict) -> None:
    st.subheader(_("Selected: {name}").format(name=ui.esc(row["name"])))
    ui.plain(_("run {id}").format(id=row["run_id"]), small=True)
    if row["status"] in ("failed", "cancelled"):
        said = runs.state_text(row).removeprefix(str(row["status"])).removeprefix(": ")  # the reason, where it stopped
        st.error(
            _("This run is **{status}**: {reason}").format(
                status=_(row["status"]), reason=ui.esc(said or _("no reason recorded"))
            )
        )
        return
    if row["status"] == "running":
        st.progress(float(row["progress"]), text=ui.esc(runs.state_text(row)))
        return
    cols = st.columns(5)
    cols[0].metric(_("Documents"), int(row["documents"]), help=_("{n} failed").format(n=int(row["failed_documents"])))
    cols[1].metric(_("Characters"), lang.tr().integer(int(row["characters"])))
    cols[2].metric(_("Sections"), int(row["sections"]))
    cols[3].metric(
        _("In-domain queries"),
        int(row["in_domain"]),
        help=_("{n} invalid needles excluded").format(n=int(row["invalid"])),
    )
    cols[4].metric(_("Out-of-domain queries"), int(row["out_of_domain"]))
    ui.plain(
        _("Strategies {strategies} · retrievers {retrievers} · {ranked_by}").format(
            strategies=row["strategies"], retrievers=row["retrievers"], ranked_by=row["ranked_by"]
        )
        + (f" · {row['rerank_note']}" if row["rerank_note"] else "")
    )
    timings = ui.cached(runs.timings, store, row["run_id"])
    if not timings.empty:
        with st.expander(_("Timings per stage")):
            st.dataframe(timings, hide_index=True)
    saved = decisions.decisions(store, row["run_id"])
    if not saved.empty:
        first = saved.iloc[0]
        ui.plain(
            _("Latest decision: t = {t} for {configuration}, saved by {author}").format(
                t=lang.tr().decimal_text(threshold_text(float(first["threshold"]), 4)),
                configuration=first["configuration"],
                author=first["author"],
            )
            + (
                _("; claim: {claim}").format(claim=lang.figures(first["claim"]))
                if first["claim"]
                else _("; no claim stored")
            ),
            small=True,
            testid="run-decision",
        )
        st.caption(_("Threshold decisions saved for this run (newest first), who saved them and the claim they carry"))
        st.dataframe(
            saved.drop(columns=["run_id", "run_name"]),
            hide_index=True,
            column_config={
                "created_at": st.column_config.DatetimeColumn(_("saved"), format="YYYY-MM-DD HH:mm:ss"),
                "threshold": st.column_config.NumberColumn(format="%.4f"),
                "author": st.column_config.TextColumn(_("saved by")),
            },
        )


def board() -> None:
    """The table and the selected run, drawn from ONE read of the store, so they never disagree."""
    overview = ui.overview_now(store)
    st.dataframe(overview, hide_index=True, column_order=ORDER, column_config=COLUMNS)
    st.caption(
        _(
            "Pick the run the other screens show in the sidebar. The Compare screen can pair it with a "
            "second run on the same queries."
        )
    )
    statuses = dict(zip(overview["run_id"], overview["status"], strict=True))
    session = ui.state.RunsState()
    if (statuses if session.statuses is None else session.statuses) != statuses:
        session.statuses = statuses
        st.rerun()  # a run changed state: redraw the whole page (sidebar run list included)
    session.statuses = statuses
    match = overview[overview["run_id"] == ctx.run_id]
    if not match.empty:
        selected(match.iloc[0].to_dict())


active = bool((ui.overview_now(store)["status"] == "running").any())
# while runs are going, the table and the selected run redraw together every 2 seconds
(st.fragment(board, run_every=2) if active else board)()
