"""The net over every route of ``/api/v1``, generated from the OpenAPI document the server itself
serves: Schemathesis (``schemathesis.openapi.from_url``) turns each operation's parameters and
body into a Hypothesis strategy, every generated request goes to a real ``evalcore dashboard``
process over a real socket, and every answer is judged. A route is in the net the day it is
declared, because the operations are read from the live document, never listed here.

What each answer must be (:data:`CHECKS`):

- not a 5xx (``not_a_server_error``);
- a status, a media type and headers the document names for the operation
  (``status_code_conformance``, ``content_type_conformance``, ``response_headers_conformance``);
- a body that matches the schema documented for it (``response_schema_conformance``), and a
  documented schema that says something: a 2xx answer with a body whose schema is empty
  (``{}``) is checked against nothing (:func:`answer_described`);
- for every status from 400 on, a problem document: ``application/problem+json`` with
  ``type``, ``title``, ``status`` (the answer's) and ``detail`` (:func:`problem_json`).

Without a valid key (:meth:`Net.refused`) every route but ``/health`` answers 401 with a
problem document, whatever the request holds (:func:`refused_without_key`); a path no route can
serve (a control character in it, or, once its percent-escapes are read, a path that matches no
route of the document: a ``%2F`` in a parameter making ``/runs/../..``) may answer 404 as a problem
document instead, whatever the key: the route is not there for anyone, which reveals nothing.

The stateful part (:meth:`Net.stateful`) checks what a single answer cannot show: a write
answered 2xx is visible to the read that follows it, and a write answered 4xx or 5xx changed
nothing a read can see. The document declares no links, so the property is written by hand as a
Hypothesis state machine whose names and bodies come from the document's own strategies.

Each distinct failure is kept once (:class:`Finding`: operation, check, status) with the first
request that showed it, as an httpx line that reproduces it (the key replaced by ``$KEY``); the
run goes on after a failure, so one run lists everything it found. :attr:`Net.requests` counts
the requests sent. tests/api/test_schemathesis.py runs a bounded net in the suite and
benchmarks/schemathesis_long.py a long one.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlsplit

import httpx
import requests
import schemathesis
from api_serving import ALL_SCOPES, api_server, cli, make_key
from conftest import MINI
from hypothesis import HealthCheck, Phase, given, seed, settings
from hypothesis import strategies as st
from hypothesis.errors import Unsatisfiable
from schemathesis import GenerationMode
from schemathesis.checks import not_a_server_error
from schemathesis.core.failures import FailureGroup
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    response_headers_conformance,
    response_schema_conformance,
    status_code_conformance,
)

PROBLEM = "application/problem+json"
#: routes that take no key (the OpenAPI document itself is not an operation of the document)
UNKEYED = {"GET /health"}
#: seconds one request may take before it counts as a failure of its own
REQUEST_TIMEOUT = 60.0
#: path parameter values every operation that has one is sent, beside the generated ones: line
#: breaks, a NUL, text beyond ASCII, dot segments (each percent-encoded on the wire, as RFC 3986 says)
HOSTILE_PATH = ("line\r\nbreak", "nul\x00byte", "прод🚀", "../..")

# The bodies that are not JSON: a run file (bytes), NDJSON traffic (text) and an OTLP export (bytes).
schemathesis.serializer.alias("application/zip", "application/octet-stream")
schemathesis.serializer.alias(["application/x-ndjson", "application/jsonl"], "text/plain")
schemathesis.serializer.alias("application/x-protobuf", "application/octet-stream")  # an OTLP export


def _header(response: schemathesis.Response, name: str) -> str:
    values = response.headers.get(name.lower()) or []
    return values[0] if values else ""


def problem_json(ctx: Any, response: schemathesis.Response, case: schemathesis.Case) -> None:
    """Every error (status >= 400) is an RFC 9457 problem document: its media type, and
    ``type``, ``title``, ``status`` (the answer's own) and ``detail``; never a traceback."""
    status = response.status_code
    if status < 400:
        return
    kind = _header(response, "content-type").split(";")[0].strip().lower()
    assert kind == PROBLEM, f"{status} answered as {kind or 'no media type'}, not {PROBLEM}"
    try:
        body = json.loads(response.content)
    except ValueError:
        raise AssertionError(f"{status}: the problem document is not JSON") from None
    assert isinstance(body, dict), f"{status}: the problem document is not an object"
    for name in ("type", "title", "detail"):
        assert isinstance(body.get(name), str) and body[name], f"{status}: no {name} in the problem document"
    assert body.get("status") == status, f"{status}: the problem document says status {body.get('status')!r}"
    assert "Traceback" not in response.text, f"{status}: a traceback in the answer"


def _documented(case: schemathesis.Case, status: int) -> dict[str, Any] | None:
    responses = case.operation.definition.raw.get("responses", {})
    for code in (str(status), f"{status // 100}XX", "default"):
        if code in responses:
            found = responses[code]
            return found if isinstance(found, dict) else None
    return None


def answer_described(ctx: Any, response: schemathesis.Response, case: schemathesis.Case) -> None:
    """A 2xx answer with a body has a schema in the document that describes it: an empty schema
    (``{}``, what FastAPI writes for a route that returns a bare response) makes
    ``response_schema_conformance`` pass whatever the body holds."""
    status = response.status_code
    if not 200 <= status < 300 or not response.content:
        return
    documented = _documented(case, status)
    if documented is None:
        return  # an undocumented status: status_code_conformance says so
    kind = _header(response, "content-type").split(";")[0].strip().lower()
    content = documented.get("content") or {}
    schema = (content.get(kind) or {}).get("schema")
    assert schema, f"{status} {kind}: the document gives this answer no schema ({schema!r}): nothing is checked"


def _control(text: str) -> bool:
    return any(ord(c) < 0x20 or ord(c) == 0x7F for c in text)


def no_route_serves(case: schemathesis.Case, url: str) -> bool:
    """Whether ``url`` (where ``case`` was sent) names a path no route can serve: read as the
    server reads it (its percent-escapes decoded, a ``%2F`` a ``/``), it holds a control character
    (CR, LF, NUL, ...), or it matches no path of ``case``'s document (``/runs/../..``)."""
    sent = unquote(urlsplit(url).path)
    if _control(sent):
        return True
    base = urlsplit(str(case.operation.base_url or "")).path.rstrip("/")
    path = sent[len(base) :] if base and sent.startswith(base) else sent
    templates = case.operation.schema.raw_schema.get("paths", {})
    for template in templates:
        pattern = "".join(
            "[^/]+" if part.startswith("{") else re.escape(part) for part in re.split(r"(\{\w+\})", template)
        )
        if re.fullmatch(pattern, path):
            return False
    return True


def refused_without_key(ctx: Any, response: schemathesis.Response, case: schemathesis.Case) -> None:
    """Without a valid key every keyed route answers 401 as a problem document, before it looks
    at anything else the request holds; a route that takes no key answers as it always does. A
    path no route can serve (:func:`no_route_serves`) may answer 404 instead, as a problem
    document: with any key or none, a route that is not there is not there."""
    if case.operation.label in UNKEYED:
        assert response.status_code == 200, f"{case.operation.label} needs no key, answered {response.status_code}"
        return
    if response.status_code == 404 and no_route_serves(case, str(response.request.url)):
        problem_json(ctx, response, case)
        return
    assert response.status_code == 401, f"an invalid key got {response.status_code}, not 401"
    problem_json(ctx, response, case)


CheckFunction = Callable[[Any, schemathesis.Response, schemathesis.Case], Any]
#: what every answer to a request with a valid key must be (see the module docstring)
CHECKS: tuple[CheckFunction, ...] = (
    not_a_server_error,
    status_code_conformance,
    content_type_conformance,
    response_headers_conformance,
    response_schema_conformance,
    answer_described,
    problem_json,
)


@dataclass(frozen=True, order=True)
class Finding:
    """One distinct failure: the operation (``PUT /deployments/{name}``), the check that failed
    (a check's name, ``transport`` for a request that got no answer, or a stateful property),
    and the answer's status (0 without one)."""

    operation: str
    check: str
    status: int

    def __str__(self) -> str:
        return f"{self.operation} | {self.check} | {self.status or 'no answer'}"


@dataclass
class Seen:
    """The first request that showed a :class:`Finding`, and what the check said."""

    finding: Finding
    message: str
    reproduce: str
    answer: str


def _reproduce(prepared: requests.PreparedRequest | None, secrets: Iterable[str]) -> str:
    """An httpx call that sends ``prepared`` again, each secret replaced by ``$KEY``."""
    if prepared is None:
        return "(no request was prepared)"
    headers = {k: v for k, v in prepared.headers.items() if k.lower() not in ("user-agent", "content-length")}
    headers = {k: v for k, v in headers.items() if not k.lower().startswith(("accept", "connection", "x-schemathesis"))}
    body = prepared.body
    if isinstance(body, str):
        body = body.encode("utf-8")
    text = f"httpx.request({prepared.method!r}, {prepared.url!r}, headers={headers!r}"
    if body:
        shown = body if len(body) <= 300 else body[:300] + b"..."
        text += f", content={shown!r}"
    text += ")"
    for secret in secrets:
        text = text.replace(secret, "$KEY")
    return text


@dataclass
class Net:
    """The net over the API at ``base`` (``http://127.0.0.1:PORT/api/v1``), whose valid key is
    ``key``; ``secrets`` (the keys) never appear in what it reports."""

    base: str
    key: str
    secrets: tuple[str, ...] = ()
    requests: int = 0
    found: dict[Finding, Seen] = field(default_factory=dict)
    counts: dict[Finding, int] = field(default_factory=dict)
    started: list[str] = field(default_factory=list)  # evaluations answered 202, cancelled by :meth:`close`
    #: requests sent, by operation
    per_operation: dict[str, int] = field(default_factory=dict)
    #: the invalid Authorization values :meth:`refused` sends (None: no header); see :func:`served_net`
    bad: list[str | None] = field(default_factory=list)
    #: the stateful part's writes: "PUT /deployments/{name} 2xx" (or "refused") -> how many
    writes: dict[str, int] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.schema = schemathesis.openapi.from_url(self.base + "/openapi.json", timeout=REQUEST_TIMEOUT)
        self.schema.config.update(base_url=self.base)
        self.session = requests.Session()
        self.secrets = (*self.secrets, self.key)
        self._operations = [result.ok() for result in self.schema.get_all_operations()]

    # -- the operations, and one request ------------------------------------------------------

    def operations(self) -> list[Any]:
        """Every operation of the live document, in its order."""
        return list(self._operations)

    def operation(self, label: str) -> Any:
        """The operation ``label`` (``GET /deployments/{name}``) of the document."""
        for op in self.operations():
            if op.label == label:
                return op
        raise KeyError(f"the document has no operation {label}")

    def call(self, case: schemathesis.Case, authorization: str | None) -> schemathesis.Response | None:
        """Send ``case`` with ``authorization`` as its Authorization header (None: without one);
        None when no answer came (recorded as a ``transport`` finding)."""
        headers = {"Authorization": authorization} if authorization is not None else {}
        if authorization is None and case.headers:
            case.headers.pop("Authorization", None)
        self.requests += 1
        label = case.operation.label
        self.per_operation[label] = self.per_operation.get(label, 0) + 1
        try:
            response = case.call(session=self.session, headers=headers, timeout=REQUEST_TIMEOUT)
        except requests.RequestException as exc:
            prepared = getattr(exc, "request", None)
            self.note(
                Finding(case.operation.label, "transport", 0),
                f"{type(exc).__name__}: {exc}",
                prepared if isinstance(prepared, requests.PreparedRequest) else None,
                "",
            )
            return None
        if case.operation.label == "POST /evaluations" and response.status_code == 202:
            try:
                self.started.append(str(response.json()["id"]))
            except (ValueError, KeyError, TypeError):
                pass  # the answer's shape is the checks' business
        return response

    def note(self, finding: Finding, message: str, prepared: requests.PreparedRequest | None, answer: str) -> None:
        """Keep ``finding`` with its first request; count every time it is seen."""
        self.counts[finding] = self.counts.get(finding, 0) + 1
        if finding not in self.found:
            for secret in self.secrets:
                message, answer = message.replace(secret, "$KEY"), answer.replace(secret, "$KEY")
            self.found[finding] = Seen(finding, message, _reproduce(prepared, self.secrets), answer[:500])

    def judge(self, case: schemathesis.Case, response: schemathesis.Response, checks: Iterable[CheckFunction]) -> None:
        """Run each check on ``response``, one at a time so that each failure names its check."""
        for check in checks:
            try:
                case.validate_response(response, checks=[check])
            except FailureGroup as group:
                messages = "; ".join(" ".join(str(f).split()) for f in group.exceptions)
                self.note(
                    Finding(case.operation.label, check.__name__, response.status_code),
                    messages[:600],
                    response.request,
                    response.text,
                )

    # -- stateless ------------------------------------------------------------------------------

    def _explore(
        self,
        op: Any,
        mode: GenerationMode,
        examples: int,
        at: int | None,
        each: Callable[[schemathesis.Case], None],
        anchors: dict[str, str] | None = None,
    ) -> None:
        """``each(case)`` for ``examples`` cases of ``op`` in ``mode``: the same cases every run
        (derandomized) unless ``at`` seeds it. ``anchors``: path parameters held at these values
        (those ``op`` has), the rest generated."""
        held = {k: v for k, v in (anchors or {}).items() if "{" + k + "}" in op.path}
        if anchors is not None and not held:
            return
        options: dict[str, Any] = {
            "max_examples": examples,
            "deadline": None,
            "database": None,
            "derandomize": at is None,
            "phases": [Phase.explicit, Phase.generate],  # nothing is raised: nothing to shrink
            "suppress_health_check": list(HealthCheck),
        }

        @settings(**options)
        @given(case=op.as_strategy(generation_mode=mode, path_parameters=held or None))
        def explore(case: schemathesis.Case) -> None:
            each(case)

        if at is not None:
            explore = seed(at)(explore)
        try:
            explore()
        except Unsatisfiable:
            pass  # nothing in the operation to make invalid (GET /health in negative mode)

    def anchor(self, ref: str, configuration: str) -> dict[str, str]:
        """Things that exist, for the path parameters of :meth:`stateless`'s second pass: the run
        ``ref``, a deployment of one of its decisions, and a demo evaluation (held at its first
        stage by the pause of :func:`server_env`; :meth:`close` cancels it)."""
        auth = {"Authorization": f"Bearer {self.key}"}
        with httpx.Client(base_url=self.base, headers=auth, timeout=REQUEST_TIMEOUT) as c:
            made = c.post(f"/runs/{ref}/decisions", json={"configuration": configuration, "threshold": 0.5})
            assert made.status_code == 201, made.text
            put = c.put("/deployments/anchor", json={"decision_id": made.json()["decision_id"]})
            assert put.status_code in (200, 201), put.text
            started = c.post("/evaluations", json={"demo": True})
            assert started.status_code == 202, started.text
        self.started.append(str(started.json()["id"]))
        return {"ref": ref, "name": "anchor", "evaluation_id": self.started[-1]}

    def stateless(
        self, examples: int, at: int | None = None, anchors: dict[str, str] | None = None, anchored: int = 0
    ) -> None:
        """Every operation, ``examples`` valid and ``examples`` invalid requests each, with the valid
        key, then ``anchored`` of each with its path parameters held at ``anchors`` (things that
        exist, :meth:`anchor`: the request reaches what the route does past finding them), and
        those of :data:`HOSTILE_PATH`: :data:`CHECKS` on every answer."""

        def each(case: schemathesis.Case) -> None:
            response = self.call(case, f"Bearer {self.key}")
            if response is not None:
                self.judge(case, response, CHECKS)

        for op in self.operations():
            for mode in (GenerationMode.POSITIVE, GenerationMode.NEGATIVE):
                self._explore(op, mode, examples, at, each)
                if anchors and anchored:
                    self._explore(op, mode, anchored, at, each, anchors)
            self._hostile(op, at, each)

    def _hostile(self, op: Any, at: int | None, each: Callable[[schemathesis.Case], None]) -> None:
        """One request of ``op`` for each value of :data:`HOSTILE_PATH` in all its path parameters."""
        names = re.findall(r"\{(\w+)\}", op.path)
        for value in HOSTILE_PATH if names else ():
            self._explore(op, GenerationMode.POSITIVE, 1, at, each, dict.fromkeys(names, value))

    def refused(self, bad: list[str | None], examples: int, at: int | None = None) -> None:
        """Every operation, ``examples`` valid requests each and those of :data:`HOSTILE_PATH`, sent
        with the Authorization values ``bad`` in turn (None: no header): :func:`refused_without_key`
        on every answer."""
        sent = [0]

        def each(case: schemathesis.Case) -> None:
            sent[0] += 1
            response = self.call(case, bad[sent[0] % len(bad)])
            if response is not None:
                self.judge(case, response, (refused_without_key,))

        for op in self.operations():
            self._explore(op, GenerationMode.POSITIVE, examples, at, each)
            self._hostile(op, at, each)

    # -- stateful -------------------------------------------------------------------------------

    def stateful(
        self, runs: int, steps: int, refs: list[str], configurations: list[str], at: int | None = None
    ) -> None:
        """A write answered 2xx is visible to the next read; one answered 4xx/5xx changed nothing a
        read shows. ``runs`` sequences of ``steps`` writes, each drawn from the document's
        strategies: a decision saved (for a run of ``refs`` and a configuration of
        ``configurations`` half the time, so that some are saved), a deployment moved (a generated
        name or one used before, a generated decision or one saved before), a saved decision
        deployed, a run file uploaded or an evaluation queued. Each write is read before and after
        (GET /deployments/{name}, GET /runs, GET /evaluations/{id})."""
        put = self.operation("PUT /deployments/{name}")
        get = self.operation("GET /deployments/{name}")
        decide = self.operation("POST /runs/{ref}/decisions")
        upload = self.operation("POST /runs")
        listing = self.operation("GET /runs")
        start = self.operation("POST /evaluations")
        status = self.operation("GET /evaluations/{evaluation_id}")
        pick = st.one_of(st.none(), st.integers(0, 1000))
        step = st.one_of(
            st.tuples(st.just("decide"), decide.as_strategy(), st.sampled_from(refs), st.sampled_from(configurations)),
            st.tuples(st.just("deploy"), put.as_strategy(), pick, pick),
            st.tuples(st.just("redeploy"), st.integers(0, 1000), st.integers(0, 1000)),
            st.tuples(st.just("other"), st.one_of(upload.as_strategy(), start.as_strategy())),
        )
        options: dict[str, Any] = {
            "max_examples": runs,
            "deadline": None,
            "database": None,
            "derandomize": at is None,
            "phases": [Phase.explicit, Phase.generate],
            "suppress_health_check": list(HealthCheck),
        }

        @settings(**options)
        @given(plan=st.lists(step, min_size=steps, max_size=steps), realistic=st.lists(st.booleans(), min_size=steps))
        def writes(plan: list[tuple[Any, ...]], realistic: list[bool]) -> None:
            Writes(self, get, listing, status, decide, refs[0], configurations[0]).play(plan, realistic)

        if at is not None:
            writes = seed(at)(writes)
        writes()

    # -- after a run ------------------------------------------------------------------------------

    def close(self) -> None:
        """Cancel the evaluations the net started (their jobs would otherwise run on after it)."""
        cancel = self.operation("POST /evaluations/{evaluation_id}/cancel")
        for ident in self.started:
            self.call(cancel.Case(path_parameters={"evaluation_id": ident}), f"Bearer {self.key}")
        self.session.close()

    def report(self) -> Iterator[str]:
        """One block a finding: what failed, how often, the first request that showed it."""
        for finding in sorted(self.found):
            seen = self.found[finding]
            yield f"- {finding}  (seen {self.counts[finding]} times)"
            yield f"    {seen.message[:400]}"
            yield f"    {seen.reproduce}"
            if seen.answer:
                yield f"    -> {' '.join(seen.answer.split())[:300]}"


# -- a server for the net, and the net's parts -----------------------------------------------------

#: the parts of the net, in the order :func:`run_parts` runs them
PARTS = ("valid key", "invalid keys", "stateful")
#: runs and configurations of the API tests' store (tests/api_serving.py): some decisions are saved
REFS = ["base", "cand"]
CONFIGURATIONS = ["E/dense", "E/bm25", "P/dense", "P/bm25"]


def server_env(folder: Path) -> dict[str, str]:
    """The server's environment for the net: no rate stops the net's own requests (the rates are
    tested by hand-written cases), one job at a time, and an evaluation the net queues waits at
    its first stage (evalcore.testhooks) until :meth:`Net.close` cancels it."""
    return {
        "EVALCORE_API_RATE": "5000/10000",
        "EVALCORE_API_GLOBAL_RATE": "5000/10000",
        "EVALCORE_API_AUTH_FAILURES": "5000/10000",
        "EVALCORE_DATA_ROOTS": str(MINI.parent),
        "EVALCORE_MAX_JOBS": "1",
        "EVALCORE_TEST_PAUSE": f"query embedding={folder / 'hold'}",
    }


@contextmanager
def served_net(store: Path, folder: Path) -> Iterator[Net]:
    """``evalcore dashboard`` over ``store`` (a copy of the API tests' store), its log in
    ``folder / "server.log"``, and a :class:`Net` over it whose key has every scope and whose
    :attr:`Net.bad` holds the invalid Authorization values: none, an unknown key, a revoked key,
    another scheme, an empty bearer, the valid key under another scheme, and with one character more."""
    key = make_key(store, "net", ALL_SCOPES)
    revoked = make_key(store, "net-gone", "read")
    assert cli(store, "keys", "revoke", "net-gone").returncode == 0
    with api_server(store, folder / "server.log", server_env(folder)) as url:
        net = Net(url + "/api/v1", key, secrets=(revoked,))
        net.bad = [None, "Bearer evk_" + "A" * 43, f"Bearer {revoked}", "Basic dXNlcjpwYXNz", "Bearer", f"Token {key}"]
        net.bad.append(f"Bearer {key}x")
        try:
            yield net
        finally:
            net.close()


@dataclass
class Part:
    """What one part of the net found, how many requests it sent, in how many seconds."""

    found: dict[Finding, Seen]
    requests: int
    seconds: float
    report: list[str]


def run_parts(
    net: Net, examples: int, anchored: int, refused_examples: int, runs: int, steps: int, at: int | None = None
) -> dict[str, Part]:
    """The three parts of the net (:data:`PARTS`), in order: every operation with the valid key
    (``examples`` valid and ``examples`` invalid requests each, then ``anchored`` each with its path
    parameters naming things that exist), with invalid keys (``refused_examples`` each), and the
    writes (``runs`` state machine runs of ``steps`` steps)."""
    anchors = net.anchor(REFS[0], CONFIGURATIONS[0])
    todo: dict[str, Callable[[], None]] = {
        "valid key": lambda: net.stateless(examples, at, anchors, anchored),
        "invalid keys": lambda: net.refused(net.bad, refused_examples, at),
        "stateful": lambda: net.stateful(runs, steps, REFS, CONFIGURATIONS, at),
    }
    parts = {}
    for part in PARTS:
        before, began = net.requests, time.monotonic()
        net.found.clear()
        net.counts.clear()
        todo[part]()
        parts[part] = Part(dict(net.found), net.requests - before, time.monotonic() - began, list(net.report()))
    return parts


class Writes:
    """One sequence of writes of :meth:`Net.stateful`, and the reads that judge each: the names
    and decisions it made so far, which later steps pick from."""

    def __init__(self, net: Net, get: Any, listing: Any, status: Any, decide: Any, ref: str, configuration: str):
        self.net, self.get, self.listing, self.status = net, get, listing, status
        self.auth = f"Bearer {net.key}"
        self.names = ["staging", "prod-eu"]
        first = decide.Case(path_parameters={"ref": ref}, body={"configuration": configuration, "threshold": 0.5})
        answer = net.call(first, self.auth)
        assert answer is not None and answer.status_code == 201, answer.text if answer is not None else "no answer"
        self.decisions = [str(answer.json()["decision_id"])]

    def play(self, plan: list[tuple[Any, ...]], realistic: list[bool]) -> None:
        for (kind, *args), real in zip(plan, realistic, strict=False):
            getattr(self, kind)(*args, real)

    # -- the reads ---------------------------------------------------------------------------------

    def read(self, name: str) -> tuple[int, str, Any]:
        """GET /deployments/NAME: (status, ETag, body when 200)."""
        got = self.net.call(self.get.Case(path_parameters={"name": name}), self.auth)
        if got is None:
            return 0, "", None
        return got.status_code, _header(got, "etag"), got.json() if got.status_code == 200 else None

    def runs(self) -> list[str] | None:
        got = self.net.call(self.listing.Case(query={"limit": 200}), self.auth)
        return [r["run_id"] for r in got.json()["data"]] if got is not None and got.status_code == 200 else None

    def wrote(self, case: schemathesis.Case, answer: schemathesis.Response) -> bool:
        done = 200 <= answer.status_code < 300
        label = f"{case.operation.label} {'2xx' if done else 'refused'}"
        self.net.writes[label] = self.net.writes.get(label, 0) + 1
        return done

    def broken(self, case: schemathesis.Case, what: str, why: str, answer: schemathesis.Response) -> None:
        self.net.note(Finding(case.operation.label, what, answer.status_code), why, answer.request, answer.text)

    # -- the writes --------------------------------------------------------------------------------

    def decide(self, case: schemathesis.Case, ref: str, configuration: str, real: bool) -> None:
        """POST /runs/{ref}/decisions; a saved one is deployed by later steps (:meth:`redeploy`)."""
        if real and isinstance(case.body, dict):  # a run and a configuration that exist
            case.path_parameters = {"ref": ref}
            case.body = {"configuration": configuration, "threshold": case.body.get("threshold", 0.5)}
        answer = self.net.call(case, self.auth)
        if answer is not None and self.wrote(case, answer):
            self.decisions.append(str(answer.json()["decision_id"]))

    def deploy(self, case: schemathesis.Case, name: int | None, decision: int | None, real: bool) -> None:
        """PUT /deployments/{name}: read back when answered 2xx, unchanged when refused."""
        if name is not None:
            case.path_parameters = {"name": self.names[name % len(self.names)]}
        if (decision is not None or real) and isinstance(case.body, dict):
            case.body = {**case.body, "decision_id": self.decisions[(decision or 0) % len(self.decisions)]}
        self.put(case)

    def redeploy(self, name: int, decision: int, real: bool) -> None:
        """A decision answered 201 can be deployed: PUT answers 2xx."""
        chosen = self.decisions[decision % len(self.decisions)]
        put = self.net.operation("PUT /deployments/{name}")
        case = put.Case(path_parameters={"name": self.names[name % len(self.names)]}, body={"decision_id": chosen})
        answer = self.put(case)
        if answer is not None and not 200 <= answer.status_code < 300:
            why = f"the decision {chosen} was answered 201; deploying it answered {answer.status_code}"
            self.broken(case, "stateful: a saved decision is visible to PUT /deployments", why, answer)

    def put(self, case: schemathesis.Case) -> schemathesis.Response | None:
        name = str(case.path_parameters["name"])
        before = self.read(name)
        answer = self.net.call(case, self.auth)
        if answer is None:
            return None
        after = self.read(name)
        if self.wrote(case, answer):
            sent = case.body.get("decision_id") if isinstance(case.body, dict) else None
            if after[0] != 200 or (after[2] or {}).get("decision_id") != sent:
                why = f"answered {answer.status_code}, then GET answered {after[0]} {after[2]!r:.200}"
                self.broken(case, "stateful: a write answered 2xx is read back", why, answer)
            elif after[1] != _header(answer, "etag"):
                why = f"PUT's ETag {_header(answer, 'etag')} but GET's {after[1]}"
                self.broken(case, "stateful: a write answered 2xx is read back", why, answer)
            if name not in self.names:
                self.names.append(name)
        elif (before[0], before[1]) != (after[0], after[1]):
            why = f"answered {answer.status_code}, yet GET went from {before[0]} {before[1]} to {after[0]} {after[1]}"
            self.broken(case, "stateful: a write answered 4xx/5xx changed nothing", why, answer)
        return answer

    def other(self, case: schemathesis.Case, real: bool) -> None:
        """A run file uploaded (listed by GET /runs after a 2xx, the list unchanged after a refusal)
        or an evaluation queued (GET /evaluations/ID after a 202)."""
        if case.operation.label == "POST /evaluations":
            answer = self.net.call(case, self.auth)
            if answer is None or not self.wrote(case, answer):
                return
            ident = str(answer.json()["id"])
            got = self.net.call(self.status.Case(path_parameters={"evaluation_id": ident}), self.auth)
            if got is None or got.status_code != 200 or got.json().get("id") != ident:
                why = f"answered 202 with id {ident}; GET answered {got.status_code if got is not None else 'nothing'}"
                self.broken(case, "stateful: a write answered 2xx is read back", why, answer)
            return
        before = self.runs()
        answer = self.net.call(case, self.auth)
        if answer is None or before is None:
            return
        after = self.runs()
        if self.wrote(case, answer):
            if after is None or answer.json().get("run_id") not in after:
                self.broken(case, "stateful: a write answered 2xx is read back", "the run is not listed", answer)
        elif after != before:
            why = f"answered {answer.status_code}, yet GET /runs changed"
            self.broken(case, "stateful: a write answered 4xx/5xx changed nothing", why, answer)
