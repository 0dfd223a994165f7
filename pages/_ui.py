"""Shared UI plumbing of the dashboard: store and cache, the sidebar, downloads.

Not a page (st.navigation lists the pages explicitly). Pages import it as ``pages._ui``.

Session state keys (the only ones the app uses):

- ``store_path``   str   the DuckDB store shown (sidebar text box; default $EVALCORE_STORE or runs/evalcore.duckdb)
- ``run_id``       str   the selected run (sidebar; default the newest complete run)
- ``run_id_b``     str   a second run on the Compare screen ("" for none)
- ``config``       str   the selected configuration "STRATEGY/RETRIEVER" (sidebar)
- ``hit_k``        int   the k of hit@k on the Compare screen
- ``matrix_configs`` list the configurations in the Compare screen's win/loss matrix
- ``holm``         bool  Holm correction on the Compare screen
- ``pair_first``, ``pair_second``  str  the matrix cell whose queries are listed
- ``threshold``    float the refusal threshold (Threshold screen; also used by Query)
- ``threshold_for`` str  "run_id|config" the threshold was set for (reset on change)
- ``rule``, ``cost_ratio``, ``max_bluff_rate``  the suggestion rule on the Threshold screen
- ``query_search``, ``query_id``  the Query screen's search text and chosen query
- ``_last_cell``   tuple the last heatmap click applied (internal)

The keys above are *canonical* keys, never widget keys: Streamlit drops the state of a
widget that a run does not draw (and, under st.navigation, widgets drawn by app.py itself
are not kept between reruns), so every widget is drawn through :func:`bound` with the key
``w_<key>``; its value is copied from the canonical key before drawing and back on change.
The sidebar is therefore drawn by each page (``ctx = _ui.sidebar()``), not by app.py.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

import streamlit as st

from evalcore import report
from evalcore.errors import EvalcoreError
from evalcore.store import Store, default_store_path

DEMO_COMMAND = "python -m evalcore demo"


def _sync(key: str) -> None:
    st.session_state[key] = st.session_state["w_" + key]


def bound(widget: Callable[..., Any], label: str, *args: Any, key: str, default: Any = None,
          **kwargs: Any) -> Any:
    """Draw ``widget`` bound to the canonical session key ``key`` (see the module docstring);
    ``default`` seeds the key on first use (widgets get no default of their own)."""
    if key not in st.session_state and default is not None:
        st.session_state[key] = default
    if key in st.session_state:
        st.session_state["w_" + key] = st.session_state[key]
    value = widget(label, *args, key="w_" + key, on_change=_sync, args=(key,), **kwargs)
    st.session_state[key] = value
    return value


@st.cache_resource(show_spinner=False)
def get_store(path: str) -> Store:
    return Store(path)


@st.cache_data(show_spinner=False, max_entries=512)
def _cached(store_path: str, name: str, args: tuple, kwargs: tuple) -> Any:
    return getattr(report, name)(get_store(store_path), *args, **dict(kwargs))


def call(name: str, *args: Any, **kwargs: Any) -> Any:
    """``report.<name>(store, *args, **kwargs)``, cached per (store path, args).

    Only for reads of complete runs (immutable); the cache hands out copies, never shared frames.
    """
    return _cached(st.session_state["store_path"], name, args, tuple(sorted(kwargs.items())))


def live(name: str, *args: Any, **kwargs: Any) -> Any:
    """``report.<name>(store, ...)`` uncached (run lists, decisions: they change)."""
    return getattr(report, name)(get_store(st.session_state["store_path"]), *args, **kwargs)


@st.cache_data(show_spinner=False, max_entries=64)
def pure(name: str, *args: Any) -> Any:
    """A cached call of a store-free report function (e.g. ``sweep_long``)."""
    return getattr(report, name)(*args)


@dataclass(frozen=True, slots=True)
class Context:
    store_path: str
    run_id: str | None
    run: dict | None  # the selected run's row
    config: str | None
    configs: tuple[str, ...]


def sidebar() -> Context:
    """Store path, run picker and configuration picker; returns what the pages show."""
    if "store_path" not in st.session_state:
        st.session_state["store_path"] = str(default_store_path())
    params = st.query_params
    if "run_id" in params and not st.session_state.get("_params_applied"):
        st.session_state["run_id"] = params["run_id"]
        if "query_id" in params:
            st.session_state["query_id"] = params["query_id"]
        st.session_state["_params_applied"] = True
    with st.sidebar:
        bound(st.text_input, "Run store (DuckDB file)", key="store_path",
                      help="Default: $EVALCORE_STORE, else runs/evalcore.duckdb")
        try:
            runs = live("runs_overview")
        except EvalcoreError as exc:
            st.error(str(exc))
            return Context(st.session_state["store_path"], None, None, None, ())
        if runs.empty:
            return Context(st.session_state["store_path"], None, None, None, ())
        labels = {row["run_id"]: report.run_label(row) for row in runs.to_dict("records")}
        if st.session_state.get("run_id") not in labels:
            newest = live("default_run")
            st.session_state["run_id"] = newest or next(iter(labels))
        run_id = bound(st.selectbox, "Run", list(labels), key="run_id", format_func=labels.get,
                              help="Newest complete run first; failed runs show their reason.")
        row = runs[runs["run_id"] == run_id].iloc[0].to_dict()
        configs: tuple[str, ...] = ()
        config = None
        if row["status"] == "complete":
            configs = tuple(call("configurations", run_id))
            if configs:
                if st.session_state.get("config") not in configs:
                    st.session_state["config"] = configs[0]
                config = bound(st.selectbox, "Configuration (strategy/retriever)", configs, key="config",
                                      help="Used by Distances, Threshold and Export.")
        st.caption(f"Store: `{st.session_state['store_path']}`")
    return Context(st.session_state["store_path"], run_id, row, config, configs)


def no_runs_message(ctx: Context) -> None:
    """No complete run yet: show the runs under way, or offer to start the demo here."""
    from evalcore import jobs
    from evalcore.cli import DEFAULT_STRATEGIES, DEMO_RETRIEVERS

    store = get_store(ctx.store_path)
    if not jobs.active_jobs(store).empty:
        st.info("A run is under way; this page shows it as soon as it completes.")

        @st.fragment(run_every=2)
        def progress() -> None:
            active = jobs.active_jobs(store)
            if active.empty:
                st.rerun()
            for row in active.itertuples():
                st.progress(float(row.progress or 0.0), text=f"{row.name}: {row.stage or row.status}")

        progress()
        return
    st.warning(
        f"The store `{ctx.store_path}` has no complete run yet. Make the demo run with\n\n"
        f"```\n{DEMO_COMMAND}\n```\n\nor start it here (about 3 minutes on two cores; "
        "it goes on in the background if you leave this page)."
    )
    if st.button("Start the demo run"):
        guarded(lambda: jobs.submit(store, jobs.prepare_demo(DEFAULT_STRATEGIES, DEMO_RETRIEVERS), "demo"))
        st.rerun()


def require_run(ctx: Context, need_config: bool = False) -> dict:
    """Stop the page with a message unless a complete run (and a configuration) is selected."""
    if ctx.run is None:
        no_runs_message(ctx)
        st.stop()
    if ctx.run["status"] != "complete":
        reason = f" Reason: {ctx.run['reason']}" if ctx.run.get("reason") else ""
        st.error(f"Run `{ctx.run_id}` ({ctx.run['name']}) is **{ctx.run['status']}**, "
                 f"so it has no results to show.{reason} Pick a complete run in the sidebar.")
        st.stop()
    if need_config and not ctx.config:
        st.info("This run has no configurations with results.")
        st.stop()
    return call("run_info", ctx.run_id)


def downloads(figure: Any, run_id: str, key: str) -> None:
    """PNG, SVG and CSV download buttons and the caption of one figure (rendered on click)."""
    from evalcore import export

    st.caption(figure.caption)
    cols = st.columns(3)
    cols[0].download_button("PNG", data=lambda: export.to_png(figure.chart),
                            file_name=export.file_name(figure, run_id, "png"), mime="image/png",
                            key=f"png-{key}", on_click="ignore")
    cols[1].download_button("SVG", data=lambda: export.to_svg(figure.chart),
                            file_name=export.file_name(figure, run_id, "svg"), mime="image/svg+xml",
                            key=f"svg-{key}", on_click="ignore")
    cols[2].download_button("CSV", data=lambda: export.to_csv(figure.data),
                            file_name=export.file_name(figure, run_id, "csv"), mime="text/csv",
                            key=f"csv-{key}", on_click="ignore")


def show_error(exc: Exception) -> None:
    st.error(str(exc))


def guarded(fn: Callable[[], Any]) -> Any:
    """Run ``fn``; a named evalcore error or ValueError becomes a message, not a traceback."""
    try:
        return fn()
    except (EvalcoreError, ValueError) as exc:
        show_error(exc)
        return None


ROOT = Path(__file__).resolve().parents[1]


# --- figures (shared by the pages and the Export screen) ----------------------------------


def recall_figures(run: dict) -> list:
    from evalcore import charts, export

    summary = call("recall_table", run["run_id"])
    if summary.empty:
        return []
    n = int(summary["queries"].iloc[0])
    return [
        export.Figure("recall", "Recall@k with Wilson intervals", charts.recall_chart(summary), summary,
                      export.caption(run, "Recall@k", "all", n, None, report.INTERVAL_METHOD)),
        export.Figure("mrr", "MRR", charts.mrr_chart(summary), summary[summary["metric"] == "mrr"],
                      export.caption(run, "MRR", "all", n, None, None)),
    ]


def destroyed_figure(run: dict):
    from evalcore import charts, export

    counts = call("destroyed_counts", run["run_id"])
    return export.Figure("destroyed", "Destroyed answers per strategy", charts.destroyed_chart(counts), counts,
                         export.caption(run, "Destroyed ground truths per strategy", "all strategies"))


def matrix_figure(run: dict, k: int, adjust: bool, other: str | None, only: tuple[str, ...] | None = None):
    from evalcore import charts, export

    matrix = call("win_loss", run["run_id"], k, adjust, other, only)
    n = int(matrix["n"].iloc[0]) if len(matrix) else 0
    test = report.PAIRED_TEST + (", Holm-adjusted" if adjust else ", unadjusted")
    what = f"Win/loss matrix at hit@{k}" + (f" against run {other}" if other else "")
    return export.Figure(f"winloss-hit{k}", what, charts.heatmap(matrix, k, adjust), matrix,
                         export.caption(run, what, "all pairs", n, test, None))


def distance_figure(run: dict, config: str):
    from evalcore import charts, export

    frame = call("distances", run["run_id"], config)
    summary = report.distance_summary(frame)
    hist = pure("distance_histogram", frame)
    return export.Figure("distances", "Distances", charts.distance_chart(hist, summary.worst_in, summary.best_out),
                         hist, export.caption(run, "Distances in/out of domain", config,
                                              summary.n_in + summary.n_out)), frame, summary


def sweep_figures(run: dict, config: str, threshold: float):
    from evalcore import charts, export

    sweep = call("sweep", run["run_id"], config)
    long = pure("sweep_long", sweep)
    n = int(sweep["in_domain"].iloc[0] + sweep["out_domain"].iloc[0]) if len(sweep) else 0
    figs = [
        export.Figure(f"sweep-{mode}", f"Threshold sweep ({mode})", charts.sweep_chart(long, threshold, mode == "rates"),
                      sweep, export.caption(run, f"Threshold sweep ({mode}), t = {threshold:.4f}", config, n, None,
                                            report.INTERVAL_METHOD if mode == "rates" else None))
        for mode in ("counts", "rates")
    ]
    return figs, sweep


def index_figure(run: dict):
    from evalcore import charts, export

    health = call("index_health", run["run_id"])
    return export.Figure("index", "Index health", charts.index_chart(health), health,
                         export.caption(run, "Index health per strategy", "all strategies")), health
