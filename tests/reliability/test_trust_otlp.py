"""The reliability suite, issue 48 (production plugs in), OTLP bodies: a truncated protobuf, a
million spans, attributes of 10 MB, values nested deeply, invalid UTF-8, a gzip bomb, a wrong
media type or encoding, ids that are not hex. One table row per case, against a real server
(``evalcore dashboard`` as a process over a store made by the real CLI, its deployment
``production`` pointed at a decision): the status the OTLP specification asks for, a message
naming what was refused, never a 500, and nothing half-written (a body refused whole stores no
line; a rejected span stores none, its neighbours are stored)."""

from __future__ import annotations

import gzip
import json
from collections.abc import Callable

import httpx
import pytest
from api.test_otlp import PATH, PROTOBUF, WAIT, export_request, line_id, otlp_json, retriever_span
from api_serving import ALL_SCOPES, api_server, make_key, make_store
from openinference.semconv.trace import DocumentAttributes, SpanAttributes
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceResponse
from opentelemetry.proto.common.v1.common_pb2 import AnyValue
from opentelemetry.proto.trace.v1.trace_pb2 import Span
from test_reliability import check

from evalcore.store import Store
from evalcore.traffic.otlp import MAX_DEPTH
from evalcore.traffic.otlp_body import MAX_DECODED, MAX_SPANS

MB = 1024 * 1024
METADATA = f"{SpanAttributes.RETRIEVAL_DOCUMENTS}.0.{DocumentAttributes.DOCUMENT_METADATA}"


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    """(url, store, key of scope traffic:write) of a server whose ``production`` is deployed."""
    folder = tmp_path_factory.mktemp("trust-otlp")
    store = make_store(tmp_path_factory, folder / "evalcore.duckdb")
    everything = make_key(store, "all", ALL_SCOPES)
    writer = make_key(store, "collector", "traffic:write")
    with api_server(store, folder / "server.log") as url:
        with httpx.Client(
            base_url=url + "/api/v1", headers={"Authorization": f"Bearer {everything}"}, timeout=WAIT
        ) as c:
            made = c.post("/runs/base/decisions", json={"configuration": "E/dense", "threshold": 0.5})
            assert made.status_code == 201, made.text
            assert c.put("/deployments/production", json={"decision_id": made.json()["decision_id"]}).status_code == 201
        yield url, store, writer
    log = (folder / "server.log").read_text(errors="replace")
    assert "Traceback" not in log and "unexpected" not in log, log[-2000:]


def _lines(store) -> int:
    return int(Store(store).query("SELECT count(*) AS n FROM traffic_posted")["n"].iloc[0])


def _varint(n: int) -> bytes:
    out = bytearray()
    while n >= 0x80:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


def _field(number: int, payload: bytes) -> bytes:
    """A length-delimited protobuf field, written by hand (for what protobuf itself refuses to write)."""
    return _varint(number << 3 | 2) + _varint(len(payload)) + payload


def _request(spans: bytes) -> bytes:
    """An ExportTraceServiceRequest around encoded spans (resource_spans 1, scope_spans 2)."""
    return _field(1, _field(2, spans))


def _nested(depth: int) -> bytes:
    """An AnyValue nested ``depth`` levels deep: a key-value list holding a key-value list ..."""
    value = AnyValue(string_value="leaf").SerializeToString()
    for _ in range(depth):
        value = _field(6, _field(1, _field(1, b"k") + _field(2, value)))  # kvlist_value { values { key, value } }
    return value


def _with_attribute(n: int, key: str, value: bytes) -> bytes:
    """Retriever span ``n`` (its query in ``input.value``) with one more attribute, encoded by hand."""
    span = export_request([retriever_span(n, f"query number {n}")]).resource_spans[0].scope_spans[0].spans[0]
    return _request(_field(2, span.SerializeToString() + _field(9, _field(1, key.encode()) + _field(2, value))))


def _protobuf(n: int, query: str) -> bytes:
    return export_request([retriever_span(n, query)]).SerializeToString()


def _answer(response: httpx.Response) -> str:
    """What the server answered, in the words of the table: the status, and for a 200 the
    rejected spans and the first reason."""
    if response.status_code != 200:
        return f"{response.status_code}"
    if response.headers["content-type"].startswith(PROTOBUF):
        partial = ExportTraceServiceResponse.FromString(response.content).partial_success
        return f"200, {partial.rejected_spans} rejected" + (
            f": {partial.error_message}" if partial.rejected_spans else ""
        )
    partial = response.json().get("partialSuccess", {})
    rejected = int(partial.get("rejectedSpans", 0))
    return f"200, {rejected} rejected" + (f": {partial.get('errorMessage')}" if rejected else "")


def _million_spans() -> bytes:
    one = _field(2, Span(name="x").SerializeToString())
    return gzip.compress(_request(one * 1_000_000), compresslevel=1)


#: (case, body, Content-Type, Content-Encoding, expected status, a word the answer names, lines stored)
CASES = [
    ("a truncated protobuf", _protobuf(1, "pip install")[:-7], PROTOBUF, None, "400", "truncated", 0),
    ("a protobuf with a wire type protobuf never writes", b"\x0f\x00", PROTOBUF, None, "400", "wire type", 0),
    ("a million spans (gzip)", _million_spans, PROTOBUF, "gzip", "413", f"{MAX_SPANS:,} spans", 0),
    ("a query of 10 MB sent as it is", lambda: _protobuf(2, "q" * 10 * MB), PROTOBUF, None, "413", "bytes", 0),
    (
        "a query of 10 MB (gzip)",
        lambda: gzip.compress(_protobuf(3, "q" * 10 * MB)),
        PROTOBUF,
        "gzip",
        "200",
        "input.value: 10,485,760 characters, more than the 10,000 allowed",
        0,
    ),
    (
        "a document's text of 10 MB (gzip)",
        lambda: gzip.compress(
            _with_attribute(
                4,
                f"{SpanAttributes.RETRIEVAL_DOCUMENTS}.0.{DocumentAttributes.DOCUMENT_CONTENT}",
                AnyValue(string_value="d" * 10 * MB).SerializeToString(),
            )
        ),
        PROTOBUF,
        "gzip",
        "200",
        "100,000",
        0,
    ),
    (
        f"metadata nested {MAX_DEPTH + 4} levels",
        _with_attribute(5, METADATA, _nested(MAX_DEPTH + 4)),
        PROTOBUF,
        None,
        "200",
        "levels",
        0,
    ),
    ("metadata nested 3 levels", _with_attribute(6, METADATA, _nested(3)), PROTOBUF, None, "200", "0 rejected", 1),
    (
        "an attribute nested 500 levels",
        _with_attribute(7, "deep", _nested(500)),
        PROTOBUF,
        None,
        "400",
        "(100 levels)",
        0,
    ),
    (
        "JSON nested 100,000 levels",
        b'{"resourceSpans": ' + b"[" * 100_000 + b"]" * 100_000 + b"}",
        "application/json",
        None,
        "400",
        "nested too deeply",
        0,
    ),
    (
        "a query that is not UTF-8",
        _protobuf(8, "how do I").replace(b"how do I", b"how\xff\xfeo I"),
        PROTOBUF,
        None,
        "400",
        "string field is not UTF-8",
        0,
    ),
    ("a JSON body that is not UTF-8", b'{"resourceSpans": "\xff\xfe"}', "application/json", None, "400", "UTF-8", 0),
    (
        "a gzip bomb (64 MB of zeros)",
        lambda: gzip.compress(b"\0" * 64 * MB, compresslevel=9),
        PROTOBUF,
        "gzip",
        "413",
        f"{MAX_DECODED:,}",
        0,
    ),
    ("a gzip stream cut short", gzip.compress(_protobuf(9, "pip install"))[:-12], PROTOBUF, "gzip", "400", "gzip", 0),
    ("gzip said, plain sent", _protobuf(10, "pip install"), PROTOBUF, "gzip", "400", "gzip", 0),
    ("Content-Encoding br", _protobuf(11, "pip install"), PROTOBUF, "br", "415", "br", 0),
    ("Content-Type text/plain", _protobuf(12, "pip install"), "text/plain", None, "415", "text/plain", 0),
    ("no Content-Type", _protobuf(13, "pip install"), None, None, "415", "no type", 0),
    ("Content-Type application/x-ndjson", b'{"id": "1"}', "application/x-ndjson", None, "415", "x-ndjson", 0),
    ("a JSON trace id that is not hex", None, "application/json", None, "400", "traceId", 0),
    ("a JSON list, not an object", b"[]", "application/json", None, "400", "not a JSON object", 0),
    (
        "JSON with a span that is not an object",
        b'{"resourceSpans": [{"scopeSpans": [{"spans": [7]}]}]}',
        "application/json",
        None,
        "400",
        "OTLP JSON",
        0,
    ),
    ("a retriever span with all-zero ids", None, PROTOBUF, None, "200", "traceId and spanId", 0),
    ("a retriever span with no start", None, PROTOBUF, None, "200", "startTimeUnixNano", 0),
    (
        "a query of a control character only",
        _protobuf(14, "\x1b"),
        PROTOBUF,
        None,
        "200",
        "input.value: character 1 is U+001B",
        0,
    ),
    ("an empty body", b"", PROTOBUF, None, "200", "0 rejected", 0),
]


def _body(case: str, body: bytes | Callable[[], bytes] | None) -> bytes:
    """The bodies too large (a callable) or too particular (None) to build at import."""
    if callable(body):
        return body()
    if body is not None:
        return body
    if case.startswith("a JSON trace id"):
        record = otlp_json(export_request([retriever_span(15, "pip install")]))
        record["resourceSpans"][0]["scopeSpans"][0]["spans"][0]["traceId"] = "zz" * 16
        return json.dumps(record).encode()
    span = retriever_span(16, "pip install")
    if "all-zero" in case:
        span = {**span, "trace_id": bytes(16), "span_id": bytes(8)}
    else:
        span = {**span, "start": 0}
    return export_request([span]).SerializeToString()


@pytest.mark.parametrize(
    ("case", "body", "kind", "encoding", "status", "named", "stored"), CASES, ids=[c[0] for c in CASES]
)
def test_a_hostile_otlp_body_is_refused_clearly_and_nothing_is_half_written(
    server, case, body, kind, encoding, status, named, stored
):
    url, store, key = server
    headers = {"Authorization": f"Bearer {key}"}
    if kind:
        headers["Content-Type"] = kind
    if encoding:
        headers["Content-Encoding"] = encoding
    before = _lines(store)
    answered = httpx.post(url + PATH, content=_body(case, body), headers=headers, timeout=WAIT)
    said = _answer(answered) if answered.status_code == 200 else answered.json().get("detail", "")
    observed = (
        f"{answered.status_code}; {'names it' if named in said else 'says ' + said[:200]}; "
        f"{_lines(store) - before} lines stored"
    )
    check(f"OTLP: {case}", f"{status}; names it; {stored} lines stored", observed)


def test_a_rejected_span_stores_nothing_and_its_neighbours_are_stored(server):
    url, store, key = server
    spans = [retriever_span(201, "pip install"), retriever_span(202, None), retriever_span(203, "venv")]
    headers = {"Authorization": f"Bearer {key}", "Content-Type": PROTOBUF}
    before = _lines(store)
    answered = httpx.post(url + PATH, content=export_request(spans).SerializeToString(), headers=headers, timeout=WAIT)
    partial = ExportTraceServiceResponse.FromString(answered.content).partial_success
    ids = set(Store(store).query("SELECT post_id FROM traffic_posted")["post_id"])
    kept = sorted(ids & {line_id(n) for n in (201, 202, 203)}) == [line_id(201), line_id(203)]
    named = line_id(202) in partial.error_message
    observed = (
        f"{answered.status_code}; {partial.rejected_spans} rejected, naming {named}; "
        f"{_lines(store) - before} stored: {kept}"
    )
    check(
        "OTLP: one retriever span without a query among two with one",
        "200; 1 rejected, naming True; 2 stored: True",
        observed,
    )
