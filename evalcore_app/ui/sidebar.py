"""The sidebar: the language, the store (when several exist), the run and the configuration.
The entry (``evalcore_app/app.py``) draws it once per page view, before the page runs, and
hands the :class:`Context` to the page (:mod:`evalcore_app.ui.frame`); a page that shows no
run (Methods) gets the language picker only (:func:`language_only`). A page stops with a
message when it needs a complete run and none is selected (:func:`require_run`).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import streamlit as st

from evalcore import jobs
from evalcore.chunking import DEFAULT_STRATEGIES
from evalcore.errors import EvalcoreError, StoreBusy
from evalcore.figures import markdown_text as markdown
from evalcore.inputs import demo
from evalcore.read import runs
from evalcore.read import selection as defaults
from evalcore.records import Configuration, Run
from evalcore.store import Store
from evalcore_app.ui import lang, url
from evalcore_app.ui.cache import cached
from evalcore_app.ui.lang import N_, _
from evalcore_app.ui.state import SelectionState, bound
from evalcore_app.ui.stores import store, store_choices, store_path
from evalcore_app.ui.text import esc, guarded, show_error

if TYPE_CHECKING:
    import pandas as pd

DEMO_COMMAND = "python -m evalcore demo"
BUSY_RETRY_SECONDS = 5  #: a store another process holds is read again this often
#: a run's status words, translated where shown
RUN_STATUSES = (N_("queued"), N_("running"), N_("complete"), N_("failed"), N_("cancelled"))


@dataclass(frozen=True, slots=True)
class Context:
    store_path: str
    run_id: str | None
    run: dict | None  # the selected run's row (runs_overview)
    config: Configuration | None
    configs: tuple[Configuration, ...]
    unread: str | None = None  # why the store could not be read (then nothing of it is known)
    busy: bool = False  # ... because another process held its lock: it is read again soon


def overview_now(store_: Store) -> pd.DataFrame:
    """Every run as :func:`runs.runs_overview` shows it, read once per change of the store.

    The check for runs whose process is gone runs first (at most every 2 s): marking one
    changes the store, so the overview is read again. Each progress write of a running run
    changes the store too, so its row follows; otherwise a rerun (every click) reuses the last
    read instead of querying the store again (about 12 ms each on the demo)."""
    store_.reap_if_due()
    return cached(runs.runs_overview, store_)


def sidebar() -> Context:
    """Store (when several exist), run and configuration pickers; returns what the pages show."""
    url.apply_url()
    view = SelectionState()
    with st.sidebar:
        lang.selector()
        choices = store_choices()
        store_path()
        if len(choices) > 1:
            bound(
                st.selectbox,
                _("Run store"),
                choices,
                key=SelectionState.store_path,
                format_func=lambda p: Path(p).name,
                help=_("The operator's store and the other stores in its folder."),
            )
        path = view.store_path or store_path()
        if not Path(path).exists():
            st.caption(_("Store: {path} (not created yet)").format(path=esc(path)))
            return Context(path, None, None, None, ())
        try:
            overview = overview_now(store())
        except EvalcoreError as exc:
            show_error(exc)
            return Context(path, None, None, None, (), unread=str(exc), busy=isinstance(exc, StoreBusy))
        if overview.empty:
            st.caption(_("Store: {path}").format(path=esc(path)))
            return Context(path, None, None, None, ())
        labels = {row["run_id"]: runs.run_label(row) for row in overview.to_dict("records")}
        if view.run_id not in labels:
            view.run_id = runs.default_run(store()) or next(iter(labels))
        run_id = bound(
            st.selectbox,
            _("Run"),
            list(labels),
            key=SelectionState.run_id,
            format_func=labels.get,
            help=_("Newest first; failed runs show their reason."),
        )
        row = overview[overview["run_id"] == run_id].iloc[0].to_dict()
        configs: tuple[Configuration, ...] = ()
        config = None
        if row["status"] == "complete":
            configs = tuple(cached(runs.configurations, store(), run_id))
            names = [c.label for c in configs]
            new_run = view.config_run != run_id
            if configs and (new_run or view.config not in names):
                chosen, why = cached(defaults.default_configuration, store(), run_id, configs)
                view.config = chosen.label
                view.config_why = why
            if configs:
                label = bound(
                    st.selectbox,
                    _("Configuration (strategy/retriever)"),
                    names,
                    key=SelectionState.config,
                    help=_("Used by Distances, Threshold, Query and Export."),
                    on_change=lambda: SelectionState.config_why.pop(),
                )
                config = configs[names.index(label)]
                view.config_run = run_id
                if view.config_why == url.LINKED_WHY:
                    view.config_why = defaults.why_linked(store(), run_id, label)
        url.write_url(run_id, config.label if config is not None else None)
        st.caption(_("Store: {path}").format(path=esc(path)))
    return Context(path, run_id, row, config, configs)


def unread_message(ctx: Context) -> None:
    """The store could not be read: say so, and never offer to write into it (it may hold runs
    this page could not see). A busy store (another process holds its lock) is read again every
    :data:`BUSY_RETRY_SECONDS` seconds, and at once with the button."""
    if not ctx.busy:
        st.error(
            _("The store {store} could not be read, so this page shows none of its runs: {reason}").format(
                store=markdown.code(ctx.store_path), reason=esc(ctx.unread)
            )
        )
        return
    st.warning(
        _(
            "The store {store} is busy: another process holds its lock, so its runs cannot be read now "
            "({reason}). Nothing was changed. This page reads it again every {n} s."
        ).format(store=markdown.code(ctx.store_path), reason=esc(ctx.unread), n=BUSY_RETRY_SECONDS),
        icon=":material/hourglass_top:",
    )
    ticks = [0]

    @st.fragment(run_every=BUSY_RETRY_SECONDS)
    def again() -> None:
        ticks[0] += 1
        if ticks[0] > 1:  # the first call is the page's own draw; each later one is a timer's tick
            st.rerun()

    again()
    if st.button(_("Read the store again now"), key="store-busy-retry"):
        st.rerun()


def no_runs_message(ctx: Context) -> None:
    """No complete run yet: show the runs under way, or offer to start the demo here. A store
    that could not be read says so instead (:func:`unread_message`)."""
    if ctx.unread is not None:
        unread_message(ctx)
        return
    exists = Path(ctx.store_path).exists()
    if exists and not jobs.active_jobs(store()).empty:
        st.info(_("A run is under way; this page shows it as soon as it completes."))

        @st.fragment(run_every=2)
        def progress() -> None:
            active = jobs.active_jobs(store())
            if active.empty:
                st.rerun()
            for row in active.itertuples():
                st.progress(float(row.progress or 0.0), text=f"{esc(row.name)}: {esc(row.stage or row.status)}")

        progress()
        return
    st.warning(
        _(
            "The store {store} has no complete run yet. Make the demo run with\n\n"
            "```\n{command}\n```\n\nor start it here (about 3 minutes on two cores; "
            "it goes on in the background if you leave this page)."
        ).format(store=markdown.code(ctx.store_path), command=DEMO_COMMAND)
    )
    if st.button(_("Start the demo run")):
        guarded(lambda: jobs.submit(store(), jobs.prepare_demo(DEFAULT_STRATEGIES, demo.RETRIEVERS), "demo"))
        st.rerun()


def require_run(ctx: Context, need_config: bool = False) -> Run:
    """Stop the page with a message unless a complete run (and a configuration) is selected."""
    if ctx.run is None:
        no_runs_message(ctx)
        st.stop()
    if ctx.run["status"] != "complete":
        reason = " " + _("Reason: {reason}").format(reason=esc(ctx.run["reason"])) if ctx.run.get("reason") else ""
        st.error(
            _(
                "Run {run} ({name}) is **{status}**, so it has no results to show.{reason} "
                "Pick a complete run in the sidebar."
            ).format(
                run=markdown.code(ctx.run_id), name=esc(ctx.run["name"]), status=_(ctx.run["status"]), reason=reason
            )
        )
        st.stop()
    if need_config and ctx.config is None:
        st.info(_("This run has no configurations with results."))
        st.stop()
    return cached(runs.run_info, store(), ctx.run_id)


def language_only() -> Context:
    """The sidebar of a page that shows no run (Methods): the language picker only."""
    with st.sidebar:
        lang.selector()
    return Context(SelectionState().store_path or store_choices()[0], None, None, None, ())
