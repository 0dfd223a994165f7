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
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
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
    cmd = [sys.executable, "-m", "evalcore", "--store", str(store), *endpoint_args(hostile.url("slow"), timeout="60")]
    proc = subprocess.Popen(
        cmd, cwd=ROOT, env={**os.environ, **FAKE}, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
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
