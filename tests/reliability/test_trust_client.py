"""The reliability suite, issue 45: the client that production's RAG app embeds never hurts its
caller. A hostile server (tests/hostile_server.py: a real socket server on 127.0.0.1 writing
its answers byte for byte) sends a byte a second, declares 10 GB, answers 200 with what is not a
deployment, fails, or redirects elsewhere; ``evalcore.Client.deployment`` must answer within its
deadline, with bounded memory, the last known value marked stale and the reason logged once.
One table row per case (``check``). No case makes a request to an address other than loopback:
the refusals of ``http://`` to another host are checked before any connection, the CLI's under
an audit hook that stops (and reports) any lookup or connect.
"""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
import time
import tracemalloc

import pytest
from conftest import ROOT, cli_in_process
from hostile_server import (
    HostileServer,
    answer,
    deployment_answer,
    deployment_json,
    drip,
    full_backlog,
    redirect,
    silent,
    slow_body,
    zeros,
)
from test_reliability import check

import evalcore
from evalcore.errors import ConfigError, ServiceError, ServiceUnavailable

KEY = "evk_" + "k3y" * 12
DEADLINE = 2.0  #: the clients' timeout here (the default is 5 s; the contract is the same)
GRACE = 0.5  #: what the contract allows beyond the deadline


def primed(server: HostileServer, **options: object) -> evalcore.Client:
    """A client that has read the valid deployment once (threshold 0.41) and revalidates on every call."""
    server.answer = deployment_answer()
    client = evalcore.Client(server.url, KEY, max_age=0, timeout=DEADLINE, **options)  # type: ignore[arg-type]
    live = client.deployment("production")
    assert (live.threshold, live.stale) == (0.41, False)
    return client


def timed(client: evalcore.Client) -> tuple[str, float]:
    """What one ``deployment()`` gave (``stale 0.41``, ``fresh 0.41`` or the exception's class)
    and how long it took."""
    start = time.monotonic()
    try:
        live = client.deployment("production")
        seen = f"{'stale' if live.stale else 'fresh'} {live.threshold}"
    except ServiceError as exc:
        seen = type(exc).__name__
    return seen, time.monotonic() - start


def in_time(seen: str, took: float) -> str:
    return f"{seen}, in time" if took <= DEADLINE + GRACE else f"{seen}, after {took:.1f} s"


@pytest.fixture()
def server():
    with HostileServer() as s:
        yield s


SLOW = {
    "a byte a second (status line included)": lambda: drip(deployment_answer(), every=1.0),
    "headers at once, the body a byte a second": lambda: slow_body(every=1.0),
    "a connection accepted, nothing answered": lambda: silent(hold=30),
}


@pytest.mark.parametrize("kind", list(SLOW))
def test_a_slow_server_gets_the_stale_value_within_the_deadline(server, kind):
    client = primed(server)
    server.answer = SLOW[kind]()
    seen, took = timed(client)
    check(f"client, {kind}, a value known", "stale 0.41, in time", in_time(seen, took), took)
    fresh = evalcore.Client(server.url, KEY, timeout=DEADLINE)
    seen, took = timed(fresh)
    check(f"client, {kind}, no value known", "ServiceUnavailable, in time", in_time(seen, took), took)


def test_callers_waiting_on_a_first_look_wait_at_most_their_own_deadline(server):
    import threading

    server.answer = silent(hold=30)
    client = evalcore.Client(server.url, KEY, timeout=DEADLINE)
    results: list[tuple[str, float]] = []
    threads = [threading.Thread(target=lambda: results.append(timed(client))) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    late = [took for _, took in results if took > DEADLINE + GRACE]
    seen = sorted({seen for seen, _ in results})
    shown = f"{', '.join(seen)}, {'all in time' if not late else f'{len(late)} late (up to {max(late):.1f} s)'}"
    check("client, 8 threads, no value, a silent server", "ServiceUnavailable, all in time", shown)
    assert len(server.requests) == 1  # one look at a time: the others waited for it


def test_a_connect_that_never_completes_is_cut_at_the_deadline():
    listener, held = full_backlog()
    try:
        client = evalcore.Client(f"http://127.0.0.1:{listener.getsockname()[1]}", KEY, timeout=DEADLINE)
        seen, took = timed(client)
        check("client, a connect never completed, no value", "ServiceUnavailable, in time", in_time(seen, took), took)
    finally:
        for s in [listener, *held]:
            s.close()


@pytest.mark.parametrize("declared", [10 * 1024**3, None], ids=["10 GB declared", "chunked, no length"])
def test_an_endless_answer_is_cut_at_the_cap_with_bounded_memory(server, declared):
    client = primed(server)
    server.answer = zeros(declared)
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        tracemalloc.reset_peak()
        seen, took = timed(client)
        grown = tracemalloc.get_traced_memory()[1] - before
    finally:
        tracemalloc.stop()
    what = "10 GB declared" if declared else "zeros without end (chunked)"
    held = "memory +<20 MB" if grown < 20 * 1024**2 else f"memory +{grown / 1024**2:.0f} MB"
    check(f"client, {what}", "stale 0.41, in time, memory +<20 MB", f"{in_time(seen, took)}, {held}")


def test_the_answer_cap_is_a_parameter(server):
    server.answer = deployment_answer()  # about 320 bytes
    small = evalcore.Client(server.url, KEY, timeout=DEADLINE, max_answer=64)
    check("client, max_answer=64, a deployment of 320 bytes", "ServiceUnavailable", timed(small)[0])
    enough = evalcore.Client(server.url, KEY, timeout=DEADLINE, max_answer=4096)
    check("client, max_answer=4096, a deployment of 320 bytes", "fresh 0.41", timed(enough)[0])


def _body(**changes: object) -> bytes:
    """The valid deployment's JSON with each of ``changes`` written as it is (``NaN``, ``1e999``)."""
    text = json.dumps(deployment_json())
    for name, literal in changes.items():
        text = text.replace(f'"{name}": {json.dumps(deployment_json()[name])}', f'"{name}": {literal}')
    return text.encode()


BROKEN = {
    "JSON of another shape": (answer(200, '{"data": []}'), "not a deployment"),
    "a list": (answer(200, "[1, 2]"), "not a JSON object"),
    "threshold a text": (answer(200, _body(threshold='"0.41"')), "threshold: not a number"),
    "threshold null": (answer(200, _body(threshold="null")), "threshold: not a number"),
    "threshold NaN": (answer(200, _body(threshold="NaN")), "NaN is not a JSON number"),
    "threshold 1e999": (answer(200, _body(threshold="1e999")), "threshold: not a finite number"),
    "not JSON": (answer(200, "{"), "not a deployment"),
    "an HTML login page": (answer(200, "<html><form>Sign in</form></html>", "text/html"), "not JSON"),
    "another deployment": (deployment_answer(etag='"v2-x"', name="staging"), "is deployment 'staging'"),
    "version 0": (deployment_answer(etag='"v0-x"', version=0), "version"),
    "500": (answer(500, '{"title": "boom"}'), "500"),
    "502 from a proxy, HTML": (answer(502, "<h1>Bad Gateway</h1>", "text/html"), "502"),
    "401 (the key revoked)": (answer(401, '{"title": "Unauthorized"}', "application/problem+json"), "401"),
    "gzip it was not asked for": (answer(200, b"\x1f\x8b", "application/json", **{"Content-Encoding": "gzip"}), "gzip"),
}


@pytest.mark.parametrize("kind", list(BROKEN))
def test_an_answer_that_is_not_a_deployment_serves_the_stale_value_and_logs_once(server, caplog, kind):
    behaviour, reason = BROKEN[kind]
    client = primed(server)
    server.answer = behaviour
    with caplog.at_level(logging.WARNING, logger="evalcore.client"):
        seen = [timed(client)[0] for _ in range(3)]
    lines = [r.getMessage() for r in caplog.records if r.name == "evalcore.client"]
    logged = f"{len(lines)} log line" + ("s" if len(lines) != 1 else "")
    named = "naming the reason" if lines and all(reason in x for x in lines) else f"saying {lines[:1]}"
    shown = f"{', '.join(sorted(set(seen)))}; {logged} {named}"
    check(f"client, 200 or error: {kind}", "stale 0.41; 1 log line naming the reason", shown)
    assert all(KEY not in x for x in lines)
    server.answer = deployment_answer()
    with caplog.at_level(logging.WARNING, logger="evalcore.client"):
        back = client.deployment("production")
    assert not back.stale  # the service answers again: fresh, and said so once
    assert sum("answers again" in r.getMessage() for r in caplog.records) == 1


def test_no_value_known_raises_one_documented_type(server):
    for behaviour in (
        answer(200, '{"data": []}'),
        answer(500, "{}"),
        answer(200, "<html/>", "text/html"),
        answer(304, b""),  # 304 to a request that sent no ETag
        redirect("https://127.0.0.1:1/elsewhere"),
    ):
        server.answer = behaviour
        with pytest.raises(ServiceUnavailable):
            evalcore.Client(server.url, KEY, timeout=DEADLINE).deployment("production")
    server.answer = answer(404, '{"title": "Not Found"}', "application/problem+json")
    with pytest.raises(ServiceError) as unknown:
        evalcore.Client(server.url, KEY, timeout=DEADLINE).deployment("production")
    from evalcore.errors import UnknownDeployment

    assert unknown.value.status == 404 and isinstance(unknown.value, UnknownDeployment)


def test_a_redirect_is_followed_only_within_the_origin(server):
    with HostileServer() as elsewhere:
        cases = {
            "to another port": f"http://127.0.0.1:{elsewhere.port}/api/v1/deployments/production",
            "to https on the same host and port": f"https://127.0.0.1:{server.port}/api/v1/deployments/production",
            "to another host name of this machine": f"http://localhost:{server.port}/api/v1/deployments/production",
        }
        for case, location in cases.items():
            client = primed(server)
            server.answer = redirect(location)
            before = len(server.requests)
            seen, _ = timed(client)
            followed = "not followed" if not elsewhere.requests and len(server.requests) == before + 1 else "followed"
            check(f"client, a redirect {case}", "stale 0.41, not followed", f"{seen}, {followed}")
    client = primed(server)
    server.answer = redirect("/api/v1/moved")
    server.by_path["/api/v1/moved"] = deployment_answer(etag='"v2-moved"', threshold=0.37)
    seen, _ = timed(client)
    check("client, a redirect within the origin", "fresh 0.37", seen)
    assert server.requests[-1].headers.get("authorization") == f"Bearer {KEY}"


def test_revalidation_sends_the_etag_and_keeps_the_value_on_304(server):
    client = primed(server)
    live = client.deployment("production")
    assert server.requests[-1].headers.get("if-none-match") == '"v1-1a2b3c4d5e6f"'
    assert not live.stale and live.threshold == 0.41 and live.version == 1
    cached = evalcore.Client(server.url, KEY, max_age=60)
    cached.deployment("production")
    count = len(server.requests)
    for _ in range(20):
        cached.deployment("production")
    assert len(server.requests) == count  # within max_age: no request


INSECURE = {
    "http://evalcore.example.org": "refused",
    "http://10.0.0.7:8501": "refused",
    "http://localhost.evil.example": "refused",
    "http://127.0.0.1.nip.io": "refused",
    "http://localhost:8501": "accepted",
    "http://127.0.0.2:8501": "accepted",
    "http://[::1]:8501": "accepted",
    "http://[::ffff:127.0.0.1]:8501": "accepted",
    "https://evalcore.example.org": "accepted",
}


@pytest.mark.parametrize("url", list(INSECURE))
def test_http_to_another_host_is_refused_before_any_connection(url):
    try:
        evalcore.Client(url, KEY)  # making a client connects to nothing
        seen = "accepted"
    except ConfigError as exc:
        seen = "refused" if "in clear" in str(exc) and KEY not in str(exc) else f"refused: {exc}"
    check(f"client, {url}", INSECURE[url], seen)
    assert evalcore.Client(url, KEY, allow_insecure=True).url == url


#: the CLI under an audit hook: any lookup or connect to an address other than loopback is
#: refused (OSError) and written to stderr as ``NETWORK ...``, so a test can see it was tried
GUARDED = """
import sys
def guard(event, args):
    if event in ("socket.getaddrinfo", "socket.connect"):
        where = str(args[0] if event == "socket.getaddrinfo" else args[1])
        if "127.0.0.1" not in where and "localhost" not in where:
            sys.stderr.write(f"NETWORK {event} {where}\\n")
            raise ConnectionRefusedError("stopped by the test")
sys.addaudithook(guard)
from evalcore.cli.main import main
sys.exit(main(sys.argv[1:]))
"""


def _guarded(*args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "EVALCORE_API_KEY": KEY, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
    return subprocess.run(
        [sys.executable, "-c", GUARDED, *args], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120
    )


def test_the_cli_refuses_http_to_another_host_without_insecure():
    refused = _guarded("--server", "http://evalcore.example.org", "list")
    tried = "no lookup, no connect" if "NETWORK" not in refused.stderr else "the network was tried"
    lines = refused.stderr.strip().splitlines()
    said = "names --insecure" if len(lines) == 1 and "--insecure" in lines[0] and "in clear" in lines[0] else lines
    check(
        "cli, --server http://evalcore.example.org without --insecure",
        "exit 2, names --insecure, no lookup, no connect",
        f"exit {refused.returncode}, {said}, {tried}",
    )
    assert KEY not in refused.stderr + refused.stdout
    # the control: with --insecure it warns and goes on (the guard stops its lookup)
    goes_on = _guarded("--insecure", "--server", "http://evalcore.example.org", "list")
    warned = "warned" if "warning:" in goes_on.stderr and "in clear" in goes_on.stderr else "not warned"
    tried = "then looked the host up" if "NETWORK socket.getaddrinfo evalcore.example.org" in goes_on.stderr else "-"
    check(
        "cli, --insecure --server http://evalcore.example.org",
        "exit 2, warned, then looked the host up",
        f"exit {goes_on.returncode}, {warned}, {tried}",
    )
    alone = cli_in_process(["--insecure", "--store", str(ROOT / "nowhere.duckdb"), "list"])
    check("cli, --insecure without --server", "error: --insecure goes with --server URL", alone.stderr.strip())
