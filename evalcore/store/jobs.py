"""The ``jobs`` table (migration 0002): a job queued, given its process, claimed a slot in,
staged, cancelled and finished. :mod:`evalcore.jobs.queue` decides when; these are its
statements. The reaper (:mod:`evalcore.store.connection`) marks jobs whose process is gone."""

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


def cancel(store: Connection, job_id: str, reason: str) -> str:
    """Cancel a queued job at once (``reason`` recorded), or ask a running one to stop; returns
    its status after the call; StoreError for an unknown id."""
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


def claim(store: Connection, job_id: str, slots: int) -> tuple[str, int]:
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


def finish(store: Connection, job_id: str, status: str, reason: str | None) -> None:
    """How a queued or running job ended (a finished job is never changed)."""
    with store.connect() as con:
        con.execute(
            "UPDATE jobs SET status = ?, reason = ?, finished_at = ?, stage = NULL "
            "WHERE job_id = ? AND status IN ('queued', 'running')",
            [status, reason, now(), job_id],
        )


def set_stage(store: Connection, job_id: str, stage: str) -> None:
    """The job's stage text."""
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
