"""Query: one query in every configuration: first correct rank, top hits, and the answer at the threshold."""
from __future__ import annotations

import html

import streamlit as st

from pages import _ui

ctx = _ui.sidebar()
st.title("Query")
run = _ui.require_run(ctx, need_config=True)
search = _ui.bound(st.text_input, "Search queries (text or id)", key="query_search")
found = _ui.call("search_queries", ctx.run_id, search)
if found.empty:
    st.info("No query matches the search.")
    st.stop()
labels = {row.query_id: f"{row.query_id} · {row.domain}{' (invalid)' if not row.valid else ''} · {row.text[:90]}"
          for row in found.itertuples()}
wanted = st.session_state.get("query_id")
if wanted not in labels:
    if wanted and not search:
        extra = _ui.guarded(lambda: _ui.call("query_row", ctx.run_id, wanted))
        if extra is not None:
            labels = {wanted: f"{wanted} · {extra['domain']} · {extra['text'][:90]}", **labels}
    if st.session_state.get("query_id") not in labels:
        st.session_state["query_id"] = next(iter(labels))
query_id = _ui.bound(st.selectbox, "Query", list(labels), key="query_id", format_func=labels.get)
query = _ui.call("query_row", ctx.run_id, query_id)
threshold = float(st.session_state.get("threshold", 0.5))
st.markdown(f"**{html.escape(query['text'])}**")
if query["domain"] == "in":
    st.caption(f"In-domain · group {query['group_id']} · variant {query['variant']} · needle in "
               f"`{query['doc_id']}{_ui.report.locator(query['start'], query['end']) if query['valid'] else ''}`"
               + ("" if query["valid"] else f" · invalid: {query['invalid_reason']}"))
else:
    st.caption(f"Out-of-domain ({query['kind']}): should get NO ANSWER.")
st.caption(f"Threshold t = {threshold:.3f} (set on the Threshold screen); the gate keeps top-4 hits with distance < t.")
if not query["valid"]:
    st.warning("This query's ground truth is invalid, so it was not scored.")
    st.stop()

for config in ctx.configs:
    view = _ui.call("query_config", ctx.run_id, query_id, config, threshold)
    rank = "destroyed (no chunk holds the answer)" if view.destroyed else (
        view.first_correct_rank if view.first_correct_rank is not None else "none in the top 20")
    with st.expander(f"{config} · first correct rank: {rank} · "
                     f"{'answers from ' + str(len(view.kept)) + ' sources' if view.answered else 'NO ANSWER'}",
                     expanded=config == ctx.config):
        st.dataframe(view.hits[["rank", "distance", "score", "correct", "doc_id", "section", "locator"]],
                     hide_index=True, height=240)
        for hit in view.hits.head(4).itertuples():
            parts = _ui.report.highlight(hit.content, hit.needle_start, hit.needle_end)
            body = "".join(f"<mark>{html.escape(p)}</mark>" if mark else html.escape(p) for p, mark in parts)
            st.html(f"<div style='font-size:0.85em'><b>#{hit.rank}</b> {html.escape(str(hit.doc_id))}"
                    f"{html.escape(hit.locator)} · {html.escape(str(hit.section or ''))} · d = {hit.distance:.4f}"
                    f"<pre style='white-space:pre-wrap'>{body}</pre></div>")
        answer = _ui.guarded(lambda: _ui.call("answer", ctx.run_id, query_id, config, threshold))
        if answer is None:
            continue
        if not answer.answered:
            st.markdown(f"**NO ANSWER** at t = {threshold:.3f}: {answer.prompt}")
        else:
            st.markdown("Citations")
            st.dataframe(answer.citations, hide_index=True)
            pieces = "n/a (model not installed)" if answer.pieces is None else answer.pieces
            st.markdown(f"Prompt ({pieces} word pieces)")
            st.code(answer.prompt, language=None)
