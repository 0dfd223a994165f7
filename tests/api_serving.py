"""What the API tests share: a store with two small complete runs made by the real CLI (the
keyword embedder of the reliability suite, so a run takes seconds; made once per session and
copied for each module), keys made by the real ``evalcore keys create``, and ``evalcore
dashboard`` started as a real process on a free port of 127.0.0.1, serving the dashboard and
``/api/v1`` on that one port."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
from built_once import built_once
from conftest import MINI, ROOT
from serving import free_port, stop

FAKE_ENV = {
    "EVALCORE_TEST_EMBEDDER": "fake:embedder",
    "PYTHONPATH": os.pathsep.join([str(ROOT), str(ROOT / "tests" / "reliability"), str(ROOT / "tests")]),
    "HF_HUB_OFFLINE": "1",
    "TRANSFORMERS_OFFLINE": "1",
}
OOD = ROOT / "tests" / "fixtures" / "gate" / "ood.jsonl"
RUN = ["run", "--corpus", str(MINI / "corpus"), "--questions", str(MINI / "questions.jsonl"), "--ood", str(OOD), "-q"]
#: ``base``: E and P; ``cand``: the same E, and P cut every 40 characters (a regression).
RUNS = {"base": "E,P:boundaries+header+intro", "cand": "E,P:blind+size=40"}
ALL_SCOPES = "read,runs:write,evaluate,gate,deploy,traffic:write,label"


def cli(store: Path, *args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """``python -m evalcore --store STORE ARGS`` as a real process."""
    return subprocess.run(
        [sys.executable, "-m", "evalcore", "--store", str(store), *args],
        cwd=ROOT,
        env={**os.environ, **FAKE_ENV, **(env or {})},
        capture_output=True,
        text=True,
        timeout=300,
    )


def _two_runs(folder: Path) -> None:
    """Two complete runs, ``base`` and ``cand`` (see :data:`RUNS`), retrievers dense and bm25, in
    ``folder / evalcore.duckdb``."""
    for name, strategies in RUNS.items():
        ran = cli(
            folder / "evalcore.duckdb", *RUN, "--strategies", strategies, "--retrievers", "dense,bm25", "--name", name
        )
        assert ran.returncode == 0, ran.stderr


def make_store(tmp_path_factory, path: Path) -> Path:
    """The store of :func:`_two_runs` at ``path``: made once per session (tests/built_once.py,
    by real CLI processes) and copied there, so each module that serves the API starts from
    the same two runs in a store of its own."""
    built = built_once(tmp_path_factory, "api-two-runs", _two_runs, copy=False) / "evalcore.duckdb"
    shutil.copy(built, path)
    return path


def make_key(store: Path, name: str, scopes: str) -> str:
    """A key made by ``evalcore keys create``: the last line of its stdout, and only that."""
    made = cli(store, "keys", "create", name, "--scope", scopes)
    assert made.returncode == 0, made.stderr
    lines = made.stdout.splitlines()
    assert lines[-1].startswith("evk_") and lines[-1].count(" ") == 0
    assert all(lines[-1] not in line for line in lines[:-1])
    return lines[-1]


@contextmanager
def api_server(store: Path, log: Path, env: dict[str, str] | None = None, base: str = "") -> Iterator[str]:
    """``evalcore dashboard --headless`` on ``store`` at a free port of 127.0.0.1; yields the
    server's URL (with ``base``, Streamlit's ``server.baseUrlPath``, e.g. ``/evalcore``) once
    ``/api/v1/health`` answers under it, stops it afterwards."""
    port = free_port()
    with open(log, "wb") as out:
        proc = subprocess.Popen(
            [sys.executable, "-m", "evalcore", "--store", str(store), "dashboard", "--headless", "--port", str(port)],
            cwd=ROOT,
            env={**os.environ, **FAKE_ENV, **(env or {})},
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    url = f"http://127.0.0.1:{port}{base}"
    try:
        deadline = time.monotonic() + 90
        while True:
            if proc.poll() is not None:
                raise RuntimeError(f"the server exited with code {proc.returncode}: {log.read_text()[-2000:]}")
            try:
                if httpx.get(url + "/api/v1/health", timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            if time.monotonic() > deadline:
                raise TimeoutError(f"no answer at {url} within 90 s")
            time.sleep(0.3)
        yield url
    finally:
        stop(proc)


def is_problem(response: httpx.Response, status: int) -> dict:
    """The response is a problem document (RFC 9457) of ``status``: returns it."""
    assert response.status_code == status, (response.status_code, response.text[:500])
    assert response.headers["content-type"].startswith("application/problem+json"), response.headers
    body = response.json()
    assert body["status"] == status and body["title"] and body["detail"] and body["type"]
    assert "Traceback" not in response.text
    return body
