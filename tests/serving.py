"""Helpers for tests that start the dashboard and drive it from a real browser: a free port on
127.0.0.1, waiting for Streamlit's health check, Debian's chromium for playwright, and the
checks every page must pass (settled, healthy)."""

from __future__ import annotations

import os
import re
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-dev-shm-usage",
]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_healthy(url: str, proc: subprocess.Popen, timeout: float = 60.0) -> None:
    """Return once Streamlit at ``url`` answers its health check; RuntimeError when the
    process ended first, TimeoutError after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"streamlit exited with code {proc.returncode}")
        try:
            with urllib.request.urlopen(url + "/_stcore/health", timeout=2) as response:
                if response.read().strip() == b"ok":
                    return
        except OSError:
            time.sleep(0.3)
    raise TimeoutError(f"streamlit did not answer at {url} within {timeout} s")


def stop(proc: subprocess.Popen) -> None:
    """Terminate a server started by a test, killing it after 10 s."""
    proc.terminate()
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


@contextmanager
def streamlit_app(store: Path, log: Path, extra_env: dict[str, str] | None = None) -> Iterator[str]:
    """``streamlit run app.py`` on the store ``store`` at a free port of 127.0.0.1, its output
    in ``log`` (``extra_env``: more environment, e.g. EVALCORE_USER_HEADER): yields the URL once
    the app answers, stops the server afterwards."""
    port = free_port()
    env = dict(os.environ, EVALCORE_STORE=str(store), HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1", **(extra_env or {}))
    with open(log, "wb") as out:
        proc = subprocess.Popen(
            [sys.executable, "-m", "streamlit", "run", str(ROOT / "app.py"), "--server.headless", "true"]
            + ["--server.port", str(port), "--server.address", "127.0.0.1", "--browser.gatherUsageStats", "false"]
            + ["--server.fileWatcherType", "none"],
            cwd=ROOT,
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    url = f"http://127.0.0.1:{port}"
    try:
        wait_healthy(url, proc)
        yield url
    finally:
        stop(proc)


#: Any of these on the page means a script run is in progress or its output is not drawn yet:
#: the app root's script state (set as soon as the server says a run started, where the status
#: widget shows only after 500 ms of running), a connection that is not up, the status widget,
#: a skeleton, or an element left stale by the run in progress.
_BUSY_JS = """() => {
    const app = document.querySelector('[data-testid="stApp"]');
    if (!app) return true;
    const state = app.getAttribute('data-test-script-state');
    if (state !== null && state !== 'notRunning' && state !== 'compilationError') return true;
    const connection = app.getAttribute('data-test-connection-state');
    if (connection && connection !== 'CONNECTED') return true;
    return document.querySelector(
        '[data-testid="stStatusWidget"], [data-testid="stSkeleton"], [data-stale="true"]') !== null;
}"""
#: How long the page must stay idle to count as settled: longer than the time between an
#: action and the server's "script is running" (a round trip on 127.0.0.1), and than the time a
#: data grid takes to draw its cells once the run has ended (with 0.5 s, one journey read a
#: grid before its cells were drawn, at a load of 20 on 2 cores). The earlier 1.2 s counted
#: the status widget only, which shows 500 ms into a run.
QUIET_S = 1.0


def _busy(page) -> bool:
    from playwright.sync_api import Error

    try:
        return bool(page.evaluate(_BUSY_JS))
    except Error:
        if page.is_closed():
            raise
        return True  # a navigation replaced the page's context: not settled yet


def _log_wait(total: float, busy: float) -> None:
    """With EVALCORE_TEST_WAITS=FILE, one line per settled page: seconds in all, seconds busy."""
    log = os.environ.get("EVALCORE_TEST_WAITS")
    if log:
        with open(log, "a", encoding="utf-8") as out:
            out.write(f"{os.environ.get('PYTEST_CURRENT_TEST', '?').split(' ')[0]}\t{total:.3f}\t{busy:.3f}\n")


def settled(page, timeout_s: float = 120) -> None:
    """Wait until the app has drawn a title and no script run is in progress."""
    began = time.monotonic()
    page.wait_for_selector("h1", timeout=timeout_s * 1000)
    deadline = time.monotonic() + timeout_s
    quiet_since = None
    while time.monotonic() < deadline:
        if _busy(page):
            quiet_since = None
        elif quiet_since is None:
            quiet_since = time.monotonic()
        elif time.monotonic() - quiet_since > QUIET_S:
            _log_wait(time.monotonic() - began, quiet_since - began)
            return
        time.sleep(0.1)
    raise TimeoutError("the page kept running")


def healthy(page, where: str) -> None:
    """No exception, traceback or magic echo on the page; a screenshot when asked for."""
    shots = os.environ.get("EVALCORE_SCREENSHOTS")
    if shots:
        Path(shots).mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(Path(shots) / f"{re.sub(r'[^A-Za-z0-9_-]+', '_', where)}.png"), full_page=True)
    exceptions = page.locator('[data-testid="stException"]')
    assert exceptions.count() == 0, f"{where}: {exceptions.first.inner_text()[:800]}"
    body = page.locator("body").inner_text()
    assert "Traceback" not in body, f"{where}: a traceback is shown"
    assert page.locator('[data-testid="stHelp"]').count() == 0, f"{where}: an object is echoed (Streamlit magic)"
    assert "DeltaGenerator" not in body and "<function " not in body, f"{where}: an object is echoed"
    assert page.locator("h1").count() == 1, f"{where}: no title drawn"
