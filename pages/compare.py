"""Compare: recall@k and MRR per configuration, destroyed answers, the paired win/loss matrix."""
from __future__ import annotations

import streamlit as st

from pages import _ui

ctx = _ui.sidebar()
st.title("Compare")
run = _ui.require_run(ctx)

recall = _ui.recall_figures(run)
if not recall:
    st.info("This run has no scored in-domain queries: nothing to compare.")
    st.stop()
summary = recall[0].data
wide = summary.pivot(index="config", columns="metric", values="value").reset_index()
st.subheader("Recall@k and MRR per configuration")
st.altair_chart(recall[0].chart)
_ui.downloads(recall[0], ctx.run_id, "recall")
with st.expander("Table and MRR"):
    st.dataframe(summary.drop(columns=["description"]), hide_index=True)
    st.altair_chart(recall[1].chart)
    _ui.downloads(recall[1], ctx.run_id, "mrr")

st.subheader("Destroyed answers per strategy")
destroyed = _ui.destroyed_figure(run)
st.altair_chart(destroyed.chart)
_ui.downloads(destroyed, ctx.run_id, "destroyed")

st.subheader("Paired wins and losses")
complete = _ui.live("complete_runs")
others = [""] + [r for r in complete["run_id"] if r != ctx.run_id]
names = dict(zip(complete["run_id"], complete["name"]))
cols = st.columns(3)
k = _ui.bound(cols[0].selectbox, "hit@k", [1, 4, 8, 20], key="hit_k", default=4)
adjust = _ui.bound(cols[1].toggle, "Holm correction", key="holm", default=True,
                        help="Adjust the p-values for the number of pairs compared (Holm step-down).")
if st.session_state.get("run_id_b") not in others:
    st.session_state["run_id_b"] = ""
other = _ui.bound(cols[2].selectbox, "Second run (same queries)", others, key="run_id_b",
                          format_func=lambda r: "none: configurations of this run" if not r
                          else f"{names.get(r)} · {r}")
configs = _ui.call("configurations", ctx.run_id)
if len(configs) > 8:  # 8 configurations = 28 pairs; more makes Holm too strict to say anything
    first_retriever = configs[0].split("/", 1)[1]
    suggested = [c for c in configs if c.endswith("/" + first_retriever)]
else:
    suggested = configs
if any(c not in configs for c in st.session_state.get("matrix_configs", [])):
    st.session_state.pop("matrix_configs")
chosen = _ui.bound(st.multiselect, "Configurations in the matrix", configs, key="matrix_configs",
                   default=suggested, help="Fewer configurations mean fewer pairs for the Holm "
                   "correction to pay for.")
if len(chosen) < 2 and not other:
    st.info("Pick at least two configurations.")
    st.stop()
figure = _ui.guarded(lambda: _ui.matrix_figure(run, k, adjust, other or None, tuple(chosen)))
if figure is None:
    st.stop()
matrix = figure.data
if matrix.empty:
    st.info("Only one configuration in this run: pick a second run to compare against.")
    st.stop()
event = st.altair_chart(figure.chart, on_select="rerun", key="heatmap")
_ui.downloads(figure, ctx.run_id, "matrix")
st.markdown(_ui.pure("significance_text", matrix, k, adjust))

labels = list(dict.fromkeys(matrix["row"]))
selected = (event.selection.get("cell") or []) if event is not None and hasattr(event, "selection") else []
if selected:
    cell = (selected[0].get("row"), selected[0].get("column"))
    if cell != st.session_state.get("_last_cell") and cell[0] in labels and cell[1] in labels:
        st.session_state["pair_first"], st.session_state["pair_second"] = cell
        st.session_state["_last_cell"] = cell
if st.session_state.get("pair_first") not in labels:
    st.session_state["pair_first"] = labels[0]
if st.session_state.get("pair_second") not in labels or st.session_state["pair_second"] == st.session_state["pair_first"]:
    st.session_state["pair_second"] = next(x for x in labels if x != st.session_state["pair_first"])
cols = st.columns(2)
first = _ui.bound(cols[0].selectbox, "First configuration (wins)", labels, key="pair_first",
                          help="Click a cell of the matrix or pick here.")
second = _ui.bound(cols[1].selectbox, "Second configuration (losses)", [x for x in labels if x != first], key="pair_second")
a = _ui.pure("side_of", first, ctx.run_id, other or None)
b = _ui.pure("side_of", second, ctx.run_id, other or None)
test, queries = _ui.call("pair_queries", a, b, k)
st.markdown(f"**{first}** against **{second}** at hit@{k}: +{test.wins} won / -{test.losses} lost, "
            f"{test.ties} ties, p = {test.p_value:.4g} (unadjusted {_ui.report.PAIRED_TEST}).")
if queries.empty:
    st.info("No query differs between these two configurations at this k.")
else:
    queries = queries.assign(link=[f"query?run_id={a[0]}&query_id={q}" for q in queries["query_id"]])
    st.dataframe(queries, hide_index=True, column_config={
        "link": st.column_config.LinkColumn("open", display_text="Query screen"),
        "rank_first": st.column_config.NumberColumn(f"rank in {first}"),
        "rank_second": st.column_config.NumberColumn(f"rank in {second}"),
    })
