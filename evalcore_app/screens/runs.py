"""Runs: every run in the store; pick the one the other screens show."""

from __future__ import annotations

import streamlit as st

from evalcore.read import decisions, runs
from evalcore_app.screens import _ui

ctx = _ui.sidebar()
store = _ui.store()
st.title("Runs")
if ctx.run is None:
    _ui.no_runs_message(ctx)
    st.stop()

COLUMNS = {
    "run_id": st.column_config.TextColumn("run", width="medium"),
    "name": st.column_config.TextColumn("name"),
    "state": st.column_config.TextColumn("state", width="medium"),
    "created_at": st.column_config.DatetimeColumn("date", format="YYYY-MM-DD HH:mm"),
    "duration_s": st.column_config.NumberColumn("duration (s)", format="%.1f"),
    "in_domain": st.column_config.NumberColumn("in-domain queries"),
    "out_of_domain": st.column_config.NumberColumn("out-of-domain queries"),
    "invalid": st.column_config.NumberColumn("invalid needles"),
    "failed_documents": st.column_config.NumberColumn("failed docs"),
    "rerank_note": st.column_config.TextColumn("rerank"),
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
    st.subheader(f"Selected: {_ui.esc(row['name'])}")
    _ui.plain(f"run {row['run_id']}", small=True)
    if row["status"] in ("failed", "cancelled"):
        said = runs.state_text(row).removeprefix(str(row["status"])).removeprefix(": ")  # the reason, where it stopped
        st.error(f"This run is **{row['status']}**: {_ui.esc(said or 'no reason recorded')}")
        return
    if row["status"] == "running":
        st.progress(float(row["progress"]), text=_ui.esc(runs.state_text(row)))
        return
    cols = st.columns(5)
    cols[0].metric("Documents", int(row["documents"]), help=f"{int(row['failed_documents'])} failed")
    cols[1].metric("Characters", f"{int(row['characters']):,}")
    cols[2].metric("Sections", int(row["sections"]))
    cols[3].metric("In-domain queries", int(row["in_domain"]), help=f"{int(row['invalid'])} invalid needles excluded")
    cols[4].metric("Out-of-domain queries", int(row["out_of_domain"]))
    _ui.plain(
        f"Strategies {row['strategies']} · retrievers {row['retrievers']} · {row['ranked_by']}"
        + (f" · {row['rerank_note']}" if row["rerank_note"] else "")
    )
    timings = _ui.cached(runs.timings, store, row["run_id"])
    if not timings.empty:
        with st.expander("Timings per stage"):
            st.dataframe(timings, hide_index=True)
    saved = decisions.decisions(store, row["run_id"])
    if not saved.empty:
        first = saved.iloc[0]
        _ui.plain(
            f"Latest decision: t = {float(first['threshold']):.4f} for {first['configuration']}, saved by "
            f"{first['author']}" + (f"; claim: {first['claim']}" if first["claim"] else "; no claim stored"),
            small=True,
            testid="run-decision",
        )
        st.caption("Threshold decisions saved for this run (newest first), who saved them and the claim they carry")
        st.dataframe(
            saved.drop(columns=["run_id", "run_name"]),
            hide_index=True,
            column_config={
                "created_at": st.column_config.DatetimeColumn("saved", format="YYYY-MM-DD HH:mm:ss"),
                "threshold": st.column_config.NumberColumn(format="%.4f"),
                "author": st.column_config.TextColumn("saved by"),
            },
        )


def board() -> None:
    """The table and the selected run, drawn from ONE read of the store, so they never disagree."""
    overview = runs.runs_overview(store)
    st.dataframe(overview, hide_index=True, column_order=ORDER, column_config=COLUMNS)
    st.caption(
        "Pick the run the other screens show in the sidebar. The Compare screen can pair it with a "
        "second run on the same queries."
    )
    statuses = dict(zip(overview["run_id"], overview["status"], strict=True))
    if st.session_state.get("_statuses", statuses) != statuses:
        st.session_state["_statuses"] = statuses
        st.rerun()  # a run changed state: redraw the whole page (sidebar run list included)
    st.session_state["_statuses"] = statuses
    match = overview[overview["run_id"] == ctx.run_id]
    if not match.empty:
        selected(match.iloc[0].to_dict())


active = bool((runs.runs_overview(store)["status"] == "running").any())
# while runs are going, the table and the selected run redraw together every 2 seconds
(st.fragment(board, run_every=2) if active else board)()
