"""A logged query (traffic) on the Query screen: its text, how often it was asked, its hits in the
configuration it was replayed against and what the gate does with them at the shared threshold.
Not a page: the Query screen draws it for ``?traffic=TEXT_HASH``."""

from __future__ import annotations

import html

import streamlit as st

from evalcore.measures.rounding import threshold_text
from evalcore.read import queries
from evalcore.read.traffic import stored as traffic
from evalcore_app import screen, ui
from evalcore_app.ui import lang
from evalcore_app.ui.lang import _


def show(ctx: ui.Context, text_hash: str) -> None:
    threshold, source = ui.threshold_state(ctx)
    found = traffic.traffic_query(ui.store(), ctx.run_id, ctx.config, text_hash, threshold)
    if found is None:
        st.warning(_("This logged query is not stored (any more) for this configuration."))
        return
    ui.plain(str(found["text"]), strong=True, testid="query-text")
    label = _(found["label"]) if isinstance(found["label"], str) else _("no label")
    tr = lang.tr()
    ui.plain(
        _(
            "Logged query (traffic) · asked {n}× from {first} to {last} UTC · {label} · replayed against {config}"
        ).format(
            n=int(found["asked"]),
            first=tr.date(found["first_asked"], seconds=False),
            last=tr.date(found["last_asked"], seconds=False),
            label=label,
            config=ctx.config.label,
        ),
        small=True,
        testid="query-meta",
    )
    hits = found["hits"]
    if isinstance(found["failure"], str):
        st.warning(_("The endpoint could not answer this query: {failure}").format(failure=ui.esc(found["failure"])))
    verdict = (
        _("The gate keeps {n} of the top 4 hits ({rule}).").format(n=found["kept"], rule=_(found["keep_rule"]))
        if found["kept"]
        else _("No hit in the top 4 passes the gate, so the user gets NO ANSWER.")
    )
    gate = found["gate_value"]
    shown = _("none (no answer)") if gate is None or gate != gate else tr.number(gate, 4)
    ui.plain(
        _("Gate value {value} at t = {t} ({source}). {verdict}").format(
            value=shown, t=tr.decimal_text(threshold_text(threshold, 4)), source=lang.source(source), verdict=verdict
        ),
        testid="threshold-state",
    )
    hits = hits.assign(locator=[queries.chunk_locator(s, e) for s, e in zip(hits["start"], hits["end"], strict=True)])
    st.dataframe(hits[["rank", "distance", "score", "doc_id", "section", "locator"]], hide_index=True, height=240)
    for hit in hits.head(4).itertuples():
        st.html(
            f"<div style='font-size:0.85em'><b>#{hit.rank}</b> {html.escape(str(hit.doc_id))}{hit.locator} · "
            f"d = {hit.distance:.4f} · score {hit.score:.4f}<pre style='white-space:pre-wrap;overflow-wrap:anywhere'>"
            f"{html.escape(str(hit.content))}</pre></div>"
        )
    st.page_link(
        screen("traffic"),
        label=_("Back to Traffic"),
        icon=":material/arrow_back:",
        query_params={"run_id": ctx.run_id, "config": ctx.config.label},
    )
