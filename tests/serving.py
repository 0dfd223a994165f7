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
#: a skeleton, or an element left stale by the run in progress. ``grid``: a data grid in view
#: has no cell drawn yet (it draws its cells after the run has ended; one out of view, never).
_BUSY_JS = """() => {
    const app = document.querySelector('[data-testid="stApp"]');
    if (!app) return {busy: true, grid: false};
    const grid = [...document.querySelectorAll('[data-testid="stDataFrame"]')].some((g) => {
        const r = g.getBoundingClientRect();
        return r.height > 0 && r.top < innerHeight && r.bottom > 0 && g.querySelector('[role="gridcell"]') === null;
    });
    const state = app.getAttribute('data-test-script-state');
    if (state !== null && state !== 'notRunning' && state !== 'compilationError') return {busy: true, grid};
    const connection = app.getAttribute('data-test-connection-state');
    if (connection && connection !== 'CONNECTED') return {busy: true, grid};
    const busy = document.querySelector(
        '[data-testid="stStatusWidget"], [data-testid="stSkeleton"], [data-stale="true"]') !== null;
    return {busy, grid};
}"""
#: How long a page must stay idle to count as settled when nothing else says whether a run is
#: due (a page whose connection :func:`watch` did not see open): longer than the time between
#: an action and the server's "script is running" (a round trip on 127.0.0.1, seconds on a
#: loaded machine), and than the time a data grid takes to draw its cells once the run has
#: ended (with 0.5 s, one journey read a grid before its cells were drawn, at a load of 20 on
#: 2 cores). The earlier 1.2 s counted the status widget only, which shows 500 ms into a run.
QUIET_S = 1.0
#: How long a watched page must stay idle: the server's messages say when the run a click or
#: a key asked for has ended (:class:`_Wire`), so the quiet only covers the browser's own step
#: from an input event to the message it sends (a click's and a key's are sent while the event
#: is handled, before playwright's call returns) and drawing the last message. A data grid
#: without a drawn cell still waits :data:`QUIET_S`.
WATCHED_QUIET_S = 0.3
#: A rerun asked for that no run answers within this many seconds of silence (a request the
#: server dropped, as it does for a fragment that no longer exists) stops counting as due.
ANSWER_S = 10.0


class _Wire:
    """What a page and its Streamlit server said to each other over the app's WebSocket (the
    same protobuf messages the server sends, decoded with Streamlit's own classes), so that
    :func:`settled` knows whether a run is due instead of waiting for quiet:

    - a ``rerun_script`` the page sent (a widget changed, a page opened, a link followed) is due
      until a run that started after it (``new_session``) has finished (``script_finished``,
      not ``FINISHED_EARLY_FOR_RERUN``: that one is followed by the rerun it stopped for);
    - a ``file_urls_request`` (an upload) is due until its answer, and an upload's HTTP request
      until it has ended (the rerun is sent after it).

    Events are numbered in the order playwright delivers them (the order they crossed the
    connection)."""

    def __init__(self, page) -> None:
        self.seq = 0
        self.rerun_sent = 0  # number of the last rerun_script sent
        self.run_started = 0  # number of the last new_session received
        self.run_finished = 0  # number of the last finished (not early) run's script_finished
        self.urls_due = 0  # file_urls_request sent, not answered yet
        self.uploads: set[object] = set()  # PUT/POST requests in flight
        self.sockets: set = set()  # the app connections this wire saw open
        self.heard = time.monotonic()  # when the last message or event came
        page.on("websocket", self._socket)
        page.on("request", self._request)
        page.on("requestfinished", self._request_done)
        page.on("requestfailed", self._request_done)

    def _tick(self) -> int:
        self.seq += 1
        self.heard = time.monotonic()
        return self.seq

    def _socket(self, ws) -> None:
        if "/_stcore/stream" not in ws.url:
            return
        self.sockets.add(ws)
        ws.on("framesent", self._sent)
        ws.on("framereceived", self._received)

    def _sent(self, payload) -> None:
        from streamlit.proto.BackMsg_pb2 import BackMsg

        if isinstance(payload, str):
            return
        kind = BackMsg.FromString(payload).WhichOneof("type")
        if kind == "rerun_script":
            self.rerun_sent = self._tick()
        elif kind == "file_urls_request":
            self.urls_due += 1
            self._tick()

    def _received(self, payload) -> None:
        from streamlit.proto.ForwardMsg_pb2 import ForwardMsg

        seq = self._tick()
        if isinstance(payload, str):
            return
        msg = ForwardMsg.FromString(payload)
        kind = msg.WhichOneof("type")
        if kind == "new_session":
            self.run_started = seq
        elif kind == "script_finished" and msg.script_finished != ForwardMsg.FINISHED_EARLY_FOR_RERUN:
            self.run_finished = seq
        elif kind == "file_urls_response":
            self.urls_due = max(0, self.urls_due - 1)

    def _request(self, request) -> None:
        if request.method != "GET":
            self.uploads.add(request)
            self._tick()

    def _request_done(self, request) -> None:
        if request in self.uploads:
            self.uploads.discard(request)
            self._tick()

    def listening(self) -> bool:
        """Whether the wire saw the page's open app connection open (a page watched after it
        opened the app is not followed until it opens it again)."""
        self.sockets = {ws for ws in self.sockets if not ws.is_closed()}
        return bool(self.sockets)

    def due(self) -> bool:
        """A run asked for and not finished, an upload under way, or a run under way."""
        if self.urls_due or self.uploads or self.run_finished < self.run_started:
            return True
        if self.rerun_sent > self.run_started:  # asked for, not started yet
            return time.monotonic() - self.heard < ANSWER_S
        return False


def watch(page):
    """Let :func:`settled` follow ``page``'s conversation with the server (see :class:`_Wire`);
    call it before the page opens the app. Returns the page."""
    if getattr(page, "_evalcore_wire", None) is None:
        page._evalcore_wire = _Wire(page)
    return page


def new_tab(browser, **options):
    """A page in a new context of ``browser`` (``options``: the context's, e.g. viewport),
    watched (:func:`watch`); close it with ``page.context.close()``."""
    return watch(browser.new_context(**options).new_page())


_SHARED: dict[str, object] = {}


def shared_playwright():
    """The test process's playwright driver, started on first use and stopped by
    :func:`stop_shared` (tests/conftest.py, at the end of the session). Playwright's sync API
    allows one driver a process: every test drives chromium through this one."""
    if "playwright" not in _SHARED:
        from playwright.sync_api import sync_playwright

        _SHARED["playwright"] = sync_playwright().start()
    return _SHARED["playwright"]


def stop_shared() -> None:
    """Close the shared chromium and stop the driver, if they were started."""
    browser = _SHARED.pop("browser", None)
    driver = _SHARED.pop("playwright", None)
    try:
        if browser is not None:
            browser.close()
    finally:
        if driver is not None:
            driver.stop()


class Tabs:
    """A test's view of the shared chromium: the contexts it opens (each its own cookies,
    storage and downloads), their pages watched (:func:`watch`); :meth:`close` closes them
    and leaves chromium running for the next test."""

    def __init__(self, browser) -> None:
        self.browser = browser
        self.contexts: list = []

    def new_context(self, **options):
        context = self.browser.new_context(**options)
        context.on("page", watch)
        self.contexts.append(context)
        return context

    def new_page(self, **options):
        """A page in a context of its own, as ``Browser.new_page`` makes it."""
        return watch(self.new_context(**options).new_page())

    def close(self) -> None:
        while self.contexts:
            self.contexts.pop().close()


@contextmanager
def shared_chromium() -> Iterator[Tabs]:
    """Debian's chromium (:data:`CHROMIUM`, :data:`CHROMIUM_ARGS`), launched once per test
    process (each pytest-xdist worker) instead of once per test: yields the test's
    :class:`Tabs`, closed afterwards. A launch costs about a second of CPU and several of wall
    on a busy machine; a new context isolates a test as a new browser did."""
    if "browser" not in _SHARED or not _SHARED["browser"].is_connected():
        _SHARED["browser"] = shared_playwright().chromium.launch(
            executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS
        )
    tabs = Tabs(_SHARED["browser"])
    try:
        yield tabs
    finally:
        tabs.close()


def _state(page) -> dict:
    from playwright.sync_api import Error

    try:
        return page.evaluate(_BUSY_JS)
    except Error:
        if page.is_closed():
            raise
        return {"busy": True, "grid": False}  # a navigation replaced the page's context: not settled yet


def _busy(page) -> bool:
    return bool(_state(page)["busy"])


def _log_wait(total: float, busy: float, quiet: float) -> None:
    """With EVALCORE_TEST_WAITS=FILE, one line per settled page: seconds in all, seconds busy,
    the quiet it waited for."""
    log = os.environ.get("EVALCORE_TEST_WAITS")
    if log:
        with open(log, "a", encoding="utf-8") as out:
            test = os.environ.get("PYTEST_CURRENT_TEST", "?").split(" ")[0]
            out.write(f"{test}\t{total:.3f}\t{busy:.3f}\t{quiet:.1f}\n")


#: Resolves once the page has stayed idle (:data:`_BUSY_JS`) for ``fast`` seconds, or ``slow``
#: while a grid in view has no cell drawn; polled inside the page (every 50 ms), which costs
#: chromium and playwright's driver a tenth of what a ``page.evaluate`` a poll did.
_QUIET_JS = (
    """([fast, slow, key]) => {
    const state = ("""
    + _BUSY_JS
    + """)();
    const now = performance.now();
    if (state.busy) { window[key] = null; return false; }
    if (!window[key]) window[key] = now;
    return now - window[key] >= 1000 * (state.grid ? slow : fast);
}"""
)


def settled(page, timeout_s: float = 120) -> None:
    """Wait until the app has drawn a title and no script run is in progress or due.

    On a watched page (:func:`watch`, :func:`new_tab`) whose connection the watch saw open,
    a run is due until the server says it finished (:class:`_Wire`), and the page must then
    stay idle for :data:`WATCHED_QUIET_S`; otherwise it must stay idle for :data:`QUIET_S`.
    The first call on an unwatched page watches it, for its next connections."""
    from playwright.sync_api import Error
    from playwright.sync_api import TimeoutError as PlaywrightTimeout

    began = time.monotonic()
    page.wait_for_selector("h1", timeout=timeout_s * 1000)
    wire = getattr(page, "_evalcore_wire", None)
    if wire is None:
        watch(page)
    deadline = time.monotonic() + timeout_s
    while (left := deadline - time.monotonic()) > 0:
        heard = wire is not None and wire.listening()
        if heard and wire.due():
            page.wait_for_timeout(50)  # the driver's timer: the wire's events arrive meanwhile
            continue
        quiet = WATCHED_QUIET_S if heard else QUIET_S
        try:
            key = f"__evalcoreQuiet{time.monotonic_ns()}"
            page.wait_for_function(_QUIET_JS, arg=[quiet, QUIET_S, key], polling=50, timeout=left * 1000)
        except PlaywrightTimeout:
            break
        except Error:
            if page.is_closed():
                raise
            continue  # a navigation replaced the page's context: not settled yet
        if heard and (wire.due() or time.monotonic() - wire.heard < quiet):
            continue  # the server spoke during the quiet: wait for quiet again
        total = time.monotonic() - began
        _log_wait(total, total - quiet, quiet)
        return
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
