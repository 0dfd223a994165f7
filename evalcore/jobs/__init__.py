"""Background jobs: runs started from the dashboard, each in its own OS process.

One concept a module (see docs/DECISIONS.md, "Jobs and concurrency"):

- :mod:`~evalcore.jobs.prepare`: what a job evaluates (a confined
  :class:`~evalcore.run.spec.RunSpec`, stored as JSON in its row) and the inputs
  checked before it is queued: uploads saved under ``runs/uploads/JOB_ID/``, server folders
  inside the operator's data roots, or the demo.
- :mod:`~evalcore.jobs.queue`: the ``jobs`` table: :func:`submit`, the overview the New run
  page shows, and the slot a job claims (its rows are written by :mod:`evalcore.store.jobs`,
  whose :func:`~evalcore.store.jobs.cancel_job` is exported here) (at most :func:`max_jobs`,
  ``$EVALCORE_MAX_JOBS``, run at once; the rest start in order).
- :mod:`~evalcore.jobs.launch`: starting ``python -m evalcore --store STORE job JOB_ID``
  detached (a new session, output to ``runs/jobs/JOB_ID.log``), so a page rerun, a
  reload, another tab or a restart of Streamlit never stops it.
- :mod:`~evalcore.jobs.worker`: the job's own process: wait for a slot,
  :func:`evalcore.run.execute.execute` its RunSpec with a cancel check, and record how it ended,
  its own errors and signals included.

A job whose process is gone is marked ``failed`` (with its run) by the store's reaper
(:meth:`evalcore.store.Store.reap`). All store access is through
:class:`evalcore.store.Store`: short connections with lock retry.
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
    active_jobs,
    job,
    jobs_overview,
    max_jobs,
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
    "NothingToScore",
    "Prepared",
    "active_jobs",
    "cancel_job",
    "clean_uploads",
    "discard",
    "endpoint_options",
    "endpoint_setup",
    "job",
    "jobs_overview",
    "load_inputs",
    "max_jobs",
    "prepare_demo",
    "prepare_paths",
    "prepare_upload",
    "reap_now",
    "run_job",
    "job_source",
    "spawn",
    "submit",
    "uploads_dir",
    "validate",
    "with_options",
]
