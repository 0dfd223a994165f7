"""Threshold: when should the assistant refuse? First the claim a product manager can sign
(bluffs <= alpha with a confidence, lost answers <= beta, whether the off-topic set supports
it, how well real and off-topic questions separate), then the exact sweep with the claim's
band, one threshold shared with Query and Export, per-segment figures, a cost-ratio
suggestion, the queries that still bluff, and the decision saved with its claim and author."""

from __future__ import annotations

import math

import streamlit as st

from evalcore import authors
from evalcore.figures import build as figures
from evalcore.figures import charts
from evalcore.measures.claim import DEFAULT_ALPHA, DEFAULT_BETA, DEFAULT_CONFIDENCE, DEFAULT_SPLITS, POOR_SEPARATION
from evalcore.measures.rounding import DIGITS, threshold_text
from evalcore.measures.threshold import DEFAULT_COST_RATIO
from evalcore.read import claims, decisions, sweeps
from evalcore.service import deployments
from evalcore_app import screen
from evalcore_app.screens import _ui

DEPLOY_HELP = (
    "A deployment (production, staging) is what a service reads through the API: it points at the latest "
    "decision shown above. Moving it is recorded with who moved it, as saving a decision is."
)

ctx = _ui.sidebar()
store = _ui.store()
st.title("Refusal threshold")
run = _ui.require_run(ctx, need_config=True)
config = ctx.config
why = st.session_state.get("config_why")
st.markdown(
    f"Configuration **{_ui.esc(config.label)}**"
    + (f": opened on {_ui.esc(why)}. Pick another in the sidebar." if why else " (picked in the sidebar).")
)
sweep = _ui.cached(sweeps.sweep, store, ctx.run_id, config)
n_in, n_out = (int(sweep["in_domain"].iloc[0]), int(sweep["out_domain"].iloc[0])) if len(sweep) else (0, 0)
if n_in + n_out == 0:
    st.info("No scored queries in this configuration: nothing to sweep.")
    st.stop()
axis = _ui.cached(sweeps.gate_axis, store, ctx.run_id, config)
st.caption(
    f"The gate keeps, from the top 4 hits, those with {axis.keeps}; nothing kept means NO ANSWER "
    f"before any model is called. {n_in} in-domain and {n_out} out-of-domain queries."
)

flash = st.session_state.pop("saved_flash", None)
if flash:
    st.success(_ui.esc(flash))

st.subheader("The claim")
cols = st.columns(3)
_ui.bound(
    cols[0].number_input,
    "Max bluff rate (alpha)",
    0.001,
    0.999,
    step=0.01,
    key="claim_alpha",
    default=DEFAULT_ALPHA,
    format="%.3f",
    help="The largest share of off-topic questions that may get an answer.",
)
_ui.bound(
    cols[1].number_input,
    "Max lost rate (beta)",
    0.001,
    0.999,
    step=0.01,
    key="claim_beta",
    default=DEFAULT_BETA,
    format="%.3f",
    help="The largest share of answerable questions that may lose their answer.",
)
_ui.bound(
    cols[2].number_input,
    "Confidence",
    0.5,
    0.999,
    step=0.01,
    key="claim_confidence",
    default=DEFAULT_CONFIDENCE,
    format="%.3f",
    help="1 - delta: how sure the bluff and lost bounds are (exact binomial bounds).",
)
claim = _ui.claim_or_none(ctx, DEFAULT_SPLITS)
if claim is None:
    _ui.guarded(lambda: _ui.cached(claims.claim_of, store, ctx.run_id, config, *_ui.claim_params()))
else:
    sentence = claims.claim_sentence(claim)
    _ui.plain(sentence, strong=True, testid="claim-sentence")
    if not claim.feasible and claim.problem() != sentence:
        st.warning(_ui.esc(claim.problem() or ""))
    _ui.plain(claims.separability(claim), testid="separability")
    if not math.isnan(claim.auc) and claim.auc < POOR_SEPARATION:
        st.warning("No threshold separates real from off-topic questions well on this corpus.")
    if claim.held_out_splits_used:
        _ui.plain(
            f"Held-out check over {claim.splits} seeded splits (every phrasing of a ground truth on one side): "
            f"in {claim.held_out_share:.0%} of {claim.held_out_splits_used} splits the other half's bluff rate "
            f"stayed <= {claim.max_bluff_rate:.0%} at the first half's threshold; median held-out bluff rate "
            f"{claim.held_out_bluff_rate:.1%}, lost rate "
            f"{(claim.held_out_lost_rate or 0):.1%}. A report, not a second guarantee.",
            small=True,
            testid="held-out",
        )
    else:
        _ui.plain(
            f"Held-out check: half of the {claim.n_ood} off-topic questions cannot support a bounded claim, so "
            "no split was checked.",
            small=True,
            testid="held-out",
        )
    offered = claim.recommended if claim.feasible else None  # on the slider's grid where the band allows
    if offered is not None and st.button(f"Use the claim's t = {threshold_text(offered)}", key="use-claim"):
        _ui.set_threshold(ctx, offered, f"the claim's recommendation: {claims.claim_sentence(claim)}")
        st.rerun()

t, source = _ui.threshold_state(ctx)
lo, hi = _ui.cached(sweeps.threshold_range, sweep)
lo, hi = min(lo, math.floor(t * 1000) / 1000), max(hi, math.ceil(t * 1000) / 1000)


def _moved() -> None:
    # the slider's value on its grid exactly (the browser's arithmetic may leave 0.11300000000000002),
    # so that the t a bound's words name is the t the gate uses
    st.session_state["threshold"] = float(f"{float(st.session_state['threshold']):.{DIGITS}f}")
    st.session_state["threshold_source"] = "set on the Threshold screen (not saved)"
    st.session_state["threshold_for"] = f"{ctx.run_id}|{config.label}"


# a t off the grid (an exact bound) is shown with the decimals it has, never rounded past its bound
decimals = max(DIGITS, len(threshold_text(t).partition(".")[2]) if math.isfinite(t) else DIGITS)
t = _ui.bound(
    st.slider, "Threshold t", lo, hi, step=0.001, key="threshold", format=f"%.{min(decimals, 12)}f", on_change=_moved
)
_ui.plain(_ui.cached(sweeps.sentence_at, sweep, t), strong=True, testid="sentence-at-t")
_ui.plain(
    f"Threshold t = {threshold_text(t, 4)} · {st.session_state.get('threshold_source', source)}",
    small=True,
    testid="threshold-state",
)
warning = _ui.cached(sweeps.ood_support, sweep, t)
if warning:
    st.warning(_ui.esc(warning))
most = _ui.cached(claims.refuses_most, sweep, t, claim)
if most:
    st.warning(_ui.esc(most))

with st.expander("Suggest a threshold by cost (second to the claim)", expanded=False):
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
        suggestion = _ui.guarded(lambda: _ui.cached(sweeps.suggest, sweep, None, float(ceiling)))
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
        suggestion = _ui.guarded(lambda: _ui.cached(sweeps.suggest, sweep, float(ratio), None))
    if suggestion is not None:
        cols[2].markdown(f"Suggested **t = {threshold_text(suggestion.threshold)}**. {_ui.esc(suggestion.rule)}")
        other = _ui.cached(sweeps.ood_support, sweep, suggestion.threshold)
        if other and other != warning:
            st.warning(_ui.esc(other))
        refuses = _ui.cached(claims.refuses_most, sweep, suggestion.threshold, claim)
        if refuses:
            st.warning(_ui.esc(f"The suggestion refuses most real questions. {refuses}"))
        if math.isfinite(suggestion.threshold) and st.button("Use the suggestion"):
            _ui.set_threshold(ctx, suggestion.threshold, f"suggested: {suggestion.rule}")
            st.rerun()

st.subheader("Bluffs, lost answers and refusals")
band = claims.band(claim)
if band is not None:
    _ui.plain(f"Shaded green: {band[2]}.", small=True, testid="claim-band")
tab_rates, tab_counts, tab_coverage = st.tabs(
    ["rates (with 95% Wilson bands)", "counts", "coverage (share of real questions answered)"]
)
run_text = _ui.cached(figures.run_text, store, ctx.run_id)
with tab_rates:
    _ui.show_figure(_ui.cached(figures.sweep_figure_of, sweep, run_text, config, t, True, band), "sweep-rates")
with tab_counts:
    _ui.show_figure(_ui.cached(figures.sweep_figure_of, sweep, run_text, config, t, False, band), "sweep-counts")
with tab_coverage:
    st.altair_chart(
        _ui.cached(charts.coverage_chart, _ui.cached(claims.coverage, sweep), _ui.cached(claims.coverage_at, sweep, t)),
        theme=None,
        width="content",
        key="chart-coverage",
    )
    st.caption(
        "The same sweep without t: each point is a threshold, placed by the share of real questions it answers; "
        "read off how many off-topic questions get an answer and how many real ones get a right source."
    )

st.subheader(f"At t = {threshold_text(t)}")
st.dataframe(
    _ui.cached(sweeps.gate_table, sweep, t),
    hide_index=True,
    column_config={
        "outcome": st.column_config.TextColumn(width="large"),
        "share": st.column_config.NumberColumn(format="percent"),
        "wilson low": st.column_config.NumberColumn("95% Wilson low", format="percent"),
        "wilson high": st.column_config.NumberColumn("95% Wilson high", format="percent"),
    },
)

st.subheader(f"Per segment at t = {threshold_text(t)}")
values = _ui.cached(claims.gate_values, store, ctx.run_id, config)
st.dataframe(
    _ui.cached(claims.segments, values, t),
    hide_index=True,
    column_config={
        "segment": st.column_config.TextColumn(width="medium"),
        "share": st.column_config.NumberColumn(format="percent"),
        "wilson low": st.column_config.NumberColumn("95% Wilson low", format="percent"),
        "wilson high": st.column_config.NumberColumn("95% Wilson high", format="percent"),
    },
)

if n_out:
    bluffs = _ui.cached(sweeps.bluffs_at, store, ctx.run_id, config, t)
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
author = authors.author_from_headers(st.context.headers)
_ui.plain(
    f"Saved by: {authors.shown(author)}"
    + (
        f" (from the {authors.trusted_header()} header)"
        if author
        else " (the operator names the trusted header in EVALCORE_USER_HEADER)"
    )
    + (f". Saved with the claim: {claims.caption(claim)}" if claim is not None else ". No claim can be saved with it."),
    small=True,
    testid="save-as",
)
latest_saved = decisions.latest_decision(store, ctx.run_id, config)
if latest_saved is not None:
    _ui.plain(f"Latest decision: {latest_saved.describe()}. {latest_saved.claim_text()}", small=True, testid="latest")
save_col, deploy_col = st.columns([3, 2])
with save_col.form("decision"):
    note = st.text_area("Note (why this threshold)", key="decision_note")
    if st.form_submit_button(f"Save t = {threshold_text(t, 4)} for {_ui.esc(config.label)}"):
        saved_id = _ui.guarded(lambda: decisions.save_decision(store, ctx.run_id, config, t, note, author, claim))
        if saved_id:
            latest = decisions.latest_decision(store, ctx.run_id, config)
            _ui.set_threshold(ctx, t, f"saved decision: {latest.describe()}")
            st.session_state["saved_flash"] = (
                f"Saved decision {saved_id}: t = {threshold_text(t, 4)} for {config.label} by "
                f"{authors.shown(author)}. The dashboard opens on it from now on."
            )
            st.rerun()
with deploy_col.form("deploy"):
    # Deploy as…: point a named deployment (what production reads) at the decision shown above
    target = st.text_input("Deploy as…", value="production", key="deploy_name", help=DEPLOY_HELP)
    if latest_saved is None:
        st.caption("Save a decision first: a deployment points at a saved decision.")
    label = f"Deploy decision {latest_saved.decision_id}" if latest_saved else "Deploy"
    if st.form_submit_button(label, disabled=latest_saved is None) and latest_saved is not None:
        moved = _ui.guarded(lambda: deployments.deploy(store.path, target, latest_saved.decision_id, author))
        if moved is not None:
            st.session_state["saved_flash"] = (
                f"Deployment {moved.name} now points at decision {moved.decision_id}: t = "
                f"{threshold_text(moved.threshold, 4)} for {moved.configuration.label} (version {moved.version}, "
                f"by {authors.shown(author)})."
            )
            st.rerun()
pointing = [h.deployment for h in _ui.cached(deployments.list_deployments, store) if h.deployment.run_id == ctx.run_id]
for d in pointing:
    _ui.plain(
        f"Deployment {d.name}: t = {threshold_text(d.threshold, 4)} for {d.configuration.label} (decision "
        f"{d.decision_id}, version {d.version}, deployed {d.deployed_at:%Y-%m-%d %H:%M} by "
        f"{authors.shown(d.deployed_by)})",
        small=True,
        testid="deployment",
    )
saved = decisions.decisions(store, ctx.run_id)
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
