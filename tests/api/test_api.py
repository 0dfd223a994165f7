"""The HTTP API against a real server: ``evalcore dashboard`` started as a process over a store
made by the real CLI, talked to with httpx. Every answer is compared with what the CLI prints for
the same question (the same library function behind both)."""

from __future__ import annotations

import json
import shutil
import threading
import time

import httpx
import pytest
from api_serving import ALL_SCOPES, OOD, RUN, api_server, cli, is_problem, make_key, make_store
from conftest import MINI

from evalcore.api.serving.jsonout import jsonable

NDJSON = "application/x-ndjson"
HOLD = "hold-evaluations"  # beside the served store: see the served fixture


@pytest.fixture(scope="module")
def base_store(tmp_path_factory):
    return make_store(tmp_path_factory, tmp_path_factory.mktemp("api-base") / "evalcore.duckdb")


@pytest.fixture(scope="module")
def served(base_store, tmp_path_factory):
    """(url, store, keys by name) of a server over a copy of the base store."""
    folder = tmp_path_factory.mktemp("api")
    store = folder / "evalcore.duckdb"
    shutil.copy(base_store, store)
    keys = {
        "all": make_key(store, "all", ALL_SCOPES),
        "reader": make_key(store, "reader", "read"),
        "revoked": make_key(store, "gone", "read"),
        "burst": make_key(store, "burst", "read"),
    }
    assert cli(store, "keys", "revoke", "gone").returncode == 0
    env = {
        "EVALCORE_API_RATE": "20/40",
        "EVALCORE_DATA_ROOTS": str(MINI.parent),
        # an evaluation's job waits at its chunking while this file exists (evalcore.testhooks)
        "EVALCORE_TEST_PAUSE": f"E: chunking={folder / HOLD}",
    }
    with api_server(store, folder / "server.log", env) as url:
        yield url, store, keys
    log = (folder / "server.log").read_text()
    for key in keys.values():
        assert key not in log, "a key reached the server's log"


def client(url: str, key: str | None) -> httpx.Client:
    headers = {"Authorization": f"Bearer {key}"} if key else {}
    return httpx.Client(base_url=url + "/api/v1", headers=headers, timeout=60)


def cli_json(store, *args: str):
    ran = cli(store, *args)
    assert ran.returncode in (0, 1), ran.stderr
    return jsonable(json.loads(ran.stdout))


def test_health_and_the_openapi_document_need_no_key(served):
    url, _, _ = served
    with client(url, None) as c:
        health = c.get("/health").json()
        assert health["status"] == "ok" and health["schema_version"] >= 12
        assert health["store_schema_version"] == health["schema_version"]
        doc = c.get("/openapi.json").json()
        assert doc["openapi"].startswith("3.1")
        for path in ("/runs", "/runs/{ref}", "/runs/{ref}/claim", "/runs/{ref}/decisions", "/gate"):
            assert path in doc["paths"], path
        for page in ("/docs", "/redoc"):  # their assets would come from a CDN: not served
            is_problem(c.get(page), 404)
    # the dashboard is still served on the same port
    assert httpx.get(url + "/_stcore/health").text == "ok"
    assert "<html" in httpx.get(url + "/").text.lower()


def test_the_openapi_document_names_every_error_as_a_problem(served):
    """The document a generated net is built from says what each route answers: every error a
    problem document, 401/403/429 on every route with a key, 415 where a JSON body is read, 412
    on a move of a deployment (If-Match), and none of FastAPI's own validation shape."""
    url, _, _ = served
    doc = httpx.get(url + "/api/v1/openapi.json").json()
    assert "HTTPValidationError" not in json.dumps(doc)
    assert doc["components"]["schemas"]["Problem"]["required"] == ["type", "title", "status", "detail"]
    for path, operations in doc["paths"].items():
        for method, operation in operations.items():
            codes = operation["responses"]
            for code, answer in codes.items():
                if code.startswith(("4", "5")):
                    assert list(answer["content"]) == ["application/problem+json"], (method, path, code)
            if path != "/health":
                assert {"401", "403", "429"} <= set(codes), (method, path)
            if "requestBody" in operation:
                assert {"413", "415", "422"} <= set(codes), (method, path)
    assert "412" in doc["paths"]["/deployments/{name}"]["put"]["responses"]
    rates = {p["name"]: p for p in doc["paths"]["/runs/{ref}/claim"]["get"]["parameters"]}
    assert "[1e-06, 1)" in rates["max_bluff_rate"]["description"]
    decision = doc["components"]["schemas"]["DecisionIn"]["properties"]["max_bluff_rate"]
    assert decision["minimum"] == 1e-6 and decision["exclusiveMaximum"] == 1.0


def test_a_missing_unknown_or_revoked_key_is_401_and_a_missing_scope_403(served):
    url, _, keys = served
    is_problem(client(url, None).get("/runs"), 401)
    is_problem(client(url, "evk_" + "A" * 43).get("/runs"), 401)
    is_problem(client(url, keys["revoked"]).get("/runs"), 401)
    is_problem(httpx.get(url + "/api/v1/runs", headers={"Authorization": "Basic dXNlcjpwYXNz"}), 401)
    body = is_problem(client(url, keys["reader"]).post("/gate", json={"baseline": "base", "candidate": "cand"}), 403)
    assert "gate" in body["detail"] and keys["reader"] not in body["detail"]


def test_runs_are_listed_newest_first_a_page_at_a_time(served):
    url, store, keys = served
    with client(url, keys["all"]) as c:
        first = c.get("/runs", params={"limit": 1}).json()
        assert len(first["data"]) == 1 and first["next_cursor"]
        second = c.get("/runs", params={"limit": 1, "cursor": first["next_cursor"]}).json()
        assert second["next_cursor"] is None
        listed = [r["run_id"] for r in first["data"] + second["data"]]
        assert listed == [r["run_id"] for r in cli_json(store, "list", "--json")]
        is_problem(c.get("/runs", params={"limit": 0}), 422)
        is_problem(c.get("/runs", params={"cursor": "bm9wZQ"}), 422)


def test_a_run_and_its_claim_are_what_show_and_threshold_print(served):
    url, store, keys = served
    with client(url, keys["reader"]) as c:
        assert c.get("/runs/base").json() == cli_json(store, "show", "base", "--json")
        got = c.get("/runs/base/claim", params={"configuration": "E/dense", "max_bluff_rate": "0.1"}).json()
        assert got == cli_json(store, "threshold", "base:E/dense", "--max-bluff-rate", "0.1", "--json")
        assert len(c.get("/runs/base/claim").json()) == 4  # E and P x dense and bm25
        is_problem(c.get("/runs/no-such-run"), 404)
        body = is_problem(c.get("/runs/base/claim", params={"max_bluff_rate": "2"}), 422)
        assert "max_bluff_rate" in body["detail"]
        body = is_problem(c.get("/runs/base/claim", params={"configuration": "Z/dense"}), 422)
        assert "E/dense" in body["detail"] and str(store) not in body["detail"]


def test_the_gate_answers_passed_true_or_false_with_the_report_gate_prints(served):
    url, store, keys = served
    with client(url, keys["all"]) as c:
        same = c.post("/gate", json={"baseline": "base", "candidate": "base"})
        assert same.status_code == 200 and same.json()["passed"] is True
        worse = c.post("/gate", json={"baseline": "base", "candidate": "cand"})
        assert worse.status_code == 200
        report = worse.json()
        assert report.pop("passed") is False
        assert report == cli_json(store, "gate", "--baseline", "base", "--candidate", "cand", "--format", "json")
        body = is_problem(c.post("/gate", json={"baseline": "base", "candidate": "cand", "alpha": 3}), 422)
        assert body["errors"][0]["field"] == "body.alpha"
        is_problem(c.post("/gate", json={"baseline": "nope", "candidate": "cand"}), 404)


def test_a_decision_is_saved_with_its_claim_and_the_keys_name(served):
    url, store, keys = served
    with client(url, keys["all"]) as c:
        made = c.post("/runs/base/decisions", json={"configuration": "E/dense", "threshold": 0.5, "note": "from CI"})
        assert made.status_code == 201, made.text
        saved = made.json()
        assert saved["author"] == "key:all" and saved["claim"]["configuration"] == "E/dense"
        assert made.headers["location"].endswith(saved["decision_id"])
        is_problem(client(url, keys["reader"]).post("/runs/base/decisions", json=saved), 403)
        body = is_problem(c.post("/runs/base/decisions", json={"configuration": "E/dense", "threshold": "nan"}), 422)
        assert body["errors"][0]["field"] == "body.threshold"
    from evalcore.read.decisions import latest_decision
    from evalcore.records import Configuration
    from evalcore.store import Store

    stored = latest_decision(Store(store), saved["run_id"], Configuration("E", "dense"))
    assert stored is not None and stored.decision_id == saved["decision_id"] and stored.author == "key:all"
    assert stored.claim == saved["claim"]


def test_a_run_file_is_stored_once_even_when_sent_twice_at_once(served, tmp_path):
    from concurrent.futures import ThreadPoolExecutor

    url, store, keys = served
    other = tmp_path / "other.duckdb"
    assert cli(other, *RUN, "--strategies", "C", "--retrievers", "bm25", "--name", "other").returncode == 0
    exported = tmp_path / "other.evalcore.zip"
    assert cli(other, "export-run", "other", "-o", str(exported)).returncode == 0
    data = exported.read_bytes()

    def upload(_: int) -> httpx.Response:
        with client(url, keys["all"]) as c:
            return c.post("/runs", content=data, headers={"Content-Type": "application/zip"})

    with ThreadPoolExecutor(2) as pool:
        answers = list(pool.map(upload, range(2)))
    assert sorted(a.status_code for a in answers) == [200, 201], [a.text for a in answers]
    stored = next(a for a in answers if a.status_code == 201).json()
    assert stored["loaded"] is True and stored["run_name"] == "other"
    again = upload(0)
    assert again.status_code == 200 and again.json()["loaded"] is False
    assert again.headers["location"].endswith("/runs/" + stored["run_id"])
    listed = [r["run_id"] for r in cli_json(store, "list", "--json")]
    assert listed.count(stored["run_id"]) == 1
    with client(url, keys["reader"]) as c:
        assert c.get("/runs/other").json() == cli_json(store, "show", "other", "--json")
    with client(url, keys["all"]) as c:
        is_problem(c.post("/runs", content=b"PK\x03\x04 not a zip", headers={"Content-Type": "application/zip"}), 422)
        is_problem(c.post("/runs", content=data, headers={"Content-Type": "text/plain"}), 415)
    is_problem(client(url, keys["reader"]).post("/runs", content=b"", headers={"Content-Type": "application/zip"}), 403)


def test_a_key_over_its_rate_gets_429_with_retry_after(served):
    url, _, keys = served
    from concurrent.futures import ThreadPoolExecutor

    with client(url, keys["burst"]) as c, ThreadPoolExecutor(16) as pool:
        # a refused name: the route does no work after the key and its rate are checked
        statuses = list(pool.map(lambda _: c.get("/deployments/-x"), range(200)))
    limited = [r for r in statuses if r.status_code == 429]
    assert limited, [r.status_code for r in statuses]
    body = is_problem(limited[0], 429)
    assert int(limited[0].headers["retry-after"]) >= 1 and "EVALCORE_API_RATE" in body["detail"]
    assert all(r.status_code in (422, 429) for r in statuses)


def test_bodies_over_their_limit_are_413_naming_it(served):
    url, _, keys = served
    with client(url, keys["all"]) as c:
        body = is_problem(
            c.post(
                "/gate", content=b"{" + b" " * (2 * 1024 * 1024) + b"}", headers={"Content-Type": "application/json"}
            ),
            413,
        )
        assert "1,048,576 bytes" in body["detail"]


def _decision(c: httpx.Client, threshold: float) -> str:
    made = c.post("/runs/base/decisions", json={"configuration": "E/dense", "threshold": threshold})
    assert made.status_code == 201, made.text
    return made.json()["decision_id"]


def test_a_deployment_is_read_with_an_etag_and_revalidated_with_304(served):
    url, store, keys = served
    with client(url, keys["all"]) as c:
        first = _decision(c, 0.41)
        put = c.put("/deployments/staging", json={"decision_id": first})
        assert put.status_code == 201, put.text
        etag = put.headers["etag"]
        assert etag.startswith('"') and not etag.startswith("W/")
        got = client(url, keys["reader"]).get("/deployments/staging")
        assert got.status_code == 200 and got.headers["etag"] == etag
        body = got.json()
        assert body["threshold"] == 0.41 and body["configuration"] == "E/dense" and body["version"] == 1
        assert body["deployed_by"] == "key:all" and body["decided_by"] == "key:all" and body["claim"]
        same = client(url, keys["reader"]).get("/deployments/staging", headers={"If-None-Match": etag})
        assert same.status_code == 304 and same.content == b"" and same.headers["etag"] == etag
        second = _decision(c, 0.37)
        moved = c.put("/deployments/staging", json={"decision_id": second})
        assert moved.status_code == 200 and moved.headers["etag"] != etag and moved.json()["version"] == 2
        fresh = client(url, keys["reader"]).get("/deployments/staging", headers={"If-None-Match": etag})
        assert fresh.status_code == 200 and fresh.json()["threshold"] == 0.37
        history = c.get("/deployments").json()["data"]
        staging = next(d for d in history if d["name"] == "staging")
        assert [(m["from_threshold"], m["to_threshold"]) for m in staging["moves"]] == [(0.41, 0.37), (None, 0.41)]
        is_problem(c.get("/deployments/nowhere"), 404)
        body = is_problem(c.put("/deployments/staging", json={"decision_id": "000000000000"}), 422)
        assert body["errors"][0]["field"] == "body.decision_id"
        is_problem(client(url, keys["reader"]).put("/deployments/staging", json={"decision_id": first}), 403)
        assert c.get("/deployments/staging").json()["version"] == 2  # nothing moved by the refusals


def test_traffic_posts_answer_207_per_line_and_store_each_id_once_even_twenty_at_once(served):
    from concurrent.futures import ThreadPoolExecutor

    url, store, keys = served
    with client(url, keys["all"]) as c:
        assert c.put("/deployments/production", json={"decision_id": _decision(c, 0.5)}).status_code in (200, 201)
    writer = make_key(store, "prod", "read,traffic:write")
    lines = [
        json.dumps({"id": f"q{i}", "query": f"how do I install python {i}", "time": "2026-12-04T10:00:00Z"})
        for i in range(40)
    ]

    def post(n: int) -> httpx.Response:
        body = "\n".join(lines[(n % 4) * 10 : (n % 4) * 10 + 10]) + "\n"
        with client(url, writer) as c:
            return c.post("/deployments/production/traffic", content=body, headers={"Content-Type": NDJSON})

    with ThreadPoolExecutor(20) as pool:
        answers = list(pool.map(post, range(20)))
    assert all(a.status_code == 207 for a in answers), [a.text[:300] for a in answers if a.status_code != 207]
    statuses = [r["status"] for a in answers for r in a.json()["results"]]
    assert statuses.count("stored") == 40 and statuses.count("duplicate") == 160
    with client(url, writer) as c:
        mixed = "\n".join([lines[0], '{"id": "new", "query": "pip cache", "time": 0}', '{"id": "x"}', "not json"])
        results = c.post("/deployments/production/traffic", content=mixed, headers={"Content-Type": NDJSON}).json()
        assert [r["status"] for r in results["results"]] == ["duplicate", "stored", "problem", "problem"]
        assert "query" in results["results"][2]["reason"]
        is_problem(c.post("/deployments/nowhere/traffic", content=lines[0], headers={"Content-Type": NDJSON}), 404)
        is_problem(
            c.post("/deployments/production/traffic", content=lines[0], headers={"Content-Type": "text/csv"}), 415
        )
        body = is_problem(
            c.post("/deployments/production/traffic", content="\n".join(lines * 26), headers={"Content-Type": NDJSON}),
            413,
        )
        assert "1,000 lines" in body["detail"]
    is_problem(client(url, keys["reader"]).post("/deployments/production/traffic", content=lines[0]), 403)


def _until(c: httpx.Client, path: str, done: set[str], timeout: float = 120) -> dict:
    deadline = time.monotonic() + timeout
    while True:
        now = c.get(path).json()
        if now["status"] in done or time.monotonic() > deadline:
            return now
        time.sleep(0.5)


def test_an_evaluation_is_queued_watched_and_cancelled(served):
    url, store, keys = served
    spec = {
        "corpus": str(MINI / "corpus"),
        "questions": str(MINI / "questions.jsonl"),
        "ood": str(OOD),
        "strategies": "E",
        "retrievers": "bm25",
        "name": "from-api",
    }
    hold = store.parent / HOLD
    with client(url, keys["all"]) as c:
        first = c.post("/evaluations", json=spec)
        assert first.status_code == 202, first.text
        where = first.headers["location"]
        assert where == "/api/v1/evaluations/" + first.json()["id"]
        deadline = time.monotonic() + 120
        while not hold.exists() and time.monotonic() < deadline:  # the first runs, holding the one slot
            time.sleep(0.05)
        assert hold.exists(), c.get(where.removeprefix("/api/v1")).json()
        second = c.post("/evaluations", json={**spec, "name": "to-cancel"})
        assert second.status_code == 202, second.text
        cancelled = c.post(f"/evaluations/{second.json()['id']}/cancel")
        # queued behind the first: cancelled at once (a small run could otherwise finish between
        # two of its cancel checks, and a cancel that comes that late cannot stop it)
        assert cancelled.status_code == 202 and cancelled.json()["status"] == "cancelled"
        hold.unlink()
        done = _until(c, where.removeprefix("/api/v1"), {"complete", "failed", "cancelled"})
        assert done["status"] == "complete", done
        assert c.get(f"/runs/{done['run_id']}").json()["name"] == "from-api"
        gone = _until(c, f"/evaluations/{second.json()['id']}", {"complete", "failed", "cancelled"})
        assert gone["status"] == "cancelled" and gone["run_id"] is None
        is_problem(c.get("/evaluations/no-such-job"), 404)
        body = is_problem(c.post("/evaluations", json={**spec, "corpus": "/etc"}), 422)
        assert "/etc" not in body["detail"] or "data roots" in body["detail"]
        is_problem(c.post("/evaluations", json={"demo": True, "corpus": spec["corpus"]}), 422)
        body = is_problem(c.post("/evaluations", json={**spec, "endpoint": "http://127.0.0.1:9/"}), 422)
        assert body["errors"][0]["field"] == "body.endpoint"
    is_problem(client(url, keys["reader"]).post("/evaluations", json=spec), 403)


def test_the_dashboard_still_works_on_the_same_port_after_api_calls(served):
    from serving import CHROMIUM, healthy, settled, shared_chromium, watch

    if CHROMIUM is None:
        pytest.skip("chromium is not installed (apt-get install chromium)")
    pytest.importorskip("playwright.sync_api", reason="the playwright package is not installed")
    url, _, keys = served
    with client(url, keys["all"]) as c:  # the API is busy first: a write, reads, an error
        assert c.post("/runs/base/decisions", json={"configuration": "P/dense", "threshold": 0.45}).status_code == 201
        assert c.get("/runs").status_code == 200
        is_problem(c.get("/runs/none-such"), 404)
    with shared_chromium() as browser:
        try:
            page = watch(browser.new_page(viewport={"width": 1400, "height": 1000}))
            for path in ("", "threshold?run_id=base&config=P%2Fdense"):
                page.goto(f"{url}/{path}")
                settled(page)
                healthy(page, f"after API calls: /{path}")
            assert "0.45" in page.locator("body").inner_text()  # the decision the API saved, on the screen
        finally:
            browser.close()
    with client(url, keys["reader"]) as c:  # and the API still answers after the dashboard's sessions
        assert c.get("/health").status_code == 200 and c.get("/runs/base").status_code == 200


def test_the_api_moves_with_the_dashboards_base_url_path(base_store, tmp_path):
    store = tmp_path / "evalcore.duckdb"
    shutil.copy(base_store, store)
    key = make_key(store, "ci", "read,deploy")
    env = {"STREAMLIT_SERVER_BASE_URL_PATH": "team/evalcore"}
    with api_server(store, tmp_path / "server.log", env, base="/team/evalcore") as url:
        with client(url, key) as c:
            assert c.get("/runs/base").status_code == 200
            made = c.post("/runs/base/decisions", json={"configuration": "E/dense", "threshold": 0.5})
            assert made.headers["location"].startswith("/team/evalcore/api/v1/runs/")
            assert c.get("/openapi.json").json()["servers"] == [{"url": "/team/evalcore/api/v1"}]
        root = url.removesuffix("/team/evalcore")
        assert httpx.get(root + "/api/v1/health").status_code != 200  # not at the root any more
        assert httpx.get(url + "/_stcore/health").text == "ok"  # and the dashboard beside it


def test_keys_list_shows_each_keys_last_use_and_never_a_key_or_hash(served):
    url, store, keys = served
    with client(url, keys["reader"]) as c:
        assert c.get("/runs", params={"limit": 1}).status_code == 200
    deadline = time.monotonic() + 30
    while True:  # the last use is recorded beside the request
        listed = {k["name"]: k for k in cli_json(store, "keys", "list", "--json")}
        if listed["reader"]["last_used_at"] is not None or time.monotonic() > deadline:
            break
        time.sleep(0.5)
    assert listed["reader"]["last_used_at"] is not None and listed["reader"]["scopes"] == "read"
    assert listed["gone"]["revoked_at"] is not None and listed["all"]["author"]
    text = cli(store, "keys", "list").stdout + json.dumps(listed)
    from evalcore.store.keys import key_hash

    for key in keys.values():
        assert key not in text and key_hash(key) not in text


def test_a_busy_store_is_503_with_retry_after_on_every_route_that_maps_errors(tmp_path):
    # another process (here: this test's transaction) holds the store's write lock longer than
    # the wait: the write fails with StoreBusy, and the routes answer 503 store-busy, not 422
    from evalcore.api.serving.problems import from_error
    from evalcore.errors import StoreBusy
    from evalcore.store import Store

    path = tmp_path / "evalcore.duckdb"
    Store(path).migrate()
    caught: list[BaseException] = []

    def write() -> None:
        try:
            with Store(path, lock_timeout=0.3).transaction() as con:
                con.execute("SELECT count(*) FROM runs").fetchall()
        except BaseException as exc:  # noqa: BLE001 - the test looks at what it was
            caught.append(exc)

    with Store(path).transaction() as con:
        con.execute("SELECT count(*) FROM runs").fetchall()
        other = threading.Thread(target=write)
        other.start()
        other.join(30)
    assert caught and isinstance(caught[0], StoreBusy), caught
    problem = from_error(caught[0], path)
    assert problem.status_code == 503 and problem.kind == "store-busy"
    assert problem.headers["Retry-After"].isdigit() and str(path) not in problem.detail
