"""Background jobs against real processes and a real store: a CLI run and a dashboard job
at once on one store, a killed job, the queue order and cancelling.

Each job is a real ``python -m evalcore job`` process loading the real model (strategies
A,E or A-F on the mini corpus), so this file takes about a minute.
"""

from __future__ import annotations

import os
import signal
import time

import pytest
import zygote
from conftest import MINI, MINI_ARGS, ROOT

from evalcore import jobs
from evalcore.cli import main
from evalcore.errors import ConfigError
from evalcore.read.summary import summary_table
from evalcore.store import Store
from evalcore.store.connection import pid_alive

RETRIEVERS = "dense,bm25,hybrid"
TIMEOUT = 180.0


@pytest.fixture(autouse=True)
def mini_is_a_data_root(monkeypatch):
    """Server folders are read only inside the operator's data roots."""
    monkeypatch.setenv("EVALCORE_DATA_ROOTS", str(MINI))


def mini_job(strategies: str = "A,E") -> jobs.Prepared:
    return jobs.prepare_paths(
        str(MINI / "corpus"), str(MINI / "questions.jsonl"), str(MINI / "ood.jsonl"), strategies, RETRIEVERS
    )


def wait_until(predicate, timeout: float = TIMEOUT, every: float = 0.05):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(every)
    raise TimeoutError(f"condition not met within {timeout} s")


def job_done(store: Store, job_id: str) -> dict | None:
    row = jobs.job(store, job_id)
    return row if row["status"] not in jobs.ACTIVE else None


def expected_counts(store: Store, run_id: str, strategies: int, retrievers: int) -> tuple[int, int]:
    """(results rows, hits rows) a complete run must hold: every scored query (valid in-domain
    and out-of-domain) per configuration, and min(20, chunks) hits for each."""
    q = store.query("SELECT count(*) FILTER (domain = 'out' OR valid) AS n FROM queries WHERE run_id = ?", [run_id])
    n = int(q.iloc[0, 0])
    chunks = store.query("SELECT strategy, chunks FROM strategies WHERE run_id = ?", [run_id])
    hits = sum(n * retrievers * min(20, int(c)) for c in chunks["chunks"])
    assert len(chunks) == strategies
    return n * strategies * retrievers, hits


def stored_counts(store: Store, run_id: str) -> tuple[int, int]:
    r = store.query(
        "SELECT (SELECT count(*) FROM results WHERE run_id = ?) AS r, "
        "(SELECT count(*) FROM hits WHERE run_id = ?) AS h",
        [run_id, run_id],
    )
    return int(r.iloc[0, 0]), int(r.iloc[0, 1])


# --- pure parts ----------------------------------------------------------------------------


def test_job_command_has_help_text(capsys):
    with pytest.raises(SystemExit) as exc:
        main(["job", "--help"])
    assert exc.value.code == 0
    out = capsys.readouterr().out
    assert "usage: python -m evalcore job" in out and "EVALCORE_MAX_JOBS" in out


def test_max_jobs_reads_the_environment(monkeypatch):
    from evalcore.jobs import queue

    monkeypatch.delenv("EVALCORE_MAX_JOBS", raising=False)
    # the machine's rule: a slot per core, as far as 1.5 GiB each of the memory available allows
    free = queue.available_memory()
    assert free is not None
    expected = max(1, min(queue.cores(), free // queue.JOB_MEMORY))
    assert jobs.max_jobs() == expected
    # the memory the running jobs hold already counts as theirs, never beyond the cores
    assert jobs.max_jobs(running=1) == max(1, min(queue.cores(), 1 + free // queue.JOB_MEMORY))
    monkeypatch.setenv("EVALCORE_MAX_JOBS", "3")
    assert jobs.max_jobs() == 3
    for bad in ("0", "-1", "two"):
        monkeypatch.setenv("EVALCORE_MAX_JOBS", bad)
        with pytest.raises(ConfigError, match=repr(bad)):
            jobs.max_jobs()


# --- real processes ------------------------------------------------------------------------


def test_cli_run_and_dashboard_job_at_once_on_one_store(tmp_path):
    store_path = tmp_path / "evalcore.duckdb"
    store = Store(store_path)
    store.migrate()
    prepared = mini_job()
    env = dict(os.environ, HF_HUB_OFFLINE="1", PYTHONPATH=str(ROOT))
    t0 = time.perf_counter()
    cli = zygote.start(
        [
            "--store",
            str(store_path),
            "run",
            *MINI_ARGS,
            "--strategies",
            "A,E",
            "--retrievers",
            RETRIEVERS,
            "--name",
            "cli",
            "-q",
        ],
        env,
    )
    job_id = jobs.submit(store, prepared, "dashboard")
    overlap, t_cli, t_job = False, None, None
    while t_cli is None or t_job is None:  # both processes work on the store at once
        states = set(store.query("SELECT status FROM runs")["status"])
        overlap = overlap or (len(states) and len(store.runs()) == 2 and states == {"running"})
        if t_cli is None and cli.poll() is not None:
            t_cli = time.perf_counter() - t0
        if t_job is None and job_done(store, job_id):
            t_job = time.perf_counter() - t0
        assert time.perf_counter() - t0 < TIMEOUT
        time.sleep(0.1)
    out, err = cli.communicate()
    assert cli.returncode == 0, err
    row = jobs.job(store, job_id)
    print(
        f"\nCLI run {t_cli:.1f} s, dashboard job {t_job:.1f} s (wall, started together); "
        f"both running at once observed: {overlap}"
    )
    assert row["status"] == "complete", row["reason"]
    assert "lock" not in err.lower()
    runs = store.runs().set_index("name")
    assert set(runs["status"]) == {"complete"}
    for name in ("cli", "dashboard"):
        run_id = runs.loc[name, "run_id"]
        assert stored_counts(store, run_id) == expected_counts(store, run_id, 2, 3)
    # the same inputs give the same figures whichever way the run was started
    a, b = (summary_table(store, runs.loc[n, "run_id"]) for n in ("cli", "dashboard"))
    assert a.drop(columns="run_id", errors="ignore").equals(b.drop(columns="run_id", errors="ignore"))


def test_killed_job_is_marked_failed_and_the_next_run_works(tmp_path):
    store_path = tmp_path / "evalcore.duckdb"
    store = Store(store_path)
    job_id = jobs.submit(store, mini_job("A,B,C,D,E,F"), "doomed")
    # kill the process once its run is in the store and under way
    wait_until(
        lambda: len(store.query("SELECT 1 FROM runs WHERE run_id = ? AND status = 'running'", [job_id])), every=0.02
    )
    pid = int(jobs.job(store, job_id)["pid"])
    os.kill(pid, signal.SIGKILL)
    wait_until(lambda: not pid_alive(pid))
    fresh = Store(store_path)  # what the app does when it starts: open the store, which reaps
    run = fresh.run(job_id)
    assert run.status == "failed" and "killed or crashed" in run.reason, run
    assert jobs.job(fresh, job_id)["status"] == "failed"
    assert stored_counts(fresh, job_id) == (0, 0)  # partial results never look complete
    # the store is still readable and the next run works
    from evalcore.read import runs

    assert job_id in set(runs.runs_overview(fresh)["run_id"])
    next_id = jobs.submit(fresh, mini_job(), "next")
    row = wait_until(lambda: job_done(fresh, next_id))
    assert row["status"] == "complete", row["reason"]
    assert stored_counts(fresh, next_id) == expected_counts(fresh, next_id, 2, 3)


def test_queue_runs_one_at_a_time_in_order_and_cancel_works(tmp_path, monkeypatch):
    monkeypatch.setenv("EVALCORE_MAX_JOBS", "1")
    store = Store(tmp_path / "evalcore.duckdb")
    first = jobs.submit(store, mini_job("A,B,C,D,E,F"), "first")
    second = jobs.submit(store, mini_job(), "second")
    third = jobs.submit(store, mini_job(), "third")
    # a queued job is cancelled at once; its process sees that and exits
    assert jobs.cancel_job(store, third) == "cancelled"
    # the first runs alone; cancel it once its run is under way
    wait_until(
        lambda: len(store.query("SELECT 1 FROM runs WHERE run_id = ? AND status = 'running'", [first])), every=0.02
    )
    assert jobs.job(store, second)["status"] == "queued"
    assert jobs.cancel_job(store, first) == "running"
    row1 = wait_until(lambda: job_done(store, first))
    row2 = wait_until(lambda: job_done(store, second))
    assert row1["status"] == "cancelled" and row1["reason"] == jobs.CANCEL_REASON
    assert store.run(first).status == "cancelled"  # the run too, with no results
    assert stored_counts(store, first) == (0, 0)
    assert row2["status"] == "complete", row2["reason"]
    assert row2["started_at"] >= row1["finished_at"]  # it waited for the slot
    assert jobs.job(store, third)["status"] == "cancelled"
    assert store.query("SELECT count(*) FROM runs WHERE run_id = ?", [third]).iloc[0, 0] == 0


def test_a_job_that_fails_on_its_own_configuration_records_that_reason(tmp_path, monkeypatch):
    store = Store(tmp_path / "evalcore.duckdb")
    prepared = mini_job("A")
    monkeypatch.setenv("EVALCORE_MAX_JOBS", "zero")  # the job's process reads it when it starts
    job_id = jobs.submit(store, prepared, "misconfigured")
    row = wait_until(lambda: job_done(store, job_id), timeout=60)
    assert row["status"] == "failed"
    assert row["reason"] == "EVALCORE_MAX_JOBS must be a positive integer, got 'zero'"
    # the process records the reason in the store first, then prints its line and exits
    log_file = tmp_path / "jobs" / f"{job_id}.log"
    log = wait_until(lambda: "error: " in log_file.read_text() and log_file.read_text().strip(), timeout=60)
    assert log.splitlines()[-1] == "error: EVALCORE_MAX_JOBS must be a positive integer, got 'zero'"
