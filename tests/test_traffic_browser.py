"""The Traffic screen in a real headless browser, walked as a product manager walks it: a log of
real questions imported (the CLI, as a scheduled job does), Traffic opened on the configuration,
the COVID-19 week flagged as drifted, a borderline query opened on Query, the oldest week
forgotten and seen gone on the screen and in the file. Skipped when chromium or playwright is absent.
"""

from __future__ import annotations

import shutil

import pytest
from serving import CHROMIUM, CHROMIUM_ARGS, healthy, settled, streamlit_app
from test_traffic import T, _log_rows, _write_jsonl, traffic_run  # noqa: F401 - the run fixture

from evalcore.cli import main
from evalcore.store import Store

PRIVATE = "my name is Ada Quill, account 4711-0815, which port does kettle use"


def test_import_open_traffic_see_drift_open_a_borderline_query_forget_the_oldest_week(
    traffic_run,  # noqa: F811 - the fixture imported above
    tmp_path,
    capsys,
):
    if CHROMIUM is None:
        pytest.skip("chromium is not installed (apt-get install chromium)")
    sync_api = pytest.importorskip("playwright.sync_api", reason="the playwright package is not installed")
    source, run_id = traffic_run
    store = tmp_path / "evalcore.duckdb"
    shutil.copy(source, store)
    rows = _log_rows() + [{"time": "2026-11-03T09:30:00Z", "query": PRIVATE, "label": ""}]
    log = tmp_path / "queries.jsonl"
    _write_jsonl(log, rows)
    ref = f"{run_id}:E/dense"
    argv = ["--store", str(store), "traffic", "import", str(log), "--run", ref, "--label-field", "label", "-q"]
    assert main(argv) == 0
    assert f"{len(rows)} stored" in capsys.readouterr().out
    Store(store).save_decision(run_id, "E", "dense", T, "the decided threshold")
    with streamlit_app(store, tmp_path / "streamlit.log") as url, sync_api.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)
        page = browser.new_page(viewport={"width": 1400, "height": 1000}, accept_downloads=True)
        page.goto(f"{url}/traffic?run_id={run_id}&config=E/dense", wait_until="domcontentloaded")
        settled(page)
        healthy(page, "traffic")
        stored = page.locator('[data-testid="traffic-stored"]').inner_text()
        assert f"{len(rows):,} logged queries" in stored and "2026-11-02 08:00" in stored
        assert f"t = {T:.4f}" in page.locator('[data-testid="traffic-threshold"]').inner_text()
        flagged = page.locator('[data-testid="stAlertContentWarning"]').filter(has_text="moved away")
        assert flagged.count() == 1 and "2026-11-09" in flagged.inner_text()  # the COVID-19 week
        # the download leaves query text out (read back from the file the browser saved)
        with page.expect_download() as got:
            page.get_by_role("button", name="Download the logged queries (CSV)").click()
        got.value.save_as(tmp_path / "download.csv")
        content = (tmp_path / "download.csv").read_text(encoding="utf-8")
        assert content.splitlines()[0] == "asked_at,source,line,text_hash,gate_value,refused,label"
        assert len(content.splitlines()) == len(rows) + 1 and PRIVATE not in content and rows[0]["query"] not in content
        links = page.locator('[data-testid="stPageLink"] a').filter(has_text="Open on Query")
        assert links.count() >= 1
        links.first.click()
        settled(page)
        healthy(page, "query: a borderline logged query")
        assert "Logged query (traffic)" in page.locator('[data-testid="query-meta"]').inner_text()
        assert "Gate value" in page.locator('[data-testid="threshold-state"]').inner_text()
        # forget the oldest week (as the operator does, from the command line), then reload
        assert main(["--store", str(store), "traffic", "forget", "--before", "2026-11-09"]) == 0
        capsys.readouterr()
        page.goto(f"{url}/traffic?run_id={run_id}&config=E/dense", wait_until="domcontentloaded")
        settled(page)
        healthy(page, "traffic after forget")
        stored = page.locator('[data-testid="traffic-stored"]').inner_text()
        assert "60 logged queries" in stored and "from 2026-11-09" in stored
        assert "2026-11-02" not in page.locator("body").inner_text()  # the oldest week is gone from the screen
        browser.close()
    data = store.read_bytes()
    assert PRIVATE.encode() not in data and b"Ada Quill" not in data
