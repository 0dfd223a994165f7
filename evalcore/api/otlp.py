"""``POST /deployments/{name}/otlp/v1/traces``: OpenTelemetry traces (OTLP/HTTP) as the
deployment's traffic. An exporter configured with ``OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`` (this
URL) and ``OTEL_EXPORTER_OTLP_TRACES_HEADERS="Authorization=Bearer evk_..."`` (a key of scope
``traffic:write``) sends to it unchanged.

The body (protobuf or OTLP JSON, gzip or not, within the traffic post's byte limit) is read by
:mod:`evalcore.traffic.otlp`; its retriever spans go through the NDJSON route's ingest path
(:func:`evalcore.service.ingest.ingest_traffic`), each as one line. The answer is what the OTLP
specification asks: 200 with an ``ExportTraceServiceResponse`` in the request's encoding, whose
``partial_success`` counts the rejected spans and says why; 400 for a body that does not decode,
413 over a bound, 415 for another media type or encoding (each a problem document, as every error
of the API); 503 with ``Retry-After`` while the store is busy, which the SDK's exporter retries."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Depends, Request
from starlette.concurrency import run_in_threadpool
from starlette.responses import Response

from evalcore.api.serving.auth import Caller, require
from evalcore.api.serving.limits import MAX_TRAFFIC
from evalcore.api.serving.problems import Problem, from_error
from evalcore.errors import EvalcoreError
from evalcore.service.ingest import ingest_traffic
from evalcore.traffic.otlp import Rejected, SpanLine, read_export, rejected_message
from evalcore.traffic.otlp_body import (
    JSON,
    MAX_SPANS,
    PROTOBUF,
    OtlpMediaType,
    OtlpTooLarge,
    OtlpUndecodable,
    export_response,
)

router = APIRouter(tags=["deployments"])
#: the JSON answer: ``{}``, or ``{"partialSuccess": {"rejectedSpans": "2", "errorMessage": "..."}}``
ANSWER_SCHEMA = {
    "type": "object",
    "description": "ExportTraceServiceResponse in OTLP JSON",
    "properties": {
        "partialSuccess": {
            "type": "object",
            "properties": {
                "rejectedSpans": {"type": "string", "pattern": "^[0-9]+$", "description": "spans rejected (int64)"},
                "errorMessage": {"type": "string", "description": "which spans, and why"},
            },
        }
    },
    "additionalProperties": False,
}
#: the span's name for each field an ingest reason may start with (the query's: the span's attribute)
_FIELDS = {"time:": "startTimeUnixNano:", "id:": "traceId and spanId:"}


@router.post(
    "/deployments/{name}/otlp/v1/traces",
    summary=f"OpenTelemetry traces (OTLP/HTTP, {PROTOBUF} or {JSON}, gzip or not): each retriever span a "
    f"traffic line; at most {MAX_SPANS:,} spans and {MAX_TRAFFIC // (1024 * 1024)} MB an export",
    responses={
        200: {
            "description": "an ExportTraceServiceResponse in the request's encoding; partial_success names the "
            "rejected spans and why",
            "content": {
                PROTOBUF: {
                    "schema": {"type": "string", "format": "binary", "description": "ExportTraceServiceResponse"}
                },
                JSON: {"schema": ANSWER_SCHEMA},
            },
        },
        400: {"description": "the body does not decode as an ExportTraceServiceRequest"},
        503: {"description": "the store is busy: send again after Retry-After"},
    },
    openapi_extra={
        "requestBody": {
            "required": True,
            "content": {
                PROTOBUF: {"schema": {"type": "string", "format": "binary"}},
                JSON: {"schema": {"type": "object", "description": "ExportTraceServiceRequest in OTLP JSON"}},
            },
        }
    },
)
async def post_traces(
    request: Request, name: str, caller: Annotated[Caller, Depends(require("traffic:write"))]
) -> Response:
    body = await request.body()
    try:
        media, decoded = await run_in_threadpool(
            read_export, body, request.headers.get("content-type"), request.headers.get("content-encoding")
        )
    except OtlpMediaType as exc:
        raise Problem(415, str(exc), "media-type") from None
    except OtlpTooLarge as exc:
        raise Problem(413, str(exc), "too-large") from None
    except OtlpUndecodable as exc:
        raise Problem(400, str(exc), "undecodable") from None
    store = request.app.state.store
    lines = [line.ndjson() for line in decoded.lines]
    try:  # with no line too: an unknown deployment is 404 whatever the export holds
        results = await run_in_threadpool(ingest_traffic, store, name, lines, caller.author)
    except EvalcoreError as exc:
        raise from_error(exc, store.path) from None
    rejected = list(decoded.rejected)
    for line, result in zip(decoded.lines, results, strict=True):
        if result.status == "problem":
            rejected.append(Rejected(line.span, line.id, _named(line, result.reason or "refused")))
    rejected.sort(key=lambda r: r.span)
    content, kind = export_response(len(rejected), rejected_message(rejected) if rejected else "", media)
    return Response(content, 200, media_type=kind)


def _named(line: SpanLine, reason: str) -> str:
    """An ingest reason with the line's field named as the span holds it (``input.value: ...``)."""
    for field, named in {"query:": f"{line.query_key}:", **_FIELDS}.items():
        if reason.startswith(field):
            return named + reason[len(field) :]
    return reason
