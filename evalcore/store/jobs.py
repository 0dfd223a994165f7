"""The ``jobs`` table (migrations 0002, 0015): a job queued (within the queue's caps), given a
slot and its process, staged, cancelled and finished: the one API of the queue's rows
(:mod:`evalcore.jobs.queue` submits, lists, sizes the slots and starts the processes; the worker
claims, stages and finishes through these). The reaper (:mod:`evalcore.store.connection`) marks
jobs whose process is gone.

A queued job has no process (``pid`` NULL) until :func:`reserve_next` gives it a slot: the job
becomes ``running`` (stage ``starting``) under the pid of the process that starts it, which then
hands the row to the job's own process (:func:`hand_over`). Only a job started by hand
(``evalcore job JOB_ID``) waits for a slot in a process of its own (:func:`claim_slot`)."""

from __future__ import annotations

import json
import math
import os
import socket
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from evalcore.errors import QueueFull, StoreError
from evalcore.store.basics import now, one_row

if TYPE_CHECKING:
    import duckdb
    import pandas as pd

    from evalcore.store.connection import Connection


@dataclass(frozen=True, slots=True)
class QueueCaps:
    """How many jobs may be queued or running at once: ``total`` in all, ``per_key`` for one API
    key (jobs queued without a key count toward ``total`` only)."""

    total: int
    per_key: int


#: Seconds a caller over a cap is told to wait when no job has finished yet to time one by.
DEFAULT_RETRY_AFTER = 30


def insert(
    store: Connection,
    job_id: str,
    name: str,
    spec: str,
    queued_by: str | None = None,
    caps: QueueCaps | None = None,
) -> None:
    """A new ``queued`` job (its run id is its job id) on this host, queued by the API key
    ``queued_by`` (None: the screen or the CLI). With ``caps``, QueueFull (and nothing written)
    when the queue already holds ``caps.total`` active jobs, or ``caps.per_key`` of that key's:
    counted and written in one transaction."""
    with store.transaction() as con:
        if caps is not None:
            total = one_row(con, "SELECT count(*) FROM jobs WHERE status IN ('queued', 'running')")[0]
            if total >= caps.total:
                raise QueueFull(
                    f"the job queue is full: {total} jobs are queued or running, the most the server takes "
                    f"(${TOTAL_ENV}); try again later",
                    _retry_after(con),
                )
            if queued_by is not None:
                mine = one_row(
                    con,
                    "SELECT count(*) FROM jobs WHERE status IN ('queued', 'running') AND queued_by = ?",
                    [queued_by],
                )[0]
                if mine >= caps.per_key:
                    raise QueueFull(
                        f"this key has {mine} evaluations queued or running, the most one key may have "
                        f"(${PER_KEY_ENV}); try again when one has ended",
                        _retry_after(con),
                    )
        con.execute(
            "INSERT INTO jobs (job_id, run_id, name, status, stage, created_at, spec, host, queued_by) "
            "VALUES (?, ?, ?, 'queued', 'queued', ?, ?, ?, ?)",
            [job_id, job_id, name, now(), spec, socket.gethostname(), queued_by],
        )


#: The variables that set :class:`QueueCaps` (read by :func:`evalcore.jobs.queue.queue_caps`).
TOTAL_ENV = "EVALCORE_QUEUE_MAX"
PER_KEY_ENV = "EVALCORE_QUEUE_PER_KEY"


def _retry_after(con: duckdb.DuckDBPyConnection) -> int:
    """About how long one job takes here: the median run time of the last 20 jobs that ended
    (:data:`DEFAULT_RETRY_AFTER` when none has), in whole seconds from 1 to 3600."""
    found = one_row(
        con,
        "SELECT median(epoch(finished_at) - epoch(started_at)) FROM (SELECT started_at, finished_at FROM jobs "
        "WHERE started_at IS NOT NULL AND finished_at IS NOT NULL ORDER BY finished_at DESC LIMIT 20)",
    )[0]
    seconds = DEFAULT_RETRY_AFTER if found is None else float(found)
    return int(min(3600, max(1, math.ceil(seconds))))


CANCELLED_BEFORE_START = "cancelled by the user before it started"


def cancel_job(store: Connection, job_id: str, reason: str = CANCELLED_BEFORE_START) -> str:
    """Cancel a queued job at once (``reason`` recorded), or ask a running one to stop (its run
    ends ``cancelled`` within about a second, or at the end of the current embedding batch);
    returns its status after the call; StoreError for an unknown id."""
    with store.transaction() as con:
        found = con.execute("SELECT status FROM jobs WHERE job_id = ?", [job_id]).fetchall()
        if not found:
            raise StoreError(f"no job {job_id!r} in {store.path}")
        status: str = found[0][0]
        if status == "queued":
            con.execute(
                "UPDATE jobs SET status = 'cancelled', cancel_requested = true, finished_at = ?, "
                "reason = ?, stage = NULL WHERE job_id = ?",
                [now(), reason, job_id],
            )
            return "cancelled"
        if status == "running":
            con.execute("UPDATE jobs SET cancel_requested = true WHERE job_id = ?", [job_id])
        return status


def reserve_next(store: Connection, slots: Callable[[int], int], starter: int) -> str | None:
    """Give the oldest queued job a slot, in one transaction (dead jobs reaped first), when fewer
    jobs run than ``slots(running)`` allows: it becomes ``running`` (stage ``starting``) under the
    pid ``starter`` of the process that is about to start it; returns its id. None when no slot
    is free, no job is queued, or the oldest queued job waits in a process of its own (started
    by hand: it claims the slot itself, in order)."""
    with store.transaction() as con:
        store.reap(con)
        running = one_row(con, "SELECT count(*) FROM jobs WHERE status = 'running'")[0]
        if running >= slots(running):
            return None
        found = con.execute(
            "SELECT job_id, pid FROM jobs WHERE status = 'queued' ORDER BY created_at, job_id LIMIT 1"
        ).fetchall()
        if not found or found[0][1] is not None:
            return None
        job_id = str(found[0][0])
        con.execute(
            "UPDATE jobs SET status = 'running', started_at = ?, pid = ?, host = ?, stage = 'starting' "
            "WHERE job_id = ?",
            [now(), starter, socket.gethostname(), job_id],
        )
        return job_id


def hand_over(store: Connection, job_id: str, starter: int, pid: int) -> None:
    """The process ``pid`` started for ``job_id`` by ``starter`` now owns its row (unless it
    took the row over already)."""
    with store.connect() as con:
        con.execute(
            "UPDATE jobs SET pid = ? WHERE job_id = ? AND status = 'running' AND pid = ?", [pid, job_id, starter]
        )


def queued_waiting(store: Connection) -> tuple[int, int]:
    """(jobs running, queued jobs without a process) now: whether :func:`reserve_next` may have
    work (read only, so the look costs no write lock)."""
    with store.read() as con:
        running, waiting = one_row(
            con,
            "SELECT count(*) FILTER (status = 'running'), count(*) FILTER (status = 'queued' AND pid IS NULL) "
            "FROM jobs",
        )
    return int(running), int(waiting)


def claim_slot(store: Connection, job_id: str, slots: Callable[[int], int]) -> tuple[str, int]:
    """The job's own process takes its row: a job given a slot by :func:`reserve_next` (running,
    under this process's pid or its parent's, the process that started it) is taken over at once;
    a queued one (started by hand) moves to running in one transaction (dead jobs reaped first)
    when fewer than ``slots(running)`` run and it is the oldest queued job. Returns its status afterwards
    (``running`` when this process is to run it; a job running in another process is
    ``elsewhere``) and its place in the queue (0 when not queued)."""
    me, parent = os.getpid(), os.getppid()
    with store.transaction() as con:
        store.reap(con)
        found = con.execute("SELECT status, pid FROM jobs WHERE job_id = ?", [job_id]).fetchall()
        if not found:
            raise StoreError(f"no job {job_id!r} in {store.path}")
        status, pid = found[0]
        if status == "running":
            if pid in (me, parent):
                con.execute(
                    "UPDATE jobs SET pid = ?, host = ? WHERE job_id = ?",
                    [me, socket.gethostname(), job_id],
                )
                return "running", 0
            return "elsewhere", 0
        if status != "queued":
            return str(status), 0
        running = one_row(con, "SELECT count(*) FROM jobs WHERE status = 'running'")[0]
        queue = [
            r[0]
            for r in con.execute(
                "SELECT job_id FROM jobs WHERE status = 'queued' ORDER BY created_at, job_id"
            ).fetchall()
        ]
        place = queue.index(job_id) + 1
        allowed = slots(running)
        if running < allowed and place == 1:
            con.execute(
                "UPDATE jobs SET status = 'running', started_at = ?, pid = ?, host = ?, stage = ? WHERE job_id = ?",
                [now(), me, socket.gethostname(), "starting", job_id],
            )
            return "running", 0
        waiting = (
            f"waiting: {running} of {allowed} slots busy"
            if place == 1
            else f"waiting: {place - 1} job{'s' if place > 2 else ''} ahead"
        )
        con.execute("UPDATE jobs SET stage = ?, pid = ? WHERE job_id = ?", [waiting, me, job_id])
        return "queued", place


def finish_job(store: Connection, job_id: str, status: str, reason: str | None) -> None:
    """How a queued or running job ended (a finished job is never changed)."""
    with store.connect() as con:
        con.execute(
            "UPDATE jobs SET status = ?, reason = ?, finished_at = ?, stage = NULL "
            "WHERE job_id = ? AND status IN ('queued', 'running')",
            [status, reason, now(), job_id],
        )


def set_job_stage(store: Connection, job_id: str, stage: str) -> None:
    """The job's stage text (before its run exists: loading inputs, loading the model)."""
    with store.connect() as con:
        con.execute("UPDATE jobs SET stage = ? WHERE job_id = ?", [stage, job_id])


def queue_traffic(con: duckdb.DuckDBPyConnection, deployment: str, run_id: str) -> str | None:
    """Inside the caller's transaction: a ``queued`` replay job (kind ``traffic``) for
    ``deployment`` unless one is queued already (a queued replay takes every line pending when
    it starts). Returns the new job's id, or None."""
    queued = con.execute(
        "SELECT job_id FROM jobs WHERE kind = 'traffic' AND deployment = ? AND status = 'queued'", [deployment]
    ).fetchall()
    if queued:
        return None
    job_id = "traffic-" + uuid.uuid4().hex[:12]
    con.execute(
        "INSERT INTO jobs (job_id, run_id, name, status, stage, created_at, spec, host, kind, deployment) "
        "VALUES (?, ?, ?, 'queued', 'queued', ?, ?, ?, 'traffic', ?)",
        [
            job_id,
            run_id,
            f"traffic {deployment}",
            now(),
            json.dumps({"deployment": deployment}),
            socket.gethostname(),
            deployment,
        ],
    )
    return job_id


def cancel_requested(store: Connection, job_id: str) -> bool:
    """Whether a cancel of ``job_id`` was asked for (False for an unknown job; read only)."""
    df = store.query("SELECT cancel_requested FROM jobs WHERE job_id = ?", [job_id])
    return bool(len(df) and df.iloc[0, 0])


def job_to_run(store: Connection, job_id: str) -> tuple[str, str, str, str, str | None] | None:
    """What a job's process runs: (run id, run name, spec JSON, kind, deployment) of
    ``job_id``, or None when the store holds no such job (read only)."""
    found = store.query("SELECT run_id, name, spec, kind, deployment FROM jobs WHERE job_id = ?", [job_id])
    if found.empty:
        return None
    run_id, name, spec, kind, deployment = found.iloc[0]
    return run_id, name, spec, kind, deployment


def overview(store: Connection, limit: int) -> pd.DataFrame:
    """The newest ``limit`` jobs with their runs' status, stage and progress, newest first, as
    :func:`evalcore.jobs.queue.jobs_overview` describes them (read only; no reaping)."""
    return store.query(
        """
        SELECT j.job_id, j.run_id, j.name, j.status, j.created_at, j.started_at, j.finished_at,
               j.reason, j.cancel_requested, j.pid, j.spec, r.status AS run_status,
               CASE WHEN j.status = 'running' AND r.status = 'running' THEN r.stage ELSE j.stage END AS stage,
               CASE WHEN j.status = 'complete' THEN 1.0
                    WHEN j.status = 'running' THEN coalesce(r.progress, 0.0) ELSE 0.0 END AS progress,
               CASE WHEN j.status = 'queued' THEN
                    row_number() OVER (PARTITION BY j.status ORDER BY j.created_at, j.job_id) END AS position
        FROM jobs j LEFT JOIN runs r ON r.run_id = j.run_id
        ORDER BY j.created_at DESC, j.job_id DESC
        LIMIT ?
        """,
        [limit],
    )


def job_exists(store: Connection, job_id: str) -> bool:
    """Whether a job with this id was ever submitted."""
    return bool(store.query("SELECT count(*) AS n FROM jobs WHERE job_id = ?", [job_id])["n"][0])


def job_ids(store: Connection) -> set[str]:
    """The ids of every job ever submitted."""
    return set(store.query("SELECT job_id FROM jobs")["job_id"])
