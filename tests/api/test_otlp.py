"""OpenTelemetry traces in (``POST /deployments/{name}/otlp/v1/traces``) against a real server:
``evalcore dashboard`` as a process over a store made by the real CLI, and a real application
(a Python process) instrumented with ``opentelemetry-sdk``, its OTLP/HTTP protobuf exporter
configured only by the two environment variables an operator sets, and OpenInference's
attribute names. Its retriever spans become the deployment's lines, are replayed by the job
runner, and an export sent again stores nothing twice; OTLP JSON (gzip) is read the same way; a
retriever span without a query is answered with ``partial_success``; a bad key is 401."""

from __future__ import annotations

import base64
import gzip
import json
import os
import subprocess
import sys
import time
from datetime import UTC, datetime

import httpx
import pytest
from api_serving import ALL_SCOPES, FAKE_ENV, api_server, is_problem, make_key, make_store
from conftest import MINI, ROOT
from google.protobuf import json_format
from openinference.semconv.trace import DocumentAttributes, OpenInferenceSpanKindValues, SpanAttributes
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)
from opentelemetry.proto.common.v1.common_pb2 import AnyValue
from opentelemetry.semconv._incubating.attributes import gen_ai_attributes as gen_ai

from evalcore.embedding.embedder import text_hash
from evalcore.store import Store

PROTOBUF = "application/x-protobuf"
WAIT = 60  # seconds an answer may take on a busy machine
PATH = "/api/v1/deployments/production/otlp/v1/traces"
RETRIEVER = OpenInferenceSpanKindValues.RETRIEVER.value

#: A RAG application as a team runs it: the SDK, its batch processor and OTLP/HTTP exporter, set
#: up from the environment alone; one chain span per query around one retriever span that names
#: the documents it retrieved. Ids come from a seeded generator (argv[2]), so the same seed makes
#: the same export again (a retry). It prints each retriever span and the exporter's results.
APP = r"""
import json, random, sys
from openinference.semconv.trace import DocumentAttributes, OpenInferenceSpanKindValues, SpanAttributes
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor
from opentelemetry.sdk.trace.id_generator import IdGenerator

class Seeded(IdGenerator):
    def __init__(self, seed):
        self.rng = random.Random(seed)
    def generate_span_id(self):
        return self.rng.getrandbits(64) or 1
    def generate_trace_id(self):
        return self.rng.getrandbits(128) or 1

class Reporting(OTLPSpanExporter):
    def export(self, spans):
        result = super().export(spans)
        print(json.dumps({"export": result.name}), flush=True)
        return result

queries = json.loads(sys.argv[1])
provider = TracerProvider(id_generator=Seeded(int(sys.argv[2])))
provider.add_span_processor(BatchSpanProcessor(Reporting()))
tracer = provider.get_tracer("rag-app")
for n, query in enumerate(queries):
    with tracer.start_as_current_span("query"):
        with tracer.start_as_current_span("retrieve") as span:
            span.set_attribute(SpanAttributes.OPENINFERENCE_SPAN_KIND, OpenInferenceSpanKindValues.RETRIEVER.value)
            span.set_attribute(SpanAttributes.INPUT_VALUE, query)
            for i in range(3):
                prefix = f"{SpanAttributes.RETRIEVAL_DOCUMENTS}.{i}."
                span.set_attribute(prefix + DocumentAttributes.DOCUMENT_ID, f"doc-{n}-{i}")
                span.set_attribute(prefix + DocumentAttributes.DOCUMENT_SCORE, 0.9 - i / 10)
                span.set_attribute(prefix + DocumentAttributes.DOCUMENT_CONTENT, f"passage {i} for {query}")
            context = span.get_span_context()
            print(json.dumps({"id": f"{context.trace_id:032x}-{context.span_id:016x}", "query": query,
                              "start": span.start_time}), flush=True)
provider.shutdown()
"""


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    """(url, store, keys) of a server whose deployment ``production`` points at a decision."""
    folder = tmp_path_factory.mktemp("api-otlp")
    store = make_store(tmp_path_factory, folder / "evalcore.duckdb")
    keys = {
        "all": make_key(store, "all", ALL_SCOPES),
        "writer": make_key(store, "otel-collector", "traffic:write"),
        "reader": make_key(store, "reader", "read"),
    }
    with api_server(store, folder / "server.log") as url:
        with httpx.Client(
            base_url=url + "/api/v1", headers={"Authorization": f"Bearer {keys['all']}"}, timeout=60
        ) as c:
            made = c.post("/runs/base/decisions", json={"configuration": "E/dense", "threshold": 0.5})
            assert made.status_code == 201, made.text
            put = c.put("/deployments/production", json={"decision_id": made.json()["decision_id"]})
            assert put.status_code == 201, put.text
        yield url, store, keys
    log = (folder / "server.log").read_text(errors="replace")
    for key in keys.values():
        assert key not in log, "a key reached the server's log"


def _questions(n: int, skip: int = 0) -> list[str]:
    lines = (MINI / "questions.jsonl").read_text().splitlines()
    return [json.loads(x)["question"] for x in lines[skip : skip + n]]


def run_app(url: str, key: str, queries: list[str], seed: int) -> tuple[list[dict], list[str]]:
    """The instrumented application as a process, its exporter pointed at production's route by
    the environment: (the retriever spans it made, the exporter's results)."""
    env = {
        **os.environ,
        **FAKE_ENV,
        "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": url + PATH,
        "OTEL_EXPORTER_OTLP_TRACES_HEADERS": f"Authorization=Bearer {key}",
    }
    ran = subprocess.run(
        [sys.executable, "-c", APP, json.dumps(queries), str(seed)],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert ran.returncode == 0, ran.stderr[-2000:]
    printed = [json.loads(line) for line in ran.stdout.splitlines()]
    return [p for p in printed if "id" in p], [p["export"] for p in printed if "export" in p]


def posted(store, deployment: str = "production") -> dict[str, tuple[str, datetime]]:
    """The deployment's posted lines: id -> (text's hash, time asked)."""
    rows = Store(store).query(
        "SELECT post_id, text_hash, asked_at FROM traffic_posted WHERE deployment = ? ORDER BY seq", [deployment]
    )
    return {r.post_id: (r.text_hash, r.asked_at.to_pydatetime()) for r in rows.itertuples()}


def _replayed(store, deployment: str = "production", timeout: float = 120) -> set[str]:
    """The text hashes of the deployment's replayed lines, once its traffic jobs are complete."""
    deadline = time.monotonic() + timeout
    while True:
        jobs = Store(store).query("SELECT status FROM jobs WHERE kind = 'traffic' AND deployment = ?", [deployment])
        if len(jobs) and set(jobs["status"]) <= {"complete", "failed", "cancelled"}:
            break
        assert time.monotonic() < deadline, f"the replay did not finish: {list(jobs['status'])}"
        time.sleep(0.5)
    assert set(jobs["status"]) == {"complete"}, list(jobs["status"])
    rows = Store(store).query("SELECT text_hash FROM traffic_queries WHERE deployment = ?", [deployment])
    return set(rows["text_hash"])


def _utc(nanoseconds: int) -> datetime:
    """A span's start as the store keeps a time: naive UTC, to the microsecond."""
    return datetime.fromtimestamp(nanoseconds // 1000 / 1e6, UTC).replace(tzinfo=None)


def test_an_instrumented_application_exports_retriever_spans_that_become_replayed_lines(served):
    url, store, keys = served
    queries = _questions(6)
    spans, results = run_app(url, keys["writer"], queries, seed=7)
    assert results and set(results) == {"SUCCESS"}
    assert len(spans) == len(queries)
    lines = posted(store)
    assert list(lines) == [s["id"] for s in spans]  # the chain spans are ignored
    for span in spans:
        assert lines[span["id"]] == (text_hash(span["query"]), _utc(span["start"]))
    assert _replayed(store) >= {text_hash(q) for q in queries}
    again, results = run_app(url, keys["writer"], queries, seed=7)  # the same export, sent again
    assert set(results) == {"SUCCESS"} and [s["id"] for s in again] == [s["id"] for s in spans]
    assert posted(store) == lines  # nothing stored twice


def test_a_bad_key_is_401_a_reader_403_and_an_unknown_deployment_404(served):
    url, store, keys = served
    before = posted(store)
    spans, results = run_app(url, "evk_" + "A" * 43, _questions(2, skip=10), seed=11)
    assert len(spans) == 2 and set(results) == {"FAILURE"}
    body = export_request([retriever_span(1, "how do I install python")]).SerializeToString()
    kind = {"Content-Type": PROTOBUF}
    answered = httpx.post(
        url + PATH, timeout=WAIT, content=body, headers={**kind, "Authorization": "Bearer evk_" + "A" * 43}
    )
    assert "key" in is_problem(answered, 401)["detail"]
    denied = httpx.post(
        url + PATH, timeout=WAIT, content=body, headers={**kind, "Authorization": f"Bearer {keys['reader']}"}
    )
    assert "traffic:write" in is_problem(denied, 403)["detail"]
    elsewhere = url + PATH.replace("production", "nowhere")
    is_problem(
        httpx.post(
            elsewhere, timeout=WAIT, content=body, headers={**kind, "Authorization": f"Bearer {keys['writer']}"}
        ),
        404,
    )
    assert posted(store) == before


def _span_id(n: int) -> tuple[bytes, bytes]:
    return n.to_bytes(16, "big"), (n + 1000).to_bytes(8, "big")


def _attribute(value: object) -> AnyValue:
    if isinstance(value, str):
        return AnyValue(string_value=value)
    if isinstance(value, float):
        return AnyValue(double_value=value)
    raise TypeError(value)


def retriever_span(n: int, query: str | None, *, convention: str = "openinference", start: int = 1_796_000_000) -> dict:
    """A retriever span (OpenInference or GenAI), ``query`` None for a span without one."""
    if convention == "openinference":
        attributes = {SpanAttributes.OPENINFERENCE_SPAN_KIND: RETRIEVER}
        if query is not None:
            attributes[SpanAttributes.INPUT_VALUE] = query
        prefix = f"{SpanAttributes.RETRIEVAL_DOCUMENTS}.0."
        attributes[prefix + DocumentAttributes.DOCUMENT_ID] = f"doc-{n}"
        attributes[prefix + DocumentAttributes.DOCUMENT_SCORE] = 0.75
    else:
        attributes = {
            gen_ai.GEN_AI_OPERATION_NAME: gen_ai.GenAiOperationNameValues.RETRIEVAL.value,
            gen_ai.GEN_AI_RETRIEVAL_DOCUMENTS: json.dumps([{"id": f"doc-{n}", "score": 0.5}]),
        }
        if query is not None:
            attributes[gen_ai.GEN_AI_RETRIEVAL_QUERY_TEXT] = query
    trace_id, span_id = _span_id(n)
    return {"trace_id": trace_id, "span_id": span_id, "start": (start + n) * 10**9, "attributes": attributes}


def export_request(spans: list[dict]) -> ExportTraceServiceRequest:
    request = ExportTraceServiceRequest()
    scope = request.resource_spans.add().scope_spans.add()
    for s in spans:
        span = scope.spans.add(trace_id=s["trace_id"], span_id=s["span_id"], name="retrieve")
        span.start_time_unix_nano = s["start"]
        span.end_time_unix_nano = s["start"] + 5_000_000
        for key, value in s["attributes"].items():
            span.attributes.add(key=key, value=_attribute(value))
    return request


def otlp_json(request: ExportTraceServiceRequest) -> dict:
    """``request`` in OTLP's JSON encoding: protobuf's JSON mapping with the ids in hex."""
    record = json_format.MessageToDict(request)
    for resource in record["resourceSpans"]:
        for scope in resource["scopeSpans"]:
            for span in scope["spans"]:
                for key in ("traceId", "spanId"):
                    span[key] = base64.b64decode(span[key]).hex()
    return record


def line_id(n: int) -> str:
    trace_id, span_id = _span_id(n)
    return f"{trace_id.hex()}-{span_id.hex()}"


def test_otlp_json_gzip_and_a_span_without_a_query_answered_with_partial_success(served):
    url, store, keys = served
    spans = [
        retriever_span(101, "pip cannot find a module"),
        retriever_span(102, "virtual environments", convention="gen_ai"),
        retriever_span(103, None),
        {**retriever_span(104, "an LLM call"), "attributes": {"llm.model_name": "m"}},  # not a retriever: ignored
    ]
    record = otlp_json(export_request(spans))
    assert record["resourceSpans"][0]["scopeSpans"][0]["spans"][0]["startTimeUnixNano"].isdigit()  # int64: text
    headers = {"Authorization": f"Bearer {keys['writer']}", "Content-Type": "application/json"}
    answered = httpx.post(
        url + PATH,
        timeout=WAIT,
        content=gzip.compress(json.dumps(record).encode()),
        headers={**headers, "Content-Encoding": "gzip"},
    )
    assert answered.status_code == 200, answered.text
    assert answered.headers["content-type"].startswith("application/json")
    partial = answered.json()["partialSuccess"]
    assert partial["rejectedSpans"] == "1"
    assert line_id(103) in partial["errorMessage"] and SpanAttributes.INPUT_VALUE in partial["errorMessage"]
    lines = posted(store)
    assert lines[line_id(101)] == (text_hash("pip cannot find a module"), _utc(spans[0]["start"]))
    assert lines[line_id(102)][0] == text_hash("virtual environments")
    assert line_id(103) not in lines and line_id(104) not in lines
    # the same in protobuf: the answer is an ExportTraceServiceResponse in protobuf
    proto = {"Authorization": f"Bearer {keys['writer']}", "Content-Type": PROTOBUF}
    answered = httpx.post(url + PATH, timeout=WAIT, content=export_request(spans).SerializeToString(), headers=proto)
    assert answered.status_code == 200 and answered.headers["content-type"] == PROTOBUF
    response = ExportTraceServiceResponse.FromString(answered.content)
    assert response.partial_success.rejected_spans == 1 and "input.value" in response.partial_success.error_message
    assert posted(store) == lines  # sent again: nothing twice
    whole = httpx.post(url + PATH, timeout=WAIT, content=export_request(spans[:2]).SerializeToString(), headers=proto)
    assert not ExportTraceServiceResponse.FromString(whole.content).HasField("partial_success")
