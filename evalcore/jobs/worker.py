"""A job's own process (``python -m evalcore job JOB_ID``): take its slot, run, record, and start
the next queued job (:func:`evalcore.jobs.queue.dispatch`) on its way out. The runner starts it
with a slot already given (:func:`evalcore.store.jobs.reserve_next`); started by hand, it waits
for one, polling. A job
is a run (its RunSpec executed) or, of kind ``traffic``, the replay of the queries posted to a
deployment (:func:`evalcore.traffic.posted.replay_posted`).

Whatever ends the job is its recorded reason: a cancel (``cancelled``), its own error
(a bad ``$EVALCORE_MAX_JOBS``, inputs that no longer load, a full disk) or SIGTERM/SIGINT
at any moment (``failed``, the signal named; evalcore.signals). Only a process killed outright (SIGKILL) leaves the
reason to the store's reaper ("killed or crashed").
"""

from __future__ import annotations

import dataclasses
import logging
import time
from typing import TYPE_CHECKING

from evalcore import signals
from evalcore.errors import EvalcoreError, Interrupted, RunInterrupted, StoreError
from evalcore.jobs.queue import POLL_SECONDS, dispatch, max_jobs
from evalcore.run.execute import execute
from evalcore.run.spec import RunSpec
from evalcore.store import Store as _Store
from evalcore.store.jobs import cancel_requested, claim_slot, finish_job, job_to_run, set_job_stage
from evalcore.traffic.posted import replay_posted

if TYPE_CHECKING:
    from collections.abc import Callable

    from evalcore.store import Store

log = logging.getLogger(__name__)


class CancelWatch:
    """``cancelled()`` for the runner: reads ``cancel_requested`` at most every ``interval``
    seconds (a failed read counts as not cancelled)."""

    def __init__(self, store: Store, job_id: str, interval: float = POLL_SECONDS) -> None:
        self.store, self.job_id, self.interval = store, job_id, interval
        self._last = float("-inf")
        self._value = False

    def __call__(self) -> bool:
        if self._value:
            return True
        t = time.monotonic()
        if t - self._last >= self.interval:
            self._last = t
            try:
                self._value = cancel_requested(self.store, self.job_id)
            except EvalcoreError:
                log.debug("cancel check failed", exc_info=True)
        return self._value


def run_job(store: Store, job_id: str, slots: int | None = None) -> str:
    """Take the job's slot (or wait for one), run the job, record how it ended, start the next
    queued job; returns the final status.

    Any error is recorded as the job's reason before it is raised again (the CLI then
    prints it as one line)."""
    try:
        return _recorded(store, job_id, slots)
    finally:
        _next(store)


def _recorded(store: Store, job_id: str, slots: int | None) -> str:
    try:
        with signals.handled():
            return _run(store, job_id, slots)
    except Interrupted as exc:
        _record(store, job_id, "failed", exc.reason)
        raise
    except RunInterrupted as exc:
        _record(store, job_id, "cancelled", str(exc))
        return "cancelled"
    except BaseException as exc:
        _record(
            store,
            job_id,
            "failed",
            str(exc)
            if isinstance(exc, EvalcoreError)
            else "interrupted (Ctrl-C)"
            if isinstance(exc, KeyboardInterrupt)
            else f"{type(exc).__name__}: {exc}",
        )
        raise


def _next(store: Store) -> None:
    """Start the next queued job in the slot this one leaves (best effort: the dashboard's server
    looks for free slots too)."""
    try:
        dispatch(store)
    except Exception as exc:  # noqa: BLE001 - how this job ended matters more
        log.warning("could not start the next queued job: %s", exc)


def _record(store: Store, job_id: str, status: str, reason: str) -> None:
    try:
        finish_job(store, job_id, status, reason)
    except Exception as exc:  # noqa: BLE001 - the job's own error matters more
        log.warning("job %s: could not record %s (%s): %s", job_id, status, reason, exc)


def _set_stage(store: Store, job_id: str, stage: str) -> None:
    """The job's stage before its run exists (loading inputs, loading the model); best effort."""
    try:
        set_job_stage(store, job_id, stage)
    except EvalcoreError:
        log.debug("stage update failed", exc_info=True)


def _run(store: Store, job_id: str, slots: int | None) -> str:
    found = job_to_run(store, job_id)
    if found is None:
        raise StoreError(f"no job {job_id!r} in {store.path}")
    run_id, name, spec_json, kind, deployment = found
    limit: Callable[[int], int] = max_jobs if slots is None else (lambda _running: slots)
    limit(0)  # a bad $EVALCORE_MAX_JOBS fails the job here, before anything runs
    poll = _Store(store.path, lock_timeout=2.0)
    while True:
        status, _ = claim_slot(store, job_id, limit)
        if status != "queued":
            break
        time.sleep(POLL_SECONDS)
    if status != "running":
        log.info("job %s is %s; nothing to do", job_id, status)
        return status
    watch = CancelWatch(poll, job_id)
    if kind == "traffic":  # the replay of a deployment's posted traffic (evalcore.traffic.posted)
        replay_posted(store, str(deployment), cancelled=watch, on_step=lambda stage: _set_stage(poll, job_id, stage))
    else:
        spec = dataclasses.replace(RunSpec.from_json(spec_json), name=str(name))
        execute(spec, store, cancelled=watch, run_id=str(run_id), on_step=lambda stage: _set_stage(poll, job_id, stage))
    finish_job(store, job_id, "complete", None)
    return "complete"
