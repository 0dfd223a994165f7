"""The reliability suite, issue 34 ("trust by construction"): identity headers, dashboard
uploads, run options and extracted text, tried as a hostile or careless user (or a misconfigured
proxy) would. One table row per case, like tests/reliability/test_hostile.py.

Identity: the real dashboard process behind tests/reliability/header_proxy.py (a proxy that
adds its header after the visitor's, as a proxy configured to append would), driven by a real
browser (chromium through playwright); the author the Threshold screen would save with is read
from the page."""

from __future__ import annotations

import re
import shutil
import time
from pathlib import Path
from urllib.parse import urlsplit

import pytest
from conftest import MINI
from header_proxy import HeaderProxy
from serving import CHROMIUM, healthy, settled, shared_chromium, streamlit_app, watch
from test_reliability import RUN, base_store, check, evalcore  # noqa: F401 - base_store: the shared one-run store

from evalcore.authors import MAX_AUTHOR, NOT_RECORDED
from evalcore.store import Store

HEADER = "X-User"


@pytest.fixture(scope="module")
def dashboard(base_store, tmp_path_factory):  # noqa: F811 - the imported fixture
    """The dashboard on a copy of the one-run store, trusting ``X-User``: (port, run id, log)."""
    if CHROMIUM is None:
        pytest.skip("chromium is not installed (apt-get install chromium)")
    pytest.importorskip("playwright.sync_api", reason="the playwright package is not installed")
    folder = tmp_path_factory.mktemp("identity")
    store = folder / "evalcore.duckdb"
    shutil.copy(base_store, store)
    run_id = Store(store).runs()["run_id"].iloc[0]
    log = folder / "streamlit.log"
    with streamlit_app(store, log, {"EVALCORE_USER_HEADER": HEADER}) as url:
        yield urlsplit(url).port, run_id, log, url


def _saved_by(port: int, run_id: str, added: bytes, sent: dict[str, str]) -> str:
    """What the Threshold screen says it would save as author, reached through a proxy that
    adds ``added`` to each request the browser makes (with its own headers ``sent``)."""

    with HeaderProxy(port, added) as url, shared_chromium() as browser:
        try:
            context = browser.new_context(viewport={"width": 1400, "height": 1000}, extra_http_headers=sent)
            page = watch(context.new_page())
            page.goto(f"{url}/threshold?run_id={run_id}", wait_until="domcontentloaded")
            settled(page)
            text = page.locator('[data-testid="save-as"]').first.inner_text()
        finally:
            browser.close()
    assert text.startswith("Saved by: "), text
    return text.removeprefix("Saved by: ").split(" (")[0]


@pytest.mark.browser
def test_a_header_appended_after_the_visitors_records_no_author(dashboard):
    port, run_id, log, _ = dashboard
    # The visitor's own copy is put on the wire ahead of the proxy's by the proxy itself: Chromium
    # (150 and later) sends a page's extra headers with its HTTP requests but not with the
    # WebSocket handshake the dashboard reads the header from. The bytes the server receives
    # are those of a visitor's header followed by an appended one.
    seen = _saved_by(port, run_id, f"{HEADER}: mallory\r\n{HEADER}: alice@corp\r\n".encode(), {HEADER: "mallory"})
    check("trusted header twice: visitor's mallory, the proxy's alice@corp appended", NOT_RECORDED, seen)
    # What the operator is told: a warning that names the header. How many copies arrive depends
    # on the browser's version (Chromium 156 sends a page's extra headers with the WebSocket
    # handshake too, so a third copy arrives), so the count is only asserted to be a repeat.
    said = re.findall(
        rf"the trusted header {HEADER} arrived (\d+) times in one request: no author recorded",
        log.read_text(encoding="utf-8", errors="replace"),
    )
    check("the log's warning names the repeated header", True, bool(said) and all(int(n) >= 2 for n in said))


@pytest.mark.browser
def test_a_utf8_display_name_is_stored_as_sent(dashboard):
    port, run_id, _, _ = dashboard
    seen = _saved_by(port, run_id, f"{HEADER}: José Müller\r\n".encode(), {})
    check("trusted header holds a UTF-8 display name", "José Müller", seen)


@pytest.mark.browser
def test_a_long_name_is_cut_visibly(dashboard):
    port, run_id, _, _ = dashboard
    seen = _saved_by(port, run_id, f"{HEADER}: {'é' * 500}\r\n".encode(), {})
    check("trusted header of 500 characters", "é" * (MAX_AUTHOR - 1) + "…", seen)


def test_the_deploy_guide_names_the_variable_and_says_set():
    text = (Path(__file__).resolve().parents[2] / "docs" / "DEPLOY.md").read_text(encoding="utf-8")
    said = "EVALCORE_USER_HEADER" in text and "replac" in text and "exactly once" in text
    check(
        "docs/DEPLOY.md on the trusted header",
        "named, set (replace), exactly once",
        ("named, set (replace), exactly once" if said else "missing"),
    )


# --- uploads: file names, queries and error messages are text, never Markdown -----------------

XSS_NAME = "![t](xss-name.png) [c](xss-link) list.txt"
XSS_QUERIES = [
    '<img src="xss-img.png" onerror="alert(1)">',
    "![q](xss-query.png) a Markdown image",
    "<script>alert(1)</script>",
    '=HYPERLINK("http://example.org/xss-formula","go")',
    "\u202egnp.slx an RLO query",
]
_INJECTED_JS = """() => [...document.querySelectorAll('[data-testid="stMain"] img, [data-testid="stMain"] a')]
    .map(e => e.getAttribute('src') || e.getAttribute('href') || '')
    .filter(u => u.includes('xss'))"""


def _upload_real_queries(url: str, name: str, data: bytes) -> tuple[str, list[str], list[str]]:
    """On the Questions screen: the mini corpus uploaded, a set named, then the list ``name``
    holding ``data`` uploaded as real queries. Returns the page's text, the injected images and
    links found (their src/href), and every URL the browser asked for."""

    corpus = sorted(str(p) for p in (MINI / "corpus").glob("*.md"))
    with shared_chromium() as browser:
        try:
            page = watch(browser.new_context(viewport={"width": 1400, "height": 1000}).new_page())
            requested: list[str] = []
            page.on("request", lambda request: requested.append(request.url))
            page.goto(url + "/questions", wait_until="domcontentloaded")
            settled(page)
            page.locator('[data-testid="stFileUploaderDropzoneInput"]').first.set_input_files(corpus)
            settled(page)
            page.get_by_label("Name of the new set").fill("hostile")
            page.keyboard.press("Tab")
            settled(page)
            if not page.locator(".st-key-qs_real_file").is_visible():  # the expander is closed
                page.get_by_text("From real queries: paste user queries and triage them").click()
                settled(page)
            page.locator('.st-key-qs_real_file input[type="file"]').set_input_files(
                {"name": name, "mimeType": "text/plain", "buffer": data}
            )
            settled(page)
            healthy(page, "questions: hostile list")
            injected = page.evaluate(_INJECTED_JS)
            text = page.locator('[data-testid="stMain"]').inner_text()
        finally:
            browser.close()
    return text, injected, requested


@pytest.mark.browser
def test_a_hostile_list_name_and_queries_show_as_text(dashboard):
    *_, url = dashboard
    text, injected, requested = _upload_real_queries(url, XSS_NAME, "\n".join(XSS_QUERIES).encode())
    fetched = [u for u in requested if "xss" in u]
    check(
        "real-queries list named with a Markdown image and link, holding HTML, a Markdown image, "
        "a script, a formula and RLO",
        "name and queries shown as text; nothing fetched",
        "name and queries shown as text; nothing fetched"
        if not injected and not fetched and f"of {XSS_NAME} added" in text and XSS_QUERIES[2] in text
        else f"images/links {injected}, fetched {fetched}, text {text[-1500:]!r}",
    )


@pytest.mark.browser
def test_a_list_that_is_not_utf8_names_itself_as_text(dashboard):
    *_, url = dashboard
    name = "![t](xss-name.png) latin1.txt"
    text, injected, requested = _upload_real_queries(url, name, "caf\xe9 au lait\n".encode("latin-1"))
    fetched = [u for u in requested if "xss" in u]
    check(
        "real-queries list of non-UTF-8 bytes named with a Markdown image",
        "error names the file as text; nothing fetched",
        "error names the file as text; nothing fetched"
        if not injected and not fetched and f"{name}: not UTF-8 text" in text
        else f"images/links {injected}, fetched {fetched}, text {text[-300:]!r}",
    )


# --- run options: a Ray address nobody serves, a shard count beyond reason ---------------------

RAY_CASES = [
    ("127.0.0.1:1", "error: --ray 127.0.0.1:1: no Ray cluster answers at 127.0.0.1:1: Connection refused"),
    (
        "ray://nonexistent.invalid:10001",
        "error: --ray ray://nonexistent.invalid:10001: no Ray cluster answers at nonexistent.invalid:10001: "
        "the host nonexistent.invalid is not known",
    ),
    ("", "error: --ray needs an address: local, auto, HOST:PORT or ray://HOST[:PORT]; got ''"),
    ("auto", "error: --ray auto: no Ray cluster runs on this machine"),
]


@pytest.mark.parametrize("address, said", RAY_CASES, ids=[c[0] or "empty" for c in RAY_CASES])
def test_a_ray_address_nobody_serves_fails_fast_naming_it(tmp_path, address, said):
    store = tmp_path / "s.duckdb"
    t0 = time.monotonic()
    ran = evalcore(*RUN, "--ray", address, store=store, env={"RAY_ADDRESS": ""}, process=True, timeout=120)
    wall = time.monotonic() - t0
    line = ran.line()
    observed = f"exit {ran.code} · {'names the address' if line.startswith(said) else line} · " + (
        "within 30 s" if wall < 30 else f"{wall:.0f} s"
    )
    check(f"run --ray {address!r} without a cluster", "exit 2 · names the address · within 30 s", observed, ran.err)
    assert len(ran.err.strip().splitlines()) == 1 and not store.exists()


def test_a_million_shards_are_refused_before_ray_starts(tmp_path):
    store = tmp_path / "s.duckdb"
    ran = evalcore(*RUN, "--ray", "local", "--shards", "1000000", store=store, process=True, timeout=120)
    check(
        "run --shards 1000000 --ray local",
        "exit 2 · error: --shards must be a whole number in [1, 256] (one Ray actor each; a run uses at most "
        "two per CPU of the cluster); got 1000000",
        f"exit {ran.code} · {ran.line()}",
        ran.err,
    )
    assert "ray" not in ran.err.lower().replace("--ray", "").replace("ray actor", "") and not store.exists()
