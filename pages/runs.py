"""Runs: every run in the store; pick the one the other screens show."""
from __future__ import annotations

import streamlit as st

from pages import _ui

ctx = _ui.sidebar()
st.title("Runs")
if ctx.run is None:
    _ui.no_runs_message(ctx)
    st.stop()


def runs_table() -> None:
    runs = _ui.live("runs_overview")
    st.dataframe(
        runs, hide_index=True,
        column_order=["name", "status", "activity", "created_at", "duration_s", "strategies", "retrievers",
                      "documents", "characters", "sections", "in_domain", "out_of_domain", "invalid",
                      "failed_documents", "reason", "model", "run_id"],
        column_config={
            "run_id": st.column_config.TextColumn("run", width="medium"),
            "created_at": st.column_config.DatetimeColumn("date", format="YYYY-MM-DD HH:mm"),
            "duration_s": st.column_config.NumberColumn("duration (s)", format="%.1f"),
            "in_domain": st.column_config.NumberColumn("in-domain queries"),
            "out_of_domain": st.column_config.NumberColumn("out-of-domain queries"),
            "invalid": st.column_config.NumberColumn("invalid needles"),
            "failed_documents": st.column_config.NumberColumn("failed docs"),
        },
    )


active = bool((_ui.live("runs_overview")["status"] == "running").any())
# while runs are going, the table redraws itself every 2 seconds (the rest of the page stays)
(st.fragment(runs_table, run_every=2) if active else runs_table)()
st.caption("Pick the run the other screens show in the sidebar. The Compare screen can pair it with a second run.")

row = ctx.run
st.subheader(f"Selected: {row['name']} · `{ctx.run_id}`")
if row["status"] == "failed" or row["status"] == "cancelled":
    st.error(f"This run is **{row['status']}**: {row.get('reason') or 'no reason recorded'}")
elif row["status"] == "running":
    st.info(f"Running: stage {row.get('stage')}, {100 * (row.get('progress') or 0):.0f}% done.")
else:
    cols = st.columns(5)
    cols[0].metric("Documents", int(row["documents"]), help=f"{int(row['failed_documents'])} failed")
    cols[1].metric("Characters", f"{int(row['characters']):,}")
    cols[2].metric("Sections", int(row["sections"]))
    cols[3].metric("In-domain queries", int(row["in_domain"]), help=f"{int(row['invalid'])} invalid needles excluded")
    cols[4].metric("Out-of-domain queries", int(row["out_of_domain"]))
    st.write(f"Strategies **{row['strategies']}** · retrievers **{row['retrievers']}** · model "
             f"`{row['model']}` · {row['rerank_note'] or ''}")
    timings = _ui.call("timings", ctx.run_id)
    if not timings.empty:
        with st.expander("Timings per stage"):
            st.dataframe(timings, hide_index=True)
