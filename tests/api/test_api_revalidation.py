"""The revalidation fast path (evalcore/api/serving/revalidate.py) keeps the route's meaning, against a
real server (``evalcore dashboard`` as a process, real HTTP through httpx, a store made by the
real CLI): a matching ``If-None-Match`` is 304; a move (by the API or by another process) is 200
with the new ETag on the very next request; a key revoked by ``evalcore keys revoke`` is 401 on
its very next request; a key without ``read`` is 403; an empty rate bucket is 429, and every 304
spends a token."""

from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor

import httpx
import pytest
from api_serving import ALL_SCOPES, api_server, cli, is_problem, make_key, make_store

RATE, BURST = 20, 40


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    """(url, store, keys by name) of a server whose deployment ``staging`` points at a decision."""
    folder = tmp_path_factory.mktemp("api-reval")
    store = make_store(tmp_path_factory, folder / "evalcore.duckdb")
    keys = {
        "all": make_key(store, "all", ALL_SCOPES),
        "reader": make_key(store, "reader", "read"),
        "writer": make_key(store, "writer", "traffic:write,deploy"),
        "leaving": make_key(store, "leaving", "read"),
        "burst": make_key(store, "burst", "read"),
    }
    with api_server(store, folder / "server.log", {"EVALCORE_API_RATE": f"{RATE}/{BURST}"}) as url:
        yield url, store, keys
    log = (folder / "server.log").read_text(errors="replace")
    for key in keys.values():
        assert key not in log, "a key reached the server's log"


def client(url: str, key: str, etag: str | None = None) -> httpx.Client:
    headers = {"Authorization": f"Bearer {key}"}
    if etag is not None:
        headers["If-None-Match"] = etag
    return httpx.Client(base_url=url + "/api/v1", headers=headers, timeout=60)


def deploy(url: str, key: str, threshold: float) -> httpx.Response:
    with client(url, key) as c:
        made = c.post("/runs/base/decisions", json={"configuration": "E/dense", "threshold": threshold})
        assert made.status_code == 201, made.text
        return c.put("/deployments/staging", json={"decision_id": made.json()["decision_id"]})


def revalidated(c: httpx.Client, etag: str, times: int = 5) -> None:
    """``times`` revalidations in a row, each 304 with the ETag and nothing else."""
    for _ in range(times):
        same = c.get("/deployments/staging")
        assert same.status_code == 304, (same.status_code, same.text[:300])
        assert same.content == b"" and same.headers["etag"] == etag and same.headers["cache-control"] == "no-cache"
        assert "content-type" not in same.headers


def test_a_matching_etag_is_304_and_a_move_is_200_on_the_very_next_request(served):
    url, _, keys = served
    first = deploy(url, keys["all"], 0.41)
    assert first.status_code in (200, 201), first.text
    etag = first.headers["etag"]
    with client(url, keys["reader"]) as c:
        assert c.get("/deployments/staging").headers["etag"] == etag  # read once: now kept
    with client(url, keys["reader"], etag) as c:
        revalidated(c, etag)
        for other in (f"W/{etag}", '"v0-000000000000", ' + etag, "*"):  # weak, a list, any
            assert c.get("/deployments/staging", headers={"If-None-Match": other}).status_code == 304
        stale = c.get("/deployments/staging", headers={"If-None-Match": '"v0-000000000000"'})
        assert stale.status_code == 200 and stale.headers["etag"] == etag and stale.json()["threshold"] == 0.41
        moved = deploy(url, keys["all"], 0.37)
        assert moved.status_code == 200 and moved.headers["etag"] != etag
        fresh = c.get("/deployments/staging")  # the old ETag, right after the move
        assert fresh.status_code == 200, fresh.status_code
        assert fresh.headers["etag"] == moved.headers["etag"] and fresh.json()["threshold"] == 0.37
        assert fresh.json()["version"] == moved.json()["version"]
        revalidated(client(url, keys["reader"], moved.headers["etag"]), moved.headers["etag"])
        is_problem(c.get("/deployments/nowhere"), 404)
        is_problem(c.get("/deployments/-x"), 422)


def test_a_move_by_another_process_is_seen_by_the_very_next_request(served):
    from evalcore.service.deployments import deploy as deploy_here
    from evalcore.store import Store

    url, store, keys = served
    before = deploy(url, keys["all"], 0.44)
    etag = before.headers["etag"]
    with client(url, keys["reader"], etag) as c:
        assert c.get("/deployments/staging", headers={"If-None-Match": ""}).status_code == 200  # kept
        revalidated(c, etag)
        with client(url, keys["all"]) as w:  # a decision saved, not deployed: the ETag holds
            made = w.post("/runs/base/decisions", json={"configuration": "E/dense", "threshold": 0.38})
        decision = made.json()["decision_id"]
        revalidated(c, etag, 1)
        moved = deploy_here(Store(store), "staging", decision, "tests")  # this process, not the server
        fresh = c.get("/deployments/staging")
        assert fresh.status_code == 200 and fresh.headers["etag"] == moved.etag() != etag
        assert fresh.json()["deployed_by"] == "tests" and fresh.json()["threshold"] == 0.38
        assert fresh.json()["version"] == moved.version == before.json()["version"] + 1


def test_a_key_revoked_while_it_revalidates_is_401_on_its_very_next_request(served):
    url, store, keys = served
    etag = deploy(url, keys["all"], 0.42).headers["etag"]
    with client(url, keys["leaving"], etag) as c:
        assert c.get("/deployments/staging", headers={"If-None-Match": ""}).status_code == 200
        revalidated(c, etag)
        assert cli(store, "keys", "revoke", "leaving").returncode == 0
        body = is_problem(c.get("/deployments/staging"), 401)
        assert keys["leaving"] not in body["detail"]
        is_problem(c.get("/deployments/staging"), 401)
    with client(url, keys["reader"], etag) as c:  # the other keys are unaffected
        revalidated(c, etag, 2)


def test_a_key_without_read_is_403_even_with_the_current_etag(served):
    url, _, keys = served
    etag = deploy(url, keys["all"], 0.43).headers["etag"]
    with client(url, keys["reader"], etag) as c:
        assert c.get("/deployments/staging", headers={"If-None-Match": ""}).status_code == 200
        revalidated(c, etag, 2)
    with client(url, keys["writer"], etag) as c:
        body = is_problem(c.get("/deployments/staging"), 403)
        assert "read" in body["detail"] and keys["writer"] not in body["detail"]
    with client(url, "evk_" + "A" * 43, etag) as c:
        is_problem(c.get("/deployments/staging"), 401)
    with httpx.Client(base_url=url + "/api/v1", headers={"If-None-Match": etag}) as c:
        is_problem(c.get("/deployments/staging"), 401)


def test_revalidations_spend_the_keys_tokens_and_an_empty_bucket_is_429(served):
    url, _, keys = served
    etag = deploy(url, keys["all"], 0.45).headers["etag"]
    with client(url, keys["reader"], etag) as c:
        assert c.get("/deployments/staging", headers={"If-None-Match": ""}).status_code == 200
    with client(url, keys["burst"], etag) as c, ThreadPoolExecutor(8) as pool:
        began = time.monotonic()
        answers = list(pool.map(lambda _: c.get("/deployments/staging"), range(3 * BURST)))
        took = time.monotonic() - began
    statuses = [a.status_code for a in answers]
    assert set(statuses) <= {304, 429}, statuses
    # a token a 304: no more than the burst and what came back while they ran
    assert BURST <= statuses.count(304) <= BURST + RATE * took + 1, (statuses.count(304), took)
    limited = next(a for a in answers if a.status_code == 429)
    body = is_problem(limited, 429)
    assert int(limited.headers["retry-after"]) >= 1 and "EVALCORE_API_RATE" in body["detail"]
    time.sleep(2 / RATE)  # tokens come back at the rate
    with client(url, keys["burst"], etag) as c:
        assert c.get("/deployments/staging").status_code == 304


def test_the_fast_path_answers_only_what_it_should(served):
    """A revalidation with a body, of another path or of another resource is the
    route's (the same answers as without the fast path)."""
    url, _, keys = served
    etag = deploy(url, keys["all"], 0.46).headers["etag"]
    with client(url, keys["reader"], etag) as c:
        assert c.get("/deployments/staging", headers={"If-None-Match": ""}).status_code == 200
        revalidated(c, etag, 2)
        assert c.get("/deployments/staging/").status_code in (307, 404)  # never a 304 for another path
        big = c.request("GET", "/deployments/staging", content=b"x" * (2 * 1024 * 1024))
        is_problem(big, 413)
        listed = c.get("/deployments")
        assert listed.status_code == 200 and any(d["name"] == "staging" for d in listed.json()["data"])
