"""Query: one query in every configuration: where its answer ranks, what the gate does at the
shared threshold, and the answer it leads to (citations and prompt, or NO ANSWER). A
configuration that reads BM25 also shows the query's tokens as its analyzer reads them.

Shareable: ``/query?run_id=RUN&query_id=ID`` (and ``&config=E/dense`` to open that
configuration first) opens this screen on that query; ``&traffic=TEXT_HASH`` (with ``config``)
opens a logged query of that configuration's traffic instead.
"""

from __future__ import annotations

import html

import streamlit as st

from evalcore.measures.rounding import threshold_text
from evalcore.read import queries, sweeps
from evalcore_app import ui
from evalcore_app.partials import traffic_query
from evalcore_app.ui import lang
from evalcore_app.ui.lang import _

ctx = ui.context()
store = ui.store()
st.title(_("Query"))
run = ui.require_run(ctx, need_config=True)
if st.query_params.get("traffic"):  # a logged query opened from the Traffic screen
    traffic_query.show(ctx, str(st.query_params["traffic"]))
    st.stop()
session = ui.state.Query()
search = ui.bound(st.text_input, _("Search queries (text or id)"), key=ui.state.Query.search)
found = ui.cached(queries.search_queries, store, ctx.run_id, search)
labels = {
    row.query_id: f"{row.query_id} · {row.domain} · {row.text[:90]}" + ("" if row.valid else " (invalid)")
    for row in found.itertuples()
}
wanted = session.query_id
if wanted and wanted not in labels and not search:
    extra = ui.guarded(lambda: ui.cached(queries.query_row, store, ctx.run_id, wanted))
    if extra is None:
        del session.query_id
    else:
        labels = {wanted: f"{wanted} · {extra['domain']} · {str(extra['text'])[:90]}", **labels}
if not labels:
    st.info(_("No query matches the search."))
    st.stop()
if session.query_id not in labels:
    session.query_id = next(iter(labels))


def _shareable() -> None:  # the URL follows the query shown, so it can be copied and shared
    ui.url.write_query(ctx.run_id, session.query_id)


query_id = ui.bound(
    st.selectbox, _("Query"), list(labels), key=ui.state.Query.query_id, format_func=labels.get, on_change=_shareable
)
query = ui.cached(queries.query_row, store, ctx.run_id, query_id)
threshold, source = ui.threshold_state(ctx)
ui.plain(str(query["text"]), strong=True, testid="query-text")
if query["domain"] == "in":
    where = f"{query['doc_id']}{query['needle_locator']}" if query["valid"] else str(query["doc_id"] or "")
    ui.plain(
        _("In-domain · group {group} · variant {variant} · needle in {where}").format(
            group=query["group_id"], variant=query["variant"] or _("(none)"), where=where
        )
        + ("" if query["valid"] else _(" · invalid: {reason}").format(reason=query["invalid_reason"])),
        small=True,
        testid="query-meta",
    )
    if query["valid"] and query["needle_text"] is not None:  # destroyed answers too: no chunk shows it whole
        ui.plain(_("Answer (needle): {text}").format(text=query["needle_text"]), small=True, testid="query-needle")
else:
    ui.plain(
        _("Out-of-domain ({kind}): the corpus does not answer it, so it should get NO ANSWER.").format(
            kind=query["kind"] or _("no kind")
        ),
        small=True,
        testid="query-meta",
    )
axis = ui.cached(sweeps.gate_axis, store, ctx.run_id, ctx.config)
ui.plain(
    _(
        "Threshold t = {t}, chosen for {label} · {source} · the gate keeps top-4 hits with {rule}; every "
        "configuration below is judged at this t."
    ).format(
        t=lang.tr().decimal_text(threshold_text(threshold, 4)),
        label=ctx.config.label,
        source=lang.source(source),
        rule=_(axis.keep_rule),
    ),
    small=True,
    testid="threshold-state",
)
if not query["valid"]:
    st.warning(_("This query's ground truth is invalid, so it was not scored."))
    st.stop()

for config in sorted(ctx.configs, key=lambda c: c != ctx.config):  # the one t was chosen for first
    view = ui.guarded(
        lambda config=config: ui.cached(queries.query_view, store, ctx.run_id, query_id, config, threshold)
    )
    if view is None:
        continue
    with st.expander(ui.esc(view.headline()), expanded=config == ctx.config):
        shown = ["rank", "distance", "score", "correct", "doc_id", "section", "locator"]
        if view.hits["pages"].astype(bool).any():  # a PDF among the hits: its page numbers
            shown.insert(shown.index("locator"), "pages")
        if view.hits["problem"].astype(bool).any():  # a chunk made elsewhere that could not be located
            shown.append("problem")
        st.dataframe(view.hits[shown], hide_index=True, height=240)
        terms = ui.cached(queries.query_tokens, store, ctx.run_id, query_id, config)
        if terms is not None:  # BM25 reads the query: its tokens, and which top hits hold each
            ranks = [c for c in terms.columns if c.startswith("#")]
            head = "".join(f"<th>{html.escape(c)}</th>" for c in ["token", "query words", *ranks])
            body = "".join(
                "<tr>"
                + "".join(f"<td>{html.escape(str(v))}</td>" for v in (row["token"], row["words"]))
                + "".join(f"<td>{'✓' if row[c] else '·'}</td>" for c in ranks)
                + "</tr>"
                for row in terms.to_dict("records")
            )
            st.html(
                f"<div style='font-size:0.85em'>The query as {html.escape(config.retriever)} reads it: its tokens "
                f"(✓ the hit's chunk holds the token; a token no hit holds matched none of them)"
                "<style>.evalcore-tokens th,.evalcore-tokens td{padding:0 0.5rem;text-align:left}</style>"
                f"<table class='evalcore-tokens' data-testid='query-tokens' style='margin-top:0.25rem'>"
                f"<tr>{head}</tr>{body}</table></div>"
            )
        for hit in view.hits.head(4).itertuples():
            parts = queries.highlight(hit.content, hit.needle_start, hit.needle_end)
            body = "".join(f"<mark>{html.escape(p)}</mark>" if mark else html.escape(p) for p, mark in parts)
            value = f"d = {hit.distance:.4f}" if view.axis.column == "distance" else f"score = {hit.score:.4f}"
            located = f"not located: {hit.problem}" if hit.problem else ""
            where = " · ".join(
                x for x in (f"{hit.doc_id}{hit.locator}", str(hit.pages), str(hit.section), value, located) if x
            )
            st.html(
                f"<div style='font-size:0.85em'><b>#{hit.rank}</b> {html.escape(where)}"
                f"<pre style='white-space:pre-wrap;overflow-wrap:anywhere'>{body}</pre></div>"
            )
        answer = ui.guarded(lambda view=view: ui.cached(queries.answer_for, view, str(query["text"])))
        if answer is None:
            continue
        if answer.uncited:
            ranks = ", ".join(f"#{r}" for r in answer.uncited)
            ui.plain(
                _(
                    "Kept by the gate but not cited: {ranks}, a heading only (no text beyond the title or "
                    "section line, so nothing to quote)."
                ).format(ranks=ranks),
                small=True,
                testid="uncited",
            )
        if not answer.answered:
            passed = (
                _("Only headings pass the gate ({rule}, t = {t}), so no model is called; the user gets:")
                if answer.uncited
                else _("No hit in the top 4 passes the gate ({rule}, t = {t}), so no model is called; the user gets:")
            )
            st.markdown(passed.format(rule=_(view.axis.keep_rule), t=lang.num(threshold, 3)))
            st.code(answer.prompt, language=None, wrap_lines=True)
        else:
            st.markdown(_("Citations"))
            st.dataframe(answer.citations, hide_index=True)
            pieces = _("n/a (model not installed)") if answer.pieces is None else answer.pieces
            st.markdown(_("Prompt ({pieces} word pieces)").format(pieces=pieces))
            st.code(answer.prompt, language=None, wrap_lines=True)
ui.methods_link()
