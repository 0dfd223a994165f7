"""The ``jobs`` table (migration 0002): a job queued, given its process, claimed a slot in,
staged, cancelled and finished: the one API of the queue's rows (:mod:`evalcore.jobs.queue`
submits, lists and sizes the slots; the worker claims, stages and finishes through these).
The reaper (:mod:`evalcore.store.connection`) marks jobs whose process is gone."""

from __future__ import annotations

import json
import os
import socket
import uuid
from typing import TYPE_CHECKING

from evalcore.errors import StoreError
from evalcore.store.basics import now, one_row

if TYPE_CHECKING:
    import duckdb
    import pandas as pd

    from evalcore.store.connection import Connection


def insert(store: Connection, job_id: str, name: str, spec: str) -> None:
    """A new ``queued`` job (its run id is its job id) on this host."""
    with store.transaction() as con:
        con.execute(
            "INSERT INTO jobs (job_id, run_id, name, status, stage, created_at, spec, host) "
            "VALUES (?, ?, ?, 'queued', 'queued', ?, ?, ?)",
            [job_id, job_id, name, now(), spec, socket.gethostname()],
        )


def set_pid(store: Connection, job_id: str, pid: int) -> None:
    """The process started for a job (unless its process already recorded its own)."""
    with store.connect() as con:
        con.execute("UPDATE jobs SET pid = ? WHERE job_id = ? AND pid IS NULL", [pid, job_id])


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


def claim_slot(store: Connection, job_id: str, slots: int) -> tuple[str, int]:
    """Move ``job_id`` from queued to running in one transaction (dead jobs reaped first) when
    fewer than ``slots`` run and it is the oldest queued job; returns its status afterwards and
    its place in the queue (0 when not queued)."""
    with store.transaction() as con:
        store.reap(con)
        found = con.execute("SELECT status FROM jobs WHERE job_id = ?", [job_id]).fetchall()
        if not found:
            raise StoreError(f"no job {job_id!r} in {store.path}")
        if found[0][0] != "queued":
            return found[0][0], 0
        running = one_row(con, "SELECT count(*) FROM jobs WHERE status = 'running'")[0]
        queue = [
            r[0]
            for r in con.execute(
                "SELECT job_id FROM jobs WHERE status = 'queued' ORDER BY created_at, job_id"
            ).fetchall()
        ]
        place = queue.index(job_id) + 1
        if running < slots and place == 1:
            con.execute(
                "UPDATE jobs SET status = 'running', started_at = ?, pid = ?, host = ?, stage = ? WHERE job_id = ?",
                [now(), os.getpid(), socket.gethostname(), "starting", job_id],
            )
            return "running", 0
        stage = (
            f"waiting: {running} of {slots} slots busy"
            if place == 1
            else f"waiting: {place - 1} job{'s' if place > 2 else ''} ahead"
        )
        con.execute("UPDATE jobs SET stage = ?, pid = ? WHERE job_id = ?", [stage, os.getpid(), job_id])
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
