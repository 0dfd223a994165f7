"""Evaluations started by a script (``POST /api/v1/evaluations``): a run of the built-in pipeline
queued in the job runner, exactly as the New run screen queues one, and limited to what that
screen allows: the built-in demo, or a corpus folder inside the operator's data roots
(``$EVALCORE_DATA_ROOTS``) with question files there too or a question set of the store
(``dataset``: ``NAME`` or ``NAME@VERSION``, pinned to its version when queued). Model folders,
endpoints and uploads are the screen's and the CLI's, not the API's.

An evaluation's id is its job's id, which is also the id of the run it makes. Its ``status`` is
the job's: ``queued``, ``running``, ``complete``, ``failed`` or ``cancelled``.

Usage::

    from evalcore.service.evaluations import start_evaluation, evaluation, cancel_evaluation

    started = start_evaluation(store, {"dataset": "docs@3", "corpus": "/data/docs", "strategies": "A,E"})
    evaluation(store, started.evaluation_id).status    # 'queued', then 'running', ...
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any

from evalcore import jobs
from evalcore.boundary.text import check_name
from evalcore.chunking import DEFAULT_STRATEGIES
from evalcore.errors import ConfigError, InputError, StoreError
from evalcore.run.spec import DEFAULT_RETRIEVERS

if TYPE_CHECKING:
    from evalcore.store import Store

#: The fields a request may give (:class:`evalcore.run.spec.RunSpec`'s names).
FIELDS = ("demo", "corpus", "questions", "ood", "dataset", "strategies", "retrievers", "name")


@dataclass(frozen=True, slots=True)
class QueuedEvaluation:
    """One evaluation: its status, stage and progress (0 to 1), the run id once complete, why it
    failed or was cancelled, when it was queued, started and finished, its place in the queue."""

    evaluation_id: str
    name: str
    status: str
    stage: str | None
    progress: float
    run_id: str | None
    reason: str | None
    created_at: datetime | None
    started_at: datetime | None
    finished_at: datetime | None
    position: int | None

    def to_json(self) -> dict[str, Any]:
        def when(value: datetime | None) -> str | None:
            return None if value is None else value.isoformat() + "Z"

        return {
            "id": self.evaluation_id,
            "name": self.name,
            "status": self.status,
            "stage": self.stage,
            "progress": self.progress,
            "run_id": self.run_id,
            "reason": self.reason,
            "created_at": when(self.created_at),
            "started_at": when(self.started_at),
            "finished_at": when(self.finished_at),
            "position": self.position,
        }


def _text(fields: Mapping[str, Any], name: str) -> str | None:
    value = fields.get(name)
    if value is None:
        return None
    if not isinstance(value, str):
        raise InputError(f"{name}: expected text, got {type(value).__name__}")
    return value.strip() or None


def start_evaluation(store: Store, fields: Mapping[str, Any], queued_by: str | None = None) -> QueuedEvaluation:
    """Validate the inputs ``fields`` name (see the module docstring) as the New run screen does,
    queue the run in the job runner (started at once when a slot is free); returns the queued
    evaluation. InputError or ConfigError naming the field for anything the screen would refuse;
    QueueFull, with nothing queued, when the queue holds as many jobs as it takes in all or for
    the key ``queued_by`` (:func:`evalcore.jobs.queue_caps`)."""
    unknown = sorted(set(fields) - set(FIELDS))
    if unknown:
        raise ConfigError(f"{unknown[0]}: not a field an evaluation takes (it takes {', '.join(FIELDS)})")
    strategies = _text(fields, "strategies") or DEFAULT_STRATEGIES
    retrievers = _text(fields, "retrievers") or DEFAULT_RETRIEVERS
    raw_name = _text(fields, "name")
    name = check_name(raw_name, field="name") if raw_name else None
    corpus, questions, ood, dataset = (_text(fields, f) for f in ("corpus", "questions", "ood", "dataset"))
    if fields.get("demo"):
        if corpus or questions or ood or dataset:
            raise ConfigError(
                "demo: the demo brings its own corpus and questions; give no corpus, questions or dataset"
            )
        prepared = jobs.prepare_demo(strategies, retrievers)
    elif corpus is None:
        raise InputError("corpus: a corpus folder inside the operator's data roots is required (or demo: true)")
    elif dataset is not None:
        prepared = jobs.prepare_paths(
            corpus, questions or "", ood, strategies, retrievers, dataset=dataset, store=store
        )
    elif questions is None:
        raise InputError("questions: a questions file inside the operator's data roots (or a dataset) is required")
    else:
        prepared = jobs.prepare_paths(corpus, questions, ood, strategies, retrievers)
    job_id = jobs.submit(store, prepared, name, queued_by=queued_by)
    return evaluation(store, job_id)


def evaluation(store: Store, evaluation_id: str) -> QueuedEvaluation:
    """The evaluation ``evaluation_id`` as it is now; StoreError (``no evaluation ...``) when unknown."""
    try:
        row = jobs.job(store, evaluation_id)
    except StoreError:
        raise StoreError(f"no evaluation {evaluation_id!r}") from None

    def text(value: Any) -> str | None:
        return None if value is None or (isinstance(value, float) and math.isnan(value)) else str(value) or None

    def time(value: Any) -> datetime | None:
        return value.to_pydatetime() if hasattr(value, "to_pydatetime") and value == value else None

    position = row.get("position")
    status = str(row["status"])
    return QueuedEvaluation(
        evaluation_id=str(row["job_id"]),
        name=str(row["name"]),
        status=status,
        stage=text(row.get("stage")),
        progress=float(row.get("progress") or 0.0),
        run_id=str(row["run_id"]) if status == "complete" else None,
        reason=text(row.get("reason")),
        created_at=time(row.get("created_at")),
        started_at=time(row.get("started_at")),
        finished_at=time(row.get("finished_at")),
        position=None if position is None or position != position else int(position),
    )


def cancel_evaluation(store: Store, evaluation_id: str) -> QueuedEvaluation:
    """Cancel an evaluation: a queued one at once, a running one within about a second (its run
    ends ``cancelled``); a finished one is left as it is. Returns it as it is after the call."""
    try:
        jobs.cancel_job(store, evaluation_id)
    except StoreError:
        raise StoreError(f"no evaluation {evaluation_id!r}") from None
    return evaluation(store, evaluation_id)
