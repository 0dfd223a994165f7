"""The reliability suite, issue 19: inputs added since the first 93 cases, tried as a hostile or
merely careless user would (run files, imports, endpoints, documents, the gate). One table row
per case, like tests/reliability/test_reliability.py: exit 0 or 2, one line naming the file,
line or field, a measured peak memory and wall time where those are what is at stake, and
nothing half-stored. Hostile files are built here; the hostile endpoint is tests/reliability/
hostile.py on 127.0.0.1. Small caps (environment variables) keep each case quick while the
real code paths run.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pdfs
import pytest
import zygote
from conftest import ROOT
from hostile import FIRST, TOKEN, Hostile
from test_reliability import CORPUS, FAKE, OOD, QUESTIONS, Ran, check, complete_runs, evalcore, kept

from evalcore.store import Store

M = ["--corpus", str(CORPUS), "--questions", str(QUESTIONS), "--ood", str(OOD)]
sys.path.insert(0, str(ROOT / "examples"))
import external_bm25  # noqa: E402


@pytest.fixture(scope="module")
def files(tmp_path_factory, mini_inputs) -> dict[str, Path]:
    """The example retriever's chunk file and rankings (TREC and JSONL) for the mini corpus."""
    corpus, gt = mini_inputs
    return external_bm25.write_files(tmp_path_factory.mktemp("files"), corpus, gt)


@pytest.fixture(scope="module")
def hostile(mini_inputs):
    with Hostile(*mini_inputs) as service:
        yield service


# ``python -m evalcore`` that writes its own peak RSS (VmHWM: this process image only, not the
# forked test process before exec, which getrusage would count) to the file $PEAK_FILE at exit
PEAKED = (
    "import atexit, os, runpy, sys\n"
    "def peak():\n"
    "    hwm = [x for x in open('/proc/self/status') if x.startswith('VmHWM')][0].split()[1]\n"
    "    open(os.environ['PEAK_FILE'], 'w').write(hwm)\n"
    "atexit.register(peak)\n"
    "sys.argv = ['evalcore', *sys.argv[1:]]\n"
    "runpy.run_module('evalcore', run_name='__main__', alter_sys=True)\n"
)


def measured(args: list[str], store: Path, env: dict | None = None, timeout: float = 60) -> tuple[Ran, float, float]:
    """A real ``python -m evalcore`` process: what it said, its peak RSS (MB) and its wall time
    (s). Killed at ``timeout``."""
    peak_file = store.parent / "peak.kb"
    cmd = [sys.executable, "-c", PEAKED, "--store", str(store), *args]
    env = {**os.environ, **FAKE, **(env or {}), "PEAK_FILE": str(peak_file)}
    t0 = time.monotonic()
    res = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=timeout)
    wall = time.monotonic() - t0
    peak = int(peak_file.read_text()) / 1024 if peak_file.exists() else float("nan")
    return Ran(res.returncode, res.stdout, res.stderr), peak, wall


def endpoint_args(url: str, *extra: str, timeout: str = "10") -> list[str]:
    return [
        "run-endpoint",
        *M,
        "--url",
        url,
        "--timeout",
        timeout,
        "--retries",
        "0",
        "--concurrency",
        "8",
        "--name",
        "api",
        "--json",
        *extra,
    ]


def failures(ran: Ran) -> dict[str, str]:
    return {f["query"]: f["reason"] for f in json.loads(ran.out)["failures"]} if ran.code == 0 else {}


def hit_rows(store: Path) -> int:
    return int(Store(store).query("SELECT max(n) AS n FROM (SELECT count(*) AS n FROM hits GROUP BY query_id)")["n"][0])


# --- endpoints (items 2, 3, 7, 12, 13) ----------------------------------------------------------


def test_endpoint_that_finds_nothing_is_a_valid_run_with_recall_0(hostile, tmp_path):
    store = tmp_path / "s.duckdb"
    ran = evalcore(*endpoint_args(hostile.url("empty")), store=store)
    config = json.loads(ran.out)["configurations"][0] if ran.code == 0 else {}
    expected = "exit 0 · - · 18 queries scored, recall@20 0.0, MRR 0.0, 0 failed"
    observed = (
        f"exit {ran.code} · {ran.line(tmp_path)} · {config.get('queries')} queries scored, "
        f"recall@20 {config.get('recall@20')}, MRR {config.get('mrr')}, {config.get('failed')} failed"
    )
    check('endpoint: finds nothing ({"hits": []})', expected, observed, ran.out[:2000])


def test_python_retriever_that_finds_nothing_is_a_valid_run_with_recall_0(tmp_path):
    import evalcore

    try:
        done = evalcore.evaluate(CORPUS, QUESTIONS, OOD, retriever=lambda q, k: [], store=tmp_path / "s.duckdb")
        figures = done.summary.iloc[0]
        got = f"run stored · R@20 {float(figures['recall@20']):.3f} · MRR {float(figures['mrr']):.3f}"
    except Exception as exc:  # noqa: BLE001 - shown in the table
        got = f"{type(exc).__name__}: {exc}"
    check("python: evaluate(retriever=lambda q, k: [])", "run stored · R@20 0.000 · MRR 0.000", got)


def test_endpoint_where_every_query_fails_is_one_line_and_a_failed_run(hostile, tmp_path):
    store = tmp_path / "s.duckdb"
    ran = evalcore(*endpoint_args(hostile.url("fail")), store=store)
    status = [r["status"] for r in Store(store).runs().to_dict("records")] if store.exists() else []
    down = 'HTTP 500 Internal Server Error: {"error": "down"}'
    expected = (
        "exit 2 · error: 25 of 25 queries failed (100%), more than the allowed 5% (--max-failures); "
        f"e.g. port-course: {down}; port-ticket: {down}; config-course: {down} · runs ['failed']"
    )
    observed = f"exit {ran.code} · {ran.line(tmp_path)} · runs {status}"
    check("endpoint: every query fails (HTTP 500)", expected, observed)


def test_endpoint_answer_nested_50000_deep_fails_that_query_also_from_the_cache(hostile, tmp_path):
    store = tmp_path / "s.duckdb"
    reasons = []
    for _ in range(2):
        ran = evalcore(*endpoint_args(hostile.url("deep")), store=store)
        reasons.append(f"exit {ran.code} · {ran.line(tmp_path)} · {failures(ran)}")
    reason = "malformed JSON in the answer (nested too deeply (over about 1,000 levels) at line 1 column 1): "
    row = f"exit 0 · - · {{'{FIRST}': " + repr(reason + repr(('{"hits": ' + "[" * 80)[:80])) + "}"
    expected = f"{row} · again from the cache: {row}"
    observed = f"{reasons[0]} · again from the cache: {reasons[1]}"
    check("endpoint: an answer nested 50,000 levels deep", expected, observed)


def test_endpoint_ranking_one_chunk_three_times_fails_that_query(hostile, tmp_path):
    ran = evalcore(*endpoint_args(hostile.url("dup")), store=tmp_path / "s.duckdb")
    reason = "hit 2: the same chunk as hit 1; a chunk is ranked once per query"
    expected = f"exit 0 · {{'{FIRST}': '{reason}'}}"
    observed = f"exit {ran.code} · {failures(ran) or ran.line(tmp_path)}"
    check("endpoint: one chunk at ranks 1-3", expected, observed)


@pytest.mark.slow
@pytest.mark.parametrize("cap", [None, 16 << 20], ids=["default cap", "cap raised to 16 MiB"])
def test_endpoint_answer_of_150003_hits(hostile, tmp_path, cap):
    store = tmp_path / "s.duckdb"
    env = {"EVALCORE_MAX_RESPONSE_BYTES": str(cap)} if cap else {}
    ran, peak, wall = measured(endpoint_args(hostile.url("many")), store, env)
    most = hit_rows(store) if ran.code == 0 else None
    failed = failures(ran)
    if cap:
        expected = "exit 0 · no query failed · at most 20 hit rows per query · peak under 500 MB"
    else:
        expected = (
            f"exit 0 · failed {{'{FIRST}': 'answer of 6,532,972 bytes is over the 4,194,304-byte limit "
            "($EVALCORE_MAX_RESPONSE_BYTES)'} · "
            "at most 20 hit rows per query · peak under 500 MB"
        )
    observed = (
        f"exit {ran.code} · {f'failed {failed}' if failed else 'no query failed'} · at most {most} hit rows per "
        f"query · peak {'under 500 MB' if peak < 500 else f'{peak:.0f} MB'}"
    )
    name = "default cap" if not cap else "cap 16 MiB"
    check(f"endpoint: 150,003 hits in an answer, {name} (peak {peak:.0f} MB, {wall:.1f} s)", expected, observed)


def test_endpoint_endless_body_fails_that_query_at_the_size_cap(hostile, tmp_path):
    env = {"EVALCORE_MAX_RESPONSE_BYTES": str(1 << 20)}
    ran, peak, wall = measured(endpoint_args(hostile.url("endless")), tmp_path / "s.duckdb", env)
    reason = "answer larger than the 1,048,576-byte limit ($EVALCORE_MAX_RESPONSE_BYTES); not read further"
    expected = f"exit 0 · {{'{FIRST}': '{reason}'}} · peak under 350 MB"
    observed = f"exit {ran.code} · {failures(ran) or ran.line(tmp_path)} · " + (
        "peak under 350 MB" if peak < 350 else f"peak {peak:.0f} MB"
    )
    check(f"endpoint: an endless body (peak {peak:.0f} MB, {wall:.1f} s)", expected, observed, ran.err)


def test_endpoint_slowloris_is_bounded_by_the_timeout(hostile, tmp_path):
    args = endpoint_args(hostile.url("slow"), timeout="1")
    ran, peak, wall = measured(args, tmp_path / "s.duckdb")
    slow = "no complete answer within 1 s"
    expected = (
        "exit 2 · error: 25 of 25 queries failed (100%), more than the allowed 5% (--max-failures); "
        f"e.g. port-course: {slow}; port-ticket: {slow}; config-course: {slow} · within 15 s"
    )
    observed = f"exit {ran.code} · {ran.line(tmp_path)} · {'within 15 s' if wall < 15 else f'{wall:.0f} s'}"
    check(f"endpoint: slowloris, --timeout 1 --retries 0 ({wall:.1f} s)", expected, observed)


def test_endpoint_slowloris_ends_within_seconds_of_sigterm(hostile, tmp_path):
    store = tmp_path / "s.duckdb"
    before = hostile.requests["slow"]
    proc = zygote.start(
        ["--store", str(store), *endpoint_args(hostile.url("slow"), timeout="60")], {**os.environ, **FAKE}
    )
    deadline = time.monotonic() + 30
    while hostile.requests["slow"] < before + 8 and time.monotonic() < deadline:
        time.sleep(0.05)
    time.sleep(0.3)
    t0 = time.monotonic()
    proc.send_signal(signal.SIGTERM)
    try:
        out, err = proc.communicate(timeout=30)
    except subprocess.TimeoutExpired:
        proc.kill()
        out, err = proc.communicate()
    took = time.monotonic() - t0
    run = Store(store).runs().to_dict("records")
    ran = Ran(proc.returncode, out, err)
    expected = "exit 143 · ended within 5 s · run failed: interrupted by SIGTERM during external/external: asking"
    observed = (
        f"exit {ran.code} · {'ended within 5 s' if took < 5 else f'ended after {took:.0f} s'} · "
        f"run {run[0]['status'] if run else '-'}: {run[0]['reason'] if run else '-'}"
    )
    check(f"endpoint: slowloris, SIGTERM ({took:.1f} s to end)", expected, observed)


def test_endpoint_cache_never_serves_an_answer_to_other_credentials(hostile, tmp_path):
    store = tmp_path / "s.duckdb"
    first = evalcore(*endpoint_args(hostile.url("auth"), "--header", f"Authorization: {TOKEN}"), store=store)
    asked = hostile.requests["auth"]
    second = evalcore(*endpoint_args(hostile.url("auth")), store=store)
    third = evalcore(*endpoint_args(hostile.url("auth"), "--header", "Authorization: Bearer other"), store=store)
    sent = hostile.requests["auth"] - asked
    expected = (
        "with the token: exit 0 · without it: exit 2, not from the cache · another token: exit 2 · "
        "50 requests reached the service"
    )
    observed = (
        f"with the token: exit {first.code} · without it: exit {second.code}, "
        f"{'not from the cache' if 'HTTP 401' in second.err else 'FROM THE CACHE'} · "
        f"another token: exit {third.code} · "
        f"{sent} requests reached the service"
    )
    check("endpoint: cached answer and another credential", expected, observed, second.err)


# --- the endpoint allow-list (item 6) ----------------------------------------------------------

ALLOW = "http://127.0.0.1:1876,http://search.local/api/search/"
NOT_UNDER = "--url {url!r} is not under a prefix the operator allows ($EVALCORE_ENDPOINTS)"
ALLOW_CASES = [
    ("another port that starts with the allowed one", "http://127.0.0.1:18766/search", NOT_UNDER),
    ("a path climbing out with ..", "http://search.local/api/search/../admin", NOT_UNDER),
    ("a path climbing out with %2e%2e", "http://search.local/api/search/%2e%2e/admin", NOT_UNDER),
    ("a sibling folder sharing the prefix's text", "http://search.local/api/searchx", NOT_UNDER),
    (
        "the allowed host as a user name",
        "http://127.0.0.1:1876@evil.example/",
        "--url {url!r}: a user name or password in the URL is not allowed",
    ),
    ("another scheme", "https://search.local/api/search/q", NOT_UNDER),
    (
        "{query} in the path",
        "http://search.local/api/search/{query}",
        "--url {url!r}: {{query}} may stand only in the query string (after '?') of a dashboard run",
    ),
    ("an allowed path below the prefix", "http://search.local/api/search/v2?q={query}", "admitted"),
    ("the default port written out, host in capitals", "http://SEARCH.local:80/api/search/x", "admitted"),
]


@pytest.mark.parametrize("name, url, message", ALLOW_CASES, ids=[c[0] for c in ALLOW_CASES])
def test_endpoint_allow_list_compares_parsed_urls(monkeypatch, name, url, message):
    from evalcore.errors import ConfigError
    from evalcore.external.endpoint import check_allowed

    monkeypatch.setenv("EVALCORE_ENDPOINTS", ALLOW)
    try:
        check_allowed(url)
        got = "admitted"
    except ConfigError as exc:
        got = str(exc)
    check(f"allow-list: {name}", message.format(url=url), got)


# --- files that crashed with a traceback (items 12, 14) -----------------------------------------


def _deep(depth: int = 50_000) -> str:
    return "[" * depth + "]" * depth


def _zip(path: Path, members: dict[str, bytes]) -> Path:
    import zipfile

    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as zf:
        for name, data in members.items():
            zf.writestr(name, data)
    return path


DEEP = "nested too deeply (over about 1,000 levels)"
FILE_CASES = [
    (
        "TREC rank of 400 digits",
        "rankings.trec",
        lambda f: f["trec"].read_text().replace(" 1 ", " " + "9" * 400 + " ", 1),
        "error: TMP/rankings.trec:1: rank 99999999999999999999... is out of range (at most 1,000,000,000)",
    ),
    (
        "TREC file with a Latin-1 byte",
        "rankings.trec",
        lambda f: (
            f["trec"].read_bytes().replace(b"rank_bm25\n", b"rank_bm25\n", 2)[:0]
            + b"".join(
                line.replace(b"rank_bm25", b"r\xe9sultat") if i == 2 else line
                for i, line in enumerate(f["trec"].read_bytes().splitlines(keepends=True))
            )
        ),
        "error: TMP/rankings.trec:3: not UTF-8 text (byte offset 55: invalid continuation byte)",
    ),
    (
        "rankings JSON nested 50,000 deep",
        "rankings.json",
        lambda f: '{"port-course": ' + _deep() + "}",
        f"error: TMP/rankings.json:1: invalid JSON ({DEEP} at column 1)",
    ),
    (
        "rankings JSONL line nested 50,000 deep",
        "rankings.jsonl",
        lambda f: '{"query": "port-course", "hits": ' + _deep() + "}\n",
        f"error: TMP/rankings.jsonl:1: invalid JSON ({DEEP} at column 1)",
    ),
]


@pytest.mark.parametrize("name, file, make, message", FILE_CASES, ids=[c[0] for c in FILE_CASES])
def test_a_rankings_file_that_crashed_is_one_line_exit_2_and_no_store(files, tmp_path, name, file, make, message):
    data = make(files)
    path = tmp_path / file
    path.write_bytes(data if isinstance(data, bytes) else data.encode())
    store = tmp_path / "store" / "s.duckdb"
    ran = evalcore("import-run", *M, "--chunks", str(files["chunks"]), "--rankings", str(path), store=store)
    expected = f"exit 2 · {message} · store not created"
    observed = f"exit {ran.code} · {ran.line(tmp_path)} · store {'created' if store.parent.exists() else 'not created'}"
    check(f"import-run: {name}", expected, observed)


def test_a_question_line_nested_50000_deep_is_one_line(tmp_path):
    q = tmp_path / "q.jsonl"
    q.write_text('{"id": "a", "question": ' + _deep() + "}\n")
    ran = evalcore("validate", "--corpus", str(CORPUS), "--questions", str(q))
    expected = f"exit 2 · error: TMP/q.jsonl:1: invalid JSON ({DEEP} at column 1)"
    check("questions: a line nested 50,000 deep", expected, f"exit {ran.code} · {ran.line(tmp_path)}")


def test_a_run_file_manifest_nested_50000_deep_is_one_line(tmp_path):
    path = _zip(tmp_path / "run.zip", {"manifest.json": _deep().encode()})
    store = tmp_path / "store" / "s.duckdb"
    ran = evalcore("load-run", str(path), store=store)
    expected = (
        f"exit 2 · error: TMP/run.zip: manifest.json is not valid JSON ({DEEP}: line 1 column 1 (char 0)) · "
        "store not created"
    )
    observed = f"exit {ran.code} · {ran.line(tmp_path)} · store {'created' if store.parent.exists() else 'not created'}"
    check("load-run: a manifest nested 50,000 deep", expected, observed)


@pytest.fixture(scope="module")
def gate_store(hostile, tmp_path_factory) -> Path:
    """Two endpoint runs of the same queries: 'good' (honest) and 'down' (every query failed,
    allowed by --max-failures 1)."""
    store = tmp_path_factory.mktemp("gate") / "s.duckdb"
    for name, mode, extra in (("good", "ok", []), ("down", "fail-in-domain", ["--max-failures", "1"])):
        ran = evalcore(*endpoint_args(hostile.url(mode), *extra, "--name", name), store=store)
        assert ran.code == 0, ran.err
    return store


GATE_CASES = [
    (
        "candidate's in-domain queries all failed",
        ["--baseline", "good", "--candidate", "down"],
        "error: external/external: no scored in-domain query was answered by both runs (all 18 failed on the "
        "candidate); nothing to gate",
    ),
    (
        "--junit into a missing folder",
        ["--baseline", "good", "--candidate", "good", "--junit", "{tmp}/missing/gate.xml"],
        "error: --junit TMP/missing: folder not found",
    ),
    (
        "--junit onto a folder",
        ["--baseline", "good", "--candidate", "good", "--junit", "{tmp}"],
        "error: --junit TMP: is a folder",
    ),
]


@pytest.mark.parametrize("name, args, message", GATE_CASES, ids=[c[0] for c in GATE_CASES])
def test_gate_cases_that_crashed_are_one_line_exit_2(gate_store, tmp_path, name, args, message):
    ran = evalcore("gate", *[a.format(tmp=tmp_path) for a in args], store=gate_store)
    check(f"gate: {name}", f"exit 2 · {message}", f"exit {ran.code} · {ran.line(tmp_path)}")


def test_an_unforeseen_exception_is_one_line_exit_2_not_a_traceback(tmp_path, monkeypatch, capsys):
    """The CLI's last line of defence: any exception no check foresaw (here a RecursionError
    raised where the store lists its runs) is one line naming where it arose, exit 2."""
    from evalcore import cli

    def boom(self):
        raise RecursionError("maximum recursion depth exceeded")

    Store(tmp_path / "s.duckdb").migrate()
    monkeypatch.setattr(Store, "runs", boom)
    code = cli.main(["--store", str(tmp_path / "s.duckdb"), "list"])
    err = capsys.readouterr().err
    ran = Ran(code, "", err)
    import re

    line = re.sub(r" in \S+\.py:\d+:", " in FILE.py:LINE:", ran.line())
    expected = (
        "exit 2 · error: unexpected RecursionError in FILE.py:LINE: maximum recursion depth exceeded; "
        "please report this"
    )
    check("cli: an exception nothing foresaw", expected, f"exit {ran.code} · {line}")


# --- run files (items 4, 11) ---------------------------------------------------------------------


@pytest.fixture(scope="module")
def run_file(files, tmp_path_factory) -> tuple[Path, Path]:
    """(a store holding one imported run named 'imp', that run exported as a run file)."""
    folder = tmp_path_factory.mktemp("runfile")
    store = folder / "s.duckdb"
    ran = evalcore(
        "import-run",
        *M,
        "--chunks",
        str(files["chunks"]),
        "--rankings",
        str(files["trec"]),
        "--name",
        "imp",
        store=store,
    )
    assert ran.code == 0, ran.err
    out = folder / "imp.zip"
    assert evalcore("export-run", "imp", "-o", str(out), store=store).code == 0
    return store, out


def tamper(src: Path, dst: Path, sql: dict[str, str], run_id: str | None = None, members: dict | None = None) -> Path:
    """A copy of the run file ``src`` whose tables were changed by ``sql`` ({table: statements on
    a table named t}), written again with honest sha256 and row counts (so only the values are
    wrong); ``run_id`` renames the run everywhere; ``members`` replaces raw members."""
    import hashlib
    import zipfile

    import duckdb

    with zipfile.ZipFile(src) as zf:
        manifest = json.loads(zf.read("manifest.json"))
        data = {n: zf.read(n) for n in zf.namelist() if n != "manifest.json"}
    if run_id:
        manifest["run_id"] = run_id
        sql = {t: f"UPDATE t SET run_id = '{run_id}'; " + sql.get(t, "") for t in manifest["tables"]}
    work = dst.parent / (dst.stem + "-work")
    work.mkdir()
    con = duckdb.connect()
    for table, statements in sql.items():
        meta = manifest["tables"][table]
        original = work / "in.parquet"
        original.write_bytes(data[meta["file"]])
        con.execute(f"CREATE OR REPLACE TABLE t AS SELECT * FROM read_parquet('{original}')")
        for statement in filter(str.strip, statements.split(";")):
            con.execute(statement)
        con.execute(f"COPY t TO '{work / 'out.parquet'}' (FORMAT parquet)")
        data[meta["file"]] = (work / "out.parquet").read_bytes()
        meta["rows"] = con.execute("SELECT count(*) FROM t").fetchone()[0]
    con.close()
    for name, raw in (members or {}).items():
        data[name] = raw
    for meta in manifest["tables"].values():
        meta["sha256"] = hashlib.sha256(data[meta["file"]]).hexdigest()
    with zipfile.ZipFile(dst, "w", zipfile.ZIP_DEFLATED) as zf:
        zf.writestr("manifest.json", json.dumps(manifest))
        for name, raw in data.items():
            zf.writestr(name, raw)
    return dst


DECISION = (
    "INSERT INTO t (decision_id, run_id, strategy, retriever, threshold, note, created_at) "
    "VALUES ('d1', '20990101-000000-abcdef', 'external', 'x/y', 0.5, 'n', now())"
)
VALUE_CASES = [
    (
        "a negative rank",
        {"hits": "UPDATE t SET rank = -1 WHERE rank = 1"},
        "tables/hits.parquet: 25 row(s) with a rank below 1",
    ),
    (
        "first_correct_rank -3",
        {"results": "UPDATE t SET first_correct_rank = -3 WHERE first_correct_rank = 1"},
        "tables/results.parquet: 11 row(s) with a first_correct_rank below 1",
    ),
    (
        "NaN distances",
        {"hits": "UPDATE t SET distance = 'nan'::DOUBLE"},
        "tables/hits.parquet: 500 row(s) with a distance that is not a finite number",
    ),
    (
        "a decision whose retriever holds /",
        {"decisions": DECISION},
        "tables/decisions.parquet: 1 row(s) with a retriever name with '/', whitespace or control characters",
    ),
    (
        "control characters in the run name",
        {"runs": "UPDATE t SET name = 'ext' || chr(27) || '[2Jx'"},
        "tables/runs.parquet: 1 row(s) with control characters in the run name",
    ),
]


@pytest.mark.parametrize("name, sql, message", VALUE_CASES, ids=[c[0] for c in VALUE_CASES])
def test_a_run_file_with_impossible_values_is_refused(run_file, tmp_path, name, sql, message):
    store, src = run_file
    path = tamper(src, tmp_path / "bad.zip", sql, run_id="20990101-000000-abcdef")
    before = complete_runs(store)
    ran = evalcore("load-run", str(path), store=store)
    expected = f"exit 2 · error: TMP/bad.zip: {message}; not loaded · complete runs unchanged"
    observed = f"exit {ran.code} · {ran.line(tmp_path)} · {kept(store, before)}"
    check(f"load-run: {name}", expected, observed)


def test_a_run_file_whose_id_is_another_runs_name_is_refused(run_file, tmp_path):
    store, src = run_file
    path = tamper(src, tmp_path / "imposter.zip", {}, run_id="imp")
    before = complete_runs(store)
    ran = evalcore("load-run", str(path), store=store)
    shown = evalcore("gate", "--baseline", "imp", "--candidate", "imp", store=store)
    (stored,) = before
    expected = (
        f"exit 2 · error: TMP/imposter.zip: its run id 'imp' is the name of run {stored} in {store}; loading it "
        f"would make that name mean another run; not loaded · complete runs unchanged · gate --baseline imp reads "
        f"{stored}"
    )
    observed = (
        f"exit {ran.code} · {ran.line(tmp_path)} · {kept(store, before)} · gate --baseline imp reads "
        f"{stored if stored in shown.out else 'ANOTHER RUN'}"
    )
    check("load-run: a run id that is another run's name", expected, observed, shown.out)


def test_run_file_bombs_are_refused_before_anything_is_written(run_file, tmp_path):
    store, src = run_file
    spool = tmp_path / "tmpdir"
    spool.mkdir()
    bomb = tamper(src, tmp_path / "bomb.zip", {}, members={"tables/hits.parquet": bytes(64 << 20)})
    big = tmp_path / "manifest.zip"
    copy = tmp_path / "imp.zip"
    copy.write_bytes(src.read_bytes())
    _zip(big, {"manifest.json": b'{"format": "evalcore-run"' + b" " * (17 << 20) + b"}"})
    rows = []
    for name, path, env in (
        ("a member that deflates to 64 MiB", bomb, {}),
        ("a 17 MiB manifest", big, {}),
        ("tables over EVALCORE_MAX_RUN_FILE_BYTES=10000", copy, {"EVALCORE_MAX_RUN_FILE_BYTES": "10000"}),
    ):
        ran, peak, wall = measured(["load-run", str(path)], store, {"TMPDIR": str(spool), **env})
        rows.append((name, ran, peak))
    expected = [
        "exit 2 · error: TMP/bomb.zip: tables/hits.parquet expands to 67,108,864 bytes from ",
        "exit 2 · error: TMP/manifest.zip: manifest.json declares 17,825,818 bytes, over the 16,777,216-byte limit",
        "exit 2 · error: TMP/imp.zip: its tables unpack to ",
    ]
    for (name, ran, peak), start in zip(rows, expected, strict=True):
        line = f"exit {ran.code} · {ran.line(tmp_path)}"
        observed = (
            f"{line[: len(start)]}... · nothing in TMPDIR: {not any(spool.iterdir())} · peak under 400 MB: {peak < 400}"
        )
        expected_row = f"{start}... · nothing in TMPDIR: True · peak under 400 MB: True"
        check(f"load-run: {name} (peak {peak:.0f} MB)", expected_row, observed, line)


# --- documents (items 1, 14) ----------------------------------------------------------------------

# what the New run page's Validate does with uploaded files (jobs.prepare_upload), in a process
# of its own that prints the failed documents and its own peak RSS (VmHWM, kB)
VALIDATE = """
import json, sys
from pathlib import Path
from evalcore import jobs
from evalcore.store import Store
from evalcore.inputs.uploads import UploadedFile
mini, pdf, store = Path(sys.argv[1]), Path(sys.argv[2]), Store(Path(sys.argv[3]))
files = [UploadedFile(p.name, p.read_bytes()) for p in sorted((mini / "corpus").iterdir())]
files.append(UploadedFile(pdf.name, pdf.read_bytes()))
q = UploadedFile("questions.jsonl", (mini / "questions.jsonl").read_bytes())
prepared = jobs.prepare_upload(store, files, q, None, "A", "dense")
hwm = [x for x in open("/proc/self/status") if x.startswith("VmHWM")][0].split()[1]
print(json.dumps({"failed": {f.path: f.reason for f in prepared.report.failed}, "peak_kb": int(hwm)}))
"""


@pytest.mark.parametrize(
    "name, make, env, reason",
    [
        (
            "a 1 MB PDF whose content stream inflates to 1 GiB",
            lambda: pdfs.inflating(1 << 30),
            {},
            "extraction stopped (exit -6); the PDF likely needs more than 1024 MB ($EVALCORE_PDF_MEMORY_MB); "
            "not extracted",
        ),
        (
            "a 250 KB page of 1.4M text objects (EVALCORE_PDF_MEMORY_MB=150)",
            lambda: pdfs.many_objects(1_400_000),
            {"EVALCORE_PDF_MEMORY_MB": "150"},
            "extraction stopped (exit -6); the PDF likely needs more than 150 MB ($EVALCORE_PDF_MEMORY_MB); "
            "not extracted",
        ),
    ],
    ids=["inflates to 1 GiB", "1.4M text objects"],
)
def test_a_pdf_that_would_exhaust_the_dashboard_fails_in_a_capped_child(tmp_path, name, make, env, reason):
    from conftest import MINI

    pdf = tmp_path / "big.pdf"
    pdf.write_bytes(make())
    t0 = time.monotonic()
    res = subprocess.run(
        [sys.executable, "-c", VALIDATE, str(MINI), str(pdf), str(tmp_path / "s.duckdb")],
        cwd=ROOT,
        env={**os.environ, **FAKE, **env},
        capture_output=True,
        text=True,
        timeout=120,
    )
    wall = time.monotonic() - t0
    got = json.loads(res.stdout) if res.returncode == 0 else {"failed": res.stderr[-300:], "peak_kb": 0}
    peak = got["peak_kb"] / 1024
    expected = f"validated · failed {{'big.pdf': {reason!r}}} · dashboard process peak under 500 MB"
    observed = (
        f"{'validated' if res.returncode == 0 else 'exit ' + str(res.returncode)} · failed {got['failed']} · "
        f"dashboard process peak {'under 500 MB' if 0 < peak < 500 else f'{peak:.0f} MB'}"
    )
    check(f"document: {name} (dashboard peak {peak:.0f} MB, {wall:.1f} s)", expected, observed)


TREC_READ = """
import sys
from evalcore.external.rankings import read_rankings
def rss(key):
    return int([x for x in open("/proc/self/status") if x.startswith(key)][0].split()[1])
before = rss("VmRSS")
hits = read_rankings(sys.argv[1]).hits
print(len(hits), sum(map(len, hits.values())), (rss("VmHWM") - before) // 1024)
"""


def test_a_large_trec_file_is_streamed(tmp_path):
    """import-run's reader on a 100,000-line TREC file (1,000 queries x 100 hits): the memory
    it adds, measured in a process of its own, against the file's size."""
    path = tmp_path / "big.trec"
    with open(path, "w") as fh:
        for q in range(1000):
            for r in range(1, 101):
                fh.write(f"query-{q:05d} Q0 doc{(q * 7919 + r) % 4000:05d}::chunk{r} {r} {1000.0 - r:.6f} bm25\n")
    size = path.stat().st_size / 2**20
    res = subprocess.run(
        [sys.executable, "-c", TREC_READ, str(path)], cwd=ROOT, capture_output=True, text=True, timeout=120
    )
    queries, hits, grew = map(int, res.stdout.split()) if res.returncode == 0 else (0, 0, -1)
    expected = "exit 0 · 1000 queries, 100000 hits · grows by under 10 times the file"
    observed = f"exit {res.returncode} · {queries} queries, {hits} hits · " + (
        "grows by under 10 times the file" if 0 <= grew < 10 * size else f"grows by {grew} MB"
    )
    check(f"TREC: 100,000 lines, {size:.1f} MB (reading adds {grew} MB)", expected, observed, res.stderr[-500:])


# --- labels and names (items 8, 9, 10) -----------------------------------------------------------


@pytest.mark.browser
def test_a_markdown_label_is_text_on_the_threshold_save_button(files, tmp_path):
    """The product manager's step on a run imported with a chunker named like a Markdown image
    and a retriever named like HTML: the Threshold page's Save button shows the label as typed,
    the browser never fetches x.png, and saving works (a real Streamlit and chromium)."""
    from serving import CHROMIUM, healthy, settled, shared_chromium, streamlit_app, watch

    if CHROMIUM is None:
        pytest.skip("chromium is not installed (apt-get install chromium)")
    pytest.importorskip("playwright.sync_api", reason="the playwright package is not installed")
    store = tmp_path / "s.duckdb"
    ran = evalcore(
        "import-run",
        *M,
        "--chunks",
        str(files["chunks"]),
        "--rankings",
        str(files["trec"]),
        "--chunker",
        "![c](x.png)",
        "--retriever",
        "<i>r",
        store=store,
    )
    assert ran.code == 0, ran.err
    label = "![c](x.png)/<i>r"
    with streamlit_app(store, tmp_path / "streamlit.log") as url, shared_chromium() as browser:
        page = watch(browser.new_page(viewport={"width": 1400, "height": 1000}))
        requested: list[str] = []
        page.on("request", lambda r: requested.append(r.url))
        page.goto(f"{url}/threshold", wait_until="domcontentloaded")
        settled(page)
        healthy(page, "threshold with a hostile label")
        button = page.locator('[data-testid="stFormSubmitButton"] button').filter(has_text="Save t =")
        shown = button.inner_text()
        images = button.locator("img").count()
        page.locator('[data-testid="stTextArea"] textarea').fill("hostile label")
        anyway = page.locator('[data-testid="stCheckbox"]').filter(has_text="Save it anyway")
        if anyway.count():  # a t outside the claim is saved once the PM says so (the Threshold screen asks)
            anyway.first.click()
        button.click()
        settled(page)
        saved = page.locator('[data-testid="stAlertContentSuccess"]').filter(has_text="Saved decision").count()
        browser.close()
    fetched = [u for u in requested if "x.png" in u]
    expected = f"button reads 'Save t = ... for {label}' · no image · x.png never fetched · saved"
    observed = (
        f"button reads '{re.sub(r'= [0-9.]+ ', '= ... ', shown)}' · {'no image' if not images else 'AN IMAGE'} · "
        f"{'x.png never fetched' if not fetched else 'FETCHED ' + fetched[0]} · {'saved' if saved else 'NOT SAVED'}"
    )
    check("dashboard: a Markdown image and HTML as a configuration label", expected, observed)


NAME_CASES = [
    (
        "an escape sequence in --chunker",
        ["--chunker", "ext\x1b[2Jx"],
        "error: --chunker 'ext\\x1b[2Jx': a name without '/', ':', whitespace or control characters, and not '.' "
        "or '..' (it labels the configuration STRATEGY/RETRIEVER and names its export folder)",
    ),
    (
        "--retriever ..",
        ["--retriever", ".."],
        "error: --retriever '..': a name without '/', ':', whitespace or control characters, and not '.' "
        "or '..' (it labels the configuration STRATEGY/RETRIEVER and names its export folder)",
    ),
    (
        "an escape sequence in --name",
        ["--name", "run\x1b[31m"],
        "error: run name: character 4 is U+001B (control, bidirectional and zero-width characters are not "
        "allowed in a name)",
    ),
]


@pytest.mark.parametrize("name, args, message", NAME_CASES, ids=[c[0] for c in NAME_CASES])
def test_names_that_would_escape_terminals_or_folders_are_refused(files, tmp_path, name, args, message):
    store = tmp_path / "s.duckdb"
    ran = evalcore(
        "import-run", *M, "--chunks", str(files["chunks"]), "--rankings", str(files["trec"]), *args, store=store
    )
    stored = len(Store(store).runs()) if store.exists() else 0
    expected = f"exit 2 · {message} · 0 runs stored"
    check(f"import-run: {name}", expected, f"exit {ran.code} · {ran.line(tmp_path)} · {stored} runs stored")


def test_gate_markdown_neither_pings_nor_links_out(files, tmp_path):
    store = tmp_path / "s.duckdb"
    ids = []
    for name in ("@octocat-please-review", "see-https://evil.example/x"):
        ran = evalcore(
            "import-run",
            *M,
            "--chunks",
            str(files["chunks"]),
            "--rankings",
            str(files["trec"]),
            "--name",
            name,
            "--json",
            store=store,
        )
        assert ran.code == 0, ran.err
        ids.append(json.loads(ran.out)["run_id"])
    gate = evalcore("gate", "--baseline", ids[0], "--candidate", ids[1], "--format", "markdown", store=store)
    mentions = re.findall(r"(?<![\w`])@\w", gate.out)
    links = re.findall(r"https?://|www\.", gate.out)
    expected = "exit 0 · no @mention · no bare URL · both names shown"
    observed = (
        f"exit {gate.code} · {'no @mention' if not mentions else f'{len(mentions)} @mentions'} · "
        f"{'no bare URL' if not links else f'{len(links)} bare URLs'} · "
        f"{'both names shown' if 'octocat' in gate.out and 'evil.example' in gate.out else 'NAMES MISSING'}"
    )
    check("gate: run names with an @mention and a URL (Markdown)", expected, observed, gate.out[:1500])


@pytest.mark.parametrize(
    "name, text, key",
    [
        (
            "a query given twice",
            '{"port-course": {"install::0": 1.0}, "port-course": {"install::1": 2.0}}',
            "port-course",
        ),
        ("a chunk given twice", '{"port-course": {"install::0": 1.0, "install::0": 2.0}}', "install::0"),
    ],
    ids=["query twice", "chunk twice"],
)
def test_a_ranx_json_key_given_twice_is_refused(files, tmp_path, name, text, key):
    path = tmp_path / "run.json"
    path.write_text(text)
    store = tmp_path / "store" / "s.duckdb"
    ran = evalcore("import-run", *M, "--chunks", str(files["chunks"]), "--rankings", str(path), store=store)
    message = (
        f"error: TMP/run.json: {key!r} is given twice in one object (a query, or a chunk of one query, given "
        "twice: the last value would silently win)"
    )
    expected = f"exit 2 · {message} · store not created"
    observed = f"exit {ran.code} · {ran.line(tmp_path)} · store {'created' if store.parent.exists() else 'not created'}"
    check(f"import-run: ranx JSON, {name}", expected, observed)


def test_an_upload_whose_name_holds_a_nul_byte_is_named(tmp_path):
    from evalcore import jobs
    from evalcore.errors import InputError
    from evalcore.inputs.uploads import UploadedFile

    store = Store(tmp_path / "runs" / "evalcore.duckdb")
    store.migrate()
    files = [UploadedFile(p.name, p.read_bytes()) for p in sorted(CORPUS.iterdir())]
    files.append(UploadedFile("notes\x00.md", b"# Notes\n\nText.\n"))
    try:
        jobs.prepare_upload(store, files, UploadedFile("questions.jsonl", QUESTIONS.read_bytes()), None, "A", "dense")
        got = "accepted"
    except InputError as exc:
        got = str(exc)
    expected = "'notes\\x00.md': a file name with a control character (such as a NUL byte) is not usable"
    check("upload: a NUL byte in a file name", expected, got)


@pytest.mark.slow
def test_document_cases_that_were_silent(tmp_path):
    """A page with a 10 MiB paragraph keeps its text; NFC and NFD twins of one file name are
    one document and a note (validate --json, a real process)."""
    import shutil
    import unicodedata

    corpus = tmp_path / "corpus"
    shutil.copytree(CORPUS, corpus)
    (corpus / "long.html").write_bytes(
        b"<html><head><title>Long</title></head><body><p>" + b"kettle " * (1536 * 1024) + b"</p></body></html>"
    )
    nfc, nfd = unicodedata.normalize("NFC", "café.md"), unicodedata.normalize("NFD", "café.md")
    (corpus / nfc).write_text("# Café\n\nOne text.\n")
    (corpus / nfd).write_text("# Café\n\nOne text.\n")
    ran = evalcore("validate", "--corpus", str(corpus), "--questions", str(QUESTIONS), "--json")
    report = json.loads(ran.out) if ran.code == 0 else {}
    failed = {f["path"]: f["reason"] for f in report.get("failed", [])}
    docs = {d["doc_id"]: d for d in report.get("documents_detail", [])} if "documents_detail" in report else {}
    long_chars = docs.get("long", {}).get("characters")
    twin = sorted(failed)[0] if failed else None
    dropped = twin if twin in (nfc, nfd) else nfd  # whichever came second in the folder's order
    kept_name = nfc if dropped == nfd else nfd
    reason = f"the same name as {kept_name!r} in another Unicode form (NFC/NFD); one document is kept"
    expected = f"exit 0 · 6 documents · failed { ({dropped: reason}) }"
    observed = f"exit {ran.code} · {report.get('documents')} documents · failed {failed}"
    check("corpus: NFC and NFD twins of one file name", expected, observed, (twin, long_chars, ran.err))
    from evalcore.inputs.corpus import load_corpus

    chars = None
    if ran.code == 0:  # the corpus loader every run and validation uses (no embedding needed here)
        chars = next((len(d.text) for d in load_corpus(corpus).documents if d.doc_id == "long"), None)
    paragraph = len("kettle " * (1536 * 1024)) - 1
    keeps = f"document 'long' keeps its {paragraph:,}-character paragraph"
    check(
        f"corpus: an HTML page with a 10 MiB paragraph ({chars} characters loaded)",
        keeps,
        keeps if chars is not None and chars >= paragraph else f"document 'long' has {chars} characters",
    )


def test_cancel_ends_a_dashboard_endpoint_job_stalled_by_slowloris(hostile, tmp_path, monkeypatch):
    """EVALCORE_MAX_JOBS=1: a dashboard endpoint job on the slowloris service holds the only
    slot; Cancel (what the Runs page's button does) must end it within seconds."""
    from conftest import MINI

    from evalcore import jobs
    from evalcore.inputs import sources as inputs

    monkeypatch.setenv(inputs.DATA_ROOTS_ENV, str(MINI))
    monkeypatch.setenv("EVALCORE_ENDPOINTS", hostile.base + "/")
    store_path = tmp_path / "s.duckdb"
    store = Store(store_path)
    prepared = jobs.prepare_paths(str(CORPUS), str(QUESTIONS), str(OOD), "A", "dense")
    spec = {"url": hostile.url("slow"), "timeout": 60.0, "retries": 0, "concurrency": 4, "k": 20}
    job_id = jobs.submit(store, jobs.with_options(prepared, endpoint=spec), "stalled", start=False)
    before = hostile.requests["slow"]
    proc = zygote.start(["--store", str(store_path), "job", job_id], {**os.environ, **FAKE, "EVALCORE_MAX_JOBS": "1"})
    deadline = time.monotonic() + 60
    while hostile.requests["slow"] < before + 4 and time.monotonic() < deadline and proc.poll() is None:
        time.sleep(0.05)
    t0 = time.monotonic()
    jobs.cancel_job(store, job_id)
    try:
        proc.communicate(timeout=30)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.communicate()
    took = time.monotonic() - t0
    row = jobs.job(store, job_id)
    expected = "job cancelled: cancelled by the user · run cancelled · process ended within 5 s"
    observed = (
        f"job {row['status']}: {row['reason']} · run {row['run_status']} · "
        f"{'process ended within 5 s' if took < 5 else f'process ended after {took:.0f} s'}"
    )
    check(f"endpoint: slowloris as a dashboard job, Cancel ({took:.1f} s to end)", expected, observed)
