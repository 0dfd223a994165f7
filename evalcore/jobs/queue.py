"""The job queue: the ``jobs`` table (migrations 0002, 0015), its caps and the slots jobs run in.

:func:`submit` inserts a ``queued`` row (within the queue's caps, :func:`queue_caps`) and calls
:func:`dispatch`, which starts a job's process only when a slot is free: at most
:func:`max_jobs` jobs run at once, the oldest queued job first (``created_at``, then
``job_id``). A queued job holds no process. When a job ends, its own process calls
:func:`dispatch` on its way out, so the next queued job starts; the dashboard's server also
calls it every few seconds (:class:`Dispatcher`), so a slot freed by a job whose process died
(marked ``failed`` by the store's reaper) starts the next job too. Reserving a slot, staging,
finishing and cancelling a job are :mod:`evalcore.store.jobs` (the one writer of ``jobs``,
besides the store's reaper, which marks jobs whose process is gone).
"""

from __future__ import annotations

import logging
import os
import threading
from pathlib import Path
from typing import TYPE_CHECKING, Any

from evalcore.boundary.text import check_run_name
from evalcore.errors import ConfigError, EvalcoreError, QueueFull, StoreError
from evalcore.jobs.launch import spawn
from evalcore.jobs.prepare import discard, job_source
from evalcore.store import jobs as job_rows
from evalcore.store.jobs import PER_KEY_ENV, TOTAL_ENV, QueueCaps

if TYPE_CHECKING:
    import pandas as pd

    from evalcore.jobs.prepare import Prepared
    from evalcore.store import Store

log = logging.getLogger(__name__)

POLL_SECONDS = 0.5
STATUSES = ("queued", "running", "complete", "failed", "cancelled")
ACTIVE = ("queued", "running")
CANCEL_REASON = "cancelled by the user"

MAX_JOBS_ENV = "EVALCORE_MAX_JOBS"
#: The memory one running job is counted with by the default of :func:`max_jobs`: the Python
#: process, the embedding model and a batch of vectors (a small run takes less, a large corpus
#: more; ``$EVALCORE_MAX_JOBS`` overrides the rule).
JOB_MEMORY = 1536 * 1024 * 1024
#: The queue's caps when their variables are not set (:func:`queue_caps`).
DEFAULT_QUEUE_TOTAL = 20
DEFAULT_QUEUE_PER_KEY = 5
#: Seconds between two looks of the dashboard server's :class:`Dispatcher` for a free slot.
DISPATCH_EVERY = 2.0

_submitting = threading.Lock()  # one submit of this process at a time: the caps are counted, then written
_dispatching = threading.Lock()  # one dispatch of this process at a time (its threads share the store)


def _positive(name: str, default: int | None) -> int | None:
    raw = os.environ.get(name, "").strip()
    if not raw:
        return default
    try:
        value = int(raw)
    except ValueError:
        raise ConfigError(f"{name} must be a positive integer, got {raw!r}") from None
    if not 1 <= value <= 100_000:
        raise ConfigError(f"{name} must be a positive integer, got {raw!r}")
    return value


def available_memory() -> int | None:
    """Bytes of memory available to start programs now (Linux ``MemAvailable``), or None."""
    try:
        with open("/proc/meminfo", encoding="ascii") as fh:
            for line in fh:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    try:
        return int(os.sysconf("SC_AVPHYS_PAGES")) * int(os.sysconf("SC_PAGE_SIZE"))
    except (OSError, ValueError, AttributeError):
        return None


def cores() -> int:
    """The CPU cores this process may use."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not Linux
        return max(1, os.cpu_count() or 1)


def max_jobs(running: int = 0) -> int:
    """How many jobs may run at once while ``running`` run: ``$EVALCORE_MAX_JOBS`` when set
    (ConfigError when it is not a positive integer), else the machine's rule: one per CPU core,
    as far as the memory allows :data:`JOB_MEMORY` (1.5 GiB) for each, counting the memory
    available now plus what the running jobs already hold; at least 1."""
    fixed = _positive(MAX_JOBS_ENV, None)
    if fixed is not None:
        return fixed
    free = available_memory()
    by_memory = cores() if free is None else running + free // JOB_MEMORY
    return max(1, min(cores(), by_memory))


def queue_caps() -> QueueCaps:
    """The queue's caps: ``$EVALCORE_QUEUE_MAX`` jobs queued or running in all (default 20),
    ``$EVALCORE_QUEUE_PER_KEY`` for one API key (default 5); ConfigError for a bad value."""
    total = _positive(TOTAL_ENV, DEFAULT_QUEUE_TOTAL)
    per_key = _positive(PER_KEY_ENV, DEFAULT_QUEUE_PER_KEY)
    assert total is not None and per_key is not None
    return QueueCaps(total=total, per_key=per_key)


def check_settings() -> None:
    """ConfigError, naming the variable, for a bad ``$EVALCORE_MAX_JOBS`` or queue cap (a server
    checks them at its start)."""
    max_jobs()
    queue_caps()


def submit(
    store: Store, prepared: Prepared, name: str | None = None, start: bool = True, queued_by: str | None = None
) -> str:
    """Queue a prepared job and start it if a slot is free; returns the job id (also the run id).

    ``queued_by``: the API key that queues it (its cap applies). QueueFull, with nothing queued
    (an upload saved for it is removed), when the queue is at a cap (:func:`queue_caps`).
    ``start=False`` only queues it: a process started by the caller (``evalcore job JOB_ID``)
    claims it, or the runner starts it with the next free slot (a job ending, the dashboard's
    server)."""
    spec = prepared.spec
    where = job_source(spec)
    name = check_run_name(name) if name and name.strip() else None
    name = name or (
        "demo" if where == "demo" else Path(str(spec.corpus or "run")).name if where == "folder" else "upload"
    )
    caps = queue_caps()
    try:
        with _submitting:
            job_rows.insert(store, prepared.job_id, name, spec.to_json(), queued_by, caps)
    except QueueFull:
        discard(store, prepared)
        raise
    log.info("job %s (%s) queued", prepared.job_id, name)
    if start:
        dispatch(store)
    return prepared.job_id


def _slots(running: int) -> int:
    try:
        return max_jobs(running)
    except ConfigError as exc:  # the job's own process records this as its reason
        log.warning("%s; starting one job at a time", exc)
        return 1


def dispatch(store: Store) -> list[str]:
    """Start a process for each queued job a free slot allows (dead jobs reaped first), oldest
    first; returns their ids. A process that cannot start marks its job failed. Cheap when no
    job waits or no slot is free: one read, no write lock. One dispatch of this process runs at a
    time (the server's threads would otherwise reserve the same row at once)."""
    with _dispatching:
        return _dispatch(store)


def _dispatch(store: Store) -> list[str]:
    started: list[str] = []
    reaped = False
    while True:
        running, waiting = job_rows.queued_waiting(store)
        if not waiting or running >= _slots(running):
            if started or reaped or not waiting:
                return started
            store.reap_if_due()  # a job whose process died may hold a slot: the reaper frees it
            reaped = True
            continue
        me = os.getpid()
        job_id = job_rows.reserve_next(store, _slots, me)
        if job_id is None:
            return started
        try:
            proc = spawn(store, job_id)
        except OSError as exc:
            job_rows.finish_job(store, job_id, "failed", f"its process could not start: {exc}")
            log.warning("job %s: its process could not start: %s", job_id, exc)
            continue
        job_rows.hand_over(store, job_id, me, proc.pid)
        log.info("job %s started (process %s)", job_id, proc.pid)
        started.append(job_id)


class Dispatcher:
    """A daemon thread that calls :func:`dispatch` on ``store`` every ``every`` seconds (what the
    dashboard's server runs, so a slot freed by a job whose process died is used); its errors
    are logged, never raised. :meth:`stop` ends it."""

    def __init__(self, store: Store, every: float = DISPATCH_EVERY) -> None:
        self.store, self.every = store, every
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="evalcore-dispatch", daemon=True)

    def start(self) -> Dispatcher:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()

    def _loop(self) -> None:
        while not self._stop.wait(self.every):
            if not self.store.path.exists():
                continue
            try:
                dispatch(self.store)
            except EvalcoreError as exc:
                log.debug("dispatch: %s", exc)
            except Exception:
                log.warning("dispatch failed", exc_info=True)


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
