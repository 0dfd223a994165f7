"""The reliability suite, issue 45 (part 3 and the smaller items): the API's edges. A real server
(``evalcore dashboard`` as a process) over a store made by the real CLI, real HTTP through
httpx; one table row per case, each through ``check``. What holds: bad input is a problem
document (404, 412, 415, 422, 401 or 429), never a 500 and never a traceback in the server's log;
a request answers 2xx exactly when its write happened; a header made from user data is
percent-encoded; a key is never echoed; and a caller without a key is answered before its body
is read, and slowed down when it keeps failing.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any
from urllib.parse import quote

import httpx
import pytest
from api_serving import ALL_SCOPES, api_server, cli, make_key, make_store
from test_reliability import check

JSON = {"Content-Type": "application/json"}
TABLES = ("runs", "decisions", "deployments", "deployment_moves", "traffic_posted", "jobs", "api_keys")


@pytest.fixture(scope="module")
def server(tmp_path_factory) -> Iterator[dict[str, Any]]:
    """A server over a store with runs ``base`` and ``cand``, a decision and the deployment
    ``production`` at it, and keys; failed authentications are not throttled here (a bucket of
    1,000: the throttle has a server of its own below)."""
    folder = tmp_path_factory.mktemp("trust-api-edges")
    store = make_store(tmp_path_factory, folder / "evalcore.duckdb")
    keys = {
        "all": make_key(store, "all", ALL_SCOPES),
        "reader": make_key(store, "reader", "read"),
        "other": make_key(store, "other", ALL_SCOPES),
    }
    log = folder / "server.log"
    env = {"EVALCORE_API_AUTH_FAILURES": "100/1000", "EVALCORE_DATA_ROOTS": str(folder)}
    with api_server(store, log, env) as url:
        c = api(url, keys["all"])
        made = c.post("/runs/base/decisions", json={"configuration": "E/dense", "threshold": 0.5})
        assert made.status_code == 201, made.text
        decision = made.json()["decision_id"]
        assert c.put("/deployments/production", json={"decision_id": decision}).status_code == 201
        yield {"url": url, "store": store, "keys": keys, "decision": decision, "log": log, "folder": folder}
    text = log.read_text(errors="replace")
    assert "Traceback" not in text and "Exception in ASGI" not in text, text[-3000:]
    for key in keys.values():
        assert key not in text


def api(url: str, key: str | None, **headers: str) -> httpx.Client:
    if key is not None:
        headers.setdefault("Authorization", f"Bearer {key}")
    return httpx.Client(base_url=url + "/api/v1", headers=headers, timeout=60)


def counts(store: Path) -> dict[str, int]:
    """Rows of every table a request could write (read while the server runs: read only)."""
    from evalcore.store import Store

    with Store(store).read() as con:
        return {t: con.execute(f"SELECT count(*) FROM {t}").fetchone()[0] for t in TABLES}


def seen(response: httpx.Response) -> str:
    """The status, and whether the answer is a problem document (RFC 9457) without a traceback."""
    kind = response.headers.get("content-type", "")
    if not kind.startswith("application/problem+json"):
        return f"{response.status_code} {kind.split(';')[0] or 'no type'}"
    body = response.json()
    ok = body.get("status") == response.status_code and body.get("title") and body.get("detail")
    return f"{response.status_code} problem" if ok and "Traceback" not in response.text else "a broken problem"


def refused(
    server: dict[str, Any], name: str, status: int, send: Callable[[], httpx.Response], *, detail: str = ""
) -> dict[str, Any]:
    """A hostile request: the row holds when it is a problem of ``status`` (whose detail holds
    ``detail``), nothing was stored and no key is in the answer. Returns the problem."""
    before = counts(server["store"])
    response = send()
    after = counts(server["store"])
    observed = seen(response) + (
        "" if after == before else "; stored " + ",".join(t for t in after if after[t] != before[t])
    )
    body: dict[str, Any] = response.json() if observed.endswith("problem") else {}
    if detail and detail not in str(body.get("detail", "")):
        observed += f"; detail without {detail!r}"
    if any(key in response.text for key in server["keys"].values()):
        observed += "; a key in the answer"
    check(f"api: {name}", f"{status} problem", observed, response.text[:500])
    return body


# -- names and the headers made of them --------------------------------------------------------


def test_a_cyrillic_deployment_is_made_answered_201_with_a_percent_encoded_location(server):
    with api(server["url"], server["keys"]["all"]) as c:
        made = c.put("/deployments/прод", json={"decision_id": server["decision"]})
        again = c.put("/deployments/прод", json={"decision_id": server["decision"]})
        where = made.headers.get("location", "")
        read = c.get(where.removeprefix("/api/v1")) if where else None
    expected = "201, Location /api/v1/deployments/%D0%BF%D1%80%D0%BE%D0%B4, read back 'прод'; again 200"
    name = read.json().get("name") if read is not None and read.status_code == 200 else None
    observed = f"{made.status_code}, Location {where}, read back {name!r}; again {again.status_code}"
    check("api: PUT /deployments/прод", expected, observed, made.text[:300])
    assert where == "/api/v1/deployments/" + quote("прод")


BAD_NAMES = [
    ("an emoji", "prod🚀", "U+1F680"),
    ("a space", "prod uction", "U+0020"),
    ("a leading dot", ".prod", "starts with '.'"),
    ("a superscript digit", "prod²", "U+00B2"),
    ("a percent sign", "prod%41", "U+0025"),
    ("101 letters", "p" * 101, "more than the 100 allowed"),
]


@pytest.mark.parametrize(("case", "name", "reason"), BAD_NAMES, ids=[c for c, _, _ in BAD_NAMES])
def test_a_deployment_name_outside_the_rule_is_422_and_nothing_is_stored(server, case, name, reason):
    with api(server["url"], server["keys"]["all"]) as c:
        refused(
            server,
            f"PUT a deployment named with {case}",
            422,
            lambda: c.put("/deployments/" + quote(name, safe=""), json={"decision_id": server["decision"]}),
            detail=reason,
        )
        read = c.get("/deployments/" + quote(name, safe=""))
        # 404 (no such deployment), or 422 where even a lookup refuses the name (over 100 characters)
        observed = "not there" if read.status_code in (404, 422) else f"{read.status_code}: {read.text[:200]}"
        check(f"api: GET the refused deployment named with {case}", "not there", observed)


def test_a_key_name_outside_the_rule_is_refused_by_keys_create(server, tmp_path):
    from shutil import copy

    store = tmp_path / "evalcore.duckdb"
    copy(server["store"], store)
    for case, name in (("an emoji", "ci🚀"), ("a space", "ci key"), ("a slash", "ci/x")):
        made = cli(store, "keys", "create", name, "--scope", "read")
        observed = (
            f"exit {made.returncode}, {'naming the character' if 'character' in made.stderr else made.stderr.strip()}"
        )
        check(f"keys create: a name with {case}", "exit 2, naming the character", observed, made.stderr)


# -- control characters ---------------------------------------------------------------------------

CONTROL_PATHS = [
    ("GET", "/runs/a%0ab"),
    ("GET", "/runs/a%0db/claim"),
    ("GET", "/runs/%00"),
    ("GET", "/runs/base/claim%0a"),
    ("GET", "/deployments/prod%0d%0aSet-Cookie:%20x=1"),
    ("PUT", "/deployments/a%00b"),
    ("POST", "/deployments/production/traffic%0a"),
    ("POST", "/gate%0d"),
    ("GET", "/%1b[31m"),
    ("GET", "/evaluations/%7f"),
]


@pytest.mark.parametrize(("method", "path"), CONTROL_PATHS, ids=[f"{m} {p}" for m, p in CONTROL_PATHS])
def test_a_control_character_in_a_path_is_a_404_problem(server, method, path):
    with api(server["url"], server["keys"]["all"]) as c:
        body = refused(
            server,
            f"{method} {path}",
            404,
            lambda: c.request(method, path, json={"decision_id": server["decision"]}),
            detail="control character",
        )
    assert "Set-Cookie" not in body.get("detail", "")


def test_a_control_character_in_a_field_is_a_problem(server):
    k = server["keys"]
    with api(server["url"], k["all"]) as c:
        refused(
            server,
            "claim ?configuration=E\\n/dense",
            422,
            lambda: c.get("/runs/base/claim", params={"configuration": "E\n/dense"}),
        )
        refused(
            server,
            "claim ?max_bluff_rate=0.1\\x00",
            422,
            lambda: c.get("/runs/base/claim", params={"max_bluff_rate": "0.1\x00"}),
        )
        refused(
            server,
            "decision with a note holding CR",
            422,
            lambda: c.post("/runs/base/decisions", json={"configuration": "E/dense", "threshold": 0.4, "note": "a\rb"}),
        )
        refused(
            server,
            "gate of baseline 'base\\x00'",
            404,
            lambda: c.post("/gate", json={"baseline": "base\x00", "candidate": "cand"}),
        )
        refused(
            server,
            "deployment at decision 'ab\\ncd'",
            422,
            lambda: c.put("/deployments/production", json={"decision_id": "ab\ncd"}),
        )
        corpus = server["folder"] / "corpus"
        corpus.mkdir(exist_ok=True)
        refused(
            server,
            "an evaluation whose corpus path holds NUL",
            422,
            lambda: c.post("/evaluations", json={"corpus": f"{corpus}\x00/etc", "questions": "questions.jsonl"}),
            detail="U+0000",
        )


# -- numbers in their ranges ------------------------------------------------------------------------


def test_a_rate_below_one_in_a_million_is_422_naming_the_field(server):
    with api(server["url"], server["keys"]["all"]) as c:
        for field in ("max_bluff_rate", "max_lost_rate"):
            for value in ("1e-320", "5e-324", "9.99e-7"):
                refused(
                    server,
                    f"claim ?{field}={value}",
                    422,
                    lambda field=field, value=value: c.get("/runs/base/claim", params={field: value}),
                    detail="[1e-06, 1)",
                )
                refused(
                    server,
                    f"decision with {field} {value}",
                    422,
                    lambda field=field, value=value: c.post(
                        "/runs/base/decisions",
                        content=f'{{"configuration": "E/dense", "threshold": 0.4, "{field}": {value}}}',
                        headers=JSON,
                    ),
                    detail=f"body.{field}",
                )
        refused(
            server,
            "gate with alpha 5e-324",
            422,
            lambda: c.post(
                "/gate", content=b'{"baseline": "base", "candidate": "cand", "alpha": 5e-324}', headers=JSON
            ),
        )
        smallest = c.get("/runs/base/claim", params={"max_bluff_rate": "1e-6", "configuration": "E/dense"})
        check(
            "api: claim ?max_bluff_rate=1e-6 (the smallest taken)",
            "200",
            str(smallest.status_code),
            smallest.text[:300],
        )


def test_a_metric_beyond_the_runs_depth_is_422(server):
    with api(server["url"], server["keys"]["all"]) as c:
        for metric, why in (("hit@999999", "10,000"), ("hit@21", "top 20"), ("recall@0", "k an integer >= 1")):
            refused(
                server,
                f"gate --metric {metric}",
                422,
                lambda metric=metric: c.post("/gate", json={"baseline": "base", "candidate": "cand", "metric": metric}),
                detail=why,
            )
        deepest = c.post("/gate", json={"baseline": "base", "candidate": "cand", "metric": "hit@20"})
        check("api: gate --metric hit@20 (the run's depth)", "200", str(deepest.status_code), deepest.text[:300])


# -- who is calling, before the body ----------------------------------------------------------------


def test_two_authorization_headers_are_401_whichever_comes_first(server):
    good, other = server["keys"]["all"], server["keys"]["other"]
    pairs = {
        "a good key, then a bad one": (good, "evk_" + "x" * 43),
        "a bad key, then a good one": ("evk_" + "x" * 43, good),
        "two good keys": (good, other),
    }
    for case, (first, second) in pairs.items():
        headers = [("Authorization", f"Bearer {first}"), ("Authorization", f"Bearer {second}")]
        with httpx.Client(base_url=server["url"] + "/api/v1", timeout=60) as c:
            refused(
                server,
                f"two Authorization headers, {case} (PUT a deployment)",
                401,
                lambda headers=headers: c.put(
                    "/deployments/canary", json={"decision_id": server["decision"]}, headers=headers
                ),
                detail="2 Authorization headers",
            )
            etag = c.get("/deployments/production", headers={"Authorization": f"Bearer {good}"}).headers["etag"]
            refused(
                server,
                f"two Authorization headers, {case} (a revalidation)",
                401,
                lambda etag=etag, headers=headers: c.get(
                    "/deployments/production", headers=[*headers, ("If-None-Match", etag)]
                ),
            )


KEYLESS = [
    ("POST /gate, a body that is not JSON", "post", "/gate", b"not json {", "application/json"),
    (
        "POST /runs/base/decisions, a form body",
        "post",
        "/runs/base/decisions",
        b"a=1&b=2",
        "application/x-www-form-urlencoded",
    ),
    (
        "PUT /deployments/production, JSON nested 100,000 deep",
        "put",
        "/deployments/production",
        b"[" * 100_000,
        "application/json",
    ),
    (
        "POST /evaluations, 2 MB over the body limit",
        "post",
        "/evaluations",
        b"{" + b" " * (2 * 1024 * 1024),
        "application/json",
    ),
    ("POST /runs, not a zip", "post", "/runs", b"not a zip", "text/plain"),
]


@pytest.mark.parametrize(("case", "method", "path", "body", "kind"), KEYLESS, ids=[c[0] for c in KEYLESS])
def test_a_keyless_request_is_401_before_its_body_is_read(server, case, method, path, body, kind):
    with api(server["url"], None) as c:
        refused(
            server,
            f"no key: {case}",
            401,
            lambda: c.request(method.upper(), path, content=body, headers={"Content-Type": kind}),
        )


NOT_JSON = [
    ("text/plain", "text/plain"),
    ("a form", "application/x-www-form-urlencoded"),
    ("multipart", "multipart/form-data; boundary=x"),
    ("XML", "application/xml"),
]


@pytest.mark.parametrize(("case", "kind"), NOT_JSON, ids=[c for c, _ in NOT_JSON])
def test_a_json_route_answers_415_to_another_media_type(server, case, kind):
    body = json.dumps({"configuration": "E/dense", "threshold": 0.4}).encode()
    with api(server["url"], server["keys"]["all"]) as c:
        refused(
            server,
            f"a decision sent as {case}",
            415,
            lambda: c.post("/runs/base/decisions", content=body, headers={"Content-Type": kind}),
        )
        refused(
            server,
            f"a deployment sent as {case}",
            415,
            lambda: c.put("/deployments/production", content=b'{"decision_id": "x"}', headers={"Content-Type": kind}),
        )
    with api(server["url"], server["keys"]["all"]) as c:
        sent = c.post(
            "/gate",
            content=b'{"baseline": "base", "candidate": "base"}',
            headers={"Content-Type": "application/json; charset=utf-8"},
        )
        check("api: a gate sent as application/json; charset=utf-8", "200", str(sent.status_code), sent.text[:300])


# -- If-Match: no lost update -------------------------------------------------------------------


def test_if_match_makes_a_lost_update_impossible(server):
    with api(server["url"], server["keys"]["all"]) as c:
        first = c.post("/runs/base/decisions", json={"configuration": "E/dense", "threshold": 0.41}).json()[
            "decision_id"
        ]
        second = c.post("/runs/base/decisions", json={"configuration": "E/dense", "threshold": 0.42}).json()[
            "decision_id"
        ]
        made = c.put("/deployments/ifmatch", json={"decision_id": server["decision"]})
        assert made.status_code == 201, made.text
        seen_by_both = made.headers["etag"]
        ana = c.put("/deployments/ifmatch", json={"decision_id": first}, headers={"If-Match": seen_by_both})
        bob = c.put("/deployments/ifmatch", json={"decision_id": second}, headers={"If-Match": seen_by_both})
        now = c.get("/deployments/ifmatch").json()
        observed = f"first {ana.status_code}, second {seen(bob)}; "
        observed += f"the deployment at the first's decision, version {now['version']}"
        expected = "first 200, second 412 problem; the deployment at the first's decision, version 2"
        if now["decision_id"] != first:
            observed = observed.replace("the first's", "another")
        check("api: two moves from the same ETag (If-Match)", expected, observed, bob.text[:300])
        refused(
            server,
            "If-Match with a weak tag",
            412,
            lambda: c.put(
                "/deployments/ifmatch", json={"decision_id": second}, headers={"If-Match": "W/" + ana.headers["etag"]}
            ),
        )
        refused(
            server,
            "If-Match: * on a deployment that does not exist",
            412,
            lambda: c.put("/deployments/nothere", json={"decision_id": second}, headers={"If-Match": "*"}),
        )
        refused(
            server,
            "If-None-Match: * on a deployment that exists",
            412,
            lambda: c.put("/deployments/ifmatch", json={"decision_id": second}, headers={"If-None-Match": "*"}),
        )
        refused(
            server,
            "If-None-Match naming a tag on PUT",
            422,
            lambda: c.put(
                "/deployments/ifmatch", json={"decision_id": second}, headers={"If-None-Match": ana.headers["etag"]}
            ),
        )
        moved = c.put(
            "/deployments/ifmatch", json={"decision_id": second}, headers={"If-Match": f'"v0-x", {ana.headers["etag"]}'}
        )
        check("api: If-Match naming the current ETag among others", "200", str(moved.status_code), moved.text[:300])


# -- no redirect, no key echoed, no traceback ----------------------------------------------------


def test_a_trailing_slash_is_a_404_not_a_redirect_to_the_host_header(server):
    with api(server["url"], server["keys"]["all"], Host="evil.example") as c:
        for method, path in (("GET", "/runs/"), ("GET", "/deployments/"), ("POST", "/gate/"), ("GET", "/runs/base/")):
            response = c.request(method, path, json={"baseline": "base", "candidate": "base"})
            where = response.headers.get("location")
            check(
                f"api: {method} {path} (Host: evil.example)",
                "404 problem, no Location",
                f"{seen(response)}, {'Location ' + where if where else 'no Location'}",
            )


def test_a_key_sent_as_a_reference_is_not_echoed(server):
    other = server["keys"]["other"]
    with api(server["url"], server["keys"]["all"]) as c:
        for name, send in (
            ("a key as a run ref", lambda: c.get(f"/runs/{other}")),
            ("a key as a run ref (claim)", lambda: c.get(f"/runs/{other}/claim")),
            ("a key as a deployment name", lambda: c.get(f"/deployments/{other}")),
            ("a key as the gate's baseline", lambda: c.post("/gate", json={"baseline": other, "candidate": "base"})),
            ("a key as a configuration", lambda: c.get("/runs/base/claim", params={"configuration": other})),
        ):
            body = refused(server, name, 422 if "configuration" in name else 404, send)
            assert "evk_(redacted)" in body.get("detail", "") or "evk_" not in body.get("detail", ""), body


def test_an_unforeseen_error_is_a_500_problem_and_one_line_in_the_log(server):
    """A damaged store (a deployment's claim that is no JSON, written behind the server's back)
    is what no route foresees: the answer is still a problem document, the log one line."""
    from evalcore.store import Store

    with api(server["url"], server["keys"]["all"]) as c:
        assert c.put("/deployments/damaged", json={"decision_id": server["decision"]}).status_code == 201
    with Store(server["store"]).connect() as con:  # retried while the server holds the file
        con.execute("UPDATE deployments SET claim = '{not json' WHERE name = 'damaged'")
    before = server["log"].read_text(errors="replace").count("\n")
    with api(server["url"], server["keys"]["reader"]) as c:
        response = c.get("/deployments/damaged")
    time.sleep(0.5)
    lines = server["log"].read_text(errors="replace").splitlines()[before:]
    said = [line for line in lines if line.strip()]
    observed = f"{seen(response)}; {len(said)} line(s) in the log"
    check(
        "api: an unforeseen error (a damaged row)",
        "500 problem; 1 line(s) in the log",
        observed,
        "\n".join(said)[-2000:],
    )
    assert "unexpected JSONDecodeError" in said[0] and "Traceback" not in "\n".join(said)


# -- slowed down: failed authentications per address, the service's rate ----------------------------


@pytest.fixture(scope="module")
def throttled(tmp_path_factory) -> Iterator[dict[str, Any]]:
    """A server whose address may fail 5 authentications at once, then one every 2 s, and whose
    service takes 3 requests a second, bursts of 30, from every caller together."""
    folder = tmp_path_factory.mktemp("trust-api-throttle")
    store = make_store(tmp_path_factory, folder / "evalcore.duckdb")
    keys = {"a": make_key(store, "a", "read"), "b": make_key(store, "b", "read")}
    env = {"EVALCORE_API_AUTH_FAILURES": "0.5/5", "EVALCORE_API_GLOBAL_RATE": "3/30"}
    with api_server(store, folder / "server.log", env) as url:
        yield {"url": url, "store": store, "keys": keys, "folder": folder}


def test_failed_authentications_from_one_address_are_slowed_down(throttled):
    time.sleep(6)  # the service's bucket holds 18 tokens again, whatever ran before
    with api(throttled["url"], None) as c:
        codes = []
        first_429 = None
        for i in range(12):
            answer = c.get("/runs", headers={"Authorization": f"Bearer evk_guess{i:040d}"})
            codes.append(answer.status_code)
            if answer.status_code == 429 and first_429 is None:
                first_429 = answer
        # a burst of 5; a token comes back every 2 s, so a slow machine may see a sixth 401
        n = codes.index(429) if 429 in codes else len(codes)
        shape = f"{'at least 5' if n >= 5 else n} 401, then only {sorted(set(codes[n:]))}"
        check("api: 12 wrong keys in a row from one address", "at least 5 401, then only [429]", shape, codes)
        assert first_429 is not None and "EVALCORE_API_AUTH_FAILURES" in first_429.json()["detail"]
        retry = int(first_429.headers["retry-after"])
        check(
            "api: the 429's Retry-After (a token every 2 s)",
            "1 or 2 s",
            "1 or 2 s" if retry in (1, 2) else f"{retry} s",
        )
        good = c.get("/runs", headers={"Authorization": f"Bearer {throttled['keys']['a']}"})
        check("api: a good key from that address at once", "429 problem", seen(good))
        time.sleep(2.2)
        good = c.get("/runs", headers={"Authorization": f"Bearer {throttled['keys']['a']}"})
        check("api: a good key from that address after Retry-After", "200", str(good.status_code), good.text[:300])
        check("api: /health from that address", "200", str(c.get("/health").status_code))


def test_the_service_has_a_rate_beside_each_keys(throttled):
    from concurrent.futures import ThreadPoolExecutor

    time.sleep(10)  # the service's bucket is full again (30 tokens), whatever ran before
    clients = [api(throttled["url"], throttled["keys"][k]) for k in ("a", "b")]
    with ThreadPoolExecutor(8) as pool:
        answers = list(pool.map(lambda i: clients[i % 2].get("/deployments/-x"), range(100)))
    limited = [a for a in answers if a.status_code == 429]
    global_ones = [a for a in limited if "EVALCORE_API_GLOBAL_RATE" in a.json()["detail"]]
    others = sorted({a.status_code for a in answers} - {429})
    observed = f"{'some' if global_ones else 'no'} 429 naming EVALCORE_API_GLOBAL_RATE; others {others}"
    check(
        "api: 100 requests of two keys within their own rate, over the service's (3 a second, bursts of 30)",
        "some 429 naming EVALCORE_API_GLOBAL_RATE; others [422]",
        observed,
    )
    assert all(a.headers.get("retry-after") for a in limited)
    for client in clients:
        client.close()
