"""The reliability suite, the leftovers of the last two reviews (issue 45) in the command line
and the dashboard: ``--splits`` bounded, a set version in ASCII digits, a store another process
holds (the dashboard says busy and offers no write), a header the dashboard's live connection
refuses (a page that says why, not a blank one), the Traffic week view with one stray line in
1970, and a decided threshold shown as the number it is. One table row per case, like the
other ``test_trust_*.py`` files: the real CLI (its ``main``), real DuckDB, a real second process
holding the store's lock, a real dashboard server behind a real proxy.

The Ray case (a worker killed during a sharded run) is tests/reliability/test_trust_ray_lost.py:
it shares the suite's one Ray runtime."""

from __future__ import annotations

import math
import re
import subprocess
import sys
import time
import urllib.error
import urllib.request
from datetime import timedelta
from pathlib import Path
from urllib.parse import urlsplit

import pytest
from conftest import ROOT
from header_proxy import HeaderProxy
from serving import streamlit_app
from test_reliability import RUN, base_store, check, evalcore, store_copy  # noqa: F401 - the shared fixtures
from test_trust_traffic import NOVEMBER, _import, _jsonl, _target

from evalcore.records import Configuration
from evalcore.store import Store

CONFIG = Configuration("E", "dense")


# --- threshold --splits: bounded ---------------------------------------------------------------


@pytest.mark.parametrize("value", ["1000000000", str(10**30), "10001"])
def test_splits_above_the_bound_are_refused_at_once(base_store, value):  # noqa: F811 - the imported fixture
    """``--splits 1000000000`` ran past 120 s (checked with no upper bound)."""
    t0 = time.monotonic()
    ran = evalcore("threshold", "earlier:E/dense", "--splits", value, store=base_store)
    wall = time.monotonic() - t0
    check(
        f"threshold --splits {value[:12]}{'...' if len(value) > 12 else ''}",
        f"exit 2 · error: --splits must be an integer in [1, 10000]; got '{value}' · under 5 s",
        f"exit {ran.code} · {ran.line()} · " + ("under 5 s" if wall < 5 else f"{wall:.0f} s"),
        ran.err,
    )


@pytest.mark.slow
def test_splits_at_the_bound_run(base_store):  # noqa: F811 - the imported fixture
    ran = evalcore("threshold", "earlier:E/dense", "--splits", "10000", store=base_store)
    said = "held-out: over 10000 seeded splits" in ran.out
    check(
        "threshold --splits 10000 (the bound) runs the held-out check",
        "exit 0 · held-out over 10000 splits",
        f"exit {ran.code} · " + ("held-out over 10000 splits" if said else "no held-out line"),
        ran.err,
    )


# --- a question set's version: ASCII digits, in range --------------------------------------------

VERSION = "error: question set mini: the version after '@' must be a whole number from 1 to 2147483647 (digits 0-9)"
VERSIONS = [
    ("superscript two", "\u00b2", "'\u00b2'"),
    ("Arabic-Indic one", "\u0661", "'\u0661'"),
    ("zero", "0", "'0'"),
    ("underscore", "1_0", "'1_0'"),
    ("above the INTEGER column", "2147483648", "'2147483648'"),
    ("5,000 digits", "9" * 5000, "'" + "9" * 40 + "...'"),
]


@pytest.mark.parametrize("name, version, shown", VERSIONS, ids=[n for n, *_ in VERSIONS])
def test_a_set_version_is_plain_digits_or_refused_naming_it(tmp_path, name, version, shown):
    """``mini@²`` ended with "unexpected ValueError ... please report this" (``'²'.isdigit()``
    is True, ``int('²')`` raises)."""
    store = tmp_path / "s.duckdb"
    for argv in (["question-set", "show", f"mini@{version}"], [*RUN[:3], "--dataset", f"mini@{version}", "-q"]):
        ran = evalcore(*argv, store=store)
        check(
            f"{argv[0]} {argv[1]} mini@<{name}>",
            f"exit 2 · {VERSION}; got {shown} · nothing stored",
            f"exit {ran.code} · {ran.line()} · " + ("nothing stored" if not store.exists() else "STORED"),
            ran.err,
        )


# --- a store another process holds ----------------------------------------------------------------

#: A second process that holds the store open for writing (DuckDB's lock) until its input closes.
HOLDER = """
import sys, duckdb
con = duckdb.connect(sys.argv[1])
con.execute("SELECT count(*) FROM runs").fetchall()
print("held", flush=True)
sys.stdin.read()
con.close()
"""


def _holding(path: Path) -> subprocess.Popen:
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLDER, str(path)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
    return holder


def _let_go(holder: subprocess.Popen) -> None:
    assert holder.stdin is not None
    holder.stdin.close()
    holder.wait(timeout=30)


def _said(at) -> str:
    return " | ".join(str(e.value) for e in [*at.warning, *at.info, *at.error])


def _shown(at) -> str:
    """Everything a page wrote: Markdown, captions, messages and its HTML lines (ui.plain)."""
    parts = [e.value for kind in (at.markdown, at.caption, at.info, at.warning, at.success, at.error) for e in kind]
    return "\n".join(str(p) for p in [*parts, *(e.proto.body for e in at.get("html"))])


@pytest.mark.slow
def test_a_busy_store_says_so_offers_no_write_and_is_read_again(store_copy, monkeypatch):  # noqa: F811
    """Runs said "no complete run yet" and offered "Start the demo run" while the store held a
    complete run that another process had locked."""
    from streamlit.testing.v1 import AppTest

    monkeypatch.setenv("EVALCORE_STORE", str(store_copy))
    runs_before = Store(store_copy).runs()["name"].tolist()
    holder = _holding(store_copy)
    try:
        at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=120)
        at.run()
        said = _said(at)
        offers = [b.label for b in at.button if "demo" in b.label.lower()]
        runs_screen = (
            ("says busy" if "is busy" in said and "another process holds its lock" in said else "no word of busy")
            + (" · offers the demo" if offers else " · no demo offered")
            + (" · says no run" if "no complete run" in said else "")
            + (" · an exception" if at.exception else "")
        )
        new_run = at.switch_page("evalcore_app/screens/new_run.py").run()
        starts = [b.label for b in new_run.button if "start" in b.label.lower()]
        new_run_screen = ("says busy" if "is busy" in _said(new_run) else "no word") + (
            f" · offers {starts}" if starts else " · nothing to start"
        )
    finally:
        _let_go(holder)
    again = at.switch_page("evalcore_app/screens/runs.py").run()  # what the page's timer (every 5 s) and button do
    names = [o for box in again.selectbox if box.label == "Run" for o in box.options]
    after = f"{len(names)} run(s) listed" if names else "no run listed"
    check(
        "dashboard while another process holds the store's lock, then after it lets go",
        f"Runs: says busy · no demo offered; New run: says busy · nothing to start; after: {len(runs_before)} "
        "run(s) listed",
        f"Runs: {runs_screen}; New run: {new_run_screen}; after: {after}",
        said,
    )
    assert Store(store_copy).runs()["name"].tolist() == runs_before  # nothing written meanwhile


# --- a header the dashboard's live connection refuses ----------------------------------------------

TRUSTED = "X-User"


@pytest.fixture(scope="module")
def trusting_dashboard(base_store, tmp_path_factory):  # noqa: F811 - the imported fixture
    folder = tmp_path_factory.mktemp("header-guard")
    store = folder / "evalcore.duckdb"
    store.write_bytes(base_store.read_bytes())
    log = folder / "streamlit.log"
    with streamlit_app(store, log, {"EVALCORE_USER_HEADER": TRUSTED}) as url:
        yield urlsplit(url).port, log


def _get(url: str) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(url, timeout=30) as answer:
            return answer.status, answer.read().decode("utf-8", "replace")
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode("utf-8", "replace")


def _text(page: str) -> str:
    return " ".join(re.sub(r"<[^>]+>", " ", page).split()).replace("&#x27;", "'")


HEADERS = [
    (
        "a 10,000-character trusted header",
        f"{TRUSTED}: {'a' * 10_000}\r\n".encode(),
        "/",
        "431 · The trusted header X-User (EVALCORE_USER_HEADER) is a line of 10,010 bytes, more than the 8,192 "
        "the dashboard's connection takes · no value echoed",
    ),
    (
        "a 10,000-character other header",
        f"X-Trace: {'b' * 10_000}\r\n".encode(),
        "/threshold",
        "431 · The header x-trace is a line of 10,011 bytes, more than the 8,192 the dashboard's connection takes · "
        "no value echoed",
    ),
    (
        "129 headers",
        b"".join(f"X-N{i}: v\r\n".encode() for i in range(129)),
        "/",
        "431 · The request carries more than 128 headers (the most the dashboard's connection takes)",
    ),
    ("a trusted header of 8,000 characters", f"{TRUSTED}: {'c' * 8000}\r\n".encode(), "/", "200 · the page"),
]


@pytest.mark.slow
@pytest.mark.parametrize("name, added, path, expected", HEADERS, ids=[h[0] for h in HEADERS])
def test_a_header_the_live_connection_refuses_gets_a_page_that_says_why(
    trusting_dashboard, name, added, path, expected
):
    """A 10,000-character trusted header left the page blank: the page loaded, its WebSocket
    handshake got 431 from the server's WebSocket layer, and nothing said why."""
    port, log = trusting_dashboard
    with HeaderProxy(port, added) as url:
        status, page = _get(url + path)
    text = _text(page)
    if status == 431:
        sentence = text.split("The dashboard cannot open with this request ", 1)[-1].split(".", 1)[0]
        many = re.fullmatch(r"The request carries ([\d,]+) headers, more than the 128 .*", sentence)
        if many and int(many.group(1).replace(",", "")) > 128:  # the proxy's own few headers and the 129
            sentence = "The request carries more than 128 headers (the most the dashboard's connection takes)"
        else:
            sentence += " · value echoed" if any(ch * 100 in page for ch in "abc") else " · no value echoed"
        observed = f"431 · {sentence}"
    else:
        observed = f"{status} · " + ("the page" if "<noscript>" in page or "streamlit" in page.lower() else text[:80])
    check(f"dashboard page through a proxy adding {name}", expected, observed, text[:300])
    if status == 431:
        logged = log.read_text(encoding="utf-8", errors="replace")
        assert "request refused with 431" in logged and "a" * 100 not in logged


def test_the_guard_leaves_the_api_to_the_api(trusting_dashboard):
    """The API keeps its own rules: a long header on /api/v1 gets the API's answer (401
    without a key), not the dashboard's page."""
    port, _ = trusting_dashboard
    with HeaderProxy(port, f"{TRUSTED}: {'a' * 10_000}\r\n".encode()) as url:
        status, page = _get(url + "/api/v1/runs")
    check("a 10,000-character trusted header on /api/v1/runs without a key", "401", str(status), page[:200])


# --- the Traffic week view with one stray line in 1970 -------------------------------------------


def _visible_labels(spec: dict, width: int = 560) -> list[tuple[float, str]]:
    """The x labels a chart ``width`` pixels wide shows (Vega hides those that would overlap)."""
    import vl_convert as vlc

    svg = vlc.vegalite_to_svg({**spec, "width": width})
    found = re.findall(r"<text([^>]*)>(\d{4}-\d\d-\d\d)</text>", svg)
    out = []
    for attrs, label in found:
        if 'opacity="0"' in attrs:
            continue
        x = re.search(r"translate\(([-\d.]+),", attrs)
        out.append((float(x.group(1)) if x else math.nan, label))
    return out


@pytest.mark.slow
def test_the_week_view_with_a_stray_1970_line_is_readable_and_names_it(store_copy, tmp_path, monkeypatch):  # noqa: F811
    from streamlit.testing.v1 import AppTest

    from evalcore.figures.traffic_charts import CHART_PERIODS, period_view

    rows = [{"time": 0, "query": "a logger's default time"}] + [
        {"time": (NOVEMBER + timedelta(hours=i)).isoformat() + "Z", "query": f"november question {i % 40}"}
        for i in range(500)
    ]
    _import(store_copy, _jsonl(tmp_path / "log.jsonl", rows))
    run_id = _target(store_copy).split(":")[0]
    frame, volume, share = period_view(Store(store_copy), run_id, CONFIG, timedelta(days=7), 0.5, "week")
    labels = _visible_labels(volume)
    gaps = [b[0] - a[0] for a, b in zip(labels, labels[1:], strict=False)]
    closest = min(gaps, default=math.inf)
    readable = bool(labels) and len(labels) <= 20 and closest >= 56  # a 10-character label at 10 px: about 56 px
    monkeypatch.setenv("EVALCORE_STORE", str(store_copy))
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=180)
    at.query_params.update({"run_id": run_id, "config": "E/dense"})
    at.run()
    at = at.switch_page("evalcore_app/screens/traffic.py").run()
    captions = " ".join(str(c.value) for c in at.caption)
    named = "period starting 1970-01-01" in captions and "(log.jsonl line 1)" in captions and "forget" in captions
    check(
        "Traffic week view, one line at 1970 among 500 of November 2026",
        f"{len(frame)} weeks, the last {CHART_PERIODS} drawn · x labels readable at 560 px · the caption names "
        "the 1970 line and the forget command",
        f"{len(frame)} weeks, the last {len(next(iter(volume['datasets'].values())))} drawn · "
        + ("x labels readable at 560 px" if readable else f"{len(labels)} x labels, closest {closest:.0f} px")
        + " · "
        + ("the caption names the 1970 line and the forget command" if named else f"caption: {captions[:200]}"),
        [e.value for e in at.exception],
    )


# --- a decided threshold, shown as the number it is -----------------------------------------------

DECIDED = 0.4137512345


@pytest.mark.slow
def test_a_decided_threshold_is_shown_as_the_number_it_is(store_copy, monkeypatch):  # noqa: F811
    """0.4137512345 was shown 0.4138 (the side that answers more) in the selection reason, a
    caption and the CSV file name."""
    from streamlit.testing.v1 import AppTest

    from evalcore.figures import build as figures
    from evalcore.files import figure_files
    from evalcore.read import decisions, selection

    store = Store(store_copy)
    run_id = str(store.runs()["run_id"].iloc[0])
    decisions.save_decision(store, run_id, CONFIG, DECIDED, "exact", "ana@example.org")
    t, why = selection.default_threshold(store, run_id, CONFIG)
    figure = figures.sweep_figure(store, run_id, CONFIG, t, rates=False)
    name = figure_files.file_name(figure, run_id, "csv")
    pack = figure_files.pack_name(run_id, CONFIG.label, t)
    monkeypatch.setenv("EVALCORE_STORE", str(store_copy))
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=180)
    at.query_params.update({"run_id": run_id, "config": "E/dense"})
    at.run()
    runs_screen = _shown(at)
    export = at.switch_page("evalcore_app/screens/export.py").run()
    export_screen = _shown(export)
    exact = str(DECIDED)
    seen = {
        "selection reason": f"t = {exact}" in why,
        "caption": f"threshold: t = {exact}" in figure.caption,
        "CSV file name": name.endswith(f"-t{exact}.csv"),
        "review pack name": pack.endswith(f"-t{exact}.zip"),
        "Runs screen": f"t = {exact}" in runs_screen,
        "Export screen": f"Threshold t = {exact}" in export_screen,
    }
    check(
        f"a decision at t = {exact}: where it is shown",
        ", ".join(f"{k}: {exact}" for k in seen),
        ", ".join(f"{k}: {exact if ok else 'ROUNDED'}" for k, ok in seen.items()),
        (why, figure.caption, name, pack),
    )
    assert "0.4138" not in why + figure.caption + name + pack
