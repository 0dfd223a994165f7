"""The job queue: the ``jobs`` table (migration 0002) and the slots jobs run in.

:func:`submit` inserts a ``queued`` row and starts the job's process; the process claims
a slot in one transaction when fewer than :func:`max_jobs` jobs run and it is the oldest
queued job (``created_at``, then ``job_id``), otherwise it polls every
:data:`POLL_SECONDS`. Claiming, staging, finishing and cancelling a job are
:mod:`evalcore.store.jobs` (``claim_slot``, ``set_job_stage``, ``finish_job``, ``cancel_job``:
the one writer of ``jobs``, besides the store's reaper, which marks jobs whose process is gone).
"""

from __future__ import annotations

import logging
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

from evalcore.boundary.text import check_run_name
from evalcore.errors import ConfigError, StoreError
from evalcore.jobs.launch import spawn
from evalcore.jobs.prepare import job_source
from evalcore.store import jobs as job_rows

if TYPE_CHECKING:
    import pandas as pd

    from evalcore.jobs.prepare import Prepared
    from evalcore.store import Store

log = logging.getLogger(__name__)

POLL_SECONDS = 0.5
STATUSES = ("queued", "running", "complete", "failed", "cancelled")
ACTIVE = ("queued", "running")
CANCEL_REASON = "cancelled by the user"


def max_jobs() -> int:
    """``$EVALCORE_MAX_JOBS`` (default 1): how many jobs may run at once; ConfigError when not >= 1."""
    raw = os.environ.get("EVALCORE_MAX_JOBS", "1")
    try:
        value = int(raw)
    except ValueError:
        raise ConfigError(f"EVALCORE_MAX_JOBS must be a positive integer, got {raw!r}") from None
    if value < 1:
        raise ConfigError(f"EVALCORE_MAX_JOBS must be a positive integer, got {raw!r}")
    return value


def submit(store: Store, prepared: Prepared, name: str | None = None, start: bool = True) -> str:
    """Queue a prepared job and start its process; returns the job id (also the run id).

    ``start=False`` only queues it (a test, or a caller that spawns it itself)."""
    spec = prepared.spec
    where = job_source(spec)
    name = check_run_name(name) if name and name.strip() else None
    name = name or (
        "demo" if where == "demo" else Path(str(spec.corpus or "run")).name if where == "folder" else "upload"
    )
    job_rows.insert(store, prepared.job_id, name, spec.to_json())
    if start:
        proc = spawn(store, prepared.job_id)
        job_rows.set_pid(store, prepared.job_id, proc.pid)
    log.info("job %s (%s) queued", prepared.job_id, name)
    return prepared.job_id


def job(store: Store, job_id: str) -> dict[str, Any]:
    """One job's row (spec parsed) joined with its run's status, stage and progress."""
    df = jobs_overview(store)
    df = df[df["job_id"] == job_id]
    if df.empty:
        raise StoreError(f"no job {job_id!r} in {store.path}")
    return {str(key): value for key, value in df.iloc[0].to_dict().items()}


def jobs_overview(store: Store, limit: int = 50) -> pd.DataFrame:
    """The newest ``limit`` jobs, newest first: job_id, run_id, name, status, created_at,
    started_at, finished_at, reason, cancel_requested, pid, spec, run_status, stage (the run's stage
    while it runs, else the job's), progress (0..1), position (1 = next to start; queued only)."""
    store.reap_if_due()  # a job whose process is gone shows failed, not running
    return job_rows.overview(store, limit)


def active_jobs(store: Store) -> pd.DataFrame:
    """Queued and running jobs (see :func:`jobs_overview`)."""
    df = jobs_overview(store, limit=1000)
    return df[df["status"].isin(ACTIVE)]


def reap_now(store: Store) -> list[str]:
    """Reap dead jobs and runs now (the store also does it every 2 s); returns their ids."""
    return store.reap()
