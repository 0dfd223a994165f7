"""Threshold: when should the assistant refuse? The exact sweep, one threshold shared with
Query and Export, what it does in one sentence, a suggestion, the queries that still bluff,
and the decision saved with its note."""

from __future__ import annotations

import math

import streamlit as st

from evalcore import figures
from evalcore.read import decisions, sweeps
from evalcore.threshold import DEFAULT_COST_RATIO
from evalcore_app import screen
from evalcore_app.screens import _ui

ctx = _ui.sidebar()
st.title("Refusal threshold")
run = _ui.require_run(ctx, need_config=True)
config = ctx.config
why = st.session_state.get("config_why")
st.markdown(
    f"Configuration **{_ui.esc(config.label)}**"
    + (f": opened on {_ui.esc(why)}. Pick another in the sidebar." if why else " (picked in the sidebar).")
)
sweep = _ui.cached(sweeps.sweep, ctx.run_id, config)
n_in, n_out = (int(sweep["in_domain"].iloc[0]), int(sweep["out_domain"].iloc[0])) if len(sweep) else (0, 0)
if n_in + n_out == 0:
    st.info("No scored queries in this configuration: nothing to sweep.")
    st.stop()
axis = _ui.cached(sweeps.gate_axis, ctx.run_id, config)
st.caption(
    f"The gate keeps, from the top 4 hits, those with {axis.keeps}; nothing kept means NO ANSWER "
    f"before any model is called. {n_in} in-domain and {n_out} out-of-domain queries."
)

t, source = _ui.threshold_state(ctx)
lo, hi = _ui.pure(sweeps.threshold_range, sweep)
lo, hi = min(lo, math.floor(t * 1000) / 1000), max(hi, math.ceil(t * 1000) / 1000)


def _moved() -> None:
    st.session_state["threshold_source"] = "set on the Threshold screen (not saved)"
    st.session_state["threshold_for"] = f"{ctx.run_id}|{config.label}"


t = _ui.bound(st.slider, "Threshold t", lo, hi, step=0.001, key="threshold", format="%.3f", on_change=_moved)
_ui.plain(_ui.pure(sweeps.sentence_at, sweep, t), strong=True, testid="sentence-at-t")
_ui.plain(
    f"Threshold t = {t:.4f} · {st.session_state.get('threshold_source', source)}", small=True, testid="threshold-state"
)
warning = _ui.pure(sweeps.ood_support, sweep, t)
if warning:
    st.warning(warning)

with st.expander("Suggest a threshold", expanded=False):
    cols = st.columns([1, 1, 2])
    rules = ["cost weighting"] + (["bluff-rate ceiling"] if n_out else [])
    rule = _ui.bound(cols[0].radio, "Rule", rules, key="rule")
    if rule == "bluff-rate ceiling":
        ceiling = _ui.bound(
            cols[1].number_input,
            "Max bluff rate",
            0.0,
            1.0,
            step=0.01,
            key="max_bluff_rate",
            default=0.05,
            format="%.2f",
        )
        suggestion = _ui.guarded(lambda: _ui.pure(sweeps.suggest, sweep, None, float(ceiling)))
    else:
        ratio = _ui.bound(
            cols[1].number_input,
            "One bluff = N lost answers",
            0.0,
            1000.0,
            step=0.5,
            key="cost_ratio",
            default=DEFAULT_COST_RATIO,
        )
        suggestion = _ui.guarded(lambda: _ui.pure(sweeps.suggest, sweep, float(ratio), None))
    if suggestion is not None:
        cols[2].markdown(f"Suggested **t = {suggestion.threshold:g}**. {_ui.esc(suggestion.rule)}")
        other = _ui.pure(sweeps.ood_support, sweep, suggestion.threshold)
        if other and other != warning:
            st.warning(other)
        if math.isfinite(suggestion.threshold) and st.button("Use the suggestion"):
            _ui.set_threshold(ctx, suggestion.threshold, f"suggested: {suggestion.rule}")
            st.rerun()

st.subheader("Bluffs, lost answers and refusals")
tab_rates, tab_counts = st.tabs(["rates (with 95% Wilson bands)", "counts"])
run_text = _ui.figure(figures.run_text, ctx.run_id)
with tab_rates:
    _ui.show_figure(_ui.figure_of(figures.sweep_figure_of, sweep, run_text, config, t, True), "sweep-rates")
with tab_counts:
    _ui.show_figure(_ui.figure_of(figures.sweep_figure_of, sweep, run_text, config, t, False), "sweep-counts")

st.subheader(f"At t = {t:.3f}")
st.dataframe(
    _ui.pure(sweeps.gate_table, sweep, t),
    hide_index=True,
    column_config={
        "outcome": st.column_config.TextColumn(width="large"),
        "share": st.column_config.NumberColumn(format="percent"),
        "wilson low": st.column_config.NumberColumn("95% Wilson low", format="percent"),
        "wilson high": st.column_config.NumberColumn("95% Wilson high", format="percent"),
    },
)

if n_out:
    bluffs = _ui.cached(sweeps.bluffs_at, ctx.run_id, config, t)
    st.subheader(f"Out-of-domain queries that still bluff ({len(bluffs)})")
    if bluffs.empty:
        st.success("No out-of-domain query passes the gate at this threshold.")
    else:
        st.caption("Each opens on the Query screen (a link you can share), with this threshold.")
        for row in bluffs.itertuples():
            st.page_link(
                screen("query"),
                label=f"{_ui.esc(row.query_id)} · {_ui.esc(row.kind)} · nearest "
                f"{'d' if axis.column == 'distance' else 'score'} = {row.distance:.3f} · "
                f"{_ui.esc(row.text)}",
                icon=":material/search:",
                query_params={"run_id": ctx.run_id, "query_id": row.query_id, "config": config.label},
            )
        with st.expander("Their nearest chunks"):
            st.dataframe(bluffs, hide_index=True)

st.subheader("Save the decision")
with st.form("decision"):
    note = st.text_area("Note (why this threshold)", key="decision_note")
    if st.form_submit_button(f"Save t = {t:.4f} for {_ui.esc(config.label)}"):
        saved_id = _ui.guarded(lambda: _ui.live(decisions.save_decision, ctx.run_id, config, t, note))
        if saved_id:
            latest = _ui.live(decisions.latest_decision, ctx.run_id, config)
            _ui.set_threshold(ctx, t, f"saved decision: {latest.describe()}")
            st.success(
                f"Saved decision {saved_id}: t = {t:.4f} for {_ui.esc(config.label)}. The dashboard "
                "opens on it from now on."
            )
saved = _ui.live(decisions.decisions, ctx.run_id)
st.caption("Saved decisions for this run (newest first)")
st.dataframe(
    saved,
    hide_index=True,
    column_config={
        "created_at": st.column_config.DatetimeColumn("saved", format="YYYY-MM-DD HH:mm:ss"),
        "threshold": st.column_config.NumberColumn(format="%.4f"),
    },
)
_ui.methods_link()
