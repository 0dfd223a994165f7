"""evalcore.Client and the CLI's --server against a real server: ``evalcore dashboard`` started as
a process over a store made by the real CLI (tests/api_serving.py), real HTTP. The client's
answers are the library's records and the CLI prints what it prints on the local store; the
deployment is revalidated with If-None-Match and served stale while the server is stopped."""

from __future__ import annotations

import json
import shutil
import threading
import time

import pytest
from api_serving import ALL_SCOPES, api_server, cli, make_key, make_store

import evalcore
from evalcore.client import LiveDeployment
from evalcore.errors import ServiceError, ServiceUnavailable, UnknownDeployment
from evalcore.service.deployments import Deployment, get_deployment

WAIT = 60.0  #: these tests are about what the client answers, on a loaded machine: not its 5 s default


def Client(url: str, key: str | None, max_age: float = 30) -> evalcore.Client:
    return evalcore.Client(url, key, max_age, timeout=WAIT)


@pytest.fixture(scope="module")
def base_store(tmp_path_factory):
    return make_store(tmp_path_factory, tmp_path_factory.mktemp("client-base") / "evalcore.duckdb")


@pytest.fixture()
def served(base_store, tmp_path):
    store = tmp_path / "evalcore.duckdb"
    shutil.copy(base_store, store)
    keys = {"all": make_key(store, "all", ALL_SCOPES), "prod": make_key(store, "prod", "read,traffic:write")}
    with api_server(store, tmp_path / "server.log") as url:
        yield url, store, keys
    log = (tmp_path / "server.log").read_text()
    assert all(key not in log for key in keys.values()), "a key reached the server's log"


def _statuses(client: evalcore.Client) -> list[int]:
    """The status of every answer the client receives (an httpx event hook: the real traffic)."""
    seen: list[int] = []
    client._http.event_hooks["response"].append(lambda response: seen.append(response.status_code))
    return seen


def test_the_client_deploys_reads_back_and_revalidates_with_304(served):
    url, store, keys = served
    with Client(url, keys["all"]) as admin, Client(url, keys["prod"], max_age=0.3) as prod:
        first = admin.decide("base", "E/dense", 0.41, note="first")["decision_id"]
        deployed = admin.deploy("production", first)
        assert isinstance(deployed, Deployment) and deployed == get_deployment(store, "production")
        seen = _statuses(prod)
        live = prod.deployment("production")
        assert isinstance(live, LiveDeployment) and not live.stale
        assert (live.threshold, live.configuration.label, live.version) == (0.41, "E/dense", 1)
        assert live.claim == deployed.claim and live.deployed_by == "key:all"
        for _ in range(50):  # within max_age: no request at all
            assert prod.deployment("production") is live
        assert seen == [200]
        time.sleep(0.35)
        assert prod.deployment("production").version == 1 and seen == [200, 304]
        second = admin.decide("base", "E/bm25", 0.37)["decision_id"]
        admin.deploy("production", second)
        time.sleep(0.35)
        moved = prod.deployment("production")
        assert (moved.threshold, moved.configuration.label, moved.version) == (0.37, "E/bm25", 2)
        assert seen == [200, 304, 200]
        assert evalcore.Client(url, None).timeout == 5.0  # production's default: one call waits at most 5 s
        history = admin.deployments()
        assert [(m.from_threshold, m.to_threshold) for m in history[0].moves] == [(0.41, 0.37), (None, 0.41)]
        with pytest.raises(UnknownDeployment):
            prod.deployment("nowhere")
        with pytest.raises(ServiceError) as refused:
            prod.deploy("production", first)  # a key without the deploy scope
        assert refused.value.status == 403


def test_the_last_known_value_is_served_stale_while_the_server_is_stopped(base_store, tmp_path):
    store = tmp_path / "evalcore.duckdb"
    shutil.copy(base_store, store)
    key = make_key(store, "all", ALL_SCOPES)
    with api_server(store, tmp_path / "server.log") as url:
        client = Client(url, key, max_age=0.2)
        client.deploy("production", client.decide("base", "E/dense", 0.43)["decision_id"])
        known = client.deployment("production")
        assert not known.stale and known.threshold == 0.43
    # the server process is stopped: every caller, in twenty threads, gets the last value, stale
    time.sleep(0.25)
    first = client.deployment("production")  # the revalidation fails: the last value, stale
    assert first.stale and (first.threshold, first.version) == (0.43, known.version)
    got: list = []
    errors: list = []

    def read() -> None:
        try:
            for _ in range(20):
                got.append(client.deployment("production"))
        except Exception as exc:  # noqa: BLE001 - collected and asserted below
            errors.append(exc)

    threads = [threading.Thread(target=read) for _ in range(20)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors and len(got) == 400
    assert all(v.stale and v.threshold == 0.43 and v.version == known.version for v in got)
    assert got[0].checked_at == known.checked_at  # when the service last confirmed it
    with pytest.raises(ServiceUnavailable) as down:
        evalcore.Client(url, key).deployment("production")  # no value known yet: nothing to serve
    assert key not in str(down.value) and key not in repr(client)
    # the server is back: the next revalidation answers fresh again
    with api_server(store, tmp_path / "server2.log") as url2:
        again = Client(url2, key, max_age=0.2)
        assert not again.deployment("production").stale


def test_posted_traffic_gets_one_record_a_line_and_an_id_is_stored_once(served):
    url, store, keys = served
    with Client(url, keys["all"]) as admin, Client(url, keys["prod"]) as prod:
        admin.deploy("production", admin.decide("base", "E/dense", 0.5)["decision_id"])
        lines = [{"id": f"q{i}", "query": f"question {i}", "time": f"2026-11-02T10:{i:02d}:00Z"} for i in range(3)]
        lines.append({"id": "bad", "query": "x", "time": "yesterday"})
        first = prod.post_traffic("production", lines)
        assert [(r.line, r.id, r.status) for r in first] == [
            (1, "q0", "stored"),
            (2, "q1", "stored"),
            (3, "q2", "stored"),
            (4, "bad", "problem"),
        ]
        assert first[3].reason.startswith("time: not an ISO 8601 time")
        assert [r.status for r in prod.post_traffic("production", lines[:3])] == ["duplicate"] * 3


def test_a_wrong_key_is_refused_and_never_shown(served):
    url, _, _ = served
    secret = "evk_" + "s3cr3t" * 8
    client = Client(url, secret)
    with pytest.raises(ServiceError) as refused:
        client.runs()
    assert refused.value.status == 401
    assert secret not in str(refused.value) and secret not in repr(client) and secret not in repr(refused.value)


def _local(store, *args):
    """What api_serving.cli runs (``python -m evalcore --store STORE ARGS``, FAKE_ENV), in a
    process of its own forked by tests/zygote.py."""
    import os

    import zygote
    from api_serving import FAKE_ENV

    return zygote.run(["--store", str(store), *args], {**os.environ, **FAKE_ENV}, timeout=300)


def _remote(url, key, *args):
    """``python -m evalcore --server URL ARGS`` in a process of its own (tests/zygote.py)."""
    import os

    import zygote
    from api_serving import FAKE_ENV

    return zygote.run(["--server", url, *args], {**os.environ, **FAKE_ENV, "EVALCORE_API_KEY": key}, timeout=300)


def test_the_cli_prints_with_server_what_it_prints_locally(served, tmp_path):
    url, store, keys = served
    key = keys["all"]
    for args in (
        ["show", "base", "--json"],
        ["threshold", "base"],
        ["threshold", "base:E/dense", "--max-bluff-rate", "0.1", "--json"],
        ["gate", "--baseline", "base", "--candidate", "cand"],
        ["gate", "--baseline", "base", "--candidate", "cand", "--format", "markdown"],
        ["gate", "--baseline", "base", "--candidate", "base", "--format", "json"],
    ):
        here, there = _local(store, *args), _remote(url, key, *args)
        assert (there.returncode, there.stdout) == (here.returncode, here.stdout), (args, there.stderr)
    listed = _remote(url, key, "list")
    assert listed.returncode == 0 and listed.stdout == _local(store, "list").stdout
    shown = _remote(url, key, "show", "base")
    assert (
        shown.returncode == 0
        and shown.stdout.splitlines()[-5:] == _local(store, "show", "base").stdout.splitlines()[-5:]
    )
    junit_here, junit_there = tmp_path / "here.xml", tmp_path / "there.xml"
    _local(store, "gate", "--baseline", "base", "--candidate", "cand", "--junit", str(junit_here))
    _remote(url, key, "gate", "--baseline", "base", "--candidate", "cand", "--junit", str(junit_there))
    assert junit_there.read_text() == junit_here.read_text()
    # without the key in the environment: one line, exit 2, nothing sent
    import os
    import subprocess
    import sys

    from conftest import ROOT

    bare = subprocess.run(
        [sys.executable, "-m", "evalcore", "--server", url, "list"],
        cwd=ROOT,
        env={k: v for k, v in os.environ.items() if k != "EVALCORE_API_KEY"},
        capture_output=True,
        text=True,
    )
    assert bare.returncode == 2 and bare.stderr.strip().splitlines() == [
        "error: --server needs the API key in $EVALCORE_API_KEY (never on the command line)"
    ]


def test_upload_and_traffic_import_through_the_server(served, tmp_path):
    url, store, keys = served
    key = keys["all"]
    run_file = tmp_path / "base.evalcore.zip"
    assert cli(store, "export-run", "base", "-o", str(run_file)).returncode == 0
    again = _remote(url, key, "load-run", str(run_file))
    assert again.returncode == 0, again.stderr
    assert again.stdout.startswith("run ") and "is already in" in again.stdout and "nothing loaded" in again.stdout
    with Client(url, key) as admin:
        admin.deploy("production", admin.decide("base", "E/dense", 0.5)["decision_id"])
    log = tmp_path / "log.jsonl"
    rows = [{"query": f"question {i % 4}", "time": "2026-11-02T10:00:00Z"} for i in range(8)]
    rows.append({"query": "no time"})
    log.write_text("".join(json.dumps(r) + "\n" for r in rows))
    first = _remote(url, key, "traffic", "import", str(log), "--deployment", "production")
    assert first.returncode == 0, first.stderr
    assert "9 lines read, 8 stored, 0 already stored, 1 not usable" in first.stdout
    second = _remote(url, key, "traffic", "import", str(log), "--deployment", "production")
    assert "8 already stored" in second.stdout  # each line's id is its identity in the log
    # the server's job runner replays the posted lines: an import the Traffic screen lists
    from evalcore.store import Store

    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        done = Store(store).query("SELECT source, status, lines, added FROM traffic_imports")
        if len(done) and set(done["status"]) != {"running"}:
            break
        time.sleep(0.5)
    assert done.to_dict("records") == [
        {"source": "deployment production", "status": "complete", "lines": 8, "added": 8}
    ]


def test_an_evaluation_is_started_watched_and_cancelled_as_records(served):
    from evalcore.service.evaluations import QueuedEvaluation

    url, _, keys = served
    with Client(url, keys["all"]) as c:
        started = c.evaluate({"demo": True, "strategies": "E", "retrievers": "bm25", "name": "from-a-script"})
        assert isinstance(started, QueuedEvaluation) and started.status in ("queued", "running")
        assert c.evaluation(started.evaluation_id).name == "from-a-script"
        after = c.cancel(started.evaluation_id)
        assert isinstance(after, QueuedEvaluation) and after.evaluation_id == started.evaluation_id
        deadline = time.monotonic() + 120
        while (now := c.evaluation(started.evaluation_id)).status in ("queued", "running"):
            assert time.monotonic() < deadline, now
            time.sleep(0.5)
        assert now.status in ("cancelled", "complete") and now.finished_at is not None
        with pytest.raises(ServiceError) as unknown:
            c.evaluation("no-such-evaluation")
        assert unknown.value.status == 404
        with pytest.raises(ServiceError) as bad:
            c.evaluate({"demo": True, "colour": "blue"})
        assert bad.value.status == 422 and "colour" in str(bad.value)
