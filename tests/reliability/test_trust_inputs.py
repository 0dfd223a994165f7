"""The reliability suite, issue 34 ("trust by construction"): identity headers, dashboard
uploads, run options and extracted text, tried as a hostile or careless user (or a misconfigured
proxy) would. One table row per case, like tests/reliability/test_hostile.py.

Identity: the real dashboard process behind tests/reliability/header_proxy.py (a proxy that
adds its header after the visitor's, as a proxy configured to append would), driven by a real
browser (chromium through playwright); the author the Threshold screen would save with is read
from the page."""

from __future__ import annotations

import shutil
from pathlib import Path
from urllib.parse import urlsplit

import pytest
from header_proxy import HeaderProxy
from serving import CHROMIUM, CHROMIUM_ARGS, settled, streamlit_app
from test_reliability import base_store, check  # noqa: F401 - base_store: the shared one-run store

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
        yield urlsplit(url).port, run_id, log


def _saved_by(port: int, run_id: str, added: bytes, sent: dict[str, str]) -> str:
    """What the Threshold screen says it would save as author, reached through a proxy that
    adds ``added`` to each request the browser makes (with its own headers ``sent``)."""
    from playwright.sync_api import sync_playwright

    with HeaderProxy(port, added) as url, sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)
        try:
            context = browser.new_context(viewport={"width": 1400, "height": 1000}, extra_http_headers=sent)
            page = context.new_page()
            page.goto(f"{url}/threshold?run_id={run_id}", wait_until="domcontentloaded")
            settled(page)
            text = page.locator('[data-testid="save-as"]').first.inner_text()
        finally:
            browser.close()
    assert text.startswith("Saved by: "), text
    return text.removeprefix("Saved by: ").split(" (")[0]


def test_a_header_appended_after_the_visitors_records_no_author(dashboard):
    port, run_id, log = dashboard
    seen = _saved_by(port, run_id, f"{HEADER}: alice@corp\r\n".encode(), {HEADER: "mallory"})
    check("trusted header twice: visitor's mallory, the proxy's alice@corp appended", NOT_RECORDED, seen)
    assert f"the trusted header {HEADER} arrived 2 times" in log.read_text(encoding="utf-8", errors="replace")


def test_a_utf8_display_name_is_stored_as_sent(dashboard):
    port, run_id, _ = dashboard
    seen = _saved_by(port, run_id, f"{HEADER}: José Müller\r\n".encode(), {})
    check("trusted header holds a UTF-8 display name", "José Müller", seen)


def test_a_long_name_is_cut_visibly(dashboard):
    port, run_id, _ = dashboard
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
