"""The reliability suite, issue 33: hostile requests to the HTTP API. One table row per case, like
the other trust nets: a real server (``evalcore dashboard`` as a process) over a store made by the
real CLI, real HTTP through httpx; every case ends with a problem document (RFC 9457) of the
expected status, no traceback, no key in the answer or the server's log, and nothing stored.
"""

from __future__ import annotations

import json
import secrets
import shutil
import time
from collections.abc import Iterator
from pathlib import Path

import duckdb
import httpx
import pytest
from api_serving import ALL_SCOPES, api_server, cli, make_key, make_store
from reliability_table import record
from zips import deflated_zeros, lying_zip, make_zip

NDJSON = {"Content-Type": "application/x-ndjson"}
ZIP = {"Content-Type": "application/zip"}
JSON = {"Content-Type": "application/json"}


@pytest.fixture(scope="module")
def server(tmp_path_factory) -> Iterator[dict]:
    """A server over a store with runs ``base`` and ``cand``, a decision and a deployment
    ``production`` pointing at it, keys of several scopes, and small limits for the run file
    (1 MB) and the body deadline (3 s)."""
    folder = tmp_path_factory.mktemp("trust-api")
    store = make_store(tmp_path_factory, folder / "evalcore.duckdb")
    keys = {
        "all": make_key(store, "all", ALL_SCOPES),
        "reader": make_key(store, "reader", "read"),
        "traffic": make_key(store, "prod", "read,traffic:write"),
        "revoked": make_key(store, "gone", ALL_SCOPES),
    }
    assert cli(store, "keys", "revoke", "gone").returncode == 0
    env = {"EVALCORE_API_MAX_RUN_BYTES": str(1024 * 1024), "EVALCORE_API_BODY_SECONDS": "3"}
    log = folder / "server.log"
    with api_server(store, log, env) as url:
        c = httpx.Client(base_url=url + "/api/v1", headers={"Authorization": f"Bearer {keys['all']}"}, timeout=60)
        made = c.post("/runs/base/decisions", json={"configuration": "E/dense", "threshold": 0.5})
        assert made.status_code == 201, made.text
        decision = made.json()["decision_id"]
        assert c.put("/deployments/production", json={"decision_id": decision}).status_code == 201
        yield {"url": url, "store": store, "keys": keys, "decision": decision, "log": log, "folder": folder}
    text = log.read_text(errors="replace")
    assert "Traceback" not in text, text[-3000:]
    for key in keys.values():
        assert key not in text


def counts(store: Path) -> dict[str, int]:
    """Rows of every table a request could write (read while the server runs: read only).
    The keys' last use (``api_keys.last_used_at``) is written beside requests: not counted."""
    from evalcore.store import Store

    tables = ("runs", "decisions", "deployments", "deployment_moves", "traffic_posted", "jobs", "api_keys")
    with Store(store).read() as con:  # retried while the server holds the file for a write
        return {t: con.execute(f"SELECT count(*) FROM {t}").fetchone()[0] for t in tables}


def observed(response: httpx.Response) -> str:
    """What a row records: the status, and whether the answer is a problem document."""
    kind = response.headers.get("content-type", "")
    if not kind.startswith("application/problem+json"):
        return f"{response.status_code} {kind or 'no type'}"
    body = response.json()
    assert body["status"] == response.status_code and body["title"] and body["detail"] and body["type"]
    assert "Traceback" not in response.text
    return f"{response.status_code} problem"


def case(server: dict, name: str, expected: int, send, *, detail: str | None = None) -> dict:
    """Send a hostile request; the row holds when it is a problem of ``expected`` and nothing
    was stored. Returns the problem document."""
    before = counts(server["store"])
    response = send()
    seen = observed(response)
    after = counts(server["store"])
    if after != before:
        seen += f"; stored {', '.join(t for t in after if after[t] != before[t])}"
    want = f"{expected} problem"
    record(f"api: {name}", f"{want}; nothing stored", f"{seen}; nothing stored" if after == before else seen)
    assert seen == want, (name, response.status_code, response.text[:500])
    body = response.json()
    for key in server["keys"].values():
        assert key not in response.text
    assert str(server["store"]) not in response.text and str(server["folder"]) not in response.text
    if detail is not None:
        assert detail in body["detail"], body
    return body


def client(server: dict, key: str | None = "all", **headers: str) -> httpx.Client:
    if key is not None:
        headers.setdefault("Authorization", f"Bearer {server['keys'].get(key, key)}")
    return httpx.Client(base_url=server["url"] + "/api/v1", headers=headers, timeout=60)


def chunks(total: int, size: int = 64 * 1024) -> Iterator[bytes]:
    """A chunked body of ``total`` bytes (the server must stop reading long before)."""
    block = b"x" * size
    for _ in range(total // size):
        yield block


def test_an_oversized_run_file_is_refused_before_it_is_read(server):
    body = case(
        server,
        "run file over the cap (Content-Length)",
        413,
        lambda: client(server).post("/runs", content=b"PK" + bytes(2 * 1024 * 1024), headers=ZIP),
        detail="1,048,576",
    )
    assert "EVALCORE_API_MAX_RUN_BYTES" in body["detail"]


def test_an_endless_chunked_body_is_cut_at_its_limit(server):
    case(
        server,
        "endless chunked run file",
        413,
        lambda: client(server).post("/runs", content=chunks(1024 * 1024 * 1024), headers=ZIP),
        detail="1,048,576",
    )
    case(
        server,
        "endless chunked traffic post",
        413,
        lambda: client(server, "traffic").post(
            "/deployments/production/traffic", content=chunks(1 << 30), headers=NDJSON
        ),
    )
    case(
        server,
        "endless chunked JSON body",
        413,
        lambda: client(server).post("/gate", content=chunks(1 << 30), headers=JSON),
    )


def test_a_body_that_trickles_in_is_cut_at_the_deadline(server):
    def slow() -> Iterator[bytes]:
        for _ in range(20):
            time.sleep(0.5)
            yield b'{"id": "slow", "query": "pip", "time": 0}\n'

    case(
        server,
        "a body sent a line every half second",
        408,
        lambda: client(server, "traffic").post("/deployments/production/traffic", content=slow(), headers=NDJSON),
        detail="EVALCORE_API_BODY_SECONDS",
    )


def test_deep_json_is_a_problem_not_a_crash(server):
    deep = b"[" * 200_000 + b"]" * 200_000
    case(
        server, "JSON nested 200,000 deep (gate)", 400, lambda: client(server).post("/gate", content=deep, headers=JSON)
    )
    nested = b'{"decision_id": ' + b"[" * 100_000 + b"]" * 100_000 + b"}"
    case(
        server,
        "JSON nested 100,000 deep (deployment)",
        400,
        lambda: client(server).put("/deployments/production", content=nested, headers=JSON),
    )
    line = b'{"id": "deep", "query": ' + b"[" * 100_000 + b"]" * 100_000 + b', "time": 0}'
    response = client(server, "traffic").post("/deployments/production/traffic", content=line, headers=NDJSON)
    result = response.json()["results"][0]
    record(
        "api: an NDJSON line nested 100,000 deep",
        "207, that line a problem",
        f"{response.status_code}, that line a {result['status']}",
    )
    assert response.status_code == 207 and result["status"] == "problem"


def test_a_million_and_one_line_ndjson_is_413_naming_the_limit(server):
    lines = b'{"id": "x", "query": "q", "time": 0}\n'

    def million() -> Iterator[bytes]:
        block = b"{}\n" * 10_000
        for _ in range(100):
            yield block
        yield lines

    body = case(
        server,
        "1,000,001-line NDJSON (chunked)",
        413,
        lambda: client(server, "traffic").post("/deployments/production/traffic", content=million(), headers=NDJSON),
        detail="1,000 lines",
    )
    assert "split" in body["detail"]


BAD_AUTH = [
    ("no Authorization header", None),
    ("Bearer and nothing", "Bearer"),
    ("Bearer evk_ and nothing", "Bearer evk_"),
    ("an unknown key", "Bearer evk_" + secrets.token_urlsafe(32)),
    ("a key without the evk_ prefix", "Bearer " + secrets.token_urlsafe(32)),
    ("Basic credentials", "Basic dXNlcjpwYXNzd29yZA=="),
    ("a 10,000-character key", "Bearer evk_" + "a" * 10_000),
    ("a key with a space inside", "Bearer evk_abc def"),
    ("a key in a second scheme", "Token evk_abc"),
]


@pytest.mark.parametrize(("name", "header"), BAD_AUTH, ids=[n for n, _ in BAD_AUTH])
def test_a_bad_key_is_401_and_writes_nothing(server, name, header):
    headers = {} if header is None else {"Authorization": header}
    with httpx.Client(base_url=server["url"] + "/api/v1", headers=headers, timeout=60) as c:
        body = case(
            server,
            f"{name} (PUT a deployment)",
            401,
            lambda: c.put("/deployments/other", json={"decision_id": server["decision"]}),
        )
    assert "evk_" not in body["detail"] or body["detail"].count("evk_") == 1  # the format, never a key


def test_a_revoked_key_is_401(server):
    case(
        server,
        "a revoked key (traffic post)",
        401,
        lambda: client(server, "revoked").post(
            "/deployments/production/traffic", content=b'{"id":"r","query":"q","time":0}', headers=NDJSON
        ),
    )
    case(
        server,
        "a revoked key (GET a deployment)",
        401,
        lambda: client(server, "revoked").get("/deployments/production"),
    )


OTHER_SCOPE = [
    ("runs:write with read", "reader", "post", "/runs", {"content": b"PK", "headers": ZIP}),
    ("deploy with read", "reader", "put", "/deployments/production", {"json": {"decision_id": "x"}}),
    (
        "deploy with read (decision)",
        "reader",
        "post",
        "/runs/base/decisions",
        {"json": {"configuration": "E/dense", "threshold": 0.4}},
    ),
    (
        "traffic:write with read",
        "reader",
        "post",
        "/deployments/production/traffic",
        {"content": b'{"id":"s","query":"q","time":0}', "headers": NDJSON},
    ),
    ("evaluate with read,traffic:write", "traffic", "post", "/evaluations", {"json": {"demo": True}}),
    ("gate with read,traffic:write", "traffic", "post", "/gate", {"json": {"baseline": "base", "candidate": "cand"}}),
    ("deploy with read,traffic:write", "traffic", "put", "/deployments/production", {"json": {"decision_id": "x"}}),
]


@pytest.mark.parametrize(("name", "key", "method", "path", "kwargs"), OTHER_SCOPE, ids=[c[0] for c in OTHER_SCOPE])
def test_a_key_of_another_scope_is_403(server, name, key, method, path, kwargs):
    body = case(
        server, f"a key of another scope: {name}", 403, lambda: getattr(client(server, key), method)(path, **kwargs)
    )
    assert "scope" in body["detail"]


def _run_files(server: dict) -> list[tuple[str, bytes]]:
    exported = server["folder"] / "base.evalcore.zip"
    if not exported.exists():
        assert cli(server["store"], "export-run", "base", "-o", str(exported)).returncode == 0
    good = exported.read_bytes()
    import io
    import zipfile

    with zipfile.ZipFile(io.BytesIO(good)) as zf:
        manifest = json.loads(zf.read("manifest.json"))
        members = {n: zf.read(n) for n in zf.namelist()}
    newer = dict(members, **{"manifest.json": json.dumps({**manifest, "format_version": 99}).encode()})
    other_id = dict(members, **{"manifest.json": json.dumps({**manifest, "run_id": "20990101-000000-abcdef"}).encode()})
    return [
        ("not a zip", b"this is not a run file"),
        ("an empty body", b""),
        ("a truncated run file", good[: len(good) // 2]),
        ("a zip without a manifest", make_zip({"tables/runs.parquet": b"x"})),
        ("a run file of a newer format", make_zip(newer)),
        ("a manifest naming another run id than its tables", make_zip(other_id)),
        ("a zip bomb (lying sizes)", lying_zip(["manifest.json"], deflated_zeros(50 * 1024 * 1024))[: 1024 * 1024 - 1]),
        ("symbolic links to /etc/passwd", make_zip({"manifest.json": b"{}"}, symlinks=("tables/runs.parquet",))),
    ]


def test_a_run_file_load_run_refuses_is_422_and_stores_nothing(server):
    for name, data in _run_files(server):
        body = case(
            server, f"run file: {name}", 422, lambda data=data: client(server).post("/runs", content=data, headers=ZIP)
        )
        assert "upload" in body["detail"] or "run file" in body["detail"] or "manifest" in body["detail"], body


def test_a_deployment_pointing_at_a_deleted_or_foreign_decision_is_422(server):
    with client(server) as c:
        doomed = c.post("/runs/base/decisions", json={"configuration": "E/dense", "threshold": 0.3}).json()[
            "decision_id"
        ]
    # a decision deleted from the store behind the server's back (by another process)
    from evalcore.store import Store

    with Store(server["store"]).connect() as con:  # retried while the server holds the file
        con.execute("DELETE FROM decisions WHERE decision_id = ?", [doomed])
    case(
        server,
        "deployment at a deleted decision",
        422,
        lambda: client(server).put("/deployments/production", json={"decision_id": doomed}),
        detail=doomed,
    )
    # a decision saved in another store
    foreign_store = shutil.copy(server["store"], server["folder"] / "foreign.duckdb")
    con = duckdb.connect(str(foreign_store))
    try:
        foreign = "f0f0f0f0f0f0"
        con.execute("UPDATE decisions SET decision_id = ? WHERE decision_id = ?", [foreign, server["decision"]])
    finally:
        con.close()
    case(
        server,
        "deployment at a decision of another store",
        422,
        lambda: client(server).put("/deployments/production", json={"decision_id": foreign}),
        detail=foreign,
    )
    case(
        server,
        "a new deployment at a deleted decision",
        422,
        lambda: client(server).put("/deployments/canary", json={"decision_id": doomed}),
    )
    with client(server, "reader") as c:
        now = c.get("/deployments/production").json()
    assert now["decision_id"] == server["decision"] and now["version"] == 1
