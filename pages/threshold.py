"""Threshold: the exact sweep, a slider, the counts at the chosen value, a suggestion, decisions."""
from __future__ import annotations

import math

import streamlit as st

from pages import _ui

ctx = _ui.sidebar()
st.title("Refusal threshold")
run = _ui.require_run(ctx, need_config=True)
config = ctx.config
sweep = _ui.call("sweep", ctx.run_id, config)
if sweep.empty or int(sweep["in_domain"].iloc[0]) + int(sweep["out_domain"].iloc[0]) == 0:
    st.info("No scored queries in this configuration: nothing to sweep.")
    st.stop()
has_ood = int(sweep["out_domain"].iloc[0]) > 0
finite = sweep["threshold"][sweep["threshold"].map(math.isfinite)]
low, high = (float(finite.min()), float(finite.max())) if len(finite) else (0.0, 1.0)
pad = max((high - low) * 0.05, 0.01)
lo, hi = round(max(0.0, low - pad), 3), round(high + pad, 3)
st.caption(f"Configuration **{config}** · the gate keeps, from the top 4 hits, those with distance < t; "
           f"nothing kept means NO ANSWER. {int(sweep['in_domain'].iloc[0])} in-domain and "
           f"{int(sweep['out_domain'].iloc[0])} out-of-domain queries.")
if not has_ood:
    st.warning("This run has no out-of-domain queries: bluffs cannot be measured, only lost answers.")

st.subheader("Suggest a threshold")
cols = st.columns([1, 1, 2])
rules = ["cost weighting"] + (["bluff-rate ceiling"] if has_ood else [])
rule = _ui.bound(cols[0].radio, "Rule", rules, key="rule")
if rule == "bluff-rate ceiling":
    ceiling = _ui.bound(cols[1].number_input, "Max bluff rate", 0.0, 1.0, step=0.01, key="max_bluff_rate", default=0.05, format="%.2f")
    suggestion = _ui.guarded(lambda: _ui.pure("suggest", sweep, None, float(ceiling)))
else:
    ratio = _ui.bound(cols[1].number_input, "One bluff = N lost answers", 0.0, 1000.0, step=0.5, key="cost_ratio", default=3.0)
    suggestion = _ui.guarded(lambda: _ui.pure("suggest", sweep, float(ratio), None))
if suggestion is not None:
    cols[2].markdown(f"Suggested **t = {suggestion.threshold:g}**. {suggestion.rule}")

key = f"{ctx.run_id}|{config}"
if st.session_state.get("threshold_for") != key or "threshold" not in st.session_state:
    start = suggestion.threshold if suggestion is not None and math.isfinite(suggestion.threshold) else (lo + hi) / 2
    st.session_state["threshold"] = float(min(max(start, lo), hi))
    st.session_state["threshold_for"] = key
if suggestion is not None and st.button("Use the suggestion"):
    st.session_state["threshold"] = float(min(max(suggestion.threshold, lo), hi))
    st.rerun()
st.session_state["threshold"] = float(min(max(st.session_state["threshold"], lo), hi))
t = _ui.bound(st.slider, "Threshold t", lo, hi, step=0.001, key="threshold", format="%.3f")

st.subheader("Bluffs and lost answers")
figures, _ = _ui.sweep_figures(run, config, t)
tabs = st.tabs(["counts", "rates"])
for tab, figure in zip(tabs, figures):
    with tab:
        st.altair_chart(figure.chart)
        _ui.downloads(figure, ctx.run_id, figure.slug)

st.subheader(f"At t = {t:.3f}")
table = _ui.pure("gate_table", sweep, t)
st.dataframe(table, hide_index=True, column_config={
    "share": st.column_config.NumberColumn(format="percent"),
    "wilson low": st.column_config.NumberColumn("95% Wilson low", format="percent"),
    "wilson high": st.column_config.NumberColumn("95% Wilson high", format="percent"),
})

if has_ood:
    bluffs = _ui.call("bluffs_at", ctx.run_id, config, t)
    st.subheader(f"Out-of-domain queries that still bluff ({len(bluffs)})")
    if bluffs.empty:
        st.success("No out-of-domain query passes the gate at this threshold.")
    else:
        st.dataframe(bluffs, hide_index=True)

st.subheader("Save the decision")
with st.form("decision"):
    note = st.text_area("Note (why this threshold)", key="decision_note")
    if st.form_submit_button("Save threshold"):
        decision = _ui.live("save_decision", ctx.run_id, config, t, note)
        st.success(f"Saved decision {decision}: t = {t:.4f} for {config}.")
saved = _ui.live("decisions", ctx.run_id)
st.caption("Saved decisions for this run")
st.dataframe(saved, hide_index=True)
