"""The Traffic screen in a real headless browser, walked as a product manager walks it: a log of
real questions imported (the CLI, as a scheduled job does), Traffic opened on the configuration,
the COVID-19 week flagged as drifted, two borderline queries labelled on the screen (the author
from the header the operator names in EVALCORE_USER_HEADER) and the labelled bluff and lost
rates and the threshold claim on real off-topic queries seen to follow, a reload keeping them,
a borderline query opened on Query, the oldest week forgotten and seen gone on the screen and in
the file. Skipped when chromium or playwright is absent.
"""

from __future__ import annotations

import math
import shutil
from fractions import Fraction
from urllib.parse import urlsplit

import pytest
from reliability.header_proxy import HeaderProxy
from scipy.stats import binom
from serving import CHROMIUM, healthy, settled, shared_chromium, streamlit_app, watch
from statsmodels.stats.proportion import proportion_confint
from traffic.test_traffic import T, _log_rows, _write_jsonl, traffic_run  # noqa: F401 - the run fixture

from evalcore.cli import main
from evalcore.embedding.embedder import text_hash
from evalcore.store import Store

pytestmark = pytest.mark.browser  # every test here drives chromium

PRIVATE = "my name is Ada Quill, account 4711-0815, which port does kettle use"
HEADER = "X-Forwarded-Email"
PM = "pm@example.org"
#: two real questions the log leaves unlabelled, with gate values near t = 0.55 (0.548 and 0.547
#: with the real model): labelled on the screen, answerable and off-topic
LATER = {
    "my kettle shows the wrong temperature unit": "answerable",
    "use HTTPS with my own certificate": "off-topic",
}


def _expected(store, run_id: str) -> dict:
    """Brute force from the stored rows: each line's label (the log's, else the one given on the
    screen), its smallest top-4 distance; the bluff and lost counts with statsmodels' Wilson
    interval as the screen words them, and the SPEC 13 bluff bound on the off-topic lines."""
    s = Store(store)
    lines = s.query(
        "SELECT text_hash, label FROM traffic_queries WHERE run_id = ? AND strategy = 'E' AND retriever = 'dense'",
        [run_id],
    )
    given = s.query("SELECT text_hash, label FROM traffic_labels WHERE run_id = ? AND retriever = 'dense'", [run_id])
    later = dict(zip(given["text_hash"], given["label"], strict=True))
    hits = s.query(
        "SELECT text_hash, rank, distance FROM traffic_hits WHERE run_id = ? AND retriever = 'dense'", [run_id]
    )
    head: dict[str, list[float]] = {}
    for h, rank, d in hits.itertuples(index=False):
        if rank <= 4:
            head.setdefault(h, []).append(d)
    labelled = [(lab if isinstance(lab, str) else later.get(h), head[h]) for h, lab in lines.itertuples(index=False)]
    off = [d for lab, d in labelled if lab == "off-topic"]
    ans = [d for lab, d in labelled if lab == "answerable"]

    def worded(k: int, n: int) -> str:
        low, high = proportion_confint(k, n, method="wilson")
        # the interval's ends are bounds: the low end rounded down, the high end up (one decimal of a percent)
        down = math.floor(Fraction(repr(float(low))) * 1000) / 10
        up = math.ceil(Fraction(repr(float(high))) * 1000) / 10
        return f"{k / n:.1%} ({k} of {n}; 95% CI {down:.1f}%-{up:.1f}%)"

    m = sorted(min(d) for d in off)
    j = max(j for j in range(len(m) + 1) if binom.cdf(j, len(m), 0.05) <= 0.05)
    return {
        "bluff": worded(sum(any(x < T for x in d) for d in off), len(off)),
        "lost": worded(sum(not any(x < T for x in d) for d in ans), len(ans)),
        "claim": f"({len(m):,} lines): t <= {_down(m[j])} keeps bluffs <= 5%",  # rounded on the safe side
        "labels": {
            h: (lab, who)
            for h, lab, who in s.query("SELECT text_hash, label, author FROM traffic_labels").itertuples(index=False)
        },
    }


def _down(x: float) -> str:
    """The largest number of three decimals that reads back as a float at most ``x``."""
    d = math.floor(Fraction(x) * 1000)
    while float(Fraction(d + 1, 1000)) <= x:
        d += 1
    return f"{float(Fraction(d, 1000)):.3f}"


def _traffic_figures(page) -> dict:
    text = {k: page.locator(f'[data-testid="traffic-{k}"]').inner_text() for k in ("bluff", "lost", "claim")}
    return {
        "bluff": text["bluff"].split("traffic: ")[1].split(" · ")[0],
        "lost": text["lost"].split("traffic: ")[1].split(" · ")[0],
        "claim": text["claim"],
    }


def _offered(page) -> list[str]:
    """The choices of the labelling form, as its opened list shows them (waited for: the list
    is drawn after the click)."""
    from playwright.sync_api import TimeoutError as Timeout

    box = page.locator('[data-testid="stForm"]').get_by_role("combobox", name="Label a borderline query")
    options = page.get_by_role("option")
    for attempt in range(3):  # a rerun that lands just after the click redraws the box closed
        box.click()
        try:
            options.first.wait_for(timeout=5000)
            break
        except Timeout:
            settled(page)
            if attempt == 2:
                raise
    found = options.all_inner_texts()
    page.keyboard.press("Escape")
    return found


def _label(page, text: str, label: str) -> None:
    """Pick ``text`` in the labelling form, choose ``label``, save."""
    form = page.locator('[data-testid="stForm"]')
    form.get_by_role("combobox", name="Label a borderline query").click()
    page.get_by_role("option").filter(has_text=text).first.click()
    form.locator('[data-testid="stRadio"] label').filter(has_text=label).first.click()
    form.locator('[data-testid="stFormSubmitButton"] button').click()
    settled(page)
    healthy(page, f"traffic: labelled {label}")


def test_import_open_traffic_see_drift_label_two_queries_open_a_borderline_query_forget_the_oldest_week(
    traffic_run,  # noqa: F811 - the fixture imported above
    tmp_path,
    capsys,
):
    if CHROMIUM is None:
        pytest.skip("chromium is not installed (apt-get install chromium)")
    pytest.importorskip("playwright.sync_api", reason="the playwright package is not installed")
    source, run_id = traffic_run
    store = tmp_path / "evalcore.duckdb"
    shutil.copy(source, store)
    rows = _log_rows() + [{"time": "2026-11-03T09:30:00Z", "query": PRIVATE, "label": ""}]
    rows += [{"time": f"2026-11-04T1{i}:15:00Z", "query": q, "label": ""} for i, q in enumerate(LATER)]
    log = tmp_path / "queries.jsonl"
    _write_jsonl(log, rows)
    ref = f"{run_id}:E/dense"
    argv = ["--store", str(store), "traffic", "import", str(log), "--run", ref, "--label-field", "label", "-q"]
    assert main(argv) == 0
    assert f"{len(rows)} stored" in capsys.readouterr().out
    Store(store).save_decision(run_id, "E", "dense", T, "the decided threshold")
    before = _expected(store, run_id)
    with (
        streamlit_app(store, tmp_path / "streamlit.log", {"EVALCORE_USER_HEADER": HEADER}) as served,
        # signed in through a proxy that sets the header on every request, the WebSocket
        # handshake included (a browser's extra headers do not reach it in Chromium 150+)
        HeaderProxy(urlsplit(served).port, f"{HEADER}: {PM}\r\n".encode()) as url,
        shared_chromium() as browser,
    ):
        context = browser.new_context(viewport={"width": 1400, "height": 1000}, accept_downloads=True)
        page = watch(context.new_page())
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
        # labelled traffic before any label given here: the log's labels, as the brute force counts them
        assert {k: v for k, v in _traffic_figures(page).items() if k != "claim"} == {
            "bluff": before["bluff"],
            "lost": before["lost"],
        }
        assert before["claim"] in _traffic_figures(page)["claim"]
        # the form lists only queries whose lines the log left unlabelled (the log's label wins)
        offered = _offered(page)
        assert len(offered) == 3 and all("no label" in o for o in offered), offered
        assert {o.split(" · ")[0] for o in offered} == {*LATER, PRIVATE}
        for text, label in LATER.items():
            _label(page, text, label)
            flash = page.locator('[data-testid="stAlertContentSuccess"]').filter(has_text=f"Labelled {label}")
            said = flash.inner_text().replace("\u200b", "")  # Markdown escaping keeps "@" from making a link
            assert flash.count() == 1 and text in said and f"by {PM}" in said, said
        after = _expected(store, run_id)
        assert after["labels"] == {text_hash(t): (lab, PM) for t, lab in LATER.items()}  # who: the trusted header
        assert (
            after["bluff"] != before["bluff"] and after["lost"] != before["lost"] and after["claim"] != before["claim"]
        )
        shown = _traffic_figures(page)
        assert (shown["bluff"], shown["lost"]) == (after["bluff"], after["lost"])
        assert after["claim"] in shown["claim"], shown["claim"]
        # a reload keeps the labels: the rates, the claim and the form's list read them back
        page.reload(wait_until="domcontentloaded")
        settled(page)
        healthy(page, "traffic reloaded after labelling")
        shown = _traffic_figures(page)
        assert (shown["bluff"], shown["lost"]) == (after["bluff"], after["lost"]) and after["claim"] in shown["claim"]
        offered = _offered(page)
        for text, label in LATER.items():
            assert any(o.startswith(text) and f"labelled {label} by {PM}" in o for o in offered), offered
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
