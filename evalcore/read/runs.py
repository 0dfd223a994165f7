"""A stored run read back: the run list, one run's row, its configurations and timings."""

from __future__ import annotations

from collections.abc import Hashable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from evalcore.configurations import model_label
from evalcore.errors import StoreError
from evalcore.records import Configuration, Run, RunConfiguration

if TYPE_CHECKING:
    import pandas as pd

    from evalcore.store import Store


def runs_overview(store: Store) -> pd.DataFrame:
    """Every run, newest first, with corpus size, query counts and duration, ready to show.

    Columns: run_id, name, created_at, status, reason, stage, progress, documents,
    failed_documents, characters, sections, in_domain, out_of_domain, invalid, strategies,
    retrievers, model (the model's name, or ``ranked elsewhere (import)`` and the like for a run
    made elsewhere), ranked_by (the same as a phrase: ``model <name>``), rerank_note,
    duration_s (NaN while running), state (what to show in
    one cell: ``"complete"``, ``"running · E: embedding 340/1120 chunks · 45%"``,
    ``"cancelled: <reason> · stopped at E: embedding 120/377 chunks · 40%"``). Text columns
    hold ``""`` where nothing is recorded, never None; the :data:`COUNTED` columns are NaN for
    a run that did not complete (they are stored with a complete run).
    """
    store.reap_if_due()  # a run whose process is gone shows failed, not running
    df = store.query(
        """
        SELECT r.run_id, r.name, r.created_at, r.status, coalesce(r.reason, '') AS reason,
               coalesce(r.stage, '') AS stage, coalesce(r.progress, 0.0) AS progress,
               coalesce(d.documents, 0) AS documents, coalesce(d.failed, 0) AS failed_documents,
               coalesce(d.characters, 0) AS characters, coalesce(d.sections, 0) AS sections,
               coalesce(q.in_domain, 0) AS in_domain, coalesce(q.out_of_domain, 0) AS out_of_domain,
               coalesce(q.invalid, 0) AS invalid,
               coalesce(r.strategies, '') AS strategies, coalesce(r.retrievers, '') AS retrievers,
               coalesce(r.model, '') AS model, r.settings, coalesce(r.rerank_note, '') AS rerank_note,
               date_diff('millisecond', r.created_at, r.finished_at) / 1000.0 AS duration_s
        FROM runs r
        LEFT JOIN (SELECT run_id, count(*) FILTER (state = 'indexed') AS documents,
                          count(*) FILTER (state = 'failed') AS failed,
                          sum(characters) AS characters, sum(sections) AS sections
                   FROM documents GROUP BY run_id) d USING (run_id)
        LEFT JOIN (SELECT run_id, count(*) FILTER (domain = 'in' AND valid) AS in_domain,
                          count(*) FILTER (domain = 'out') AS out_of_domain,
                          count(*) FILTER (NOT valid) AS invalid
                   FROM queries GROUP BY run_id) q USING (run_id)
        ORDER BY r.created_at DESC
        """
    )
    # what ranked the run: "model <name>", or "ranked elsewhere (import)" for a run made elsewhere
    df["ranked_by"] = [model_label(m, s) for m, s in zip(df["model"], df["settings"], strict=True)]
    df["model"] = [m or str(r).removeprefix("model ") for m, r in zip(df["model"], df["ranked_by"], strict=True)]
    df = df.drop(columns=["settings"])
    df["state"] = [state_text(row) for row in df.to_dict("records")]
    # a run's documents and queries are stored when it completes: a run that did not is
    # blank there (not 0: its corpus was read, just not stored)
    unfinished = df["status"] != "complete"
    for column in COUNTED:
        df[column] = df[column].astype("float64").where(~unfinished)
    return df


#: Columns of :func:`runs_overview` stored only with a complete run (NaN for the others).
COUNTED = ("documents", "failed_documents", "characters", "sections", "in_domain", "out_of_domain", "invalid")


def state_text(row: Mapping[Hashable, Any]) -> str:
    """One cell saying where a run is: complete; running, its stage and share; failed and why."""
    status = row.get("status") or "unknown"
    if status == "running":
        stage = row.get("stage") or "starting"
        return f"running · {stage} · {100 * float(row.get('progress') or 0.0):.0f}%"
    if status in ("failed", "cancelled"):
        stage = str(row.get("stage") or "")
        reason = str(row.get("reason") or "")
        text = f"{status}: {reason}" if reason else str(status)
        if stage and stage != "starting" and stage not in reason:  # where it stopped
            text += f" · stopped at {stage} · {100 * float(row.get('progress') or 0.0):.0f}%"
        return text
    return str(status)


def complete_runs(store: Store) -> pd.DataFrame:
    """run_id, name, created_at of the complete runs, newest first."""
    return store.query("SELECT run_id, name, created_at FROM runs WHERE status = 'complete' ORDER BY created_at DESC")


def default_run(store: Store) -> str | None:
    """The run the app opens on: the newest complete run (the demo run on first start)."""
    return store.latest_complete()


def run_label(row: Mapping[Hashable, Any]) -> str:
    """``"demo · 2024-05-01 12:00 · 20240501-120000-1a2b3c (complete)"`` for pickers and captions."""
    created: object = row.get("created_at")
    when = created.strftime("%Y-%m-%d %H:%M") if hasattr(created, "strftime") else str(created)
    return f"{row.get('name')} · {when} · {row.get('run_id')} ({row.get('status', 'complete')})"


def run_info(store: Store, run_id: str) -> Run:
    """The run's row (settings parsed); StoreError for an unknown id."""
    return store.run(run_id)


def require_complete(store: Store, run_id: str) -> Run:
    """The run when it is complete; StoreError saying its status (and reason) otherwise."""
    info = store.run(run_id)
    if info.status != "complete":
        reason = f": {info.reason}" if info.reason else ""
        raise StoreError(f"run {run_id} ({info.name}) is {info.status}{reason}")
    return info


@dataclass(frozen=True, slots=True)
class RunPlan:
    """What a run was asked for: name, strategies and retrievers in their order."""

    name: str
    strategies: tuple[str, ...]
    retrievers: tuple[str, ...]


_PLANS: dict[tuple[str, str], RunPlan] = {}  # (store file, run id) -> plan, complete runs only


def run_plan(store: Store, run_id: str) -> RunPlan:
    """The run's :class:`RunPlan`. A complete run never changes, so its plan is read once per
    process and store file; any other run is read each time."""
    key = (str(store.path.resolve()), run_id)
    if key in _PLANS:
        return _PLANS[key]
    info = store.run(run_id)
    found = RunPlan(info.name, info.strategies, info.retrievers)
    if info.status == "complete" and info.run_id == run_id:
        _PLANS[key] = found
    return found


def strategies_of(store: Store, run_id: str) -> list[str]:
    """The run's strategy names, in the order it was asked for."""
    return list(run_plan(store, run_id).strategies)


def by_strategy_order(frame: pd.DataFrame, store: Store, run_id: str) -> pd.DataFrame:
    """``frame`` (with a ``strategy`` column) sorted in the run's strategy order."""
    rank = {s: i for i, s in enumerate(strategies_of(store, run_id))}
    return frame.sort_values(
        "strategy", key=lambda c: c.map(lambda s: rank.get(s, len(rank))), kind="stable"
    ).reset_index(drop=True)


def configuration_order(store: Store, run_id: str) -> list[Configuration]:
    """Every configuration the run was asked for, in its order (strategies as given, then
    retrievers as given: A/dense, A/bm25, ..., B/dense, ...)."""
    found = run_plan(store, run_id)
    return [Configuration(s, r) for s in found.strategies for r in found.retrievers]


def configurations(store: Store, run_id: str) -> list[Configuration]:
    """The configurations that have results in ``run_id``, in the run's own order."""
    df = store.query("SELECT DISTINCT strategy, retriever FROM results WHERE run_id = ?", [run_id])
    have = set(zip(df["strategy"], df["retriever"], strict=True))
    return [c for c in configuration_order(store, run_id) if (c.strategy, c.retriever) in have]


def run_configurations(store: Store, run_id: str) -> list[RunConfiguration]:
    """:func:`configurations` of ``run_id`` tied to the run (its id and name), for comparisons."""
    name = run_plan(store, run_id).name
    return [RunConfiguration(run_id, c, name) for c in configurations(store, run_id)]


def timings(store: Store, run_id: str) -> pd.DataFrame:
    """stage, strategy, seconds, items, per_item_ms of one run."""
    return store.query(
        "SELECT stage, coalesce(strategy, '') AS strategy, seconds, items, per_item_ms FROM timings "
        "WHERE run_id = ? ORDER BY stage, strategy",
        [run_id],
    )


def named_runs(store: Store, run_ids: list[str]) -> pd.DataFrame:
    """run_id, name, created_at of those of ``run_ids`` the store holds (one query for all), in
    no particular order: how a figure's caption names its runs."""
    return store.query(
        f"SELECT run_id, name, created_at FROM runs WHERE run_id IN ({', '.join('?' * len(run_ids))})", run_ids
    )
