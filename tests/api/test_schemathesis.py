"""Schemathesis over every route of ``/api/v1``: requests generated from the OpenAPI document that a
real ``evalcore dashboard`` process serves, sent to it over a real socket (tests/api/schema_net.py
says what each answer must be). The run is bounded (:data:`EXAMPLES` and the rest: the same
requests every run, derandomized), so that it fits the suite; benchmarks/schemathesis_long.py
runs the same net with many more, seeded anew each night.

The three parts run once, in order, in one module fixture; each test asserts one of them:

- every operation with a valid key (every scope), valid and invalid requests, then again with its
  path parameters naming a run, a deployment and an evaluation that exist: no 5xx, every error a
  problem document, every answer documented (status, media type, headers, a schema that says
  something, the body matching it);
- every operation with invalid keys (none, unknown, revoked, another scheme, an empty bearer, a
  valid key with a character more): 401 as a problem document everywhere but /health, and the
  document itself needs no key;
- sequences of writes with generated names and bodies: a write answered 2xx is read back, one
  answered 4xx or 5xx changed nothing a read shows.

:data:`KNOWN_OPEN` lists findings that stand today because a change to the API has not landed yet,
each with its reason (an operation of ``*`` stands for any operation); a listed finding that no
longer shows fails the net until it is taken off the list. Each part adds a row to the reliability
table (tests/conftest.py prints it) with the number of requests it sent.

A last test points the net at a small real server that breaks each rule (a 500 in plain text, an
error that is not a problem document, a body of the wrong shape, a route that ignores the key),
so that a net that stopped catching is seen to stop.
"""

from __future__ import annotations

import importlib
import json
import re
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import quote

import httpx
import jsonschema
import pytest
import schemathesis
from api_serving import ALL_SCOPES, api_server, cli, make_key, make_store
from conftest import ROOT
from prometheus_client.parser import text_string_to_metric_families

from api.schema_net import PARTS, Finding, Net, Part, no_route_serves, run_parts, served_net, server_env

#: generated requests a mode (valid, invalid) and operation, with the valid key: the suite's bound
EXAMPLES = 5
#: of them again with the path parameters naming things that exist
ANCHORED = 2
#: requests an operation with invalid keys
REFUSED_EXAMPLES = 2
#: sequences of writes, and writes a sequence
STATEFUL_RUNS, STATEFUL_STEPS = 3, 6

#: part -> finding -> why it stands today; strict: a listed finding that is no longer found fails.
KNOWN_OPEN: dict[str, dict[Finding, str]] = {
    "valid key": {},
    "invalid keys": {},
    "stateful": {},
}


def _listed(finding: Finding, listed: dict[Finding, str]) -> Finding | None:
    """The row of ``listed`` that ``finding`` falls under (its own, or its check and status under ``*``)."""
    for row in (finding, Finding("*", finding.check, finding.status)):
        if row in listed:
            return row
    return None


def _record(case: str, expected: str, observed: str) -> None:
    """A row of the reliability table (tests/reliability/reliability_table.py), which
    tests/conftest.py prints at the end of the run."""
    folder = str(ROOT / "tests" / "reliability")
    if folder not in sys.path:
        sys.path.append(folder)
    importlib.import_module("reliability_table").record(case, expected, observed)


@pytest.fixture(scope="module")
def ran(tmp_path_factory):
    """The three parts of the net against one server over a copy of the API tests' store:
    {part: :class:`Part`}, and the document as a keyless caller gets it, the server's log, the
    stateful part's writes and the number of requests in all."""
    folder = tmp_path_factory.mktemp("schemathesis")
    store = make_store(tmp_path_factory, folder / "evalcore.duckdb")
    with served_net(store, folder) as net:
        parts: dict[str, object] = dict(
            run_parts(net, EXAMPLES, ANCHORED, REFUSED_EXAMPLES, STATEFUL_RUNS, STATEFUL_STEPS)
        )
        with httpx.Client(base_url=net.base, timeout=60) as c:
            parts["document"] = c.get("/openapi.json", headers={"Authorization": "Bearer evk_nope"})
        parts["writes"] = dict(net.writes)
        parts["requests"] = net.requests
    parts["log"] = (folder / "server.log").read_text(errors="replace")
    return parts


def _held(ran, part: str) -> None:
    done: Part = ran[part]
    listed = KNOWN_OPEN[part]
    rows = {f: _listed(f, listed) for f in done.found}
    new = sorted(f for f, row in rows.items() if row is None)
    fixed = sorted(str(row) for row in listed if row not in rows.values())
    expected = f"no new failure, {len(listed)} known open"
    observed = f"{f'{len(new)} new failures' if new else 'no new failure'}, {len(listed) - len(fixed)} known open"
    _record(f"schemathesis, {part}: every operation ({done.requests} requests)", expected, observed)
    assert done.requests > 0
    assert not new, f"{len(new)} new findings in {done.requests} requests:\n" + "\n".join(done.report)
    assert not fixed, f"KNOWN_OPEN rows that no longer show (take them off the list): {fixed}"


def test_every_route_with_a_valid_key_answers_as_documented_and_never_5xx(ran):
    _held(ran, "valid key")


def test_every_route_but_health_refuses_an_invalid_key_with_401(ran):
    _held(ran, "invalid keys")
    document = ran["document"]
    assert document.status_code == 200 and document.json()["openapi"].startswith("3.")


def test_a_write_answered_2xx_is_read_back_and_one_refused_changed_nothing(ran):
    _held(ran, "stateful")
    writes = ran["writes"]  # the property was put to the test: writes of both kinds happened
    for write in ("PUT /deployments/{name} 2xx", "PUT /deployments/{name} refused", "POST /runs/{ref}/decisions 2xx"):
        assert writes.get(write), (write, writes)


def test_the_server_logged_no_traceback_and_nothing_unexpected(ran):
    open_5xx = [str(f) for part in PARTS for f in ran[part].found if f.status >= 500 and _listed(f, KNOWN_OPEN[part])]
    log = ran["log"]
    unexpected = re.findall(r"unexpected \w+ on [A-Z]+ .*", log)
    if open_5xx and ("Traceback" in log or unexpected):
        pytest.xfail(f"known 5xx findings still open: {open_5xx}")
    assert "Traceback" not in log, log[-3000:]
    assert not unexpected, unexpected[:20]


#: the document of :class:`_Broken`: one keyed operation whose answer is an object with a number
_BROKEN_DOCUMENT = {
    "openapi": "3.1.0",
    "info": {"title": "broken", "version": "1"},
    "paths": {
        "/things/{name}": {
            "get": {
                "parameters": [{"name": "name", "in": "path", "required": True, "schema": {"type": "string"}}],
                "security": [{"key": []}],
                "responses": {
                    "200": {
                        "description": "a thing",
                        "content": {
                            "application/json": {
                                "schema": {
                                    "type": "object",
                                    "required": ["size"],
                                    "properties": {"size": {"type": "integer"}},
                                }
                            }
                        },
                    },
                    "404": {"description": "no such thing"},
                },
            }
        }
    },
    "components": {"securitySchemes": {"key": {"type": "http", "scheme": "bearer"}}},
}


class _Broken(BaseHTTPRequestHandler):
    """A server that breaks each rule of the net: it ignores the key, answers a name with a line
    break 500 in plain text, a name with a digit a body of the wrong shape, and others 404 as
    plain JSON (not a problem document)."""

    def log_message(self, *args) -> None:
        pass

    def _send(self, status: int, kind: str, body: bytes) -> None:
        self.send_response(status)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self) -> None:
        if self.path.endswith("/openapi.json"):
            self._send(200, "application/json", json.dumps(_BROKEN_DOCUMENT).encode())
        elif "%0A" in self.path or "%0D" in self.path:
            self._send(500, "text/plain", b"Internal Server Error")
        elif any(c.isdigit() for c in self.path.rsplit("/", 1)[-1]):
            self._send(200, "application/json", b'{"size": "large"}')
        else:
            self._send(404, "application/json", b'{"detail": "Not Found"}')


def test_the_net_catches_a_server_that_breaks_each_rule():
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Broken)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        net = Net(f"http://127.0.0.1:{server.server_address[1]}", "evk_" + "k" * 43)
        net.stateless(10)
        net.refused([None, "Bearer evk_nope"], 5)
    finally:
        server.shutdown()
        server.server_close()
    found = {(f.check, f.status) for f in net.found}
    label = "GET /things/{name}"
    assert {f.operation for f in net.found} == {label}
    for check, status in [
        ("not_a_server_error", 500),
        ("problem_json", 500),
        ("problem_json", 404),
        ("response_schema_conformance", 200),
        ("refused_without_key", 200),
    ]:
        assert (check, status) in found, (check, status, sorted(found))
    seen = net.found[Finding(label, "not_a_server_error", 500)]
    assert "%0A" in seen.reproduce or "%0D" in seen.reproduce
    assert net.key not in "\n".join(net.report())
    assert net.requests >= 10


def _path_operation(path: str) -> dict[str, object]:
    names = re.findall(r"\{(\w+)\}", path)
    parameters = [{"name": n, "in": "path", "required": True, "schema": {"type": "string"}} for n in names]
    return {"get": {"parameters": parameters, "responses": {"200": {"description": "ok"}}}}


@pytest.mark.parametrize(
    ("value", "served"),
    [
        ("nightly", True),  # a route takes it: an invalid key must get 401
        ("прод🚀", True),
        ("..", True),  # one segment: /runs/{ref} takes it
        ("x/claim", True),  # a %2F that makes another route's path: that route takes it
        ("../..", False),  # a %2F that makes a path no route takes
        ("a/b/c", False),
        ("line\r\nbreak", False),  # control characters: no route serves them
        ("nul\x00byte", False),
        ("tab\there", False),
    ],
)
def test_a_404_without_a_key_is_taken_only_for_a_path_no_route_serves(value, served):
    document = {
        "openapi": "3.1.0",
        "info": {"title": "routes", "version": "1"},
        "paths": {p: _path_operation(p) for p in ("/runs", "/runs/{ref}", "/runs/{ref}/claim")},
    }
    schema = schemathesis.openapi.from_dict(document)
    base = "http://127.0.0.1:9/api/v1"
    schema.config.update(base_url=base)
    operation = next(r.ok() for r in schema.get_all_operations() if r.ok().path == "/runs/{ref}")
    case = operation.Case(path_parameters={"ref": value})
    url = f"{base}/runs/{quote(value, safe='')}"
    assert no_route_serves(case, url) is not served, (value, url)


def _answer_schema(document: dict, label: str, status: int) -> dict:
    """The schema ``document`` gives the ``status`` answer of ``label`` (its JSON body), with the
    document's components beside it so that its ``$ref`` resolve."""
    method, path = label.split(" ", 1)
    content = document["paths"][path][method.lower()]["responses"][str(status)]["content"]
    return {**content["application/json"]["schema"], "components": document["components"]}


def test_every_2xx_answer_matches_the_schema_the_document_gives_it(tmp_path_factory):
    """The answers the net rarely reaches with generated requests (an upload, the gate, a saved
        decision, a deployment made and moved, traffic, an evaluation queued and cancelled), made for
        real and each checked against its documented schema, which says something (never ``{}``). The
    upload sends a run the store holds already (200), before a decision is saved on it."""
    folder = tmp_path_factory.mktemp("answers")
    store = make_store(tmp_path_factory, folder / "evalcore.duckdb")
    key = make_key(store, "answers", ALL_SCOPES)
    exported = folder / "base.evalcore.zip"
    assert cli(store, "export-run", "base", "-o", str(exported)).returncode == 0
    seen: list[tuple[str, httpx.Response]] = []
    with api_server(store, folder / "server.log", server_env(folder)) as url:
        with httpx.Client(base_url=url + "/api/v1", headers={"Authorization": f"Bearer {key}"}, timeout=60) as c:
            document = c.get("/openapi.json").json()

            def call(label: str, path: str, **options) -> httpx.Response:
                answer = c.request(label.split(" ", 1)[0], path, **options)
                seen.append((label, answer))
                return answer

            call("GET /health", "/health")
            zipped = {"content": exported.read_bytes(), "headers": {"Content-Type": "application/zip"}}
            call("POST /runs", "/runs", **zipped)
            call("GET /runs", "/runs", params={"limit": 1})
            call("GET /runs/{ref}", "/runs/base")
            call("GET /runs/{ref}/claim", "/runs/base/claim")
            decided = call(
                "POST /runs/{ref}/decisions",
                "/runs/base/decisions",
                json={"configuration": "E/dense", "threshold": 0.5},
            )
            decision = {"decision_id": decided.json()["decision_id"]}
            call("PUT /deployments/{name}", "/deployments/answers", json=decision)
            call("PUT /deployments/{name}", "/deployments/answers", json=decision)
            call("GET /deployments/{name}", "/deployments/answers")
            call("GET /deployments", "/deployments")
            line = json.dumps({"id": "q1", "query": "how do I install python", "time": "2026-12-04T10:00:00Z"})
            traffic = {"content": line + "\n", "headers": {"Content-Type": "application/x-ndjson"}}
            call("POST /deployments/{name}/traffic", "/deployments/answers/traffic", **traffic)
            call("GET /deployments/{name}/review", "/deployments/answers/review")
            label = {"labels": [{"line_id": "0123456789ab-a1", "label": "off-topic"}]}
            call("POST /deployments/{name}/labels", "/deployments/answers/labels", json=label)
            call("GET /deployments/{name}/estimate", "/deployments/answers/estimate")
            call("GET /metrics", "/metrics")
            otlp = "/deployments/answers/otlp/v1/traces"  # an empty OTLP export, in JSON: answered {}
            call("POST /deployments/{name}/otlp/v1/traces", otlp, json={"resourceSpans": []})
            call("POST /gate", "/gate", json={"baseline": "base", "candidate": "cand"})
            call("POST /gate", "/gate", json={"baseline": "base", "candidate": "base"})
            started = call("POST /evaluations", "/evaluations", json={"demo": True})
            ident = started.json()["id"]
            call("GET /evaluations/{evaluation_id}", f"/evaluations/{ident}")
            call("POST /evaluations/{evaluation_id}/cancel", f"/evaluations/{ident}/cancel")
    statuses = {}
    for label, answer in seen:
        assert 200 <= answer.status_code < 300, (label, answer.status_code, answer.text[:500])
        if label == "GET /metrics":  # Prometheus's text format, as documented, read by its own parser
            documented = document["paths"]["/metrics"]["get"]["responses"]["200"]["content"]
            assert list(documented) == [answer.headers["content-type"].split(";")[0]], documented
            assert any(f.name == "evalcore_http_requests" for f in text_string_to_metric_families(answer.text))
            statuses.setdefault(label, set()).add(answer.status_code)
            continue
        schema = _answer_schema(document, label, answer.status_code)
        assert {k: v for k, v in schema.items() if k != "components"}, (label, "documented with {}")
        jsonschema.validate(answer.json(), schema)
        statuses.setdefault(label, set()).add(answer.status_code)
    assert statuses["PUT /deployments/{name}"] == {200, 201} and statuses["POST /runs"] == {200}
    assert {label for label, _ in seen} == {f"{m.upper()} {p}" for p, ops in document["paths"].items() for m in ops}
