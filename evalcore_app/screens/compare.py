"""Compare: configurations of one run, or of two runs on the same queries: which is best and
how sure we are, recall@k and MRR with intervals, destroyed answers, the paired win/loss matrix."""

from __future__ import annotations

import streamlit as st

from evalcore.figures import build as figures
from evalcore.measures.metrics import DEFAULT_KS
from evalcore.read import compare, question_sets, runs
from evalcore.read import selection as defaults
from evalcore.read.comparison import statements
from evalcore_app import ui
from evalcore_app.ui import lang
from evalcore_app.ui.lang import _

ctx = ui.context()
store = ui.store()
tr = lang.tr()
st.title(_("Compare"))
run = ui.require_run(ctx)
session = ui.state.Compare()

complete = runs.complete_runs(store)
others = [""] + [r for r in complete["run_id"] if r != ctx.run_id]
names = dict(zip(complete["run_id"], complete["name"], strict=True))
if session.run_id_b not in others:
    session.run_id_b = ""


def _forget_choice() -> None:
    del session.matrix_configs


cols = st.columns([1, 1, 2])
k = ui.bound(
    cols[0].selectbox,
    "hit@k",
    list(DEFAULT_KS),
    key=ui.state.Compare.hit_k,
    default=4,
    help=_("A query is a hit when a correct chunk is in the top k."),
)
adjust = ui.bound(
    cols[1].toggle,
    _("Holm correction"),
    key=ui.state.Compare.holm,
    default=True,
    help=_("Adjust the p-values for the number of pairs compared (Holm step-down)."),
)
other = ui.bound(
    cols[2].selectbox,
    _("Second run (same queries)"),
    others,
    key=ui.state.Compare.run_id_b,
    format_func=lambda r: _("none: configurations of this run") if not r else f"{names.get(r)} · {r}",
    on_change=_forget_choice,
)
if other:
    ground_truth = question_sets.versions_note_between(store, ctx.run_id, other)
    if ground_truth:
        st.warning(ui.esc(ground_truth[0].upper() + ground_truth[1:] + "."))
    reason = compare.comparable(store, ctx.run_id, other)
    if reason:
        st.error(_("Cannot compare with run {run}: {reason}.").format(run=ui.esc(other), reason=ui.esc(reason)))
        st.stop()

available, default = ui.compare_sides(ctx)
by_key = {ui.side_key(s): s for s in available}
two_runs = len({s.run_id for s in available}) > 1
label_of = {key: side.label(two_runs) for key, side in by_key.items()}
if any(key not in by_key for key in session.matrix_configs or []):
    del session.matrix_configs
chosen = ui.bound(
    st.multiselect,
    _("Configurations compared"),
    list(by_key),
    key=ui.state.Compare.matrix_configs,
    default=default,
    format_func=label_of.get,
    help=(
        _(
            "Configurations of this run and of the second run. Fewer configurations mean fewer pairs for the "
            "Holm correction to pay for."
        )
        if two_runs
        else _("Configurations of this run. Fewer configurations mean fewer pairs for the Holm correction to pay for.")
    ),
)
sides = tuple(by_key[key] for key in chosen)
ui.url.write_compare()  # the choice in the address: a reload (and Export after one) keeps it
if not sides:
    st.info(_("Pick at least one configuration."))
    st.stop()

comparison = None
if len(sides) >= 2:
    matrix = ui.guarded(lambda: ui.cached(figures.matrix_figure, store, sides, k, adjust, tr))
    if matrix is None:
        st.stop()
    comparison = matrix.detail
    top = statements.best(comparison)
    if top is not None:
        (st.success if top.significant else st.info)(ui.esc(top.sentence(k, comparison.p_name, tr)))

st.subheader(_("Recall@k and MRR per configuration"))
recall, mrr = ui.cached(figures.recall_figures, store, sides, tr)
if recall.chart is None:
    st.info(_("No scored in-domain queries in these configurations: nothing to compare."))
    st.stop()
tab_chart, tab_mrr, tab_table = st.tabs(["recall@k", "MRR", _("table")])
with tab_chart:
    ui.show_figure(recall, "recall")
with tab_mrr:
    ui.show_figure(mrr, "mrr")
with tab_table:
    wide = ui.cached(compare.recall_wide, recall.data)
    config = {
        "label": st.column_config.TextColumn(_("configuration"), width="large"),
        "queries": st.column_config.NumberColumn("n"),
        "mrr": st.column_config.NumberColumn("MRR", format="%.3f"),
    }
    for kk in DEFAULT_KS:
        for suffix, title in (("", f"recall@{kk}"), (" low", _("low")), (" high", _("high"))):
            config[f"recall@{kk}{suffix}"] = st.column_config.NumberColumn(title, format="%.3f")
    st.dataframe(wide.drop(columns=["run_id", "strategy", "retriever"]), hide_index=True, column_config=config)
    st.caption(_("One row per configuration; low/high: the 95% Wilson interval of the recall to their left."))

st.subheader(_("Destroyed answers per strategy"))
for run_id in dict.fromkeys(s.run_id for s in sides):
    destroyed = ui.cached(figures.destroyed_figure, store, run_id, tr)
    if two_runs:
        ui.plain(_("run {name} {id}").format(name=names.get(run_id, run_id), id=run_id), strong=True)
    ui.show_figure(destroyed, f"destroyed-{run_id}")

st.subheader(_("Paired wins and losses"))
if comparison is None:
    st.info(_("Pick two or more configurations to compare them query by query."))
    st.stop()
event = ui.show_figure(matrix, "matrix", on_select=True)
ui.plain(statements.significance_text(comparison, tr))

labels = list(comparison.labels)
selected = (event.selection.get("cell") or []) if event is not None and hasattr(event, "selection") else []
if selected:
    cell = (selected[0].get("row"), selected[0].get("column"))
    if cell != session.last_cell and cell[0] in labels and cell[1] in labels and cell[0] != cell[1]:
        session.pair_first, session.pair_second = cell
        session.last_cell = cell
session.pair_first, session.pair_second = defaults.pair(labels, session.pair_first, session.pair_second)
cols = st.columns(2)
first = ui.bound(
    cols[0].selectbox,
    _("First configuration"),
    labels,
    key=ui.state.Compare.pair_first,
    help=_("Click a cell of the matrix or pick here."),
)
second = ui.bound(
    cols[1].selectbox, _("Second configuration"), [x for x in labels if x != first], key=ui.state.Compare.pair_second
)
ui.plain(statements.pair_sentence(comparison, first, second, tr), testid="pair-detail")
a, b = comparison.side(first), comparison.side(second)
_pair, queries = ui.cached(compare.pair_queries, store, a, b, k)
if queries.empty:
    st.info(_("No query differs between these two configurations at this k."))
else:
    queries = queries.assign(
        link=[f"/query?run_id={a.run_id}&query_id={q}" for q in queries["query_id"]],
        # no rank: no correct chunk among the hits (destroyed, or not returned by a run made elsewhere)
        **{col: [ui.rank_text(r) for r in queries[col]] for col in ("rank_first", "rank_second")},
    )
    st.dataframe(
        queries,
        hide_index=True,
        column_config={
            "link": st.column_config.LinkColumn(_("open"), display_text=_("Query screen")),
            "rank_first": st.column_config.TextColumn(_("rank in first")),
            "rank_second": st.column_config.TextColumn(_("rank in second")),
        },
    )
ui.methods_link()
