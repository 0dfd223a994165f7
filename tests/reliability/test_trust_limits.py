"""The reliability suite, issue 45: one key, or a few slow clients, must not exhaust the server.
A real ``evalcore dashboard`` process with small limits set by its environment, real HTTP and
real sockets; one table row per case (``check``):

- the job queue's caps, per key and in all: beyond them 429 problem+json with ``Retry-After``,
  and nothing queued (the ``jobs`` table read through the library);
- a queued evaluation holds no process: the server's children are the running job's only, and
  each job that ends starts the next; a job whose process is killed is marked failed and the
  server starts the next one without any request;
- a request's headers and its body each arrive within their deadline, enforced by a timer:
  a raw socket that sends part of its headers, or its headers and 10 of 100 body bytes, then
  waits, is answered 408 within the deadline and a margin;
- the connections are capped: the one beyond the cap is answered 503 at once, and the server
  serves again once the held ones are closed by their deadline;
- a bad limit variable stops ``evalcore dashboard`` before it starts, with one line naming it.
"""

from __future__ import annotations

import json
import os
import select
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path

import httpx
import pytest
from api_serving import FAKE_ENV, OOD, cli, make_key
from conftest import MINI, ROOT
from serving import free_port, stop
from test_reliability import check

from evalcore.store import Store

HOLD = "hold"  # a job waits at its chunking while this file exists (evalcore.testhooks)
BODY_SECONDS = 3.0
HEADER_SECONDS = 2.0
MARGIN = 1.5  # seconds past a deadline an answer may take on a loaded machine
MAX_CONNECTIONS = 12
PER_KEY, TOTAL = 2, 3
SPEC = {
    "corpus": str(MINI / "corpus"),
    "questions": str(MINI / "questions.jsonl"),
    "ood": str(OOD),
    "strategies": "E",
    "retrievers": "bm25",
}
ENV = {
    "EVALCORE_MAX_JOBS": "1",
    "EVALCORE_QUEUE_PER_KEY": str(PER_KEY),
    "EVALCORE_QUEUE_MAX": str(TOTAL),
    "EVALCORE_API_BODY_SECONDS": str(BODY_SECONDS),
    "EVALCORE_HEADER_SECONDS": str(HEADER_SECONDS),
    "EVALCORE_MAX_CONNECTIONS": str(MAX_CONNECTIONS),
    "EVALCORE_DATA_ROOTS": str(MINI.parent),
    "EVALCORE_API_RATE": "1000/1000",
}


@contextmanager
def dashboard(store: Path, log: Path, env: dict[str, str]) -> Iterator[tuple[str, subprocess.Popen[bytes]]]:
    """``evalcore dashboard --headless`` on ``store`` at a free port: (url, its process) once
    ``/api/v1/health`` answers; stopped afterwards."""
    port = free_port()
    with open(log, "wb") as out:
        proc = subprocess.Popen(
            [sys.executable, "-m", "evalcore", "--store", str(store), "dashboard", "--headless", "--port", str(port)],
            cwd=ROOT,
            env={**os.environ, **FAKE_ENV, **env},
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 90
        while True:
            assert proc.poll() is None, log.read_text()[-2000:]
            try:
                if httpx.get(url + "/api/v1/health", timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            assert time.monotonic() < deadline, "no answer within 90 s"
            time.sleep(0.3)
        yield url, proc
    finally:
        stop(proc)


@pytest.fixture(scope="module")
def server(tmp_path_factory) -> Iterator[dict]:
    folder = tmp_path_factory.mktemp("trust-limits")
    store = folder / "evalcore.duckdb"
    keys = {name: make_key(store, name, "read,evaluate") for name in ("one", "two")}
    env = {**ENV, "EVALCORE_TEST_PAUSE": f"E: chunking={folder / HOLD}"}
    log = folder / "server.log"
    with dashboard(store, log, env) as (url, proc):
        yield {"url": url, "proc": proc, "store": store, "keys": keys, "hold": folder / HOLD, "log": log}
    text = log.read_text(errors="replace")
    assert "Traceback" not in text, text[-3000:]


def client(server: dict, key: str) -> httpx.Client:
    """A client that opens a connection per request (none is kept idle past the header deadline)."""
    return httpx.Client(
        base_url=server["url"] + "/api/v1",
        headers={"Authorization": f"Bearer {server['keys'][key]}"},
        timeout=60,
        limits=httpx.Limits(max_keepalive_connections=0),
    )


def job_rows(store: Path) -> list[tuple]:
    """(job_id, status, pid, queued_by is set) of every job, oldest first, read through the library."""
    with Store(store).read() as con:  # retried while the server holds the file for a write
        return con.execute(
            "SELECT job_id, status, pid, queued_by IS NOT NULL FROM jobs ORDER BY created_at, job_id"
        ).fetchall()


def job_children(pid: int) -> list[int]:
    """The processes ``pid`` started that run ``evalcore ... job JOB_ID`` (alive, not zombies)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
            cmd = (entry / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        fields = stat.rsplit(")", 1)[1].split()
        if int(fields[1]) == pid and fields[0] != "Z" and b"job" in cmd and b"evalcore" in cmd:
            found.append(int(entry.name))
    return found


def until(predicate, timeout: float = 120.0, every: float = 0.1):
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value or time.monotonic() > deadline:
            return value
        time.sleep(every)


def release_all(server: dict, ids: list[str], timeout: float = 240.0) -> dict[str, str]:
    """Let every job of ``ids`` run to its end (each pauses at its chunking: the marker is removed
    each time one appears); returns their final statuses. Samples the server's job processes
    meanwhile: ``most`` is the most seen at once whose job is still running. A job that has
    recorded its end starts the next one before its own process exits, so for a moment two
    processes live while only one job runs; the finished one holds no slot and is not counted."""
    deadline = time.monotonic() + timeout
    most = 0
    while time.monotonic() < deadline:
        server["hold"].unlink(missing_ok=True)
        children = set(job_children(server["proc"].pid))
        table = job_rows(server["store"])
        running = {int(r[2]) for r in table if r[1] == "running" and r[2] is not None}
        most = max(most, len(children & running))
        rows = {r[0]: r[1] for r in table}
        if all(rows.get(i) in ("complete", "failed", "cancelled") for i in ids):
            return {**rows, "most": str(most)}
        time.sleep(0.1)
    return {**{r[0]: r[1] for r in job_rows(server["store"])}, "most": str(most)}


def problem_line(response: httpx.Response) -> str:
    kind = response.headers.get("content-type", "")
    if not kind.startswith("application/problem+json"):
        return f"{response.status_code} {kind}"
    body = response.json()
    retry = response.headers.get("retry-after")
    wait = f" · Retry-After {'a positive number' if retry and retry.isdigit() and int(retry) >= 1 else retry}"
    return f"{response.status_code} {body['type'].rsplit(':', 1)[-1]}" + (wait if retry is not None else "")


# --- the queue -----------------------------------------------------------------------------------


def test_the_queue_caps_per_key_and_in_all_hold_no_process_per_queued_job(server):
    store, hold = server["store"], server["hold"]
    with client(server, "one") as one, client(server, "two") as two:
        first = one.post("/evaluations", json={**SPEC, "name": "first"})
        assert first.status_code == 202, first.text
        assert until(hold.exists), job_rows(store)  # the first runs, holding the one slot
        accepted = [first.json()["id"]]
        for n in range(PER_KEY - 1):
            made = one.post("/evaluations", json={**SPEC, "name": f"one-{n}"})
            assert made.status_code == 202, made.text
            accepted.append(made.json()["id"])
        before = job_rows(store)
        over_key = one.post("/evaluations", json={**SPEC, "name": "one-too-many"})
        check(
            f"POST /evaluations: a key's {PER_KEY + 1}th active evaluation (cap {PER_KEY})",
            "429 queue-full · Retry-After a positive number · nothing queued",
            problem_line(over_key) + (" · nothing queued" if job_rows(store) == before else " · queued"),
        )
        assert "EVALCORE_QUEUE_PER_KEY" in over_key.json()["detail"]
        made = two.post("/evaluations", json={**SPEC, "name": "two-0"})  # another key: room in all
        assert made.status_code == 202, made.text
        accepted.append(made.json()["id"])
        before = job_rows(store)
        over_all = two.post("/evaluations", json={**SPEC, "name": "two-too-many"})
        check(
            f"POST /evaluations: the {TOTAL + 1}th active job of the server (cap {TOTAL})",
            "429 queue-full · Retry-After a positive number · nothing queued",
            problem_line(over_all) + (" · nothing queued" if job_rows(store) == before else " · queued"),
        )
        assert "EVALCORE_QUEUE_MAX" in over_all.json()["detail"]
        rows = job_rows(store)
        queued = [r for r in rows if r[1] == "queued"]
        children = job_children(server["proc"].pid)
        check(
            f"{TOTAL} evaluations accepted, 1 slot: processes of the server's jobs, queued rows with a pid",
            f"{TOTAL} jobs · 1 running · {TOTAL - 1} queued · 1 job process · 0 queued rows with a pid · "
            "every job names its key",
            f"{len(rows)} jobs · {sum(r[1] == 'running' for r in rows)} running · {len(queued)} queued · "
            f"{len(children)} job process · {sum(r[2] is not None for r in queued)} queued rows with a pid · "
            f"{'every job names its key' if all(r[3] for r in rows) else 'a job without its key'}",
        )
        ended = release_all(server, accepted)
        df = Store(store).query("SELECT job_id, started_at, finished_at FROM jobs ORDER BY started_at")
        in_turn = all(df["started_at"].iloc[i + 1] >= df["finished_at"].iloc[i] for i in range(len(df) - 1))
        check(
            "the queued jobs, each started by the one before when it ends",
            f"{TOTAL} complete · at most 1 running job's process at once · one after another",
            f"{sum(ended.get(i) == 'complete' for i in accepted)} complete · at most {ended['most']} running job's "
            f"process at once · {'one after another' if in_turn else 'overlapping'}",
            ended,
        )
        again = one.post("/evaluations", json={**SPEC, "name": "after"})  # the caps count active jobs only
        assert again.status_code == 202, again.text
        one.post(f"/evaluations/{again.json()['id']}/cancel")
        assert release_all(server, [again.json()["id"]])[again.json()["id"]] in ("cancelled", "complete")


def test_a_job_killed_while_others_wait_frees_its_slot_for_the_next(server):
    store, hold = server["store"], server["hold"]
    hold.unlink(missing_ok=True)
    with client(server, "one") as one:
        doomed = one.post("/evaluations", json={**SPEC, "name": "doomed"}).json()["id"]
        assert until(hold.exists), job_rows(store)
        nxt = one.post("/evaluations", json={**SPEC, "name": "next"}).json()["id"]
    pid = next(r[2] for r in job_rows(store) if r[0] == doomed)
    os.kill(int(pid), signal.SIGKILL)
    # no request from now on: the server's dispatcher notices the free slot by itself
    started = until(lambda: {r[0]: r[1] for r in job_rows(store)}.get(nxt) != "queued", timeout=60)
    rows = {r[0]: r[1] for r in job_rows(store)}
    reason = Store(store).query("SELECT reason FROM jobs WHERE job_id = ?", [doomed]).iloc[0, 0]
    check(
        "SIGKILL to a running job while another waits, then no request",
        "killed job failed: process ended (killed or crashed) · the next started",
        f"killed job {rows[doomed]}: {'process ended (killed or crashed)' if 'killed or crashed' in reason else reason}"
        f" · the next {'started' if started else 'still queued'}",
    )
    assert release_all(server, [nxt])[nxt] == "complete"


# --- slow clients --------------------------------------------------------------------------------


def raw(server: dict) -> socket.socket:
    port = int(server["url"].rsplit(":", 1)[1])
    return socket.create_connection(("127.0.0.1", port), timeout=30)


def read_all(sock: socket.socket, timeout: float) -> tuple[bytes, float]:
    """Everything the server sends until it closes (or ``timeout``), and when it closed."""
    sock.settimeout(timeout)
    data = b""
    try:
        while chunk := sock.recv(65536):
            data += chunk
    except TimeoutError:
        pass
    return data, time.monotonic()


def answer_line(data: bytes) -> str:
    """``STATUS kind`` of a raw HTTP answer holding a problem document, or what it was."""
    if not data:
        return "closed without an answer"
    head, _, body = data.partition(b"\r\n\r\n")
    status = head.split(b" ", 2)[1].decode()
    if b"application/problem+json" not in head.lower():
        return f"{status} {head[:200]!r}"
    return f"{status} {json.loads(body)['type'].rsplit(':', 1)[-1]}"


def test_a_body_declared_100_bytes_that_stops_after_10_is_cut_at_the_deadline(server):
    key = server["keys"]["one"]
    with raw(server) as sock:
        t0 = time.monotonic()
        sock.sendall(
            b"POST /api/v1/evaluations HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
            + f"Authorization: Bearer {key}\r\nContent-Length: 100\r\n\r\n".encode()
            + b'{"demo": t'
        )
        data, closed = read_all(sock, BODY_SECONDS + 30)
    took = closed - t0
    check(
        f"headers and 10 of 100 body bytes, then silence (deadline {BODY_SECONDS:g} s)",
        f"408 too-slow · within {BODY_SECONDS:g} s + {MARGIN:g} s · connection closed",
        f"{answer_line(data)} · "
        + (
            f"within {BODY_SECONDS:g} s + {MARGIN:g} s"
            if BODY_SECONDS - 0.2 <= took <= BODY_SECONDS + MARGIN
            else f"after {took:.1f} s"
        )
        + " · connection closed",
    )
    assert b"EVALCORE_API_BODY_SECONDS" in data


def test_headers_that_stop_halfway_are_cut_at_the_header_deadline(server):
    with raw(server) as sock:
        t0 = time.monotonic()
        sock.sendall(b"GET /api/v1/health HTTP/1.1\r\nHost: x\r\nX-Slow: a")
        data, closed = read_all(sock, HEADER_SECONDS + 30)
    took = closed - t0
    check(
        f"half a request's headers, then silence (deadline {HEADER_SECONDS:g} s)",
        f"408 too-slow · within {HEADER_SECONDS:g} s + {MARGIN:g} s",
        f"{answer_line(data)} · "
        + (
            f"within {HEADER_SECONDS:g} s + {MARGIN:g} s"
            if HEADER_SECONDS - 0.2 <= took <= HEADER_SECONDS + MARGIN
            else f"after {took:.1f} s"
        ),
    )
    with raw(server) as sock:  # a connection that never sends a byte is closed, without a word
        t0 = time.monotonic()
        data, closed = read_all(sock, HEADER_SECONDS + 30)
    took = closed - t0
    check(
        "a connection that sends nothing",
        f"closed without an answer · within {HEADER_SECONDS:g} s + {MARGIN:g} s",
        f"{answer_line(data)} · "
        + (f"within {HEADER_SECONDS:g} s + {MARGIN:g} s" if took <= HEADER_SECONDS + MARGIN else f"after {took:.1f} s"),
    )


def test_connections_beyond_the_cap_are_refused_at_once_and_the_server_recovers(server):
    socks: list[socket.socket] = []
    try:
        for _ in range(MAX_CONNECTIONS + 1):  # well within the header deadline: none is cut yet
            sock = raw(server)
            sock.sendall(b"GET /api/v1/health HTTP/1.1\r\nHost: x\r\n")  # headers never finished
            socks.append(sock)
        ready, _, _ = select.select(socks, [], [], 0.5)
        answers = []
        for sock in ready:
            sock.settimeout(1)
            answers.append(sock.recv(65536))
        held = len(socks) - len(ready)
        check(
            f"slow clients open {MAX_CONNECTIONS + 1} connections at once (cap {MAX_CONNECTIONS})",
            f"503 too-many-connections · at most {MAX_CONNECTIONS} held",
            f"{answer_line(answers[-1]) if answers else 'no connection refused'} · "
            + (f"at most {MAX_CONNECTIONS} held" if held <= MAX_CONNECTIONS else f"{held} held"),
        )
        assert all(answer_line(a) == "503 too-many-connections" for a in answers)
        assert b"retry-after: 5" in answers[-1].lower() and b"EVALCORE_MAX_CONNECTIONS" in answers[-1]
    finally:
        for sock in socks:
            sock.close()
    served = until(lambda: httpx.get(server["url"] + "/api/v1/health", timeout=5).status_code == 200, timeout=10)
    check("once the held connections are gone", "served again", "served again" if served else "still refused")


# --- settings ------------------------------------------------------------------------------------


BAD_SETTINGS = [
    ("EVALCORE_MAX_JOBS", "0", "EVALCORE_MAX_JOBS must be a positive integer, got '0'"),
    ("EVALCORE_QUEUE_MAX", "zero", "EVALCORE_QUEUE_MAX must be a positive integer, got 'zero'"),
    ("EVALCORE_QUEUE_PER_KEY", "-1", "EVALCORE_QUEUE_PER_KEY must be a positive integer, got '-1'"),
    (
        "EVALCORE_MAX_CONNECTIONS",
        "1e9",
        "EVALCORE_MAX_CONNECTIONS must be a whole number from 1 to 1,000,000, got '1e9'",
    ),
    ("EVALCORE_HEADER_SECONDS", "nan", "EVALCORE_HEADER_SECONDS must be a number of seconds in (0, 3600], got 'nan'"),
    ("EVALCORE_API_BODY_SECONDS", "0", "EVALCORE_API_BODY_SECONDS must be a number of seconds in (0, 86400), got '0'"),
    (
        "EVALCORE_API_GLOBAL_RATE",
        "bogus",
        "EVALCORE_API_GLOBAL_RATE must be R or R/B (requests a second, burst), both positive; got 'bogus'",
    ),
    (
        "EVALCORE_API_AUTH_FAILURES",
        "0/5",
        "EVALCORE_API_AUTH_FAILURES must be R or R/B (requests a second, burst), both positive; got '0/5'",
    ),
]


def test_a_bad_limit_stops_the_dashboard_before_it_starts(tmp_path):
    def start(setting: tuple[str, str, str]) -> subprocess.CompletedProcess[str]:
        name, value, _ = setting
        port = str(free_port())
        return cli(tmp_path / f"{name}.duckdb", "dashboard", "--headless", "--port", port, env={name: value})

    with ThreadPoolExecutor(3) as pool:  # one process each, a few at once
        runs = list(pool.map(start, BAD_SETTINGS))
    for (name, value, message), ran in zip(BAD_SETTINGS, runs, strict=True):
        lines = ran.stderr.strip().splitlines()
        check(
            f"evalcore dashboard with {name}={value}",
            f"exit 2 · error: {message}",
            f"exit {ran.returncode} · {lines[-1] if lines else '(nothing)'}",
            ran.stderr,
        )
