"""Shared UI plumbing of the dashboard: store and cache, the sidebar, the shared selection,
figures with their downloads. Not a page (st.navigation lists the pages explicitly).

Pages call library functions by name, through :func:`cached` when the result may be kept
(``_ui.cached(figures.matrix_figure, store, sides, 4, True)``), else directly with
``_ui.store()``. What a screen opens on when nobody chose (configuration, compared
configurations, threshold) comes from :mod:`evalcore.read.selection`.

Session state keys (the only ones the app uses):

- ``store_path``   str   the store shown: the operator's ($EVALCORE_STORE, else
  runs/evalcore.duckdb) or another existing ``*.duckdb`` file in its folder
- ``run_id``       str   the selected run (sidebar; default the newest complete run)
- ``config``       str   the selected configuration label "E/dense" (sidebar); defaults to
  the configuration of the run's latest saved decision, else the best by recall@4
- ``config_why``   str   why the default configuration was chosen (shown on Threshold)
- ``config_run``   str   the run the configuration was chosen for (a change of run recomputes it)
- ``claim_alpha``, ``claim_beta``, ``claim_confidence``  float  the threshold claim's inputs
  on the Threshold screen (max bluff rate, max lost rate, confidence)
- ``saved_flash``  str   the message shown once after a decision is saved
- ``run_id_b``     str   a second run on the Compare screen ("" for none)
- ``hit_k``        int   the k of hit@k on the Compare screen
- ``holm``         bool  Holm correction on the Compare screen
- ``matrix_configs`` list the compared configurations ("RUN_ID|E/dense" keys)
- ``pair_first``, ``pair_second``  str  the matrix cell whose queries are listed (labels)
- ``threshold``    float the refusal threshold, ONE value for Threshold, Query and Export
- ``threshold_for`` str  "run_id|config" the threshold belongs to
- ``threshold_source`` str  where it came from (saved decision, suggestion, the slider)
- ``rule``, ``cost_ratio``, ``max_bluff_rate``  the suggestion rule on the Threshold screen
- ``query_search``, ``query_id``  the Query screen's search text and chosen query
- ``_params``      tuple the URL query parameters already applied (run, configuration, query)
- ``_compare_params`` tuple the Compare parameters of the URL already applied (see ``_url``)
- ``_statuses``    dict  run id -> status last drawn on the Runs screen (a change redraws all)
- ``_last_cell``   tuple the last heatmap click applied

The keys above are *canonical* keys, never widget keys: Streamlit drops the state of a
widget that a run does not draw, so every widget is drawn through :func:`bound` with the key
``w_<key>``; its value is copied from the canonical key before drawing and back on change.
The sidebar is drawn by each page (``ctx = _ui.sidebar()``), not by app.py.
"""

from __future__ import annotations

import copy
import html
from collections.abc import Callable
from dataclasses import dataclass, is_dataclass
from pathlib import Path
from typing import Any, ParamSpec, TypeVar

import streamlit as st

from evalcore import jobs
from evalcore.chunking import DEFAULT_STRATEGIES
from evalcore.errors import EvalcoreError
from evalcore.figures import markdown_text as markdown
from evalcore.figures.build import Figure, Selection
from evalcore.files import figure_files as export
from evalcore.inputs import demo
from evalcore.measures.claim import DEFAULT_ALPHA, DEFAULT_BETA, DEFAULT_CONFIDENCE, ClaimError
from evalcore.read import claims, runs
from evalcore.read import selection as defaults
from evalcore.records import Configuration, Corpus, Document, RunConfiguration
from evalcore.store import Store
from evalcore.store.connection import default_store_path
from evalcore_app import screen
from evalcore_app.screens import _lang, _url
from evalcore_app.screens._lang import N_, _

DEMO_COMMAND = "python -m evalcore demo"
#: a run's status words, translated where shown
RUN_STATUSES = (N_("queued"), N_("running"), N_("complete"), N_("failed"), N_("cancelled"))
P = ParamSpec("P")
R = TypeVar("R")


def _sync(key: str) -> None:
    st.session_state[key] = st.session_state["w_" + key]


def bound(
    widget: Callable[..., Any],
    label: str,
    *args: Any,
    key: str,
    default: Any = None,
    on_change: Callable[[], None] | None = None,
    **kwargs: Any,
) -> Any:
    """Draw ``widget`` bound to the canonical session key ``key`` (see the module docstring);
    ``default`` seeds the key on first use (widgets get no default of their own)."""
    if key not in st.session_state and default is not None:
        st.session_state[key] = default
    if key in st.session_state:
        st.session_state["w_" + key] = st.session_state[key]

    def changed() -> None:
        _sync(key)
        if on_change is not None:
            on_change()

    value = widget(label, *args, key="w_" + key, on_change=changed, **kwargs)
    st.session_state[key] = value
    return value


# --- store and cache ---------------------------------------------------------------------


def store_choices() -> list[str]:
    """The stores a user may pick: the operator's default and the other ``*.duckdb`` files that
    already exist in its folder. Never a path a user typed."""
    default = default_store_path()
    folder = default.parent
    found = sorted(str(p) for p in folder.glob("*.duckdb") if p.is_file()) if folder.is_dir() else []
    return [str(default)] + [p for p in found if Path(p).resolve() != default.resolve()]


def store_path() -> str:
    choices = store_choices()
    if st.session_state.get("store_path") not in choices:
        st.session_state["store_path"] = choices[0]
    return st.session_state["store_path"]


@st.cache_resource(show_spinner=False)
def get_store(path: str) -> Store:
    return Store(path)


def store() -> Store:
    return get_store(store_path())


def _stamp(path: Path) -> tuple[tuple[int, int] | None, ...]:
    """The store's change stamp: size and modification time of its file and its write-ahead
    log. Every write changes one of them (a commit goes to the log, a checkpoint to the file),
    whichever process made it; reading changes neither."""
    stamps: list[tuple[int, int] | None] = []
    for file in (path, path.with_name(path.name + ".wal")):
        try:
            st_ = file.stat()
        except OSError:
            stamps.append(None)
        else:
            stamps.append((st_.st_mtime_ns, st_.st_size))
    return tuple(stamps)


def _key(arg: object) -> object:
    """What identifies an argument in the cache key: a store by its path and change stamp; a
    corpus, a document or a tuple of records (frozen dataclasses) by Python's hash of its
    fields (the hash of each text is computed once and kept by the string), not by hashing its
    content again at every rerun (seconds for a 10,000-document corpus); anything else as it is."""
    if isinstance(arg, Store):
        return ("store", str(arg.path), _stamp(arg.path))
    if isinstance(arg, Corpus | Document) or (isinstance(arg, tuple) and arg and is_dataclass(arg[0])):
        try:
            return ("record", type(arg).__name__, len(arg) if isinstance(arg, tuple) else 0, hash(arg))
        except TypeError:  # a record with an unhashable field: hashed by content, as before
            return arg
    return arg


@st.cache_resource(show_spinner=False, max_entries=1024)
def _call(name: str, key: tuple, _fn: Callable[..., Any], _args: tuple, _kwargs: dict) -> Any:
    return _fn(*_args, **_kwargs)


def _shared(value: object) -> bool:
    """A result every session may share as it is: a figure (never changed after it is built,
    and slow to copy) or a scalar, or a tuple of those."""
    if isinstance(value, tuple):
        return all(_shared(v) for v in value)
    return value is None or isinstance(value, Figure | str | int | float | bool)


def cached(fn: Callable[P, R], *args: P.args, **kwargs: P.kwargs) -> R:
    """``fn(*args, **kwargs)``, cached per (function, arguments): the one way a screen keeps
    what a library function returned (``_ui.cached(compare.pair_queries, store, a, b, k)``).

    The function is passed itself, never a name looked up at run time; the cache key names it
    by module and qualified name. A :class:`Store` argument is keyed by its path and change
    stamp (:func:`_stamp`), so a write anywhere (a finished run, an imported traffic log, a
    label, a decision) is seen at the next call. Figures are shared without copying; any other
    result is a copy (a screen may change it).
    """
    key = (tuple(_key(a) for a in args), tuple((k, _key(kwargs[k])) for k in sorted(kwargs)))
    value = _call(f"{fn.__module__}.{fn.__qualname__}", key, fn, args, dict(kwargs))
    return value if _shared(value) else copy.deepcopy(value)


# --- text ------------------------------------------------------------------------------------


def esc(text: object) -> str:
    """User text for a Markdown context (captions, labels): escaped, never markup."""
    return markdown.escape(text)


def rank_text(rank: object) -> str:
    """A first correct rank for a table cell: ``"3"``, or ``"none"`` when there is none (None,
    NaN or pandas' NA: no correct chunk among the hits)."""
    if rank is None or str(rank) in ("<NA>", "nan"):
        return _("none")
    return str(int(rank))  # type: ignore[call-overload]


def plain(text: str, *, small: bool = False, strong: bool = False, testid: str = "") -> None:
    """A line of text that may hold user text, shown as text (HTML-escaped, no Markdown);
    ``testid`` names it for the browser tests."""
    style = "font-size:0.875rem;color:rgba(49,51,63,0.7);" if small else ""
    body = f"<b>{html.escape(text)}</b>" if strong else html.escape(text)
    attr = f" data-testid='{html.escape(testid)}'" if testid else ""
    st.html(f"<div{attr} style='{style}margin-bottom:0.5rem;overflow-wrap:anywhere'>{body}</div>")


# --- sidebar ---------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Context:
    store_path: str
    run_id: str | None
    run: dict | None  # the selected run's row (runs_overview)
    config: Configuration | None
    configs: tuple[Configuration, ...]


def sidebar() -> Context:
    """Store (when several exist), run and configuration pickers; returns what the pages show."""
    _url.apply_url()
    with st.sidebar:
        _lang.selector()
        choices = store_choices()
        store_path()
        if len(choices) > 1:
            bound(
                st.selectbox,
                _("Run store"),
                choices,
                key="store_path",
                format_func=lambda p: Path(p).name,
                help=_("The operator's store and the other stores in its folder."),
            )
        path = st.session_state["store_path"]
        if not Path(path).exists():
            st.caption(_("Store: {path} (not created yet)").format(path=esc(path)))
            return Context(path, None, None, None, ())
        try:
            overview = runs.runs_overview(store())
        except EvalcoreError as exc:
            show_error(exc)
            return Context(path, None, None, None, ())
        if overview.empty:
            st.caption(_("Store: {path}").format(path=esc(path)))
            return Context(path, None, None, None, ())
        labels = {row["run_id"]: runs.run_label(row) for row in overview.to_dict("records")}
        if st.session_state.get("run_id") not in labels:
            st.session_state["run_id"] = runs.default_run(store()) or next(iter(labels))
        run_id = bound(
            st.selectbox,
            _("Run"),
            list(labels),
            key="run_id",
            format_func=labels.get,
            help=_("Newest first; failed runs show their reason."),
        )
        row = overview[overview["run_id"] == run_id].iloc[0].to_dict()
        configs: tuple[Configuration, ...] = ()
        config = None
        if row["status"] == "complete":
            configs = tuple(cached(runs.configurations, store(), run_id))
            names = [c.label for c in configs]
            new_run = st.session_state.get("config_run") != run_id
            if configs and (new_run or st.session_state.get("config") not in names):
                chosen, why = cached(defaults.default_configuration, store(), run_id, configs)
                st.session_state["config"] = chosen.label
                st.session_state["config_why"] = why
            if configs:
                label = bound(
                    st.selectbox,
                    _("Configuration (strategy/retriever)"),
                    names,
                    key="config",
                    help=_("Used by Distances, Threshold, Query and Export."),
                    on_change=lambda: st.session_state.pop("config_why", None),
                )
                config = configs[names.index(label)]
                st.session_state["config_run"] = run_id
                if st.session_state.get("config_why") == "the link's configuration":
                    st.session_state["config_why"] = defaults.why_linked(store(), run_id, label)
        _url.write_url(run_id, config.label if config is not None else None)
        st.caption(_("Store: {path}").format(path=esc(path)))
    return Context(path, run_id, row, config, configs)


def no_runs_message(ctx: Context) -> None:
    """No complete run yet: show the runs under way, or offer to start the demo here."""
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


def require_run(ctx: Context, need_config: bool = False) -> dict:
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


# --- the shared selection ----------------------------------------------------------------------


def threshold_state(ctx: Context) -> tuple[float, str]:
    """The one threshold of the selected run and configuration, and where it came from.

    Set on the Threshold screen in this session; else the latest decision saved for this
    configuration; else the suggestion at cost ratio 3 (else the fallback 0.5).
    """
    key = f"{ctx.run_id}|{ctx.config.label}"
    if st.session_state.get("threshold_for") == key and "threshold" in st.session_state:
        return float(st.session_state["threshold"]), st.session_state.get("threshold_source", "")
    t, source = cached(defaults.default_threshold, store(), ctx.run_id, ctx.config, claim_or_none(ctx))
    set_threshold(ctx, t, source)
    return t, source


def claim_params() -> tuple[float, float, float]:
    """The threshold claim's (alpha, beta, confidence) set on the Threshold screen (defaults
    0.05, 0.20, 0.95)."""
    return (
        float(st.session_state.get("claim_alpha", DEFAULT_ALPHA)),
        float(st.session_state.get("claim_beta", DEFAULT_BETA)),
        float(st.session_state.get("claim_confidence", DEFAULT_CONFIDENCE)),
    )


def claim_or_none(ctx: Context, splits: int | None = None) -> Any:
    """The selected configuration's threshold claim at :func:`claim_params` (with the held-out
    check over ``splits``), or None when none can be made (no off-topic or answerable query)."""
    try:
        return cached(claims.claim_of, store(), ctx.run_id, ctx.config, *claim_params(), splits)
    except ClaimError:
        return None


def set_threshold(ctx: Context, t: float, source: str) -> None:
    st.session_state["threshold"] = float(t)
    st.session_state["threshold_for"] = f"{ctx.run_id}|{ctx.config.label}"
    st.session_state["threshold_source"] = source


def side_key(side: RunConfiguration) -> str:
    return f"{side.run_id}|{side.configuration.label}"


def compare_sides(ctx: Context) -> tuple[list[RunConfiguration], list[str]]:
    """Every configuration the Compare screen can pick (this run's, and the second run's when
    one is chosen) and the keys of the default choice."""
    available, default = cached(defaults.compared, store(), ctx.run_id, st.session_state.get("run_id_b") or "")
    return available, [side_key(s) for s in default]


def chosen_sides(ctx: Context) -> tuple[RunConfiguration, ...]:
    """The Compare screen's chosen configurations (its default when nothing was chosen)."""
    available, default = compare_sides(ctx)
    by_key = {side_key(s): s for s in available}
    keys = [k for k in st.session_state.get("matrix_configs", default) if k in by_key] or default
    return tuple(by_key[k] for k in keys)


def selection(ctx: Context) -> Selection:
    """What the screens show now, for the Export screen and the review pack."""
    t, source = threshold_state(ctx)
    return Selection(
        ctx.run_id,
        ctx.config,
        t,
        source,
        chosen_sides(ctx),
        int(st.session_state.get("hit_k", 4)),
        bool(st.session_state.get("holm", True)),
        claim_params(),
    )


# --- figures ---------------------------------------------------------------------------------


def show_figure(figure: Figure, key: str, on_select: bool = False) -> Any:
    """The chart as exported (same colours: Streamlit's theme off), its caption, its downloads."""
    event = st.altair_chart(
        figure.chart, theme=None, key=f"chart-{key}", width="content", on_select="rerun" if on_select else "ignore"
    )
    st.caption(esc(figure.provenance.stamped().text()))  # dated when drawn, as a file is when written
    downloads(figure, key)
    return event


def downloads(figure: Figure, key: str) -> None:
    """PNG, SVG and CSV download buttons of one figure (rendered when clicked)."""
    run_id = st.session_state.get("run_id", "run")
    kinds = (
        ("png", export.to_png, "image/png", ":material/image:"),
        ("svg", export.to_svg, "image/svg+xml", ":material/draw:"),
        ("csv", export.to_csv, "text/csv", ":material/table:"),
    )
    for col, (ext, write, mime, icon) in zip(st.columns([1, 1, 1, 5]), kinds, strict=False):  # 4th column: space
        col.download_button(
            ext.upper(),
            data=lambda write=write: write(figure),
            file_name=export.file_name(figure, run_id, ext),
            mime=mime,
            key=f"{ext}-{key}",
            on_click="ignore",
            icon=icon,
        )


def show_error(exc: Exception) -> None:
    """An error's message as text: it may name a file, a query or a value a user chose, so it
    is escaped for Markdown (``st.error`` reads Markdown)."""
    st.error(esc(exc))


def guarded(fn: Callable[[], Any]) -> Any:
    """Run ``fn``; a named evalcore error or ValueError becomes a message, not a traceback."""
    try:
        return fn()
    except (EvalcoreError, ValueError) as exc:
        show_error(exc)
        return None


def methods_link() -> None:
    """A link to the Methods screen (docs/METHODS.md), where every figure is defined."""
    st.page_link(screen("methods"), label=_("How these figures are defined (Methods)"), icon=":material/menu_book:")
