"""Questions: author a question set on a corpus (evalcore.inputs.question_sets, docs/QUESTION_SETS.md).

Pick the corpus (upload files, or the canonical texts of a stored run), pick a document and a
section, select the answer with the mouse (a components-v2 text selector) or search a phrase
and pick one of its occurrences; the verdict shows at once (found once, outside headings, and
which strategies would destroy it, with the cut). Phrasings (one a line, one group) and a
variant make in-domain items; off-topic queries are typed or pasted with their kind, or
triaged from a pasted list of real queries (kept in the store, hits from the run's own
retriever). Save makes a new version (author: the trusted header, evalcore.authors); the saved
version downloads as questions.jsonl / ood.jsonl.

Session keys: ``qs_source``, ``qs_upload``, ``qs_set``, ``qs_new_name``, ``qs_doc_search``,
``qs_doc``, ``qs_section``, ``qs_phrase``, ``qs_occurrence``, ``qs_phrasings``, ``qs_variant``,
``qs_ood_text``, ``qs_ood_kind``, ``qs_note`` (and those of partials/triage.py); ``qs_sel``
(doc, start, end) the current selection; ``qs_items`` / ``qs_ood`` the draft;
``qs_parent`` the version the draft came from; ``qs_loaded`` which version was loaded;
``qs_saved`` the last save's message. The list of real queries and the decisions on it are
kept in the store (partials/triage.py). The keys the page reads or writes itself are declared
in evalcore_app/ui/state.py (``Questions``).
"""

from __future__ import annotations

import hashlib

import streamlit as st

from evalcore import authors
from evalcore.chunking import DEFAULT_STRATEGIES
from evalcore.errors import EvalcoreError
from evalcore.figures import markdown_text
from evalcore.inputs import authoring, question_sets, uploads
from evalcore.read import question_sets as rq
from evalcore.records import OODQuery, Question
from evalcore_app import ui
from evalcore_app.partials import triage
from evalcore_app.ui.lang import _
from evalcore_app.ui.sidebar import unread_message

NEW = "(new set)"

SELECTOR_JS = """
export default function(component) {
    const { data, setTriggerValue, parentElement } = component;
    let box = parentElement.querySelector('.ec-text');
    if (!box) {
        box = document.createElement('pre');
        box.className = 'ec-text';
        box.setAttribute('data-testid', 'qs-text');
        parentElement.appendChild(box);
    }
    const text = data.text;
    box.textContent = '';
    const mark = data.mark;
    if (mark && mark[1] > mark[0]) {
        const cp = Array.from(text);
        box.appendChild(document.createTextNode(cp.slice(0, mark[0]).join('')));
        const m = document.createElement('mark');
        m.textContent = cp.slice(mark[0], mark[1]).join('');
        box.appendChild(m);
        box.appendChild(document.createTextNode(cp.slice(mark[1]).join('')));
    } else {
        box.textContent = text;
    }
    const points = (node, offset) => {
        const r = document.createRange();
        r.setStart(box, 0);
        r.setEnd(node, offset);
        return Array.from(r.toString()).length;
    };
    box.onmouseup = () => {
        const sel = window.getSelection();
        if (!sel || sel.rangeCount === 0 || sel.isCollapsed) return;
        const range = sel.getRangeAt(0);
        if (!box.contains(range.startContainer) || !box.contains(range.endContainer)) return;
        const start = points(range.startContainer, range.startOffset);
        const end = points(range.endContainer, range.endOffset);
        setTriggerValue('selection', { start: data.base + start, end: data.base + end });
    };
}
"""
SELECTOR_CSS = """
.ec-text { white-space: pre-wrap; font-family: var(--st-font, sans-serif); font-size: 0.95rem;
           max-height: 26rem; overflow-y: auto; padding: 0.6rem; border: 1px solid #ddd;
           border-radius: 0.4rem; background: #fafafa; user-select: text; }
.ec-text mark { background: #ffe08a; }
"""
selector = st.components.v2.component(
    "evalcore.text_selector", html="", css=SELECTOR_CSS, js=SELECTOR_JS, isolate_styles=False
)

ctx = ui.context()
store = ui.get_store(ctx.store_path)
st.title(_("Questions"))
if ctx.unread is not None:  # a store this page could not read is never written into
    unread_message(ctx)
    st.stop()
st.caption(
    _(
        "Author ground truth on the corpus: select an answer span, write the questions it answers, add "
        "off-topic questions, save a version of a question set. Every save is a new version."
    )
)
qs = ui.state.Questions()
Questions = ui.state.Questions  # its keys
Questions.items.setdefault([])
Questions.ood.setdefault([])
Questions.parent.setdefault(None)

# --- the corpus -------------------------------------------------------------------------------
SOURCES = {"upload": "Upload files"}
if ctx.run_id:
    SOURCES["run"] = "The corpus of the selected run"
source = st.radio(_("Corpus"), list(SOURCES), format_func=SOURCES.get, horizontal=True, key="qs_source")
corpus = None
strategies = DEFAULT_STRATEGIES.split(",")
if source == "upload":
    files = st.file_uploader(
        _("Corpus: .md / .txt / .pdf / .html files, or a .zip of them"),
        type=["md", "markdown", "txt", "pdf", "html", "htm", "zip"],
        accept_multiple_files=True,
        key="qs_upload",
    )
    if files:
        got = [uploads.UploadedFile(f.name, f.getvalue()) for f in files]
        digest = hashlib.sha256(b"".join(hashlib.sha256(f.name.encode() + f.data).digest() for f in got)).hexdigest()
        if qs.corpus_key != digest:
            try:
                qs.corpus = uploads.corpus_from_upload(got)
                qs.corpus_key = digest
            except EvalcoreError as exc:
                ui.show_error(exc)
                st.stop()
        corpus = qs.corpus
else:
    corpus = ui.cached(rq.run_corpus, store, ctx.run_id)
    strategies = ui.cached(rq.run_strategies, store, ctx.run_id) or strategies
if corpus is None or not corpus.documents:
    st.info(_("Upload the corpus (or pick a run in the sidebar) to author questions on it."))
    st.stop()
docs = corpus.by_id()
ui.plain(
    _("{n} documents; strategies checked: {strategies}").format(
        n=len(corpus.documents), strategies=", ".join(strategies)
    ),
    testid="qs-corpus",
)

# --- the set ----------------------------------------------------------------------------------
names = ui.guarded(lambda: rq.set_names(store)) or []
cols = st.columns([2, 2, 3])
chosen = cols[0].selectbox(_("Question set"), [NEW, *names], key="qs_set")
if chosen == NEW:
    name = cols[1].text_input(_("Name of the new set"), key="qs_new_name", placeholder=_("e.g. support-v1"))
    if qs.loaded not in (None, NEW):
        qs.items, qs.ood, qs.parent, qs.loaded = [], [], None, NEW
else:
    name = chosen
    found = rq.set_versions(store, chosen)
    labels = [v.label for v in found]
    ref = cols[1].selectbox(_("Version"), labels[::-1], key="qs_version")
    if qs.loaded != ref:
        loaded = rq.load_set(store, ref)
        qs.items, qs.ood = list(loaded.questions), list(loaded.ood)
        qs.parent, qs.loaded = loaded.version.version, ref
    version = next(v for v in found if v.label == ref)
    cols[2].caption(
        ui.esc(
            f"{version.label}: saved {str(version.created_at)[:19]} by {authors.shown(version.author)}"
            + (f", from version {version.parent}" if version.parent else "")
            + (f"; note: {version.note}" if version.note else "")
        )
    )

# --- select an answer -------------------------------------------------------------------------
st.subheader(_("Select an answer in a document"))
search = st.text_input(_("Find a document (title or text)"), key="qs_doc_search")
matches = ui.cached(authoring.find_documents, corpus, search)
if not matches:
    st.info(_("No document holds that text."))
    st.stop()
doc_id = st.selectbox(
    _("Document"), matches, key="qs_doc", format_func=lambda d: f"{docs[d].title} · {d}" if docs[d].title != d else d
)
doc = docs[doc_id]
parts = ui.cached(authoring.sections, doc)
titles = [f"{i + 1}. {t}" for i, (t, _, _) in enumerate(parts)]
if qs.section not in titles:
    qs.section = titles[0]
section = st.selectbox(_("Section"), titles, key="qs_section")
_title, sec_start, sec_end = parts[titles.index(section)]
current = qs.sel
mark = None
if current and current[0] == doc_id and sec_start <= current[1] and current[2] <= sec_end:
    mark = [current[1] - sec_start, current[2] - sec_start]
st.caption(_("Select the answer with the mouse; the verdict below updates at once."))
result = selector(
    data={"text": doc.text[sec_start:sec_end], "base": sec_start, "mark": mark},
    key=f"qs_selector_{doc_id}_{sec_start}",
    on_selection_change=lambda: None,
)
picked = getattr(result, "selection", None)
if picked and isinstance(picked, dict):
    qs.sel = (doc_id, int(picked["start"]), int(picked["end"]))

with st.expander(_("Without a mouse: search a phrase and pick an occurrence")):
    phrase = st.text_input(_("Phrase"), key="qs_phrase")
    if phrase.strip():
        found_at = ui.cached(authoring.occurrences, corpus, phrase)
        if not found_at:
            st.warning(_("The phrase does not occur in the corpus."))
        else:
            labels_at = [f"{d} · characters {a}-{b}: …{docs[d].text[max(0, a - 30) : a]}" for d, a, b in found_at[:50]]
            pick = st.radio(
                _("Occurrence"), range(len(labels_at)), format_func=lambda i: ui.esc(labels_at[i]), key="qs_occurrence"
            )
            if st.button(_("Use this occurrence"), key="qs_use_occurrence"):
                qs.sel = found_at[int(pick)]
                st.rerun()

with st.expander(_("Candidates from the corpus: valid needles spread over the documents, with a cloze hint")):
    c = st.columns([1, 1, 2])
    how_many = c[0].number_input(_("How many"), 1, 500, 10, key="qs_cand_n")
    seed = c[1].number_input(_("Seed"), 0, 10**6, 0, key="qs_cand_seed")
    found_c = ui.cached(authoring.candidates, corpus, int(how_many), int(seed)) if corpus.documents else []
    if found_c:
        labels_c = [f"{c.doc_id} · {c.section or '(start)'}: {c.needle}" for c in found_c]
        which = st.radio(
            _("Candidate"), range(len(found_c)), format_func=lambda i: ui.esc(labels_c[i]), key="qs_candidate"
        )
        if st.button(_("Use this candidate"), key="qs_use_candidate"):
            chosen_c = found_c[int(which)]
            qs.sel = (chosen_c.doc_id, chosen_c.start, chosen_c.end)
            qs.hint = chosen_c.draft
            st.rerun()

verdict = None
if qs.sel and qs.sel[0] in docs:
    d, a, b = qs.sel
    verdict = ui.cached(authoring.check_needle, corpus, d, a, b, list(strategies))
    ui.plain(
        _("Selected in {doc} (characters {start}-{end}): “{needle}”").format(
            doc=d, start=verdict.start, end=verdict.end, needle=verdict.needle
        ),
        testid="qs-needle",
    )
    box = st.success if verdict.valid and not verdict.destroyed else st.warning if verdict.valid else st.error
    with st.container(key="qs_verdict"):
        box(ui.esc(verdict.sentence()))

pending = Questions.pending.pop()  # a real query chosen below, as a phrasing of the next item
if pending and pending not in qs.phrasings.splitlines():
    qs.phrasings = (qs.phrasings.rstrip() + "\n" + pending).strip()
hint = qs.hint
if hint and qs.sel:
    ui.plain(
        _("Hint (a cloze draft, not a question: write your own): {hint}").format(hint=hint),
        small=True,
        testid="qs-hint",
    )
st.text_area(_("Questions this span answers (one phrasing a line: one group)"), key="qs_phrasings")
cols = st.columns([2, 1])
variant = cols[0].text_input(_("Variant (a free label, e.g. course, ticket)"), key="qs_variant")


def _add_question() -> None:
    if verdict is None or not verdict.valid:
        return
    lines = [line.strip() for line in qs.phrasings.splitlines() if line.strip()]
    hint = (qs.hint or "").strip()
    if not lines or (hint and hint in lines):  # a cloze draft is a hint, never a question unedited
        qs.draft_refused = bool(lines)
        return
    taken = {q.query_id for q in qs.items} | {o.query_id for o in qs.ood}
    groups = {q.group for q in qs.items}
    n = len(groups) + 1
    while f"q{n:03d}" in groups or f"q{n:03d}-1" in taken:
        n += 1
    group = f"q{n:03d}"
    for i, text in enumerate(lines, start=1):
        qs.items.append(
            Question(
                query_id=f"{group}-{i}",
                question=text,
                group=group,
                variant=qs.variant.strip(),
                needle=verdict.needle,
                line=0,
                document=verdict.doc_id,
                start=verdict.start,
                end=verdict.end,
            )  # fmt: skip
        )
    qs.phrasings = ""
    qs.sel = None
    qs.hint = None


cols[1].button(
    _("Add to the set"),
    key="qs_add",
    on_click=_add_question,
    disabled=verdict is None or not verdict.valid,
    help=_("Needs a valid needle and at least one phrasing."),
)
if verdict is not None and not verdict.valid:
    st.caption(_("A selection that is not a valid needle cannot be added; select a longer or another span."))
if Questions.draft_refused.pop():  # said once, where the add was tried
    st.error(_("A cloze draft is a hint, not a question: write the question in your own words (or save drafts as "
             "pseudo-queries of variant cloze with `python -m evalcore dataset suggest --save-as NAME`)."))  # fmt: skip

# --- off-topic --------------------------------------------------------------------------------
st.subheader(_("Off-topic questions"))
cols = st.columns([3, 1])
cols[0].text_area(_("Questions the corpus does not answer (one a line; paste a list)"), key="qs_ood_text")
kind = cols[1].radio(_("Kind"), ["near", "far"], key="qs_ood_kind", help=_("near: the corpus's field; far: unrelated."))


def _ood_id() -> str:
    taken = {q.query_id for q in qs.items} | {o.query_id for o in qs.ood}
    n = len(qs.ood) + 1
    while f"ood-{n:03d}" in taken:
        n += 1
    return f"ood-{n:03d}"


def _add_ood(texts: list[str], kind: str) -> None:
    known = {o.query for o in qs.ood}
    for text in texts:
        if text and text not in known:
            qs.ood.append(OODQuery(_ood_id(), text, kind, 0))
            known.add(text)


def _add_typed() -> None:
    _add_ood([t.strip() for t in qs.ood_text.splitlines()], qs.ood_kind)
    qs.ood_text = ""


cols[1].button(_("Add off-topic"), key="qs_add_ood", on_click=_add_typed)
try:
    triage_name = question_sets.check_question_set_name(name) if (name or "").strip() else ""
except EvalcoreError:
    triage_name = ""
who = authors.author_from_headers(st.context.headers) or ""
triage.restore(store, triage_name, who, _add_ood)


def _remove_ood(query: str) -> None:
    qs.ood = [o for o in qs.ood if o.query != query]


triage.draw(
    store,
    triage_name,
    who,
    run_id=ctx.run_id if source == "run" else None,
    docs=docs,
    selector=selector,
    add_ood=_add_ood,
    remove_ood=_remove_ood,
)

# --- the draft, coverage, save ----------------------------------------------------------------
st.subheader(_("The set"))
items = qs.items
ood = qs.ood
ui.plain(
    _("{n} questions in {groups} groups, {ood} off-topic").format(
        n=len(items), groups=len({q.group for q in items}), ood=len(ood)
    ),
    testid="qs-counts",
)
if items:
    st.dataframe(
        [
            {"id": q.query_id, "group": q.group, "variant": q.variant, "question": q.question, "needle": q.needle}
            for q in items
        ],  # fmt: skip
        hide_index=True,
    )
if ood:
    st.dataframe([{"id": o.query_id, "kind": o.kind, "query": o.query} for o in ood], hide_index=True)
if items:
    invalid = ui.cached(rq.not_resolving, corpus, tuple(items))
    if invalid:
        st.error(
            _("{n} item(s) do not resolve in this corpus; a run on it lists and excludes them:").format(n=len(invalid))
        )
        ui.plain(
            "; ".join(f"{i['group']} ({i['ids']}, line {i['line']}): {i['reason']}" for i in invalid),
            testid="qs-invalid",
        )
        st.dataframe(invalid, hide_index=True)
    with st.expander(_("Coverage: documents and sections without a question")):
        st.dataframe(ui.cached(authoring.section_coverage, corpus, tuple(items)), hide_index=True)

note = st.text_input(_("Note for this version"), key="qs_note")


def _save() -> None:
    author = authors.author_from_headers(st.context.headers)
    try:
        saved = question_sets.save(
            store, name or "", qs.items, qs.ood, parent=qs.parent, author=author,
            note=qs.note, origin="dashboard",
        )  # fmt: skip
    except EvalcoreError as exc:
        qs.saved = ("error", str(exc))
        return
    qs.saved = ("ok", saved.message() + f" by {authors.shown(author)}")
    qs.set_name, qs.version = saved.version.name, saved.version.label
    qs.loaded, qs.parent = saved.version.label, saved.version.version


st.button(_("Save a new version"), key="qs_save", type="primary", on_click=_save, disabled=not items or not name)
if qs.saved:
    status, message = qs.saved
    (st.success if status == "ok" else st.error)(ui.esc(message[0].upper() + message[1:]))

if chosen != NEW and qs.loaded:
    files = rq.export_bytes(rq.load_set(store, qs.loaded))
    cols = st.columns(len(files))
    for col, (file, data) in zip(cols, files.items(), strict=True):
        col.download_button(
            _("Download {file}").format(file=file),
            data,
            file_name=f"{qs.loaded.replace('@', '-v')}-{file}",
            mime="application/jsonl",
            key=f"qs_download_{file.split('.')[0]}",
        )
    st.caption(_("Run on it: ") + markdown_text.code(f"python -m evalcore run --corpus DIR --dataset {qs.loaded}"))
