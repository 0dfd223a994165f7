"""The dashboard in a real headless browser, walked as its three users walk it.

`streamlit run app.py` serves a store with two complete runs made by the real engine and
the real model on the same queries (tests/conftest.py: ``two_run_store``; the second run's
strategies have other names). Debian's chromium is driven by playwright, launched on
/usr/bin/chromium (`playwright install` is never run). Every step fails on an exception
shown in a page, a traceback, or an object echoed by Streamlit "magic".

- every page in its default state;
- the Query page for in-domain, destroyed, near and far out-of-domain queries of every
  configuration of both runs; an image in a question's variant is never fetched;
- the product manager: Threshold, another configuration, the slider, a bluffing query
  opened, the decision saved, a reload: restored on Threshold, Query and Export;
- the engineer: a comparison across the two runs, a click on a matrix cell, the detail's
  p equal to the cell's;
- the reviewer: PNG, SVG, CSV and the review pack downloaded through the browser, their
  caption and provenance read back; two configurations give two file names.

Skipped, with the reason, when chromium or the playwright package is absent.
Set EVALCORE_SCREENSHOTS=<folder> to keep a PNG of each step.
"""

from __future__ import annotations

import csv
import io
import re
import shutil
import xml.etree.ElementTree as ET
import zipfile
from pathlib import Path

import pytest
from serving import CHROMIUM, healthy, settled, shared_chromium, streamlit_app, watch

from evalcore.measures.stats import p_relation
from evalcore.store import Store

pytestmark = pytest.mark.browser  # every test here drives chromium

PAGES = ("", "new_run", "compare", "distances", "threshold", "query", "index", "export", "methods")
TRACKER = "127.0.0.1:9/pixel.png"  # the image in the e417-ticket variant (tests/fixtures/mini)


@pytest.fixture(scope="module")
def served(two_run_store, two_run_ids, tmp_path_factory):
    """(url, store path, run ids): the app on a private copy of the two-run store."""
    if CHROMIUM is None:
        pytest.skip("chromium is not installed (apt-get install chromium)")
    pytest.importorskip(
        "playwright.sync_api", reason="the playwright package is not installed (pip install playwright)"
    )
    folder = tmp_path_factory.mktemp("served")
    store = folder / "evalcore.duckdb"
    shutil.copy(two_run_store, store)
    with streamlit_app(store, folder / "streamlit.log") as url:
        yield url, store, two_run_ids


@pytest.fixture(scope="module")
def browser(served):
    """The test process's chromium (serving.shared_chromium), its contexts closed afterwards."""
    with shared_chromium() as tabs:
        yield tabs


@pytest.fixture(scope="module")
def _tab(browser):
    """The module's tab; every URL it asked for in ``requested`` (each test starts it empty)."""
    context = browser.new_context(viewport={"width": 1400, "height": 1000}, accept_downloads=True)
    tab = watch(context.new_page())
    tab.requested = []
    tab.on("request", lambda request: tab.requested.append(request.url))
    yield tab
    context.close()


@pytest.fixture()
def page(_tab):
    """The module's tab as a first-time visitor has it: blank, no cookies, nothing stored, no
    URL asked for. The tab itself is kept from test to test, so chromium keeps the app's
    compiled scripts: opening the app in a new context compiled them again, about 2 s of
    chromium's CPU a test. Each test still starts with a page load of its own."""
    _tab.goto("about:blank")
    _tab.context.clear_cookies()
    _tab.requested.clear()
    yield _tab
    if _tab.url.startswith("http"):  # what the app stored in this origin goes with the test
        _tab.evaluate("() => { localStorage.clear(); sessionStorage.clear(); }")
    _tab.goto("about:blank")


def goto(page, url: str) -> None:
    page.goto(url, wait_until="domcontentloaded")
    settled(page)


def text_of(page, testid: str) -> str:
    return page.locator(f'[data-testid="{testid}"]').first.inner_text()


def threshold_shown(page) -> float:
    match = re.search(r"Threshold t = (\d+\.\d+)", text_of(page, "threshold-state"))
    assert match, text_of(page, "threshold-state")
    return float(match.group(1))


def selected(page, label: str) -> str:
    """The value shown by the selectbox labelled ``label``."""
    return page.get_by_role("combobox", name=label, exact=True).input_value()


def select(page, label: str, option: str) -> None:
    """Pick ``option`` in the selectbox labelled ``label`` (main area or sidebar)."""
    page.get_by_role("combobox", name=label, exact=True).click()
    page.get_by_role("option").filter(has_text=option).first.click()
    settled(page)


def nav(page, title: str) -> None:
    page.locator('[data-testid="stSidebarNav"] a').filter(has_text=title).first.click()
    settled(page)


def save_decision(page, note: str, where: str) -> None:
    """Save the Threshold screen's threshold with ``note``; the success message must show."""
    page.locator('[data-testid="stTextArea"] textarea').fill(note)
    anyway = page.locator('[data-testid="stCheckbox"]').filter(has_text="Save it anyway")
    if anyway.count():  # a t outside the claim is saved once the PM says so (the Threshold screen asks)
        anyway.first.click()
    page.locator('[data-testid="stFormSubmitButton"] button').filter(has_text="Save t =").click()
    saved = page.locator('[data-testid="stAlertContentSuccess"]').filter(has_text="Saved decision")
    # the save's rerun may start after a first quiet second on a loaded machine: wait for its message
    saved.first.wait_for(timeout=60_000)
    settled(page)
    healthy(page, where)
    assert saved.count() == 1


def test_a_shared_link_as_the_first_visit_opens_the_app(served, page):
    """Runs first: on a fresh server a deep link must run app.py's navigation, not Streamlit's
    fallback that turns a ``pages/`` folder into pages of its own (every file, _ui.py included)."""
    url, _, (first_run, _) = served
    goto(page, f"{url}/query?run_id={first_run}&query_id=e417-ticket")
    healthy(page, "shared link first")
    titles = page.locator('[data-testid="stSidebarNav"] a').all_inner_texts()
    assert any("Runs" in t for t in titles) and any("Methods" in t for t in titles), titles
    assert not [t for t in titles if t.strip().lower() in ("app", "ui", "_ui")], titles
    assert selected(page, "Query").startswith("e417-ticket")


def test_every_page_in_chromium(served, page):
    url, _, _ = served
    for path in PAGES:
        goto(page, f"{url}/{path}")
        healthy(page, path or "runs")
    # a viewer's toolbar has no Deploy button (the Methods text may well say "deployed")
    assert page.get_by_role("button", name="Deploy", exact=True).count() == 0
    assert page.locator('[data-testid="stAppDeployButton"]').count() == 0


def test_query_page_for_every_kind_of_query_and_configuration(served, page):
    url, store_path, run_ids = served
    store = Store(store_path)
    for run_id in run_ids:
        results = store.query(
            "SELECT r.query_id, r.destroyed, r.domain, q.kind FROM results r "
            "JOIN queries q USING (run_id, query_id) WHERE r.run_id = ? AND q.valid",
            [run_id],
        )
        configs = len(store.query("SELECT DISTINCT strategy, retriever FROM results WHERE run_id = ?", [run_id]))
        picks = {
            "in-domain": "e417-ticket",  # its variant carries an image and HTML
            "near": results[results["kind"] == "near"]["query_id"].iloc[0],
            "far": results[results["kind"] == "far"]["query_id"].iloc[0],
        }
        destroyed = results[results["destroyed"]]["query_id"]
        if len(destroyed):
            picks["destroyed"] = destroyed.iloc[0]
        for what, query_id in picks.items():
            goto(page, f"{url}/query?run_id={run_id}&query_id={query_id}")
            healthy(page, f"query {what} {run_id}")
            assert selected(page, "Query").startswith(query_id)
            expanders = page.locator('[data-testid="stExpander"] summary')
            assert expanders.count() == configs, (what, run_id)
            labels = " | ".join(expanders.all_inner_texts())
            assert "(s)" not in labels and "NO ANSWER · NO ANSWER" not in labels
            if what in ("near", "far"):
                assert "top 20" not in labels and "first correct rank" not in labels
            if what == "in-domain":
                meta = text_of(page, "query-meta")
                assert "![tracker](http://127.0.0.1:9/pixel.png)" in meta and "<img src=x" in meta
    assert not [u for u in page.requested if TRACKER in u], "an image in user text was fetched"
    assert page.locator(f'img[src*="{TRACKER}"]').count() == 0


def test_product_manager_journey(served, page):
    url, store_path, (first_run, second_run) = served
    goto(page, f"{url}/threshold")
    healthy(page, "pm 1 threshold")
    opened = page.locator('[data-testid="stMainBlockContainer"] p').filter(has_text="Configuration").first.inner_text()
    assert "best configuration by recall@4" in opened, opened

    # another configuration, then the slider all the way up: every out-of-domain query bluffs
    select(page, "Configuration (strategy/retriever)", "tight/dense")
    healthy(page, "pm 2 configuration")
    assert (
        "tight/dense"
        in page.locator('[data-testid="stMainBlockContainer"] p').filter(has_text="Configuration").first.inner_text()
    )
    page.locator('[data-testid="stSlider"] input[type="range"]').first.focus()
    page.keyboard.press("End")
    settled(page)
    for _ in range(3):
        page.keyboard.press("ArrowLeft")
    settled(page)
    healthy(page, "pm 3 slider")
    t = threshold_shown(page)
    assert "set on the Threshold screen" in text_of(page, "threshold-state")
    sentence = text_of(page, "sentence-at-t")
    assert f"At t = {t:.3f}" in sentence and "of off-topic questions" in sentence

    # one click from a bluffing query to its Query view, on a link that can be shared
    links = page.locator('[data-testid="stPageLink"] a').filter(has_text="nearest d =")
    assert links.count() > 0, "no bluffing query listed"
    bluff_id = re.search(r"([\w-]+) · (near|far) · nearest", links.first.inner_text()).group(1)
    links.first.click()
    settled(page)
    healthy(page, "pm 4 bluffing query")
    assert f"/query?run_id={second_run}&query_id={bluff_id}" in page.url
    assert threshold_shown(page) == pytest.approx(t)
    assert "Out-of-domain" in text_of(page, "query-meta")
    assert "chosen for tight/dense" in text_of(page, "threshold-state")  # the configuration t belongs to
    first_box = page.locator('[data-testid="stExpander"] summary').first.inner_text()
    assert first_box.split("\n")[-1].startswith("tight/dense") and "bluffs: answers from" in first_box, first_box

    # back on Threshold: the same t; save it with a note
    nav(page, "Threshold")
    assert threshold_shown(page) == pytest.approx(t)
    save_decision(page, "PM review: refuse more", "pm 5 saved")

    # a reload is a new session: the decision comes back on Threshold, Query and Export
    page.reload(wait_until="domcontentloaded")
    settled(page)
    healthy(page, "pm 6 reloaded")
    assert (
        "latest saved decision"
        in page.locator('[data-testid="stMainBlockContainer"] p').filter(has_text="Configuration").first.inner_text()
    )
    assert threshold_shown(page) == pytest.approx(t) and "saved decision" in text_of(page, "threshold-state")
    for title in ("Query", "Export"):
        nav(page, title)
        healthy(page, f"pm 7 {title}")
        assert threshold_shown(page) == pytest.approx(t), title
        assert "saved decision" in text_of(page, "threshold-state") and "tight/dense" in text_of(
            page, "threshold-state"
        )


def test_engineer_journey(served, page):
    url, _, (first_run, second_run) = served
    goto(page, f"{url}/compare")
    select(page, "Second run (same queries)", first_run)
    healthy(page, "engineer 1 two runs")
    chosen = page.locator('[data-testid="stMultiSelect"]').first.inner_text()
    assert f"· run mini {first_run}" in chosen and f"· run second {second_run}" in chosen  # both runs
    assert re.search(r"(wide|tight)/\w+ · run second", chosen)  # the second run's own names
    best = page.locator('[data-testid="stAlertContainer"]').filter(has_text="Best at hit@4").first.inner_text()
    assert " · run " in best

    # click a cell pairing one configuration of each run
    cells = page.locator('[data-testid="stVegaLiteChart"] svg path[aria-label*="second: "]')
    target = None
    for i in range(cells.count()):
        label = cells.nth(i).get_attribute("aria-label")
        first = re.search(r"first: ([^;]+);", label).group(1)
        second = re.search(r"second: ([^;]+);", label).group(1)
        if "run second" in first and "run mini" in second:
            target = cells.nth(i)
            break
    assert target is not None, "no cross-run cell"
    p_cell = re.search(r"Holm-adjusted p: ([^;]+);", label).group(1)
    target.click()
    settled(page)
    healthy(page, "engineer 2 cell")
    detail = text_of(page, "pair-detail")
    assert detail.startswith(f"{first} against {second} at hit@4"), detail
    assert f"Holm-adjusted p {p_relation(p_cell)}" in detail, (p_cell, detail)  # the same p as the cell
    drawn = page.locator('[data-testid="stVegaLiteChart"] svg text').evaluate_all("els => els.map(e => e.textContent)")
    assert (f"p{p_cell}" if p_cell.startswith("<") else f"p={p_cell}") in drawn  # the cell's own text


def _download(page, key: str) -> tuple[str, bytes]:
    # 120 s, not playwright's 30: the review pack is built on the click (every chart as PNG and
    # SVG), which on a busy 2-core machine has taken longer than 30 s
    with page.expect_download(timeout=120_000) as info:
        page.locator(f".st-key-{key} button").first.click()
    download = info.value
    return download.suggested_filename, Path(download.path()).read_bytes()


def test_reviewer_journey(served, page):
    from PIL import Image

    url, _, (first_run, second_run) = served
    goto(page, f"{url}/export")
    healthy(page, "reviewer 1 export")
    config = selected(page, "Configuration (strategy/retriever)")
    t = threshold_shown(page)

    png_name, png = _download(page, "png-export-sweep-rates")
    assert config.replace("/", "-") in png_name and f"t{t:.4f}" in png_name
    image = Image.open(io.BytesIO(png))
    image.load()
    for value in (second_run, config, "in-domain", "Wilson", f"t = {t:.4f}", "evalcore"):
        assert value in image.text["Description"], value

    svg_name, svg = _download(page, "svg-export-sweep-rates")
    assert svg_name == png_name[:-4] + ".svg"
    root = ET.fromstring(svg)
    ns = "{http://www.w3.org/2000/svg}"
    assert root[0].tag == ns + "title" and root[1].tag == ns + "desc" and second_run in root[1].text
    drawn = " ".join(" ".join(t.itertext()) for t in root.iter(ns + "tspan"))
    assert f"run: second {second_run}" in drawn and f"threshold: t = {t:.4f}" in drawn  # drawn into the image

    csv_name, data = _download(page, "csv-export-sweep-rates")
    rows = list(csv.reader(io.StringIO(data.decode("utf-8"))))
    provenance = dict(r[0][2:].split(": ", 1) for r in rows if r and r[0].startswith("# "))
    assert second_run in provenance["run"] and provenance["configurations"] == config
    assert provenance["threshold"] == f"t = {t:.4f}" and "evalcore" in provenance["software"]

    # another configuration: another file name (the review pack's too: it holds the decision)
    distances_before, _ = _download(page, "png-export-distances")
    pack_before, _ = _download(page, "review-pack")
    assert config.replace("/", "-") in pack_before and f"t{t:.4f}" in pack_before, pack_before
    other = "wide/bm25" if config != "wide/bm25" else "tight/bm25"
    select(page, "Configuration (strategy/retriever)", other)
    healthy(page, "reviewer 2 other configuration")
    distances_after, _ = _download(page, "png-export-distances")
    assert distances_before != distances_after and other.replace("/", "-") in distances_after

    pack_name, pack = _download(page, "review-pack")
    assert pack_name.endswith(".zip") and pack_name != pack_before and other.replace("/", "-") in pack_name
    with zipfile.ZipFile(io.BytesIO(pack)) as z:
        names = z.namelist()
        summary = z.read("summary.md").decode("utf-8")
        for name in names:
            if name.endswith(".png"):
                assert second_run in Image.open(io.BytesIO(z.read(name))).text["Description"], name
    assert "summary.md" in names and {n.rsplit(".", 1)[1] for n in names} == {"png", "svg", "csv", "md"}
    assert len([n for n in names if n.endswith(".png")]) == len([n for n in names if n.endswith(".csv")]) >= 6
    assert "## Decision" in summary and "## Comparison" in summary and other in summary


def test_review_pack_reads_the_store_picked_in_the_sidebar(served, page, two_run_store):
    """The pack is built when its button is clicked, outside the page's run: it must still read
    the store the sidebar shows, not the operator's default (another store's decision, note
    included, goes into its summary)."""
    from evalcore.read.decisions import save_decision
    from evalcore.records import Configuration

    url, store_path, (_, second_run) = served
    other = Path(store_path).parent / "other.duckdb"
    shutil.copy(two_run_store, other)
    try:
        save_decision(Store(other), second_run, Configuration("tight", "dense"), 0.4321, "decision in the other store")
        goto(page, url)  # the Runs screen sets no threshold: Export takes the other store's decision
        select(page, "Run store", "other.duckdb")
        select(page, "Run", second_run)
        select(page, "Configuration (strategy/retriever)", "tight/dense")
        nav(page, "Export")
        healthy(page, "pack 1 other store")
        assert threshold_shown(page) == pytest.approx(0.4321)
        name, pack = _download(page, "review-pack")
        assert "tight-dense-t0.4321" in name, name
        with zipfile.ZipFile(io.BytesIO(pack)) as z:
            summary = z.read("summary.md").decode("utf-8")
        assert "decision in the other store" in summary and "t = 0.4321" in summary
    finally:
        other.unlink(missing_ok=True)


def test_runs_compare_threshold_query_open_on_the_read_selection(served, page):
    """Runs -> Compare -> Threshold -> Query with nothing chosen: each screen opens on what
    evalcore.read.selection gives (configuration, compared configurations, pair, threshold).
    Then another process saves a decision: after a reload the screen shows it, although the
    default threshold was cached (the cache is keyed by the store's change stamp). Runs last:
    it saves a decision in the served store."""
    from evalcore.measures.claim import ClaimError
    from evalcore.read import claims, decisions, runs, selection

    url, store_path, run_ids = served
    store = Store(store_path)
    goto(page, url)
    healthy(page, "opening 1 runs")
    run_id = runs.default_run(store)
    name = store.run(run_id).name
    body = page.locator("body").inner_text()
    assert f"Selected: {name}" in body and f"run {run_id}" in body, body  # the newest complete run
    assert run_id in run_ids and f" · {run_id} (complete)" in selected(page, "Run")
    configs = runs.configurations(store, run_id)
    config, why = selection.default_configuration(store, run_id, configs)
    assert selected(page, "Configuration (strategy/retriever)") == config.label

    nav(page, "Compare")
    healthy(page, "opening 2 compare")
    _, default = selection.compared(store, run_id)
    chosen = page.locator('[data-testid="stMultiSelect"]').first.inner_text()
    assert all(s.label(False) in chosen for s in default) and chosen.count("/") == len(default), chosen
    first, second = selection.pair([s.label(False) for s in default])
    assert text_of(page, "pair-detail").startswith(f"{first} against {second} at hit@4")
    assert (selected(page, "First configuration"), selected(page, "Second configuration")) == (first, second)

    nav(page, "Threshold")
    healthy(page, "opening 3 threshold")
    opened = page.locator('[data-testid="stMainBlockContainer"] p').filter(has_text="Configuration").first.inner_text()
    assert f"{config.label}: opened on {why}" in opened, (opened, why)
    try:
        claim = claims.claim_of(store, run_id, config)
    except ClaimError:
        claim = None
    t, source = selection.default_threshold(store, run_id, config, claim)
    assert threshold_shown(page) == pytest.approx(round(t, 4)) and source in text_of(page, "threshold-state")

    nav(page, "Query")
    healthy(page, "opening 4 query")
    assert threshold_shown(page) == pytest.approx(round(t, 4))

    saved = 0.6123 if abs(t - 0.6123) > 1e-3 else 0.4567
    decisions.save_decision(store, run_id, config, saved, "saved by another process")
    page.reload(wait_until="domcontentloaded")
    settled(page)
    healthy(page, "opening 5 reloaded")
    assert threshold_shown(page) == pytest.approx(saved)
    assert f"saved decision: t = {saved:.4f} for {config.label}" in text_of(page, "threshold-state")
