"""Background jobs: runs started from the dashboard, each in its own OS process.

One concept a module (see docs/DECISIONS.md, "Jobs and concurrency"):

- :mod:`~evalcore.jobs.prepare`: what a job evaluates (a confined
  :class:`~evalcore.run.spec.RunSpec`, stored as JSON in its row) and the inputs
  checked before it is queued: uploads saved under ``runs/uploads/JOB_ID/``, server folders
  inside the operator's data roots, or the demo.
- :mod:`~evalcore.jobs.queue`: the ``jobs`` table: :func:`submit` (within the queue's caps,
  :func:`queue_caps`: QueueFull beyond them, nothing queued), the overview the New run page
  shows, and :func:`dispatch`, which starts a job's process only when a slot is free (at most
  :func:`max_jobs`, ``$EVALCORE_MAX_JOBS``, run at once; the rest wait in order, holding no
  process). Its rows are written by :mod:`evalcore.store.jobs`, whose
  :func:`~evalcore.store.jobs.cancel_job` is exported here.
- :mod:`~evalcore.jobs.launch`: starting ``python -m evalcore --store STORE job JOB_ID``
  detached (a new session, output to ``runs/jobs/JOB_ID.log``), so a page rerun, a
  reload, another tab or a restart of Streamlit never stops it.
- :mod:`~evalcore.jobs.worker`: the job's own process: take its slot,
  :func:`evalcore.run.execute.execute` its RunSpec with a cancel check, record how it ended,
  its own errors and signals included, and start the next queued job.

A job whose process is gone is marked ``failed`` (with its run) by the store's reaper
(:meth:`evalcore.store.Store.reap`); the next :func:`dispatch` (a submit, a job ending, or the
dashboard server's :class:`Dispatcher`, every 2 s) uses the slot it freed. All store access is
through :class:`evalcore.store.Store`: short connections with lock retry.
"""

from __future__ import annotations

from evalcore.jobs.launch import spawn
from evalcore.jobs.prepare import (
    SOURCES,
    NothingToScore,
    Prepared,
    clean_uploads,
    discard,
    endpoint_options,
    endpoint_setup,
    job_source,
    prepare_demo,
    prepare_paths,
    prepare_upload,
    uploads_dir,
    validate,
    with_options,
)
from evalcore.jobs.queue import (
    ACTIVE,
    CANCEL_REASON,
    POLL_SECONDS,
    STATUSES,
    Dispatcher,
    active_jobs,
    check_settings,
    dispatch,
    job,
    jobs_overview,
    max_jobs,
    queue_caps,
    reap_now,
    submit,
)
from evalcore.jobs.worker import CancelWatch, run_job
from evalcore.run.execute import load_inputs
from evalcore.store.jobs import cancel_job

__all__ = [
    "ACTIVE",
    "CANCEL_REASON",
    "POLL_SECONDS",
    "SOURCES",
    "STATUSES",
    "CancelWatch",
    "Dispatcher",
    "NothingToScore",
    "Prepared",
    "active_jobs",
    "cancel_job",
    "check_settings",
    "clean_uploads",
    "discard",
    "dispatch",
    "endpoint_options",
    "endpoint_setup",
    "job",
    "jobs_overview",
    "load_inputs",
    "max_jobs",
    "prepare_demo",
    "prepare_paths",
    "prepare_upload",
    "queue_caps",
    "reap_now",
    "run_job",
    "job_source",
    "spawn",
    "submit",
    "uploads_dir",
    "validate",
    "with_options",
]
