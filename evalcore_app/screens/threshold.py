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
from evalcore.measures.claim_check import outside_claim
from evalcore.measures.rounding import DIGITS, threshold_text
from evalcore.measures.suggestion import DEFAULT_COST_RATIO
from evalcore.read import claims, decisions, sweeps
from evalcore.service import deployments
from evalcore_app import screen, ui
from evalcore_app.ui import lang
from evalcore_app.ui.lang import N_, _

DEPLOY_HELP = N_(
    "A deployment (production, staging) is what a service reads through the API: it points at the latest "
    "decision shown above. Moving it is recorded with who moved it, as saving a decision is."
)

ctx = ui.context()
store = ui.store()
tr = lang.tr()
st.title(_("Refusal threshold"))
run = ui.require_run(ctx, need_config=True)
config = ctx.config
session = ui.state.Threshold()
Threshold = ui.state.Threshold  # its keys, for the widgets bound to them
why = ui.state.SelectionState().config_why
st.markdown(
    _("Configuration **{label}**").format(label=ui.esc(config.label))
    + (
        _(": opened on {why}. Pick another in the sidebar.").format(why=ui.esc(lang.source(why)))
        if why
        else _(" (picked in the sidebar).")
    )
)
sweep = ui.cached(sweeps.run_sweep, store, ctx.run_id, config)
n_in, n_out = (int(sweep["in_domain"].iloc[0]), int(sweep["out_domain"].iloc[0])) if len(sweep) else (0, 0)
if n_in + n_out == 0:
    st.info(_("No scored queries in this configuration: nothing to sweep."))
    st.stop()
axis = ui.cached(sweeps.gate_axis, store, ctx.run_id, config)
st.caption(
    lang.figures(
        _(
            "The gate keeps, from the top 4 hits, those with {keeps}; nothing kept means NO ANSWER "
            "before any model is called. {n_in} in-domain and {n_out} out-of-domain queries."
        ).format(keeps=_(axis.keeps), n_in=n_in, n_out=n_out)
    )
)

flash = Threshold.saved_flash.pop()
if flash:
    st.success(ui.esc(flash))

st.subheader(_("The claim"))
cols = st.columns(3)
ui.bound(
    cols[0].number_input,
    _("Max bluff rate (alpha)"),
    0.001,
    0.999,
    step=0.01,
    key=Threshold.claim_alpha,
    default=DEFAULT_ALPHA,
    format="%.3f",
    help=_("The largest share of off-topic questions that may get an answer."),
)
ui.bound(
    cols[1].number_input,
    _("Max lost rate (beta)"),
    0.001,
    0.999,
    step=0.01,
    key=Threshold.claim_beta,
    default=DEFAULT_BETA,
    format="%.3f",
    help=_("The largest share of answerable questions that may lose their answer."),
)
ui.bound(
    cols[2].number_input,
    _("Confidence"),
    0.5,
    0.999,
    step=0.01,
    key=Threshold.claim_confidence,
    default=DEFAULT_CONFIDENCE,
    format="%.3f",
    help=_("1 - delta: how sure the bluff and lost bounds are (exact binomial bounds)."),
)
claim = ui.claim_or_none(ctx, DEFAULT_SPLITS)
if claim is None:
    ui.guarded(lambda: ui.cached(claims.claim_of, store, ctx.run_id, config, *ui.claim_params()))
else:
    sentence = claims.claim_sentence(claim, tr)
    ui.plain(sentence, strong=True, testid="claim-sentence")
    if not claim.feasible and claim.problem(tr) != sentence:
        st.warning(ui.esc(claim.problem(tr) or ""))
    ui.plain(claims.separability(claim, tr), testid="separability")
    if not math.isnan(claim.auc) and claim.auc < POOR_SEPARATION:
        st.warning(_("No threshold separates real from off-topic questions well on this corpus."))
    if claim.held_out_splits_used:
        ui.plain(
            _(
                "Held-out check over {splits} seeded splits (every phrasing of a ground truth on one side): "
                "in {share} of {used} splits the other half's bluff rate stayed <= {alpha} at the first half's "
                "threshold; median held-out bluff rate {bluff}, lost rate {lost}. A report, not a second guarantee."
            ).format(
                splits=claim.splits,
                share=lang.pct(claim.held_out_share),
                used=claim.held_out_splits_used,
                alpha=lang.pct(claim.max_bluff_rate),
                bluff=lang.pct(claim.held_out_bluff_rate, 1),
                lost=lang.pct(claim.held_out_lost_rate or 0, 1),
            ),
            small=True,
            testid="held-out",
        )
    else:
        ui.plain(
            _(
                "Held-out check: half of the {n} off-topic questions cannot support a bounded claim, so "
                "no split was checked."
            ).format(n=claim.n_ood),
            small=True,
            testid="held-out",
        )
    offered = claim.recommended if claim.feasible else None  # on the slider's grid where the band allows
    if offered is not None and st.button(
        _("Use the claim's t = {t}").format(t=tr.decimal_text(threshold_text(offered))), key="use-claim"
    ):
        ui.set_threshold(ctx, offered, f"the claim's recommendation: {claims.claim_sentence(claim)}")
        st.rerun()

t, source = ui.threshold_state(ctx)
lo, hi = ui.cached(sweeps.threshold_range, sweep)
lo, hi = min(lo, math.floor(t * 1000) / 1000), max(hi, math.ceil(t * 1000) / 1000)


def _moved() -> None:
    # the slider's value on its grid exactly (the browser's arithmetic may leave 0.11300000000000002),
    # so that the t a bound's words name is the t the gate uses
    session.threshold = float(f"{float(session.threshold or 0.0):.{DIGITS}f}")
    session.threshold_source = N_("set on the Threshold screen (not saved)")
    session.threshold_for = f"{ctx.run_id}|{config.label}"


# a t off the grid (an exact bound) is shown with the decimals it has, never rounded past its bound
decimals = max(DIGITS, len(threshold_text(t).partition(".")[2]) if math.isfinite(t) else DIGITS)
t = ui.bound(
    st.slider,
    _("Threshold t"),
    lo,
    hi,
    step=0.001,
    key=Threshold.threshold,
    format=f"%.{min(decimals, 12)}f",
    on_change=_moved,
)
ui.plain(ui.cached(sweeps.sentence_at, sweep, t, tr), strong=True, testid="sentence-at-t")
ui.plain(
    _("Threshold t = {t} · {source}").format(
        t=tr.decimal_text(threshold_text(t, 4)),
        source=lang.source(session.threshold_source if Threshold.threshold_source.present() else source),
    ),
    small=True,
    testid="threshold-state",
)
warning = ui.cached(sweeps.ood_support, sweep, t, tr)
if warning:
    st.warning(ui.esc(warning))
most = ui.cached(claims.refuses_most, sweep, t, claim, tr)
if most:
    st.warning(ui.esc(most))
values = ui.cached(claims.gate_values, store, ctx.run_id, config)
# whether t meets the claim shown above (the function a deployment's meets_claim is made by)
check = ui.guarded(lambda: ui.cached(claims.check_at, values, claim, t)) if claim is not None else None
outside = outside_claim(check, tr)
if outside:
    st.warning(ui.esc(outside))

with st.expander(_("Suggest a threshold by cost (second to the claim)"), expanded=False):
    cols = st.columns([1, 1, 2])
    rules = [N_("cost weighting")] + ([N_("bluff-rate ceiling")] if n_out else [])
    rule = ui.bound(cols[0].radio, _("Rule"), rules, key=Threshold.rule, format_func=_)
    if rule == "bluff-rate ceiling":
        ceiling = ui.bound(
            cols[1].number_input,
            _("Max bluff rate"),
            0.0,
            1.0,
            step=0.01,
            key=Threshold.max_bluff_rate,
            default=0.05,
            format="%.2f",
        )
        suggestion = ui.guarded(lambda: ui.cached(sweeps.suggest_on_grid, sweep, None, float(ceiling)))
    else:
        ratio = ui.bound(
            cols[1].number_input,
            _("One bluff = N lost answers"),
            0.0,
            1000.0,
            step=0.5,
            key=Threshold.cost_ratio,
            default=DEFAULT_COST_RATIO,
        )
        suggestion = ui.guarded(lambda: ui.cached(sweeps.suggest_on_grid, sweep, float(ratio), None))
    if suggestion is not None:
        cols[2].markdown(
            _("Suggested **t = {t}**. {rule}").format(
                t=tr.decimal_text(threshold_text(suggestion.threshold)), rule=ui.esc(lang.source(suggestion.rule))
            )
        )
        other = ui.cached(sweeps.ood_support, sweep, suggestion.threshold, tr)
        if other and other != warning:
            st.warning(ui.esc(other))
        refuses = ui.cached(claims.refuses_most, sweep, suggestion.threshold, claim, tr)
        if refuses:
            st.warning(ui.esc(_("The suggestion refuses most real questions. {why}").format(why=refuses)))
        if math.isfinite(suggestion.threshold) and st.button(_("Use the suggestion")):
            ui.set_threshold(ctx, suggestion.threshold, f"suggested: {suggestion.rule}")
            st.rerun()

st.subheader(_("Bluffs, lost answers and refusals"))
band = claims.band(claim, tr)
if band is not None:
    ui.plain(_("Shaded green: {band}.").format(band=band[2]), small=True, testid="claim-band")
tab_rates, tab_counts, tab_coverage = st.tabs(
    [_("rates (with 95% Wilson bands)"), _("counts"), _("coverage (share of real questions answered)")]
)
run_text = ui.cached(figures.run_text, store, ctx.run_id)
with tab_rates:
    ui.show_figure(ui.cached(figures.sweep_figure_of, sweep, run_text, config, t, True, band, tr), "sweep-rates")
with tab_counts:
    ui.show_figure(ui.cached(figures.sweep_figure_of, sweep, run_text, config, t, False, band, tr), "sweep-counts")
with tab_coverage:
    st.altair_chart(
        ui.cached(charts.coverage_chart, ui.cached(claims.coverage, sweep), ui.cached(claims.coverage_at, sweep, t)),
        theme=None,
        width="content",
        key="chart-coverage",
    )
    st.caption(
        _(
            "The same sweep without t: each point is a threshold, placed by the share of real questions it "
            "answers; read off how many off-topic questions get an answer and how many real ones get a right source."
        )
    )

st.subheader(_("At t = {t}").format(t=tr.decimal_text(threshold_text(t))))
st.dataframe(
    ui.cached(sweeps.gate_table, sweep, t).assign(outcome=lambda d: d["outcome"].map(_)),
    hide_index=True,
    column_config={
        "outcome": st.column_config.TextColumn(_("outcome"), width="large"),
        "queries": st.column_config.NumberColumn(_("queries")),
        "of": st.column_config.NumberColumn(_("of")),
        "share": st.column_config.NumberColumn(_("share"), format="percent"),
        "wilson low": st.column_config.NumberColumn(_("95% Wilson low"), format="percent"),
        "wilson high": st.column_config.NumberColumn(_("95% Wilson high"), format="percent"),
    },
)

st.subheader(_("Per segment at t = {t}").format(t=tr.decimal_text(threshold_text(t))))
st.dataframe(
    ui.cached(claims.claim_segments, values, t),
    hide_index=True,
    column_config={
        "segment": st.column_config.TextColumn(_("segment"), width="medium"),
        "share": st.column_config.NumberColumn(_("share"), format="percent"),
        "wilson low": st.column_config.NumberColumn(_("95% Wilson low"), format="percent"),
        "wilson high": st.column_config.NumberColumn(_("95% Wilson high"), format="percent"),
    },
)

if n_out:
    bluffs = ui.cached(sweeps.bluffs_at, store, ctx.run_id, config, t)
    st.subheader(_("Out-of-domain queries that still bluff ({n})").format(n=len(bluffs)))
    if bluffs.empty:
        st.success(_("No out-of-domain query passes the gate at this threshold."))
    else:
        st.caption(_("Each opens on the Query screen (a link you can share), with this threshold."))
        for row in bluffs.itertuples():
            st.page_link(
                screen("query"),
                label=_("{query} · {kind} · nearest {axis} = {value} · {text}").format(
                    query=ui.esc(row.query_id),
                    kind=ui.esc(row.kind),
                    axis="d" if axis.column == "distance" else _("score"),
                    value=lang.num(row.distance, 3),
                    text=ui.esc(row.text),
                ),
                icon=":material/search:",
                query_params={"run_id": ctx.run_id, "query_id": row.query_id, "config": config.label},
            )
        with st.expander(_("Their nearest chunks")):
            st.dataframe(bluffs, hide_index=True)

st.subheader(_("Save the decision"))
author = authors.author_from_headers(st.context.headers)
ui.plain(
    _("Saved by: {author}").format(author=_(authors.shown(author)))
    + (
        _(" (from the {header} header)").format(header=authors.trusted_header())
        if author
        else _(" (the operator names the trusted header in EVALCORE_USER_HEADER)")
    )
    + (
        _(". Saved with the claim: {claim}").format(claim=claims.caption(claim, tr))
        if claim is not None
        else _(". No claim can be saved with it.")
    ),
    small=True,
    testid="save-as",
)
latest_saved = decisions.latest_decision(store, ctx.run_id, config)
saved_outside: str | None = None  # why the latest decision's t lies outside the claim it was saved under
if latest_saved is not None:
    if latest_saved.claim:
        saved_check = ui.guarded(lambda: ui.cached(claims.check_at, values, latest_saved.claim, latest_saved.threshold))
        saved_outside = outside_claim(saved_check, tr)
    ui.plain(
        _("Latest decision: {decision}. {claim}").format(
            decision=lang.source(latest_saved.describe()), claim=lang.source(latest_saved.claim_text())
        )
        + (" " + _("The claim is NOT met: {why}").format(why=saved_outside) if saved_outside else ""),
        small=True,
        testid="latest",
    )
save_col, deploy_col = st.columns([3, 2])
with save_col.form("decision"):
    note = st.text_area(_("Note (why this threshold)"), key="decision_note")
    save_anyway = False
    if outside:
        st.warning(ui.esc(outside))
        save_anyway = st.checkbox(_("Save it anyway, outside the claim"), key=f"save_outside_{t!r}")
    if st.form_submit_button(
        _("Save t = {t} for {label}").format(t=tr.decimal_text(threshold_text(t, 4)), label=ui.esc(config.label))
    ):
        saved_id = (
            ui.guarded(lambda: decisions.save_decision(store, ctx.run_id, config, t, note, author, claim))
            if not outside or save_anyway
            else None
        )
        if outside and not save_anyway:
            st.error(_("Not saved: t lies outside the claim. Tick the box above to save it anyway."))
        if saved_id:
            latest = decisions.latest_decision(store, ctx.run_id, config)
            ui.set_threshold(ctx, t, f"saved decision: {latest.describe()}")
            session.saved_flash = _(
                "Saved decision {id}: t = {t} for {label} by {author}. The dashboard opens on it from now on."
            ).format(
                id=saved_id, t=tr.decimal_text(threshold_text(t, 4)), label=config.label, author=authors.shown(author)
            )
            st.rerun()
with deploy_col.form("deploy"):
    # Deploy as…: point a named deployment (what production reads) at the decision shown above
    target = st.text_input(_("Deploy as…"), value="production", key="deploy_name", help=_(DEPLOY_HELP))
    if latest_saved is None:
        st.caption(_("Save a decision first: a deployment points at a saved decision."))
    deploy_anyway = False
    if saved_outside:
        st.warning(ui.esc(saved_outside))
        deploy_anyway = st.checkbox(
            _("Deploy it anyway, outside its claim"),
            key=f"deploy_outside_{latest_saved.decision_id if latest_saved else ''}",
        )
    label = _("Deploy decision {id}").format(id=latest_saved.decision_id) if latest_saved else _("Deploy")
    if st.form_submit_button(label, disabled=latest_saved is None) and latest_saved is not None:
        if saved_outside and not deploy_anyway:
            st.error(_("Not deployed: its t lies outside its claim. Tick the box above to deploy it anyway."))
            moved = None
        else:
            moved = ui.guarded(lambda: deployments.deploy(store.path, target, latest_saved.decision_id, author))
        if moved is not None:
            moved_outside = outside_claim(moved.meets_claim, tr)
            session.saved_flash = _(
                "Deployment {name} now points at decision {id}: t = {t} for {label} (version {version}, by {author})."
            ).format(
                name=moved.name,
                id=moved.decision_id,
                t=tr.decimal_text(threshold_text(moved.threshold, 4)),
                label=moved.configuration.label,
                version=moved.version,
                author=authors.shown(author),
            ) + (" " + _("The claim is NOT met: {why}").format(why=moved_outside) if moved_outside else "")
            st.rerun()
pointing = [h.deployment for h in ui.cached(deployments.list_deployments, store) if h.deployment.run_id == ctx.run_id]
for d in pointing:
    ui.plain(
        _(
            "Deployment {name}: t = {t} for {label} (decision {id}, version {version}, deployed {when} by {author})"
        ).format(
            name=d.name,
            t=tr.decimal_text(threshold_text(d.threshold, 4)),
            label=d.configuration.label,
            id=d.decision_id,
            version=d.version,
            when=f"{d.deployed_at:%Y-%m-%d %H:%M}",
            author=authors.shown(d.deployed_by),
        )
        + (" " + _("The claim is NOT met: {why}").format(why=why) if (why := outside_claim(d.meets_claim, tr)) else ""),
        small=True,
        testid="deployment",
    )
saved = decisions.decisions(store, ctx.run_id)
st.caption(_("Saved decisions for this run (newest first)"))
st.dataframe(
    saved,
    hide_index=True,
    column_config={
        "created_at": st.column_config.DatetimeColumn(_("saved"), format="YYYY-MM-DD HH:mm:ss"),
        "threshold": st.column_config.NumberColumn(format="%.4f"),
    },
)
ui.methods_link()
