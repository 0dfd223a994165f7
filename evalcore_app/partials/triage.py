"""The Questions screen's "From real queries" (drawn by screens/questions.py; a partial, not a page).

A pasted or uploaded list of real user queries is kept in the store with the decision on each
(evalcore.store.triage; read back by evalcore.read.triage), per question set name and author
(the trusted header, '' when none), so a person can stop, reload or come back in a new
session and go on where they were: "N of M decided", a page of ``PAGE`` queries at a time.
An off-topic decision puts the query among the draft's off-topic items (and restoring the
list puts them back); "answer in the corpus" puts it among the phrasings of the next item.
The hits of a query come from the chosen configuration of the selected run, ranked by the
run's own retriever (evalcore.traffic.hits.config_hits).

Session keys (evalcore_app/ui/state.py declares ``Triage``): ``qs_real`` (the paste box),
``qs_real_file``, ``qs_real_column``,
``qs_real_file_done`` (the file already added), ``qs_real_page``, ``qs_triage_N`` (the
decision of the list's N-th query, 0-based), ``qs_hits_config``, ``qs_hits_query``,
``qs_triage_restored`` (which draft the kept off-topic decisions were restored into).
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from typing import Any

import streamlit as st

from evalcore.errors import EvalcoreError
from evalcore.inputs.query_lists import read_queries
from evalcore.read import triage as rt
from evalcore.read.traffic.hits import hit_configurations
from evalcore.store import triage as writer
from evalcore.traffic import hits as traffic_hits
from evalcore_app import ui
from evalcore_app.ui.lang import _
from evalcore_app.ui.state import Key, Questions, Triage

PAGE = 20  # real queries shown at once
HITS = 5  # hits shown for a query
CHOICES = ["", *rt.LABELS.values()]
BY_LABEL = {label: decision for decision, label in rt.LABELS.items()}


def restore(store: Any, set_name: str, author: str, add_ood: Callable[[list[str], str], None]) -> None:
    """Put the kept off-topic decisions into the draft, once per loaded draft (a reload, a new
    session, another version loaded)."""
    session = Triage()
    marker = (str(store.path), set_name, author, Questions().loaded)
    if not set_name or session.restored == marker:
        return
    session.restored = marker
    for query, kind in ui.guarded(lambda: rt.off_topic(store, set_name, author)) or []:
        add_ood([query], kind)


def draw(
    store: Any,
    set_name: str,
    author: str,
    *,
    run_id: str | None,
    docs: dict[str, Any],
    selector: Any,
    add_ood: Callable[[list[str], str], None],
    remove_ood: Callable[[str], None],
) -> None:
    """The expander: paste or upload, the kept list a page at a time, the hits view.
    ``run_id``: the run whose corpus is authored on (None: an uploaded corpus, no hits)."""
    session, draft = Triage(), Questions()

    def paste() -> None:
        lines = session.real.splitlines()
        if set_name and ui.guarded(lambda: writer.add_queries(store, set_name, author, lines)) is not None:
            session.real = ""

    def decided(query: str, key: Key[str]) -> None:
        decision = BY_LABEL.get(key.get())
        try:
            writer.decide(store, set_name, author, query, decision)
        except EvalcoreError as exc:
            ui.show_error(exc)
            return
        remove_ood(query)
        if decision in ("near", "far"):
            add_ood([query], decision)
        elif decision == "answer":
            draft.pending = query

    total = ui.cached(rt.progress, store, set_name, author) if set_name else rt.TriageProgress(0, 0)
    with st.expander(_("From real queries: paste user queries and triage them"), expanded=total.total > 0):
        if not set_name:
            st.caption(_("Name the set above first: the list and your decisions are kept for that set."))
        c = st.columns([3, 2])
        c[0].text_area(
            _("Real user queries (one a line)"),
            key="qs_real",
            on_change=paste,
            disabled=not set_name,
        )
        listed = c[1].file_uploader(
            _("…or a file: .txt (one a line), .csv or .jsonl (field below)"),
            type=["txt", "csv", "jsonl"],
            key="qs_real_file",
            disabled=not set_name,
        )
        column = c[1].text_input(_("CSV column / JSON field"), value="query", key="qs_real_column")
        st.caption(_("Pasted queries are added to the kept list; a query already in it keeps its decision."))
        if listed is not None and set_name:
            data = listed.getvalue()
            digest = hashlib.sha256(listed.name.encode() + b"\0" + data).hexdigest()
            if session.file_done != (digest, set_name, author):
                try:
                    queries = read_queries(listed.name, data, column.strip())
                    added = writer.add_queries(store, set_name, author, queries)
                except EvalcoreError as exc:
                    ui.show_error(exc)
                else:
                    session.file_done = (digest, set_name, author)
                    st.success(f"{added:,} new queries of {ui.esc(listed.name)} added to the list.")
                    total = ui.cached(rt.progress, store, set_name, author)
        if not total.total:
            return
        pages = (total.total + PAGE - 1) // PAGE
        page_no = int(st.number_input(f"Page (of {pages:,})", 1, pages, 1, key="qs_real_page")) if pages > 1 else 1
        ui.plain(total.sentence(), testid="qs-progress")
        shown = ui.cached(rt.page, store, set_name, author, page_no, PAGE)
        for entry in shown:
            c = st.columns([4, 2])
            c[0].markdown(f"{entry.position:,}. {ui.esc(entry.query)}")
            key = Triage.decision(entry.position - 1)
            key.set(rt.LABELS.get(entry.decision or "", ""))  # the kept decision is the truth
            c[1].selectbox(
                _("Decision"),
                CHOICES,
                key=key.name,
                label_visibility="collapsed",
                on_change=decided,
                args=(entry.query, key),
            )
        st.caption(_("“answer in the corpus” puts the query among the phrasings above: select its answer and add it."))
        if st.button(_("Forget this list and its decisions"), key="qs_real_clear"):
            ui.guarded(lambda: writer.clear(store, set_name, author))
            st.rerun()
        _hits(store, set_name, author, run_id, [e.query for e in shown], docs, selector)


def _hits(
    store: Any, set_name: str, author: str, run_id: str | None, shown: list[str], docs: dict[str, Any], selector: Any
) -> None:
    draft = Questions()
    if run_id is None:
        st.caption(
            _(
                "Hits: choose “The corpus of the selected run” above to see what a configuration of that run "
                "returns for these queries."
            )
        )
        return
    usable, why = ui.cached(hit_configurations, store, run_id)
    if why is not None:
        ui.plain(why, testid="qs-no-hits")
        return
    c = st.columns(2)
    config = c[0].selectbox(
        _("Hits of"), usable, key="qs_hits_config", help=_("STRATEGY/RETRIEVER of the selected run")
    )
    look = c[1].selectbox(_("Query"), shown, key="qs_hits_query")
    with st.spinner(_("Ranking the query as the run did…")):
        hits = ui.guarded(lambda: ui.cached(traffic_hits.config_hits, store, run_id, config, look, HITS)) or []
    if not hits:
        st.info(_("No hit for this query in this configuration."))
    st.caption(_("Select the answer in a hit's text to make the query an in-domain question with that span."))
    for h in hits:
        if h.doc_id not in docs:
            continue
        ui.plain(f"{h.rank}. {h.doc_id} · {h.section} ({config} score {h.score:.3f})", testid=f"qs-hit-{h.rank}")
        got = selector(
            data={"text": docs[h.doc_id].text[h.start : h.end], "base": h.start, "mark": None},
            key=f"qs_hit_{config}_{h.doc_id}_{h.start}",
            on_selection_change=lambda: None,
        )
        sel = getattr(got, "selection", None)
        if sel and isinstance(sel, dict):
            draft.sel = (h.doc_id, int(sel["start"]), int(sel["end"]))
            draft.pending = look
            ui.guarded(lambda: writer.decide(store, set_name, author, look, "answer"))
            st.rerun()
