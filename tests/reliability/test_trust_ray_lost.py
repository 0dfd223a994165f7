"""The reliability suite: a Ray worker killed during a sharded run (issue 45). The run ends
``failed`` with its reason, stores none of its results, and the command says so as a failure,
never as "unexpected ActorDiedError ... please report this".

The run is the real engine (:func:`evalcore.run.runner.run_evaluation`, the keyword embedder)
with retrieval sharded on the suite's one local Ray runtime (tests/conftest.py's
``ray_runtime``; this file runs in the same test process as the other Ray files). It pauses
once its shards are loaded (``EVALCORE_TEST_PAUSE``); a thread then kills one shard's worker
process with SIGKILL, as the OOM killer or an operator would, and lets the run go on."""

from __future__ import annotations

import os
import signal
import threading
import time
from pathlib import Path

import pytest
from test_reliability import check

pytest.importorskip("ray")

STAGE = "retrieval: shards loaded"


def _children() -> dict[int, list[int]]:
    out: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                stat = Path(f"/proc/{entry}/stat").read_text()
            except OSError:
                continue
            out.setdefault(int(stat.rsplit(")", 1)[1].split()[1]), []).append(int(entry))
    return out


def _shard_workers() -> set[int]:
    """The processes under this one (the local Ray runtime's) whose title is a shard actor's."""
    kids, todo, found = _children(), [os.getpid()], set()
    while todo:
        pid = todo.pop()
        todo += kids.get(pid, [])
        try:
            title = Path(f"/proc/{pid}/cmdline").read_bytes()
        except OSError:
            continue
        if title.startswith(b"ray::Shard"):
            found.add(pid)
    return found


def _killer(marker: Path, before: set[int], killed: list[int]) -> None:
    """Wait for the run's pause, kill one shard worker of this run, let the run go on."""
    deadline = time.monotonic() + 120
    while not marker.exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    fresh = sorted(_shard_workers() - before)
    if fresh:
        os.kill(fresh[0], signal.SIGKILL)
        killed.append(fresh[0])
        time.sleep(0.5)
    marker.unlink(missing_ok=True)


@pytest.mark.slow
def test_a_killed_ray_worker_fails_the_run_with_its_reason(ray_runtime, mini_inputs, tmp_path, monkeypatch):
    import fake

    from evalcore.chunking import parse_strategies
    from evalcore.cli.main import cluster_failure
    from evalcore.errors import ClusterError, EvalcoreError
    from evalcore.run.runner import RunRequest, run_evaluation
    from evalcore.store import Store

    corpus, gt = mini_inputs
    store = Store(tmp_path / "s.duckdb")
    marker = tmp_path / "paused"
    monkeypatch.setenv("EVALCORE_TEST_PAUSE", f"{STAGE}={marker}")
    killed: list[int] = []
    thread = threading.Thread(target=_killer, args=(marker, _shard_workers(), killed), daemon=True)
    thread.start()
    request = RunRequest(corpus, gt, parse_strategies("E"), ["dense", "bm25"], name="lost", ray="local", shards=2)
    try:
        run_evaluation(request, store, embedders=[fake.embedder()])
        raised: BaseException | None = None
    except Exception as exc:  # noqa: BLE001 - what the run raised is what is checked
        raised = exc
    thread.join(timeout=130)
    assert killed, "no shard worker of this run was found to kill"
    runs = store.runs()
    row = runs[runs["name"] == "lost"].iloc[0]
    results = int(store.query("SELECT count(*) AS n FROM results WHERE run_id = ?", [row["run_id"]])["n"][0])
    said = str(raised)
    named = "Ray lost shard" in said and "during retrieval of strategy E" in said and f"pid {killed[0]}" in said
    observed = (
        f"{type(raised).__name__ if raised else 'nothing raised'} · "
        + ("names the shard, the stage and the pid" if named else said[:200])
        + f" · run {row['status']}"
        + (" with that reason" if row["reason"] == said else f" ({row['reason']})")
        + f" · {results} results stored"
    )
    expected = "ClusterError · names the shard, the stage and the pid · run failed with that reason · 0 results stored"
    check("a Ray shard's worker killed (SIGKILL) during a sharded run", expected, observed, said)
    # the CLI prints an EvalcoreError as one line, exit 2 (a failed run), never "please report this"
    assert isinstance(raised, ClusterError) and isinstance(raised, EvalcoreError)
    assert isinstance(raised.__cause__, ray_runtime.exceptions.RayActorError)
    # and an error of the cluster that reaches the CLI elsewhere (the embedding's Ray Data) reads the same
    line = cluster_failure(raised.__cause__)
    assert line is not None and "please report" not in line and "lost a worker" in line, line


def test_the_cli_reads_a_lost_ray_worker_as_a_failure_not_a_bug(tmp_path):
    """What ``main`` prints when Ray's error of a lost worker reaches it: one line, exit 2, no
    "please report this"; an error in a task's own code stays one to report."""
    import ray.exceptions

    from evalcore.cli.main import cluster_failure, unexpected

    lost = ray.exceptions.ActorDiedError()
    own = ray.exceptions.RayTaskError("score", "Traceback ...", ValueError("a bug in a shard"))
    seen = (
        f"lost worker: {cluster_failure(lost)} · task's own error: "
        f"{'reported' if cluster_failure(own) is None and 'please report' in unexpected(own) else 'not reported'}"
    )
    check(
        "the CLI's line for Ray's ActorDiedError",
        "lost worker: the Ray cluster lost a worker, a node or an object the command needed (ActorDiedError): "
        "The actor died unexpectedly before finishing this task. · task's own error: reported",
        seen,
    )
