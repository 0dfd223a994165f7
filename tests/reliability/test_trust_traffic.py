"""The reliability suite, issue 34 (trust by construction), traffic: times a log or a user gives,
bounded periods, labels and line identity, CSV cells, forgetting, killed imports. One table row
per case, like tests/reliability/test_hostile.py: the real CLI (in this process, or a real
process where the process, its memory or a kill is what is at stake) on a store holding one
complete run made with the keyword embedder; exit 0 or 2, one line naming the line or field,
nothing half-stored.
"""

from __future__ import annotations

import csv
import json
import os
import shutil
import signal
import time
from datetime import datetime, timedelta
from pathlib import Path

import duckdb
import pytest
import zygote
from conftest import ROOT
from test_hostile import measured
from test_reliability import FAKE, RUN, check, evalcore

from evalcore.embedding.embedder import text_hash
from evalcore.store import Store

NOVEMBER = datetime(2026, 11, 2, 8, 0)
BAD_TIMES = [
    ("month 13", "2026-13-01T00:00:00Z"),
    ("a word", "yesterday"),
    ("empty", ""),
    ("null", None),
    ("true", True),
    ("NaN", float("nan")),
    ("inf", float("inf")),
    ("1e20", 1e20),
    ("a list", [2026, 11, 2]),
    ("Feb 29 2026", "2026-02-29T10:00:00Z"),
    ("year 0", "0000-06-01T00:00:00Z"),
    ("year 1 at +01:00", "0001-01-01T00:30+01:00"),
    ("year 9999 at -01:00", "9999-12-31T23:30-01:00"),
]


@pytest.fixture(scope="module")
def traffic_base(tmp_path_factory) -> Path:
    """A store holding one complete run (strategy E, the keyword embedder) to replay logs against."""
    path = tmp_path_factory.mktemp("traffic-base") / "evalcore.duckdb"
    ran = evalcore(*RUN, "--strategies", "E", "--name", "traffic", store=path)
    assert ran.code == 0, ran.err
    return path


@pytest.fixture()
def store_copy(traffic_base, tmp_path) -> Path:
    path = tmp_path / "runs" / "evalcore.duckdb"
    path.parent.mkdir()
    shutil.copy(traffic_base, path)
    return path


def _target(path: Path) -> str:
    run_id = str(Store(path).runs()["run_id"].iloc[0])
    return f"{run_id}:E/dense"


def _jsonl(path: Path, rows: list[dict]) -> Path:
    with open(path, "w", encoding="utf-8") as fh:
        for row in rows:
            fh.write(json.dumps(row) + "\n")  # json.dumps writes NaN and Infinity as JavaScript does
    return path


def _count(path: Path, sql: str, params: list | None = None) -> int:
    con = duckdb.connect(str(path), read_only=True)
    try:
        return int(con.execute(sql, params or []).fetchone()[0])
    finally:
        con.close()


def _import(path: Path, log: Path, *extra: str, process: bool = False, env: dict | None = None):
    return evalcore(
        "traffic", "import", str(log), "--run", _target(path), "-q", *extra, store=path, process=process, env=env
    )


def _warned_lines(err: str) -> list[int]:
    return sorted(int(x.split(": line ", 1)[1].split(":", 1)[0]) for x in err.splitlines() if ": line " in x)


# --- times ----------------------------------------------------------------------------------------


def test_bad_times_are_problem_lines_and_the_good_lines_are_stored(store_copy, tmp_path):
    rows, bad_lines = [], []
    for i, (_, value) in enumerate(BAD_TIMES):
        rows.append({"time": (NOVEMBER + timedelta(hours=i)).isoformat() + "Z", "query": f"good question {i}"})
        rows.append({"time": value, "query": f"question with a bad time {i}"})
        bad_lines.append(len(rows))
    log = _jsonl(tmp_path / "log.jsonl", rows)
    ran = _import(store_copy, log)
    stored = _count(store_copy, "SELECT count(*) FROM traffic_queries")
    observed = f"exit {ran.code}; {stored} stored; problem lines {_warned_lines(ran.err)}; {ran.line()}"
    expected = f"exit 0; {len(BAD_TIMES)} stored; problem lines {bad_lines}; -"
    check(
        "traffic import: times of month 13, a word, empty, null, true, NaN, inf, 1e20, a list, Feb 29 2026, year 0, "
        "0001-01-01T00:30+01:00, 9999-12-31T23:30-01:00 among good lines",
        expected,
        observed,
        ran.err,
    )
    assert "out of the allowed range" in ran.err and "Traceback" not in ran.err


def test_forget_before_takes_the_same_times(store_copy):
    seen = []
    for value in ("2026-13-01", "0001-01-01T00:30+01:00", "9999-12-31T23:30-01:00", "nan", "yesterday"):
        ran = evalcore("traffic", "forget", "--before", value, store=store_copy)
        seen.append(f"{ran.code}:{'--before' in ran.line()}")
    check(
        "traffic forget --before month 13, year 0 in UTC, year 10000 in UTC, nan, a word",
        "exit 2 naming --before, each of 5",
        "exit 2 naming --before, each of 5" if seen == ["2:True"] * 5 else " ".join(seen),
    )


# --- bounded periods ------------------------------------------------------------------------------


def test_a_check_over_1970_and_9999_refuses_with_the_reason(store_copy, tmp_path):
    rows = [
        {"time": 0, "query": "logged with a default time"},
        {"time": "9999-12-31T23:59:59Z", "query": "logged at the end of time"},
    ]
    _import(store_copy, _jsonl(tmp_path / "log.jsonl", rows))
    ran = evalcore("traffic", "check", "--run", _target(store_copy), "--threshold", "0.5", store=store_copy)
    said = ran.line()
    ok = ran.code == 2 and "periods" in said and "1970-01-01 00:00 UTC (log.jsonl line 1)" in said and "forget" in said
    check(
        "traffic check over a log with one line in 1970 and one in 9999",
        "exit 2; one line naming the earliest query and a hint",
        "exit 2; one line naming the earliest query and a hint" if ok else f"exit {ran.code}: {said}",
        ran.err,
    )


def test_a_check_of_a_line_at_the_end_of_time_does_not_overflow(store_copy, tmp_path):
    _import(store_copy, _jsonl(tmp_path / "log.jsonl", [{"time": "9999-12-31T23:59:59Z", "query": "late"}]))
    ran = evalcore("traffic", "check", "--run", _target(store_copy), "--threshold", "0.5", "--json", store=store_copy)
    end = json.loads(ran.out)["periods"][-1]["end"] if ran.code in (0, 1) and ran.out else ran.line()
    check(
        "traffic check of one line at 9999-12-31T23:59:59Z",
        "exit 0 or 1; last end 9999-12-31T23:59:59Z",
        (f"exit 0 or 1; last end {end}" if ran.code in (0, 1) else f"exit {ran.code}: {end}"),
    )


def test_a_line_at_time_0_among_november_does_not_build_half_a_million_periods(store_copy, tmp_path):
    rows = [{"time": 0, "query": "a logger's default time"}] + [
        {"time": (NOVEMBER + timedelta(minutes=83 * i)).isoformat() + "Z", "query": f"november question {i % 60}"}
        for i in range(500)
    ]
    _import(store_copy, _jsonl(tmp_path / "log.jsonl", rows))
    ran, peak, wall = measured(
        ["traffic", "check", "--run", _target(store_copy), "--threshold", "0.5", "--period", "1h"], store_copy
    )
    print(f"traffic check --period 1h, 1970 + 500 lines of November 2026: peak {peak:.0f} MiB, {wall:.1f} s")
    within = ran.code == 2 and "more than the 10,000" in ran.line() and peak < 600 and wall < 60
    check(
        "traffic check --period 1h: one line at time 0 among 500 of November 2026 (was 498,864 periods, 1.1 GB)",
        "exit 2 naming the 1970 line; peak < 600 MiB, < 60 s",
        "exit 2 naming the 1970 line; peak < 600 MiB, < 60 s"
        if within
        else f"exit {ran.code}, {peak:.0f} MiB, {wall:.1f} s: {ran.line()}",
    )


@pytest.mark.slow
def test_the_traffic_screen_charts_never_get_more_rows_than_they_draw(store_copy, tmp_path, monkeypatch):
    from evalcore.errors import ConfigError
    from evalcore.figures.traffic_charts import CHART_PERIODS, period_view
    from evalcore.records import Configuration

    rows = [{"time": 0, "query": "a logger's default time"}] + [
        {"time": (NOVEMBER + timedelta(hours=i)).isoformat() + "Z", "query": f"november question {i % 40}"}
        for i in range(500)
    ]
    _import(store_copy, _jsonl(tmp_path / "log.jsonl", rows))
    store = Store(store_copy)
    run_id = _target(store_copy).split(":")[0]
    try:
        period_view(store, run_id, Configuration("E", "dense"), timedelta(days=1), 0.5, "day")
        day = "built"
    except ConfigError as exc:
        day = "refused" if "periods of 1 day" in str(exc) else str(exc)
    frame, volume, share = period_view(store, run_id, Configuration("E", "dense"), timedelta(days=7), 0.5, "week")
    drawn = max(len(next(iter(spec["datasets"].values()))) for spec in (volume, share))
    at = _traffic_screen(store_copy, run_id, "E/dense", monkeypatch)
    week = "an exception" if at.exception else "drawn"
    at.radio(key="traffic_period").set_value("day").run()
    said = [str(e.value) for e in at.warning if "periods of 1 day" in str(e.value)]
    screen = "an exception" if at.exception else ("says why" if said else "no word")
    observed = f"day view {day}; week view {len(frame)} periods, charts draw {drawn}; screen: week {week}, day {screen}"
    check(
        "Traffic screen, one line at time 0 among 500 of November 2026 (day view raised MaxRowsError)",
        f"day view refused; week view {len(frame)} periods, charts draw {CHART_PERIODS}; screen: week drawn, "
        "day says why",
        observed,
        [e.value for e in at.exception],
    )


def _traffic_screen(store: Path, run_id: str, config: str, monkeypatch):
    """The dashboard's Traffic screen (Streamlit's AppTest) on ``store``'s run and configuration."""
    from streamlit.testing.v1 import AppTest

    monkeypatch.setenv("EVALCORE_STORE", str(store))
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=180)
    at.query_params.update({"run_id": run_id, "config": config})
    at.run()
    return at.switch_page("evalcore_app/screens/traffic.py").run()


# --- labels and identity --------------------------------------------------------------------------


def _labelled_log(tmp_path: Path) -> tuple[Path, int]:
    rows = []
    for i in range(160):
        row = {"time": (NOVEMBER + timedelta(minutes=17 * i)).isoformat() + "Z", "query": f"question {i % 70}"}
        if i % 16 < 5:  # 50 of 160
            row["label"] = "off-topic" if i % 2 else "answerable"
        rows.append(row)
    return _jsonl(tmp_path / "log.jsonl", rows), sum(1 for r in rows if "label" in r)


def test_labels_are_read_by_default_and_a_reimport_with_label_field_adds_nothing(store_copy, tmp_path):
    log, labelled = _labelled_log(tmp_path)
    _import(store_copy, log)
    first = (
        _count(store_copy, "SELECT count(*) FROM traffic_queries"),
        _count(store_copy, "SELECT count(label) FROM traffic_queries"),
    )
    again = _import(store_copy, log, "--label-field", "label")
    second = _count(store_copy, "SELECT count(*) FROM traffic_queries")
    check(
        "traffic import without --label-field, then again with --label-field label (was 160 then 210)",
        f"160 stored, {labelled} labelled; again: exit 0, 160 stored",
        f"{first[0]} stored, {first[1]} labelled; again: exit {again.code}, {second} stored",
    )


def test_a_reimport_with_labels_of_a_log_stored_without_them_adds_labels_not_lines(store_copy, tmp_path):
    log, labelled = _labelled_log(tmp_path)
    _import(store_copy, log, "--label-field", "")
    before = _count(store_copy, "SELECT count(label) FROM traffic_queries")
    again = _import(store_copy, log, "--json")
    done = json.loads(again.out)
    after = (
        _count(store_copy, "SELECT count(*) FROM traffic_queries"),
        _count(store_copy, "SELECT count(label) FROM traffic_queries"),
    )
    check(
        "traffic import with --label-field '' (no labels), then with the default",
        f"0 labelled; again: 0 added, {labelled} labelled; 160 stored, {labelled} with a label",
        f"{before} labelled; again: {done['added']} added, {done['labelled']} labelled; "
        f"{after[0]} stored, {after[1]} with a label",
    )


# --- CSV cells ------------------------------------------------------------------------------------

FORMULAS = [
    "=cmd|' /C calc'!A0",
    '=HYPERLINK("http://127.0.0.1:9/x","click")',
    "+1+1",
    "@SUM(A1:A2)",
    "\tTAB led",
    "\rCR led",
]


def test_export_with_text_writes_no_live_formula(store_copy, tmp_path):
    rows = [
        {"time": (NOVEMBER + timedelta(hours=i)).isoformat() + "Z", "query": text} for i, text in enumerate(FORMULAS)
    ]
    _import(store_copy, _jsonl(tmp_path / "log.jsonl", rows))
    out = tmp_path / "export.csv"
    ran = evalcore(
        "traffic",
        "export",
        str(out),
        "--run",
        _target(store_copy),
        "--threshold",
        "0.5",
        "--with-text",
        store=store_copy,
    )
    with open(out, newline="", encoding="utf-8") as fh:
        rows = list(csv.reader(fh))
    cells = [cell for row in rows for cell in row]
    live = [c for c in cells if c.startswith(("=", "+", "-", "@", "\t", "\r"))]
    kept = sorted(c[1:] for c in cells if c.startswith("'"))
    check(
        "traffic export --with-text of queries =cmd|..., =HYPERLINK(...), +, @, TAB-led, CR-led",
        "exit 0; no live formula; 6 texts kept behind ', no row split",
        f"exit {ran.code}; {'no live formula' if not live else live}; {len(kept)} texts kept behind '"
        + (", no row split" if len(rows) == len(FORMULAS) + 1 else f", {len(rows)} rows"),
    )
    assert kept == sorted(FORMULAS)


# --- forgetting -----------------------------------------------------------------------------------


def test_forget_takes_the_text_out_of_the_embedding_cache_and_the_file(store_copy, tmp_path):
    secret = "Where does Ms Quibblesworth-Farnham of 17 Larkspur Lane keep her spare key"
    rows = [
        {"time": "2026-10-05T10:00:00Z", "query": secret},
        {"time": "2026-11-05T10:00:00Z", "query": "a later question that stays"},
    ]
    _import(store_copy, _jsonl(tmp_path / "log.jsonl", rows))
    digest = text_hash(secret)
    cached = _count(store_copy, "SELECT count(*) FROM embeddings WHERE text_hash = ?", [digest])

    def on_disk() -> bytes:
        return store_copy.read_bytes() + b"".join(p.read_bytes() for p in store_copy.parent.glob("*.wal"))

    duckdb.connect(str(store_copy)).close()  # a checkpoint: what the file holds before forget
    before = [w for w in (digest.encode(), b"Quibblesworth") if w in on_disk()]
    ran = evalcore("traffic", "forget", "--before", "2026-11-01", store=store_copy)
    left = _count(store_copy, "SELECT count(*) FROM embeddings WHERE text_hash = ?", [digest])
    stays = _count(
        store_copy, "SELECT count(*) FROM embeddings WHERE text_hash = ?", [text_hash("a later question that stays")]
    )
    found = [w for w in (secret.encode(), digest.encode(), b"Quibblesworth") if w in on_disk()]
    check(
        "traffic forget: the text's sha256 -> vector in the embedding cache, and the file's bytes",
        "exit 0; cached 1 -> 0 (the kept text's vector stays); text and hash in the file before, neither after",
        f"exit {ran.code}; cached {cached} -> {left} (the kept text's vector {'stays' if stays else 'GONE'}); "
        + ("text and hash in the file before" if len(before) == 2 else f"before only {before}")
        + (", neither after" if not found else f", found after {found}"),
    )


# --- a killed import ------------------------------------------------------------------------------


def _killed_after_a_batch(store: Path, log: Path, marker: Path) -> None:
    """A real ``traffic import`` process, SIGKILLed once it has written a batch."""
    marker.unlink(missing_ok=True)
    env = {**os.environ, **FAKE, "EVALCORE_TEST_PAUSE": f"traffic: batch written={marker}"}
    proc = zygote.start(["--store", str(store), "traffic", "import", str(log), "--run", _target(store), "-q"], env)
    deadline = time.monotonic() + 120
    while not marker.exists() and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.05)
    assert marker.exists(), proc.communicate()[1]
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=30)


@pytest.mark.slow
def test_imports_killed_twice_are_marked_failed_and_the_third_completes(store_copy, tmp_path):
    lines = 40_000  # three batches of 16,384: the first import is killed after batch 1, the second after batch 2
    rows = [
        {"time": (NOVEMBER + timedelta(seconds=37 * i)).isoformat() + "Z", "query": f"question {i % 50}"}
        for i in range(lines)
    ]
    log = _jsonl(tmp_path / "big.jsonl", rows)
    seen = []
    for _ in range(2):
        _killed_after_a_batch(store_copy, log, tmp_path / "paused")
        seen.append(
            (
                _count(store_copy, "SELECT count(*) FROM traffic_imports WHERE status = 'running'"),
                _count(store_copy, "SELECT count(*) FROM traffic_queries"),
            )
        )
    again = _import(store_copy, log, process=True)
    statuses = Store(store_copy).query("SELECT status, reason FROM traffic_imports ORDER BY started_at")
    total = _count(store_copy, "SELECT count(*) FROM traffic_queries")
    observed = (
        f"after the kills: {seen[0][0]} then {seen[1][0]} running, {seen[0][1]} then {seen[1][1]} lines; "
        f"third import exit {again.code}: {total} lines; imports {'/'.join(statuses['status'])}"
    )
    check(
        "SIGKILL of a 40,000-line import after its first batch, of the same import again after its next, "
        "then the same import a third time",
        f"after the kills: 1 then 1 running, 16384 then 32768 lines; third import exit 0: {lines} lines; "
        "imports failed/failed/complete",
        observed,
        again.err,
    )
    assert all("ended before the import finished" in str(r) for r in statuses["reason"].iloc[:2])


# --- an endpoint that stopped answering -----------------------------------------------------------

PIXEL = "/pixel.png"


def _malformed_server(port: int):
    """A service on ``port`` answering every search with a body that is not JSON and names an
    image in Markdown (the image itself is a 404; requests for it are counted)."""
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    fetched = []

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args):
            pass

        def do_GET(self):
            fetched.append(self.path)
            self.send_response(404)
            self.end_headers()

        def do_POST(self):
            self.rfile.read(int(self.headers.get("Content-Length") or 0))
            body = f"oops ![x](http://127.0.0.1:{port}{PIXEL}) **bold**".encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

    server = ThreadingHTTPServer(("127.0.0.1", port), Handler)
    server.daemon_threads = True
    return server, fetched


@pytest.mark.slow
def test_every_replayed_query_failed_the_failure_shows_as_text_and_forget_empties_the_response_cache(
    mini_inputs, tmp_path, monkeypatch
):
    import threading

    from hostile import Hostile
    from test_hostile import endpoint_args

    store = tmp_path / "runs" / "evalcore.duckdb"
    store.parent.mkdir()
    with Hostile(*mini_inputs) as service:
        made = evalcore(*endpoint_args(service.url("ok")), store=store)
        port = service.server.server_address[1]
    assert made.code == 0, made.err
    server, _ = _malformed_server(port)  # the same address now answers with a malformed body
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        rows = [
            {"time": (NOVEMBER + timedelta(hours=i)).isoformat() + "Z", "query": f"zebrafinch question {i}"}
            for i in range(6)
        ]
        run_id = str(Store(store).runs()["run_id"].iloc[0])
        config = Store(store).query("SELECT strategy || '/' || retriever AS c FROM results LIMIT 1")["c"].iloc[0]
        ran = evalcore("traffic", "import", str(_jsonl(tmp_path / "log.jsonl", rows)), "--run", f"{run_id}:{config}",
                       "-q", store=store)  # fmt: skip
        failed = _count(store, "SELECT count(*) FROM traffic_texts WHERE failure IS NOT NULL")
        at = _traffic_screen(store, run_id, config, monkeypatch)
        screen = "an exception" if at.exception else "says every query failed"
        if not at.exception and not any("failed at the endpoint" in str(e.value) for e in at.info):
            screen = "no word of the failures"
        at.query_params["traffic"] = text_hash("zebrafinch question 0")
        at.switch_page("evalcore_app/screens/query.py").run()
        warned = [str(e.value) for e in at.warning if "could not answer" in str(e.value)]
        shown = "escaped" if warned and "\\!\\[x\\]" in warned[0] and "\\*\\*bold" in warned[0] else f"{warned}"
    finally:
        server.shutdown()
        server.server_close()
    cached = _count(store, "SELECT count(*) FROM responses WHERE body LIKE '%zebrafinch%'")
    others = _count(store, "SELECT count(*) FROM responses WHERE body NOT LIKE '%zebrafinch%'")
    gone = evalcore("traffic", "forget", "--before", "2027-01-01", store=store)
    left = _count(store, "SELECT count(*) FROM responses WHERE body LIKE '%zebrafinch%'")
    kept = _count(store, "SELECT count(*) FROM responses WHERE body NOT LIKE '%zebrafinch%'")
    check(
        "traffic forget of an endpoint's traffic: the response cache's requests and answers",
        f"exit 0; traffic requests 6 -> 0; the evaluation's {others} kept; the text not in the file",
        f"exit {gone.code}; traffic requests {cached} -> {left}; the evaluation's {kept} kept; the text "
        + ("not in the file" if b"zebrafinch" not in store.read_bytes() else "IN THE FILE"),
        gone.err,
    )
    check(
        "traffic of an endpoint that answers every query with a malformed body naming a Markdown image",
        "import exit 0, 6 failed; Traffic screen says every query failed; Query view: the failure's Markdown escaped",
        f"import exit {ran.code}, {failed} failed; Traffic screen {screen}; Query view: the failure's Markdown {shown}",
        [ran.err, [e.value for e in at.exception]],
    )


# --- posted lines: identity per deployment, one id rule, hostile ids (a real server) -------------

NDJSON = "application/x-ndjson"
POSTED_AT = "2026-12-04T10:00:00Z"


@pytest.fixture(scope="module")
def posting(tmp_path_factory):
    """(url, store, key) of ``evalcore dashboard`` as a real process over a store made by the real
    CLI (tests/api_serving.py), with deployments ``prod-a`` and ``prod-b`` on run ``base``'s
    E/dense (two decisions of one configuration)."""
    from api_serving import ALL_SCOPES, api_server, make_key, make_store

    folder = tmp_path_factory.mktemp("posting")
    store = make_store(tmp_path_factory, folder / "evalcore.duckdb")
    key = make_key(store, "ops", ALL_SCOPES)
    with api_server(store, folder / "server.log") as url:
        with _api(url, key) as c:
            for name, t in (("prod-a", 0.5), ("prod-b", 0.45)):
                made = c.post("/runs/base/decisions", json={"configuration": "E/dense", "threshold": t})
                assert made.status_code == 201, made.text
                put = c.put(f"/deployments/{name}", json={"decision_id": made.json()["decision_id"]})
                assert put.status_code == 201, put.text
        yield url, store, key
    log = (folder / "server.log").read_text()
    assert "Traceback" not in log, log[-4000:]


def _api(url: str, key: str):
    import httpx

    return httpx.Client(base_url=url + "/api/v1", headers={"Authorization": f"Bearer {key}"}, timeout=60)


def _post(c, deployment: str, lines: list[str]) -> tuple[int, list[dict]]:
    answer = c.post(
        f"/deployments/{deployment}/traffic", content="\n".join(lines) + "\n", headers={"Content-Type": NDJSON}
    )
    return answer.status_code, answer.json().get("results", []) if answer.status_code == 207 else [answer.text]


def _replays_ended(store: Path, deployments: set[str], timeout: float = 240) -> dict[str, str]:
    """Wait until the server's replay job of each deployment has ended; {deployment: status}."""
    ended = ("complete", "failed", "cancelled")
    deadline = time.monotonic() + timeout
    while True:
        jobs = Store(store).query("SELECT deployment, status FROM jobs WHERE kind = 'traffic'")
        done = {str(d): str(s) for d, s in zip(jobs["deployment"], jobs["status"], strict=True) if s in ended}
        waiting = set(jobs.loc[~jobs["status"].isin(ended), "deployment"])
        if (deployments <= set(done) and not waiting & deployments) or time.monotonic() > deadline:
            return done
        time.sleep(0.3)


def test_two_deployments_on_one_configuration_posting_the_same_lines_both_have_every_line_counted(posting):
    from evalcore.read.traffic.stored import lines_by_deployment, stored
    from evalcore.records import Configuration
    from evalcore.traffic.check import run_check

    url, store, key = posting
    texts = ["how do I install the package", "where is the cache kept"]
    with _api(url, key) as c:
        answers = [
            _post(
                c, name, [json.dumps({"id": f"{name}-{i}", "query": q, "time": POSTED_AT}) for i, q in enumerate(texts)]
            )
            for name in ("prod-a", "prod-b")
        ]
    said = " / ".join(f"{code} {','.join(r['status'] for r in rs)}" for code, rs in answers)
    jobs = _replays_ended(store, {"prod-a", "prod-b"})
    reader = Store(store)
    runs = reader.runs()
    run_id = str(runs.loc[runs["name"] == "base", "run_id"].iloc[0])
    config = Configuration("E", "dense")
    each = {name: stored(reader, run_id, config, deployment=name).lines for name in ("prod-a", "prod-b")}
    total = stored(reader, run_id, config).lines
    checked = sum(p["queries"] for p in run_check(reader, f"{run_id}:E/dense", threshold=0.5).periods)
    imports = reader.query("SELECT source, added FROM traffic_imports WHERE source LIKE 'deployment %' ORDER BY 1")
    added = ", ".join(f"{s} added {n}" for s, n in zip(imports["source"], imports["added"], strict=True))
    check(
        "two deployments on one configuration post the same 2 texts at the same time under their own ids "
        "(the second replay added 0 of 2 lines)",
        "207 stored,stored / 207 stored,stored; replays complete/complete: deployment prod-a added 2, "
        "deployment prod-b added 2; Traffic figures prod-a 2, prod-b 2, configuration 4; traffic check 4 queries",
        f"{said}; replays {jobs.get('prod-a')}/{jobs.get('prod-b')}: {added}; Traffic figures prod-a "
        f"{each['prod-a']}, prod-b {each['prod-b']}, configuration {total}; traffic check {checked} queries",
    )
    assert lines_by_deployment(reader, run_id, config) == {"prod-a": 2, "prod-b": 2}


def test_the_integer_1_and_the_text_1_are_one_id_for_the_post_and_its_duplicate_check(posting):
    url, store, key = posting
    at = "2026-12-05T09:00:00Z"
    ids = [1, "1", " 1 ", "01", 0, 12345678901234567890123]
    with _api(url, key) as c:
        code, first = _post(c, "prod-a", [json.dumps({"id": i, "query": f"id {i!r}", "time": at}) for i in ids])
        again, later = _post(c, "prod-a", [json.dumps({"id": "0", "query": "zero as text", "time": at})])
        other, theirs = _post(c, "prod-b", [json.dumps({"id": 1, "query": "the same id elsewhere", "time": at})])
    seen = ", ".join(f"{r['id']} {r['status']}" for r in first)
    posted = Store(store).query(
        "SELECT deployment || ':' || post_id AS d FROM traffic_posted WHERE asked_at = ? ORDER BY deployment, seq",
        [datetime(2026, 12, 5, 9, 0)],
    )
    check(
        'posted ids 1, "1", " 1 ", "01", 0, 12345678901234567890123; then "0"; then 1 to another deployment',
        "207: 1 stored, 1 duplicate, 1 duplicate, 01 stored, 0 stored, 12345678901234567890123 stored; "
        "207: 0 duplicate; 207: 1 stored; stored prod-a:1 prod-a:01 prod-a:0 prod-a:12345678901234567890123 prod-b:1",
        f"{code}: {seen}; {again}: {later[0]['id']} {later[0]['status']}; {other}: {theirs[0]['id']} "
        f"{theirs[0]['status']}; stored {' '.join(posted['d'])}",
    )


#: (case, the id as the line's JSON text, the reason its result gives)
HOSTILE_IDS = [
    ("true", "true", "id: expected text or an integer, got a boolean"),
    ("false", "false", "id: expected text or an integer, got a boolean"),
    ("1.0", "1.0", "id: expected text or an integer, got the number 1.0 (not an integer)"),
    ("1.5", "1.5", "id: expected text or an integer, got the number 1.5 (not an integer)"),
    ("1e3", "1e3", "id: expected text or an integer, got the number 1000.0 (not an integer)"),
    ("NaN", "NaN", "id: expected text or an integer, got the number nan (not an integer)"),
    ("-Infinity", "-Infinity", "id: expected text or an integer, got the number -inf (not an integer)"),
    ("an object", '{"id": 1}', "id: expected text or an integer, got an object"),
    ("a nested list", "[1, [2, [3]]]", "id: expected text or an integer, got a list"),
    ("null", "null", "id: missing (each line needs the caller's id of the query)"),
    ("empty text", '""', "id: is empty"),
    ("10,000 characters", json.dumps("x" * 10_000), "id: 10,000 characters, more than the 200 allowed"),
    ("a NUL", '"q\\u00001"', "id: character 2 is U+0000 (control, bidirectional and zero-width characters are not "
     "allowed in a name)"),
    ("-1", "-1", "id: -1 is a negative integer (an integer id is 0 or more)"),
    ("an integer of 300 digits", "1" + "0" * 299, "id: an integer of more than 200 digits (an id is at most 200 "
     "characters)"),
]  # fmt: skip


def test_hostile_ids_are_each_a_problem_naming_the_id_and_the_good_line_is_stored(posting):
    url, store, key = posting
    lines = [f'{{"id": {raw}, "query": "hostile {name}", "time": "{POSTED_AT}"}}' for name, raw, _ in HOSTILE_IDS]
    lines.append(json.dumps({"id": "good-one", "query": "a good line among them", "time": POSTED_AT}))
    lines.append('{"id": ' + "9" * 5000 + ', "query": "an integer of 5,000 digits", "time": 0}')
    with _api(url, key) as c:
        code, results = _post(c, "prod-b", lines)
    by_line = {r["line"]: r for r in results} if code == 207 else {}
    for n, (name, _, reason) in enumerate(HOSTILE_IDS, start=1):
        got = by_line.get(n, {})
        check(
            f"a posted line whose id is {name}",
            f"207; line {n} problem: {reason}",
            f"{code}; line {got.get('line')} {got.get('status')}: {got.get('reason')}",
        )
    good, huge = by_line.get(len(lines) - 1, {}), by_line.get(len(lines), {})
    posted = Store(store).query("SELECT post_id, text_hash FROM traffic_posted WHERE deployment = 'prod-b'")
    hostile_hashes = {text_hash(f"hostile {name}") for name, _, _ in HOSTILE_IDS} | {
        text_hash("an integer of 5,000 digits")
    }
    hostile = int(posted["text_hash"].isin(hostile_hashes).sum())
    stored_ids = list(posted.loc[posted["text_hash"] == text_hash("a good line among them"), "post_id"])
    check(
        "a good line after the hostile ids, then an id of 5,000 digits (Python reads at most 4,300)",
        "good-one stored (stored ['good-one']); 5,000 digits problem: not JSON that can be read: a number of more "
        "than 4,300 digits; no hostile id stored",
        f"{good.get('id')} {good.get('status')} (stored {stored_ids}); 5,000 digits {huge.get('status')}: "
        f"{huge.get('reason')}; " + ("no hostile id stored" if not hostile else f"{hostile} hostile ids stored"),
    )
