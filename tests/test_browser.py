"""The app in a real headless browser: `streamlit run app.py` against the engine-made store,
every page opened in Debian's chromium (driven by playwright, launched on /usr/bin/chromium;
`playwright install` is never run), failing on any exception shown in a page.

Skipped, with the reason, when chromium or the playwright package is absent.
Set EVALCORE_SCREENSHOTS=<folder> to keep a PNG of each page.
"""
from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
PAGES = ("", "new_run", "compare", "distances", "threshold", "query", "index", "export")
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--disable-dev-shm-usage"]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _wait_healthy(url: str, proc: subprocess.Popen, timeout: float = 60.0) -> None:
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


@pytest.fixture(scope="module")
def app_url(engine_store, tmp_path_factory):
    if CHROMIUM is None:
        pytest.skip("chromium is not installed (apt-get install chromium)")
    pytest.importorskip("playwright.sync_api", reason="the playwright package is not installed (pip install playwright)")
    port = _free_port()
    log = tmp_path_factory.mktemp("streamlit") / "streamlit.log"
    env = dict(os.environ, EVALCORE_STORE=str(engine_store), HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1")
    with open(log, "wb") as out:
        proc = subprocess.Popen(
            [sys.executable, "-m", "streamlit", "run", str(ROOT / "app.py"), "--server.headless", "true",
             "--server.port", str(port), "--server.address", "127.0.0.1",
             "--browser.gatherUsageStats", "false", "--server.fileWatcherType", "none"],
            cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT,
        )
    url = f"http://127.0.0.1:{port}"
    try:
        _wait_healthy(url, proc)
        yield url
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()


def _settled(page, timeout_ms: int = 90_000) -> None:
    """Wait until the app has drawn a title and no script run is in progress."""
    page.wait_for_selector("h1", timeout=timeout_ms)
    deadline = time.monotonic() + timeout_ms / 1000
    quiet_since = None
    while time.monotonic() < deadline:
        running = page.locator('[data-testid="stStatusWidget"]').count() > 0 or \
            page.locator('[data-testid="stSkeleton"]').count() > 0
        if running:
            quiet_since = None
        elif quiet_since is None:
            quiet_since = time.monotonic()
        elif time.monotonic() - quiet_since > 1.5:
            return
        time.sleep(0.2)
    raise TimeoutError("the page kept running")


def test_every_page_in_chromium(app_url):
    from playwright.sync_api import sync_playwright

    shots = os.environ.get("EVALCORE_SCREENSHOTS")
    problems = []
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)
        try:
            page = browser.new_page(viewport={"width": 1400, "height": 1000})
            for path in PAGES:
                page.goto(f"{app_url}/{path}", wait_until="domcontentloaded")
                _settled(page)
                name = path or "runs"
                if shots:
                    Path(shots).mkdir(parents=True, exist_ok=True)
                    page.screenshot(path=str(Path(shots) / f"{name}.png"), full_page=True)
                exceptions = page.locator('[data-testid="stException"]')
                if exceptions.count():
                    problems.append(f"{name}: {exceptions.first.inner_text()[:500]}")
                body = page.locator("body").inner_text()
                if "Traceback" in body:
                    problems.append(f"{name}: a traceback is shown")
                if page.locator("h1").count() == 0:
                    problems.append(f"{name}: no title drawn")
        finally:
            browser.close()
    assert not problems, "\n".join(problems)
