"""Traffic: real queries replayed against the selected configuration (``evalcore traffic
import``): volume per period, the share refused at the decided threshold with Wilson bands, the
gate values beside the evaluation's, a drift test per period, the borderline queries (each
openable on Query, and labellable here), bluff and lost rates on labelled traffic.

Shareable: ``/traffic?run_id=RUN&config=E/dense``; ``/traffic?deployment=production`` opens on the
run, configuration and threshold a deployment points at (its posted queries are imports named
``deployment production``).
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import streamlit as st

from evalcore import authors
from evalcore.boundary.csvcells import csv_text
from evalcore.errors import ConfigError
from evalcore.figures import traffic_charts
from evalcore.measures.rounding import threshold_text
from evalcore.read import claims
from evalcore.read.traffic import periods as periods_read
from evalcore.read.traffic import stored as reads
from evalcore.traffic import posted
from evalcore.traffic import replay as traffic
from evalcore.traffic.target import resolve_target
from evalcore_app import screen, ui
from evalcore_app.ui import lang
from evalcore_app.ui.lang import N_, _, ngettext

NO_LABEL = N_("no label")
LABEL_CHOICES = [N_("answerable"), N_("off-topic"), NO_LABEL]


def _choice(row: Any) -> str:
    """A borderline query as the labelling form lists it: text, gate value, what the gate does,
    its label now and who gave it."""
    verdict = "refused" if row.refused else "answered"
    now = f"labelled {row.label}" if isinstance(row.label, str) else "no label"
    by = f" by {row.labelled_by}" if isinstance(row.labelled_by, str) else ""
    return f"{row.text[:100]} · gate {row.gate_value:.4f} ({verdict}) · {now}{by}"


# ?deployment=NAME: the entry applied it to the address before drawing the sidebar (ui.url.deployment_link)
deployment = ui.current_frame().deployment
ctx = ui.context()
session = ui.state.Traffic()
store = ui.store()
st.title(_("Traffic"))
run = ui.require_run(ctx, need_config=True)
config = ctx.config
if deployment is not None and (deployment.run_id, deployment.configuration) == (ctx.run_id, config):
    ui.plain(
        f"Deployment {deployment.name}: decision {deployment.decision_id}, version {deployment.version}. "
        f"Queries it posts are replayed here as imports named {posted.source_of(deployment.name)!r}.",
        testid="traffic-deployment",
    )
    key = f"{ctx.run_id}|{config.label}"
    if session.deployment_threshold != (key, deployment.name, deployment.version):
        ui.set_threshold(ctx, deployment.threshold, f"deployment {deployment.name} (version {deployment.version})")
        session.deployment_threshold = (key, deployment.name, deployment.version)
held = ui.cached(reads.stored, store, ctx.run_id, config)
ui.plain(
    held.sentence() + " Query texts stay in this store; evalcore traffic forget deletes them.",
    testid="traffic-stored",
)
if not held.lines:
    others = reads.configurations_with_traffic(store, ctx.run_id)
    hint = f" This run has traffic for: {', '.join(others)}." if others else ""
    posting = (
        f"\n\nor post its queries to the deployment (`POST /api/v1/deployments/{deployment.name}/traffic`)."
        if deployment is not None
        else ""
    )
    st.info(
        "Import a query log to see it here:\n\n"
        f"```\npython -m evalcore traffic import LOG.jsonl --run {ctx.run_id}:{config.label}\n```" + posting + hint
    )
    st.stop()

threshold, source = ui.threshold_state(ctx)
ui.plain(
    _("Threshold t = {t} for {label} · {source}.").format(
        t=lang.tr().decimal_text(threshold_text(threshold, 4)), label=config.label, source=lang.source(source)
    ),
    small=True,
    testid="traffic-threshold",
)
unit = st.radio(_("Period"), [N_("day"), N_("week")], index=1, horizontal=True, key="traffic_period", format_func=_)
step = timedelta(days=1 if unit == "day" else 7)
try:  # too many periods to build: said (the log's file name escaped), and the rest of the screen goes on
    view = ui.cached(traffic_charts.period_view, store, ctx.run_id, config, step, threshold, unit)
except ConfigError as exc:
    view = None
    st.warning(ui.esc(exc), icon=":material/calendar_month:")
frame = None if view is None else view[0]
if frame is not None and frame.empty:
    st.info(_("Every stored query failed at the endpoint: no period has an answered query to chart or test."))
elif view is not None:
    frame, volume, refused_share = view
    st.subheader(_("Volume and refused share"))
    if len(frame) > traffic_charts.CHART_PERIODS:
        st.caption(
            _("The charts draw the last {n} of {m} periods; the drift table below holds them all.").format(
                n=traffic_charts.CHART_PERIODS, m=lang.tr().integer(len(frame))
            )
            + " "
            + _(
                "The earliest stored query is in the period starting {start}{where}: if that time is a logger's "
                "default, forget the lines before the first real day with {command}."
            ).format(
                start=frame["period"].iloc[0],
                where=ui.esc(ui.cached(periods_read.earliest_source, store, ctx.run_id, config)),
                command=f"`evalcore traffic forget --before YYYY-MM-DD --run {ctx.run_id}`",
            )
        )
    cols = st.columns(2)
    with cols[0]:
        st.vega_lite_chart(volume, theme=None, width="stretch")
    with cols[1]:
        st.vega_lite_chart(refused_share, theme=None, width="stretch")

    st.subheader(_("Drift"))
    st.caption(
        _(
            "**moved** (the flag): a two-sample Kolmogorov-Smirnov test of the period's gate values (smallest top-4 "
            "distance) against the evaluation's in-domain + off-topic queries, and one against the previous period, "
            "Holm-adjusted within the period; the period moved when an adjusted p is below 0.05. The table shows those "
            "adjusted p-values (KS p vs evaluation, KS p vs previous). **PSI** (population stability index against the "
            "evaluation, ten bins; < 0.1 little change, 0.1-0.25 some, > 0.25 a large shift) is a size of shift, not a "
            "test, and does not raise the flag: with few queries in a period it is large by chance (a bin the period "
            "leaves empty alone adds about 0.69)."
        )
    )
    for row in frame[frame["drifted"].astype(bool)].to_dict("records"):
        st.warning(ui.esc(periods_read.drift_sentence(row)), icon=":material/trending_up:")
    if not frame["drifted"].astype(bool).any():
        st.success(_("No period moved away from the evaluation or from the period before it."))
    table = frame.assign(drift=frame["drifted"].map({True: "moved", False: ""}))
    table = table.rename(
        columns={
            "ks_padj": "KS p vs evaluation (Holm)",
            "prev_padj": "KS p vs previous (Holm)",
            "psi_reading": "PSI reads",
        }
    )[
        [
            "period",
            "queries",
            "refused",
            "refused_share",
            "refused_low",
            "refused_high",
            "ks_statistic",
            "KS p vs evaluation (Holm)",
            "KS p vs previous (Holm)",
            "psi",
            "PSI reads",
            "drift",
        ]
    ]
    st.dataframe(table, hide_index=True, key="traffic-periods")

    periods = [p for p, n in zip(frame["period"], frame["queries"], strict=True) if n]
    chosen = st.selectbox(_("Gate values of the period"), periods[::-1], key="traffic_hist_period")
    starts = frame.loc[frame["period"] == chosen, "start"]
    start = starts.iloc[0] if len(starts) else None
    histogram = ui.cached(traffic_charts.histogram_spec, store, ctx.run_id, config, step, start, threshold)
    st.vega_lite_chart(histogram, theme=None, width="stretch")

st.subheader(_("Borderline queries"))
band_width = st.slider(_("Band around t"), 0.005, 0.2, 0.05, 0.005, key="traffic_band")
near = ui.cached(reads.borderline, store, ctx.run_id, config, threshold, band_width)
st.caption(f"{len(near)} distinct queries with a gate value within {band_width:g} of t (closest first).")
for row in near.head(15).itertuples():
    c1, c2 = st.columns([5, 1])
    verdict = "refused" if row.refused else "answered"
    c1.markdown(
        f"{ui.esc(row.text[:140])} · gate {row.gate_value:.4f} ({verdict}) · asked {row.asked}×"
        + (f" · {row.label}" if isinstance(row.label, str) else "")
    )
    c2.page_link(
        screen("query"),
        label=_("Open on Query"),
        query_params={"run_id": ctx.run_id, "config": config.label, "traffic": row.text_hash},
    )
labellable = near[near["log_unlabelled"] > 0]
flash = ui.state.Traffic.flash.pop()
if flash:
    st.success(flash, icon=":material/label:")
if not labellable.empty:
    with st.form("traffic-label"):
        choices = {r.text_hash: _choice(r) for r in labellable.itertuples()}
        pick = st.selectbox(_("Label a borderline query"), list(choices), format_func=choices.get)
        value = st.radio(_("Label"), LABEL_CHOICES, horizontal=True, format_func=_)
        if st.form_submit_button(_("Save label")):
            target = resolve_target(store, f"{ctx.run_id}:{config.label}")
            who = authors.author_from_headers(st.context.headers)
            label = None if value == NO_LABEL else value

            def save() -> bool:
                traffic.set_label(store, target, pick, label, who)
                return True

            if ui.guarded(save):
                text = str(labellable.loc[labellable["text_hash"] == pick, "text"].iloc[0])
                said = f"Labelled {value}" if label else "Label removed"
                session.flash = f"{said}: {ui.esc(text[:80])} (by {ui.esc(authors.shown(who))})."
                st.rerun()
elif not near.empty:
    st.caption(_("Every borderline query here carries a label from the log (the log's label wins)."))

st.subheader(_("Labelled traffic"))
rates = ui.cached(reads.labelled_rates, store, ctx.run_id, config, threshold)
cols = st.columns(2)
with cols[0]:
    ui.plain(
        lang.figures(
            _("Bluff rate (off-topic answered) · traffic: {traffic} · evaluation: {evaluation}").format(
                traffic=rates.traffic_bluff.text(), evaluation=rates.evaluation_bluff.text()
            )
        ),
        testid="traffic-bluff",
    )
with cols[1]:
    ui.plain(
        lang.figures(
            _(
                "Lost rate (answerable refused) · traffic: {traffic} · evaluation (answer lost to the gate): "
                "{evaluation}"
            ).format(traffic=rates.traffic_lost.text(), evaluation=rates.evaluation_lost.text())
        ),
        testid="traffic-lost",
    )
st.caption(
    ngettext("{n} logged query carries no label.", "{n} logged queries carry no label.", rates.unlabelled).format(
        n=lang.tr().integer(rates.unlabelled)
    )
)
found = ui.cached(reads.traffic_claims, store, ctx.run_id, config)
real, evaluated = found.traffic, found.evaluation
if real is not None:
    ui.plain(
        _("Threshold claim on the real off-topic queries ({n} lines): {sentence}").format(
            n=lang.tr().integer(real.n_ood), sentence=claims.claim_sentence(real, lang.tr())
        ),
        testid="traffic-claim",
    )
    if evaluated is not None:
        ui.plain(
            _("On the evaluation's {n} off-topic queries: {sentence}").format(
                n=evaluated.n_ood, sentence=claims.claim_sentence(evaluated, lang.tr())
            ),
            small=True,
        )
elif found.problem:
    st.caption(_("No threshold claim on real queries: {problem}").format(problem=ui.esc(found.problem)))
else:
    st.caption(_("Label off-topic traffic (in the log or above) to recompute the threshold claim on real queries."))

with_text = st.checkbox(_("Include query texts in the download (they may hold personal data)"), key="traffic_text")
st.caption(_("A cell a spreadsheet would run as a formula (=, +, -, @, a tab) is written with a leading '."))
st.download_button(
    _("Download the logged queries (CSV)"),
    data=lambda: csv_text(ui.cached(reads.export_frame, store, ctx.run_id, config, threshold, with_text)).encode(
        "utf-8"
    ),
    file_name=f"traffic-{ctx.run_id}-{config.label.replace('/', '-')}.csv",
    mime="text/csv",
    key="traffic-download",
    on_click="ignore",
)
ui.methods_link()
