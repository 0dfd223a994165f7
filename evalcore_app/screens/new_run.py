"""New run: upload or pick inputs, validate them, start a background job; watch and cancel jobs.

A job runs in its own process (evalcore.jobs), so leaving this page, reloading it or
opening another tab does not stop it. The page's session keys (its widgets' ``nr_*`` keys,
not kept when another page is shown, and what it keeps itself: the validated inputs until
they are started or an input changes, the job started last) are declared in
evalcore_app/ui/state.py (``NewRun``).
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import streamlit as st

from evalcore import jobs
from evalcore.chunking import DEFAULT_STRATEGIES, NAMED_STRATEGIES, SPEC_SYNTAX
from evalcore.configurations import EXTERNAL
from evalcore.errors import EvalcoreError
from evalcore.external.endpoint import DEFAULT_BODY, Endpoint, Fields, allowed_prefixes
from evalcore.figures import markdown_text
from evalcore.inputs import sources as inputs
from evalcore.inputs import uploads
from evalcore.read import question_sets
from evalcore.records import ValidationReport
from evalcore.retrieval.bm25 import languages
from evalcore.retrieval.names import RETRIEVERS, analyzer_label, with_analyzers
from evalcore.run.spec import DEFAULT_RETRIEVERS, SIMILARITY
from evalcore_app import ui
from evalcore_app.partials import corpus_language
from evalcore_app.ui import lang
from evalcore_app.ui.lang import _, ngettext
from evalcore_app.ui.sidebar import unread_message

ctx = ui.context()
store = ui.get_store(ctx.store_path)
store_exists = Path(ctx.store_path).exists()  # a missing store is created by the first job, never by a visit
st.title(_("New run"))
if ctx.unread is not None:  # a store this page could not read is never written into
    unread_message(ctx)
    st.stop()
session = ui.state.NewRun()
if store_exists and not session.cleaned:  # once a session: uploads never started, a day old
    ui.guarded(lambda: jobs.clean_uploads(store))
    session.cleaned = True

SOURCES = {"upload": "Upload files", "demo": "Built-in demo", "folder": "Folder on the server"}
roots = inputs.data_roots()  # the operator's EVALCORE_DATA_ROOTS; none: no server folders
if not roots:
    del SOURCES["folder"]


def _forget() -> None:
    del session.nothing
    prepared = ui.state.NewRun.prepared.pop()
    if prepared is not None:
        ui.guarded(lambda: jobs.discard(store, prepared))


def _files(items) -> list[uploads.UploadedFile]:
    return [uploads.UploadedFile(f.name, f.getvalue()) for f in items or []]


def _one(item) -> uploads.UploadedFile | None:
    return uploads.UploadedFile(item.name, item.getvalue()) if item is not None else None


source = st.radio(
    _("Inputs"), list(SOURCES), format_func=SOURCES.get, horizontal=True, key="nr_source", on_change=_forget
)
set_names = (ui.guarded(lambda: ui.cached(question_sets.set_names, store)) or []) if store_exists else []
QUESTIONS_FROM = {"files": "Question files", "set": "A question set of the store"}
from_set = False
dataset: str | None = None
if source != "demo" and set_names:
    from_set = (
        st.radio(
            _("Questions"),
            list(QUESTIONS_FROM),
            format_func=QUESTIONS_FROM.get,
            horizontal=True,
            key="nr_questions_from",
            on_change=_forget,
        )
        == "set"
    )
if from_set:
    cols = st.columns(2)
    set_name = cols[0].selectbox(_("Question set"), set_names, key="nr_set", on_change=_forget)
    labels = [v.label for v in ui.cached(question_sets.set_versions, store, set_name)][::-1]
    if session.set_version not in labels:
        session.set_version = labels[0]
    dataset = cols[1].selectbox(
        _("Version"), labels, key="nr_set_version", on_change=_forget, help=_("The newest first; a run records it.")
    )
    st.caption(
        _(
            "The run reads {set} as `python -m evalcore run --dataset {set}` does: its needles are resolved "
            "against this corpus, and those that no longer resolve are listed and excluded."
        ).format(set=ui.esc(dataset))
    )
if source == "upload":
    st.caption(
        "Limits: " + uploads.DEFAULT_LIMITS.describe() + ". Text files that are not UTF-8, "
        "PDFs that are corrupt or password-protected, and empty or unknown files are skipped "
        "with a message; a zip with paths outside its folder or symbolic links is refused."
    )
    corpus_up = st.file_uploader(
        _("Corpus: .md / .txt / .pdf / .html files, or a .zip of them"),
        key="nr_corpus",
        type=["md", "markdown", "txt", "pdf", "html", "htm", "zip"],
        accept_multiple_files=True,
        on_change=_forget,
    )
    questions_up = ood_up = None
    if not from_set:
        cols = st.columns(2)
        questions_up = cols[0].file_uploader(
            _("questions.jsonl"), type=["jsonl"], key="nr_questions", on_change=_forget
        )
        ood_up = cols[1].file_uploader(_("ood.jsonl (optional)"), type=["jsonl"], key="nr_ood", on_change=_forget)
elif source == "folder":
    st.caption("Only inside the folders the operator allows: " + ", ".join(markdown_text.code(r) for r in roots))
    st.text_input(_("Corpus folder on the server"), key="nr_corpus_dir", on_change=_forget)
    if not from_set:
        cols = st.columns(2)
        cols[0].text_input(_("questions.jsonl path"), key="nr_questions_path", on_change=_forget)
        cols[1].text_input(_("ood.jsonl path (optional)"), key="nr_ood_path", on_change=_forget)
else:
    st.caption(_("The Python language reference (pydoc topics) with its built-in questions."))

MODES = {"builtin": "Built-in pipeline (strategies x models x retrievers)", "endpoint": "Live search endpoint"}
endpoint_prefixes = allowed_prefixes()  # the operator's $EVALCORE_ENDPOINTS
mode = st.radio(
    _("What to measure"), list(MODES), format_func=MODES.get, horizontal=True, key="nr_mode", on_change=_forget
)
endpoint_spec = None
if mode == "endpoint":
    if not endpoint_prefixes:
        st.info(
            _(
                "Endpoint runs from the dashboard are off: the operator allows search services by URL prefix in "
                "`EVALCORE_ENDPOINTS` (see docs/DEPLOY.md). `python -m evalcore run-endpoint` works from a terminal."
            )
        )
        st.stop()
    st.caption(
        "Every query is sent to the service (answers are cached in the store: a second run sends nothing). "
        "Allowed: " + ", ".join(markdown_text.code(p) for p in endpoint_prefixes)
    )
    url = st.text_input(_("URL"), key="nr_url", on_change=_forget, placeholder=endpoint_prefixes[0] + "search")
    body = st.text_input(
        _("JSON body template"),
        value=DEFAULT_BODY,
        key="nr_body",
        on_change=_forget,
        help=_('Strings may hold {query}, {query_id}, {k}; "{k}" alone is a number.'),
    )
    cols = st.columns(6)
    paths = {
        key: cols[i].text_input(label, value=default, key=f"nr_{key}", on_change=_forget)
        for i, (key, label, default) in enumerate(
            (
                ("hits", "hit list at", "hits"),
                ("chunk_id", "chunk id at", "id"),
                ("text", "text at", "text"),
                ("document", "document at", "document"),
                ("score", "score at", "score"),
                ("score_kind", "score kind", SIMILARITY),
            )
        )
    }
    cols = st.columns(2)
    chunker = cols[0].text_input(_("Chunker name"), value=EXTERNAL, key="nr_chunker", on_change=_forget)
    retriever_name = cols[1].text_input(_("Retriever name"), value=EXTERNAL, key="nr_retriever", on_change=_forget)
    score_kind = paths.pop("score_kind").strip()
    endpoint_spec = jobs.endpoint_setup(
        Endpoint(url=url.strip(), body=body, fields=Fields(**{k: v.strip() for k, v in paths.items()})),
        chunker=chunker.strip(),
        retriever=retriever_name.strip(),
        score=score_kind,
    )

if mode == "endpoint":  # the service chunks and ranks: no strategy or retriever of ours (kept unused in the spec)
    chosen, custom, retrievers = ["E"], "", ["dense"]
else:
    # the strategies get a row of their own: all seven chips (A-G) stay visible
    chosen = st.multiselect(
        _("Strategies"),
        list(NAMED_STRATEGIES),
        default=DEFAULT_STRATEGIES.split(","),
        key="nr_strategies",
        on_change=_forget,
        help="; ".join(f"{k}: {s.describe()}" for k, s in NAMED_STRATEGIES.items()),
    )
    cols = st.columns(2)
    custom = cols[0].text_input(
        _("Custom strategies (optional, comma list)"),
        key="nr_custom",
        on_change=_forget,
        placeholder=_("wide:boundaries+header+size=800"),
        help=SPEC_SYNTAX,
    )
    retrievers = cols[1].multiselect(
        _("Retrievers"),
        list(RETRIEVERS),
        default=DEFAULT_RETRIEVERS.split(","),
        key="nr_retrievers",
        on_change=_forget,
        help="; ".join(f"{k}: {v}" for k, v in RETRIEVERS.items()) + ". Rerank runs only with a local cross-encoder.",
    )
    analyzers = st.multiselect(
        _("BM25 languages"),
        ["", "unicode", *languages()],
        default=[""],
        format_func=analyzer_label,
        key="nr_languages",
        on_change=_forget,
        help=_(
            "How bm25, hybrid and rerank read the text. The chapter's tokenizer keeps lowercase a-z0-9 runs "
            "(Größe becomes gr + e); a language reads Unicode words, casefolded, each stemmed by the Snowball "
            "stemmer of that language (Häuser and Haus match). Choose several to compare them in one run: "
            "each is a retriever of its own (bm25:german, hybrid:german)."
        ),
    )
    retrievers = with_analyzers(retrievers, analyzers)
    if analyzers not in ([], [""]):
        st.caption("Retrievers to run: " + ui.esc(", ".join(retrievers)))
model_folders: list[str] = []
if mode == "builtin" and roots:
    models_text = st.text_area(
        _("Embedding model folders on the server (optional, one a line)"),
        key="nr_models",
        on_change=_forget,
        height=68,
        help=_(
            "Local sentence-transformers folders inside the allowed folders; with several, each strategy runs "
            "under each model and is stored as STRATEGY@FOLDER. Empty: the packaged all-MiniLM-L6-v2."
        ),
    )
    model_folders = [line.strip() for line in models_text.splitlines() if line.strip()]
name = st.text_input(_("Run name (optional)"), key="nr_name")
strategies = ",".join([*chosen, *(s.strip() for s in custom.split(",") if s.strip())])
retriever_list = ",".join(retrievers)


def _inputs() -> jobs.Prepared:
    if source == "upload":
        return jobs.prepare_upload(
            store, _files(corpus_up), _one(questions_up), _one(ood_up), strategies, retriever_list, dataset=dataset
        )
    if source == "folder":
        if dataset is not None:
            return jobs.prepare_paths(
                session.corpus_dir, "", None, strategies, retriever_list,
                dataset=dataset, store=store,
            )  # fmt: skip
        return jobs.prepare_paths(
            session.corpus_dir,
            session.questions_path,
            session.ood_path or None,
            strategies,
            retriever_list,
        )
    return jobs.prepare_demo(strategies, retriever_list)


def _prepare() -> jobs.Prepared:
    prepared = _inputs()
    if endpoint_spec is None and not model_folders:
        return prepared
    try:
        return jobs.with_options(prepared, models=model_folders, endpoint=endpoint_spec, sets=store)
    except BaseException:
        jobs.discard(store, prepared)
        raise


def _validate() -> jobs.Prepared | None:
    try:
        return _prepare()
    except jobs.NothingToScore as exc:  # shown below, needle by needle, until an input changes
        session.nothing = {
            "message": str(exc),
            "report": exc.report,
            "documents": exc.documents,
            "notes": exc.notes,
        }
        return None


if st.button(_("Validate"), key="nr_validate", icon=":material/fact_check:"):
    _forget()
    with st.spinner(_("Checking the inputs…")):
        session.prepared = ui.guarded(_validate)

SHOWN_IDS = 40  # document ids listed under a needle problem
SHOWN_ROWS = 25  # up to this many invalid needles are a plain table, more a scrolling one


def documents_found(documents: list[str] | tuple[str, ...]) -> str:
    """One line: the corpus's document ids (the first SHOWN_IDS), which a needle's
    ``document`` must name."""
    shown = ", ".join(markdown_text.code(d) for d in documents[:SHOWN_IDS])
    more = f", … ({len(documents) - SHOWN_IDS:,} more)" if len(documents) > SHOWN_IDS else ""
    return f"Document ids in this corpus ({len(documents):,}): {shown}{more}"


def needle_rows(report: ValidationReport) -> list[dict[str, str]]:
    """Each invalid needle of a validation report: its questions line, group, needle and reason."""
    return [
        {"line": str(item.line), "group": str(item.group), "needle": str(item.needle), "reason": str(item.reason)}
        for item in report.invalid
    ]


nothing = session.nothing
if nothing is not None:
    rows = needle_rows(nothing["report"])
    st.error(
        f"{ui.esc(nothing['message'])}: {len(rows):,} ground truth{'' if len(rows) == 1 else 's'}, "
        "each excluded for the reason below; nothing can be run."
    )
    for note in nothing["notes"]:
        st.info(ui.esc(note))
    if len(rows) <= SHOWN_ROWS:  # a few: a plain table, every reason readable in full
        st.table(rows)
    else:
        st.dataframe(rows, hide_index=True, column_config={"reason": st.column_config.TextColumn(width="large")})
    st.caption(documents_found(nothing["documents"]))


def problems(prepared: jobs.Prepared) -> list[dict[str, str]]:
    """Every problem of a validation, one row each: what, where, message."""
    rep = prepared.report
    rows = [
        {"what": "file skipped", "where": message.split(":", 1)[0], "message": message} for message in prepared.skipped
    ]
    rows += [
        {"what": "document failed", "where": item.path, "message": f"{item.reason} (recorded as failed)"}
        for item in rep.failed
    ]
    rows += [
        {
            "what": "ground truth excluded",
            "where": f"{'question set' if prepared.spec.dataset else 'questions'} line {item.line}, group {item.group}",
            "message": f"needle {item.reason}",
        }
        for item in rep.invalid
    ]
    return rows


prepared: jobs.Prepared | None = session.prepared
if prepared is not None:
    rep = prepared.report
    found = problems(prepared)
    service = prepared.spec.endpoint
    count = lang.tr().integer
    summary = (
        (_("Question set {name}: ").format(name=prepared.spec.dataset) if prepared.spec.dataset else "")
        + ngettext("{n} document ({failed} failed), ", "{n} documents ({failed} failed), ", rep.documents).format(
            n=rep.documents, failed=len(rep.failed)
        )
        + _(
            "{sections} sections, {characters} characters; ground truths {gt_valid} of {gt_total} valid; "
            "in-domain queries {q_valid} of {q_total}; out-of-domain {ood} ({near} near, {far} far). "
        ).format(
            sections=rep.sections,
            characters=count(rep.characters),
            gt_valid=count(rep.valid_ground_truths),
            gt_total=count(rep.ground_truths),
            q_valid=count(rep.valid_queries),
            q_total=count(rep.queries),
            ood=rep.ood,
            near=rep.ood_near,
            far=rep.ood_far,
        )
        + (
            _("Endpoint {url} as {chunker}/{retriever}.").format(
                url=service.url, chunker=prepared.spec.chunker, retriever=prepared.spec.retriever_name
            )
            if service is not None
            else _("Strategies {strategies} · retrievers {retrievers}").format(
                strategies=",".join(prepared.spec.strategies), retrievers=",".join(prepared.spec.retrievers)
            )
            + (_(" · models {models}.").format(models=", ".join(prepared.spec.models)) if prepared.spec.models else ".")
        )
    )
    for note in prepared.notes:
        st.info(ui.esc(note))
    if not found:
        st.success(_("Valid: {summary}").format(summary=ui.esc(summary)))
    else:
        kinds = Counter(row["what"] for row in found)
        counted = "; ".join(f"{n:,} × {what}" for what, n in kinds.items())
        first = found[0]
        st.warning(
            _(
                "Valid with problems ({counted}): only what is valid is run. {summary} First problem: {where}: "
                "{message}."
            ).format(
                counted=counted,
                summary=ui.esc(summary),
                where=ui.esc(first["where"]),
                message=ui.esc(first["message"]),
            )
        )
    corpus_language.notice(prepared.language, prepared.spec)  # said, never applied: the run is what was chosen
    if st.button(_("Start run"), key="nr_start", type="primary", icon=":material/play_arrow:"):
        job_id = ui.guarded(lambda: jobs.submit(store, prepared, name))
        if job_id:
            del session.prepared
            session.last_job = job_id
            st.rerun()
    if found:
        reasons = Counter(row["message"].split(" (")[0] for row in found)
        with st.expander(_("Problems ({n})").format(n=lang.tr().integer(len(found))), expanded=len(found) <= 10):
            if len(reasons) < len(found):
                st.caption(_("Most frequent: ") + "; ".join(f"{ui.esc(r)} ({n:,})" for r, n in reasons.most_common(5)))
            st.dataframe(found, hide_index=True, column_config={"message": st.column_config.TextColumn(width="large")})
            if rep.invalid and prepared.documents:
                st.caption(documents_found(prepared.documents))
    with st.expander(_("Validation report (as `python -m evalcore validate --json`)")):
        st.json(rep.to_json(), expanded=False)

last_job = session.last_job
if last_job and store_exists:  # said while the job waits or runs; gone once it ended (the Jobs list says how)
    try:
        last_status = jobs.job(store, last_job)["status"]
    except EvalcoreError:  # no longer among the jobs listed
        last_status = None
    if last_status not in jobs.ACTIVE:
        del session.last_job
if session.last_job:
    st.info(
        _(
            "Started job `{job}`; it runs in the background. At most {n} job(s) run at once; the others wait in order."
        ).format(job=session.last_job, n=ui.guarded(jobs.max_jobs) or 1)
    )

st.subheader(_("Jobs"))
if not store_exists:
    st.caption(_("No jobs yet."))
    st.stop()
active_now = not jobs.active_jobs(store).empty


@st.fragment(run_every=1.0 if active_now else None)
def job_panel() -> None:
    if active_now:
        jobs.reap_now(store)
    df = jobs.jobs_overview(store, limit=30)
    if df.empty:
        st.caption(_("No jobs yet."))
        return
    active = df[df["status"].isin(jobs.ACTIVE)]
    # the running jobs first, then the queue in its order: Cancel on the top row is the running job's
    active = active.assign(_queued=active["status"] == "queued").sort_values(["_queued", "position", "created_at"])
    for row in active.to_dict("records"):
        cols = st.columns([5, 1])
        where = f"queued, #{int(row['position'])} in line" if row["status"] == "queued" else "running"
        cols[0].progress(
            float(row["progress"]),
            text=f"**{ui.esc(row['name'])}** {row['job_id']} · {where} · {ui.esc(row['stage'] or '')}",
        )
        if row["cancel_requested"]:
            cols[1].caption(_("cancelling…"))
        else:
            cols[1].button(
                _("Cancel"), key=f"nr_cancel_{row['job_id']}", on_click=jobs.cancel_job, args=(store, row["job_id"])
            )
    done = df[~df["status"].isin(jobs.ACTIVE)]
    if not done.empty:
        st.dataframe(
            done[["job_id", "name", "status", "created_at", "finished_at", "reason"]],
            hide_index=True,
            column_config={
                "created_at": st.column_config.DatetimeColumn(_("queued"), format="YYYY-MM-DD HH:mm:ss"),
                "finished_at": st.column_config.DatetimeColumn(_("finished"), format="YYYY-MM-DD HH:mm:ss"),
            },
        )
        st.caption(_("A complete job's run is on the Runs page (same id)."))
    if active_now and active.empty:
        st.rerun()  # the last job ended: redraw the page (sidebar run list) and stop polling


job_panel()
