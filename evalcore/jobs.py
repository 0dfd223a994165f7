"""Background jobs: runs started from the dashboard, each in its own OS process.

Design (see docs/DECISIONS.md, "Jobs and concurrency"):

- :func:`submit` inserts a ``jobs`` row (``queued``) and starts
  ``python -m evalcore --store STORE job JOB_ID`` detached (a new session, output to
  ``runs/jobs/JOB_ID.log``), so a page rerun, a reload, another tab or a restart of
  Streamlit never stops it.
- The job process waits for a slot: it claims one in a single transaction when fewer
  than :func:`max_jobs` jobs run (``$EVALCORE_MAX_JOBS``, default 1) and it is the oldest
  queued job (``created_at``, then ``job_id``); otherwise it polls every
  :data:`POLL_SECONDS`. So at most N jobs run at once and the rest start in order.
- It then runs :func:`evalcore.runner.run_evaluation` with the run id chosen at
  submission, a :class:`StoreProgress` (stage text with counts, at most ~2 store writes
  a second) and a cancel check that reads ``cancel_requested`` at most every
  :data:`POLL_SECONDS` (also between embedding batches), and records how the job ended.
- A job whose process is gone while ``queued``/``running`` is marked ``failed`` (with its
  run) the next time any process opens the store, and before each slot claim.

All store access is through :class:`evalcore.store.Store`: short connections with lock
retry. Progress and cancel polling use a second ``Store`` with a short lock timeout and
are best effort, so a busy store slows a progress bar, never a run.
"""
from __future__ import annotations

import json
import logging
import os
import socket
import subprocess
import sys
import threading
import time
import uuid
from dataclasses import asdict, dataclass
from datetime import datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Sequence

from evalcore.errors import ConfigError, EvalcoreError, InputError, RunInterrupted, StoreError

if TYPE_CHECKING:
    import duckdb
    import pandas as pd

    from evalcore.store import Store
    from evalcore.uploads import Limits, UploadedFile

log = logging.getLogger(__name__)

POLL_SECONDS = 0.5
STATUSES = ("queued", "running", "complete", "failed", "cancelled")
ACTIVE = ("queued", "running")
SOURCES = ("upload", "folder", "demo")
CANCEL_REASON = "cancelled by the user"
NEVER_STARTED_SECONDS = 120


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


def new_job_id() -> str:
    return datetime.now().strftime("%Y%m%d-%H%M%S-") + uuid.uuid4().hex[:6]


@dataclass(frozen=True, slots=True)
class JobSpec:
    """What a job evaluates. ``source``: ``upload`` (files saved under runs/uploads/JOB_ID),
    ``folder`` (paths on the server) or ``demo`` (the built-in demo; paths unused)."""

    source: str
    corpus: str | None
    questions: str | None
    ood: str | None
    strategies: str
    retrievers: str
    model: str | None = None

    def to_json(self) -> str:
        return json.dumps(asdict(self))

    @classmethod
    def from_json(cls, text: str) -> JobSpec:
        return cls(**json.loads(text))


@dataclass(frozen=True, slots=True)
class Prepared:
    """Inputs that passed validation: the job id they are saved for, the spec, the
    validation report (as ``evalcore validate --json`` prints it) and skipped uploads."""

    job_id: str
    spec: JobSpec
    report: dict[str, Any]
    skipped: tuple[str, ...]


# --- inputs -----------------------------------------------------------------------------


def load_inputs(spec: JobSpec):
    """``(corpus, ground truth)`` of a spec; InputError / ConfigError otherwise."""
    from evalcore.groundtruth import load_ground_truth

    if spec.source not in SOURCES:
        raise ConfigError(f"unknown job source {spec.source!r}; known: {', '.join(SOURCES)}")
    if spec.source == "demo":
        from evalcore import demo

        corpus = demo.load_demo_corpus()
        return corpus, load_ground_truth(corpus, demo.QUESTIONS_PATH, demo.OOD_PATH)
    from evalcore.corpus import load_corpus

    if not spec.corpus:
        raise InputError("a corpus folder is required")
    if not spec.questions:
        raise InputError("a questions.jsonl file is required")
    corpus = load_corpus(spec.corpus)
    return corpus, load_ground_truth(corpus, spec.questions, spec.ood or None)


def validate(spec: JobSpec) -> dict[str, Any]:
    """The ``evalcore validate`` report of a spec's inputs, after checking its strategies and
    retrievers. EvalcoreError when the inputs cannot be loaded or no question can be scored."""
    from evalcore.chunking import parse_strategies
    from evalcore.groundtruth import validation_report
    from evalcore.retrieval import parse_retrievers

    if not parse_strategies(spec.strategies):
        raise ConfigError("choose at least one strategy")
    if not parse_retrievers(spec.retrievers):
        raise ConfigError("choose at least one retriever")
    corpus, gt = load_inputs(spec)
    report = validation_report(corpus, gt)
    if not gt.valid_questions:
        raise InputError("no valid in-domain question to score (every needle is invalid)")
    return report


def uploads_dir(store: Store) -> Path:
    return store.path.parent / "uploads"


def prepare_upload(store: Store, corpus: Sequence[UploadedFile], questions: UploadedFile | None,
                   ood: UploadedFile | None, strategies: str, retrievers: str,
                   limits: Limits | None = None) -> Prepared:
    """Check uploads, save them under ``runs/uploads/JOB_ID/`` and validate them; on any
    error the folder is removed and InputError/ConfigError raised. The store is not written."""
    import shutil

    from evalcore.uploads import DEFAULT_LIMITS, save_upload

    job_id = new_job_id()
    saved = save_upload(uploads_dir(store) / job_id, corpus, questions, ood, limits or DEFAULT_LIMITS)
    spec = JobSpec("upload", str(saved.corpus.resolve()), str(saved.questions.resolve()),
                   str(saved.ood.resolve()) if saved.ood else None, strategies, retrievers)
    try:
        report = validate(spec)
    except BaseException:
        shutil.rmtree(saved.folder, ignore_errors=True)
        raise
    return Prepared(job_id, spec, report, saved.skipped)


def prepare_paths(corpus: str, questions: str, ood: str | None, strategies: str, retrievers: str) -> Prepared:
    """Validate a corpus folder and jsonl files that are already on the server."""
    paths = [str(Path(p).expanduser().resolve()) if p else None for p in (corpus, questions, ood)]
    spec = JobSpec("folder", paths[0], paths[1], paths[2], strategies, retrievers)
    return Prepared(new_job_id(), spec, validate(spec), ())


def prepare_demo(strategies: str, retrievers: str) -> Prepared:
    """Validate the built-in demo with these strategies and retrievers."""
    spec = JobSpec("demo", None, None, None, strategies, retrievers)
    return Prepared(new_job_id(), spec, validate(spec), ())


# --- queue ------------------------------------------------------------------------------


def _now() -> datetime:
    from evalcore.store import now

    return now()


def _wait_for(proc: subprocess.Popen) -> None:
    threading.Thread(target=proc.wait, name=f"evalcore-job-{proc.pid}", daemon=True).start()


def spawn(store: Store, job_id: str) -> subprocess.Popen:
    """Start the job's process detached (new session), output to ``runs/jobs/JOB_ID.log``.

    A daemon thread waits for it, so a job killed while this process lives does not stay
    a zombie (which would look alive to the reaper)."""
    root = Path(__file__).resolve().parents[1]
    env = dict(os.environ, HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1")
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(root), env.get("PYTHONPATH")) if p)
    logs = store.path.parent / "jobs"
    logs.mkdir(parents=True, exist_ok=True)
    with open(logs / f"{job_id}.log", "ab") as out:
        proc = subprocess.Popen(
            [sys.executable, "-m", "evalcore", "--store", str(store.path.resolve()), "job", job_id],
            stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT, env=env,
            start_new_session=True, close_fds=True,
        )
    _wait_for(proc)
    return proc


def submit(store: Store, prepared: Prepared, name: str | None = None, start: bool = True) -> str:
    """Queue a prepared job and start its process; returns the job id (also the run id).

    ``start=False`` only queues it (a test, or a caller that spawns it itself)."""
    spec = prepared.spec
    name = (name or "").strip() or (
        "demo" if spec.source == "demo" else Path(spec.corpus or "run").name
        if spec.source == "folder" else "upload")
    with store.transaction() as con:
        con.execute(
            "INSERT INTO jobs (job_id, run_id, name, status, stage, created_at, spec, host) "
            "VALUES (?, ?, ?, 'queued', 'queued', ?, ?, ?)",
            [prepared.job_id, prepared.job_id, name, _now(), spec.to_json(), socket.gethostname()])
    if start:
        proc = spawn(store, prepared.job_id)
        with store.connect() as con:
            con.execute("UPDATE jobs SET pid = ? WHERE job_id = ? AND pid IS NULL", [proc.pid, prepared.job_id])
    log.info("job %s (%s) queued", prepared.job_id, name)
    return prepared.job_id


def cancel(store: Store, job_id: str) -> str:
    """Cancel a job: a queued one is cancelled at once, a running one is asked to stop (its
    run ends ``cancelled`` within about a second, or at the end of the current embedding
    batch). Returns the job's status after the call; StoreError for an unknown id."""
    with store.transaction() as con:
        found = con.execute("SELECT status FROM jobs WHERE job_id = ?", [job_id]).fetchall()
        if not found:
            raise StoreError(f"no job {job_id!r} in {store.path}")
        status = found[0][0]
        if status == "queued":
            con.execute("UPDATE jobs SET status = 'cancelled', cancel_requested = true, finished_at = ?, "
                        "reason = ?, stage = NULL WHERE job_id = ?",
                        [_now(), CANCEL_REASON + " before it started", job_id])
            return "cancelled"
        if status == "running":
            con.execute("UPDATE jobs SET cancel_requested = true WHERE job_id = ?", [job_id])
        return status


def job(store: Store, job_id: str) -> dict[str, Any]:
    """One job's row (spec parsed) joined with its run's status, stage and progress."""
    df = jobs_overview(store)
    df = df[df["job_id"] == job_id]
    if df.empty:
        raise StoreError(f"no job {job_id!r} in {store.path}")
    return df.iloc[0].to_dict()


def jobs_overview(store: Store, limit: int = 50) -> pd.DataFrame:
    """The newest ``limit`` jobs, newest first: job_id, run_id, name, status, created_at,
    started_at, finished_at, reason, cancel_requested, pid, spec, run_status, stage (the run's stage
    while it runs, else the job's), progress (0..1), position (1 = next to start; queued only)."""
    df = store.query(
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
        """, [limit])
    return df


def active_jobs(store: Store) -> pd.DataFrame:
    """Queued and running jobs (see :func:`jobs_overview`)."""
    df = jobs_overview(store, limit=1000)
    return df[df["status"].isin(ACTIVE)]


def _claim(store: Store, job_id: str, slots: int) -> tuple[str, int]:
    """Try to move ``job_id`` from queued to running, in one transaction. Returns its status
    afterwards and its place in the queue (0 when not queued)."""
    with store.transaction() as con:
        store.reap(con)
        found = con.execute("SELECT status FROM jobs WHERE job_id = ?", [job_id]).fetchall()
        if not found:
            raise StoreError(f"no job {job_id!r} in {store.path}")
        if found[0][0] != "queued":
            return found[0][0], 0
        running = con.execute("SELECT count(*) FROM jobs WHERE status = 'running'").fetchone()[0]
        queue = [r[0] for r in con.execute(
            "SELECT job_id FROM jobs WHERE status = 'queued' ORDER BY created_at, job_id").fetchall()]
        place = queue.index(job_id) + 1
        if running < slots and place == 1:
            con.execute("UPDATE jobs SET status = 'running', started_at = ?, pid = ?, host = ?, stage = ? "
                        "WHERE job_id = ?", [_now(), os.getpid(), socket.gethostname(), "starting", job_id])
            return "running", 0
        stage = (f"waiting: {running} of {slots} slots busy" if place == 1
                 else f"waiting: {place - 1} job{'s' if place > 2 else ''} ahead")
        con.execute("UPDATE jobs SET stage = ?, pid = ? WHERE job_id = ?", [stage, os.getpid(), job_id])
        return "queued", place


def _finish(store: Store, job_id: str, status: str, reason: str | None) -> None:
    with store.connect() as con:
        con.execute("UPDATE jobs SET status = ?, reason = ?, finished_at = ?, stage = NULL "
                    "WHERE job_id = ? AND status IN ('queued', 'running')", [status, reason, _now(), job_id])


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
                df = self.store.query("SELECT cancel_requested FROM jobs WHERE job_id = ?", [self.job_id])
                self._value = bool(len(df) and df.iloc[0, 0])
            except EvalcoreError:
                log.debug("cancel check failed", exc_info=True)
        return self._value


# --- the job process --------------------------------------------------------------------


def _set_stage(store: Store, job_id: str, stage: str) -> None:
    try:
        with store.connect() as con:
            con.execute("UPDATE jobs SET stage = ? WHERE job_id = ?", [stage, job_id])
    except EvalcoreError:
        log.debug("stage update failed", exc_info=True)


def run_job(store: Store, job_id: str, slots: int | None = None) -> str:
    """Wait for a slot, run the job, record how it ended; returns the final status.

    Called in the job's own process by ``python -m evalcore job JOB_ID``."""
    from evalcore.chunking import parse_strategies
    from evalcore.retrieval import parse_retrievers
    from evalcore.runner import RunRequest, run_evaluation
    from evalcore.store import Store as _Store

    slots = slots or max_jobs()
    poll = _Store(store.path, lock_timeout=2.0)
    found = store.query("SELECT run_id, name, spec FROM jobs WHERE job_id = ?", [job_id])
    if found.empty:
        raise StoreError(f"no job {job_id!r} in {store.path}")
    run_id, name, spec_json = found.iloc[0]
    spec = JobSpec.from_json(spec_json)
    while True:
        status, _ = _claim(store, job_id, slots)
        if status != "queued":
            break
        time.sleep(POLL_SECONDS)
    if status != "running":
        log.info("job %s is %s; nothing to do", job_id, status)
        return status
    watch = CancelWatch(poll, job_id)
    try:
        _set_stage(poll, job_id, "loading inputs")
        corpus, gt = load_inputs(spec)
        if watch():
            raise RunInterrupted(CANCEL_REASON)
        _set_stage(poll, job_id, "loading the model")
        from evalcore.embedding import SentenceEmbedder

        embedder = SentenceEmbedder.load(spec.model)
        if watch():
            raise RunInterrupted(CANCEL_REASON)
        strategies = parse_strategies(spec.strategies)
        request = RunRequest(corpus=corpus, ground_truth=gt, strategies=strategies,
                             retrievers=parse_retrievers(spec.retrievers), name=str(name))
        _set_stage(poll, job_id, "running")
        run_evaluation(request, store, embedder=embedder, cancelled=watch, run_id=str(run_id))
    except RunInterrupted as exc:
        status = "cancelled" if "cancel" in str(exc) else "failed"
        _finish(store, job_id, status, str(exc))
        return status
    except BaseException as exc:
        _finish(store, job_id, "failed", f"{type(exc).__name__}: {exc}")
        raise
    _finish(store, job_id, "complete", None)
    return "complete"


def discard(store: Store, prepared: Prepared) -> None:
    """Forget prepared inputs that were never submitted (removes a saved upload folder)."""
    import shutil

    if prepared.spec.source == "upload":
        folder = uploads_dir(store) / prepared.job_id
        with store.connect() as con:
            queued = con.execute("SELECT count(*) FROM jobs WHERE job_id = ?", [prepared.job_id]).fetchone()[0]
        if not queued:
            shutil.rmtree(folder, ignore_errors=True)


def clean_uploads(store: Store, max_age_hours: float = 24.0) -> list[str]:
    """Remove upload folders that no job refers to and that are older than ``max_age_hours``
    (inputs validated but never started); folders of submitted jobs stay, since their
    runs point at them. Returns the removed folder names."""
    import shutil

    root = uploads_dir(store)
    if not root.is_dir():
        return []
    known = set(store.query("SELECT job_id FROM jobs")["job_id"])
    cutoff = time.time() - max_age_hours * 3600
    removed = []
    for folder in root.iterdir():
        if folder.is_dir() and folder.name not in known and folder.stat().st_mtime < cutoff:
            shutil.rmtree(folder, ignore_errors=True)
            removed.append(folder.name)
    return removed


def reap_now(store: Store) -> list[str]:
    """Reap dead jobs now (the store reaps only when first opened); returns their ids."""
    return store.reap()
