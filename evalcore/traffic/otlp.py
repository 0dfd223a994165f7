"""OpenTelemetry traces (an OTLP/HTTP export) read as a deployment's traffic lines. Pure: no
store, no network; :mod:`evalcore.api.otlp` posts the lines through the NDJSON route's ingest
path (:func:`evalcore.service.ingest.ingest_traffic`, which checks each query as a posted one's),
after :mod:`evalcore.traffic.otlp_body` has read and bounded the body.

Each span is one of three things:

- a retriever span, by OpenInference (``openinference.span.kind`` = ``RETRIEVER``: the query is
  ``input.value``, the documents ``retrieval.documents.{i}.document.{id,content,score,metadata}``)
  or by the OpenTelemetry GenAI conventions (``gen_ai.operation.name`` = ``retrieval``: the query
  is ``gen_ai.retrieval.query.text``, the documents ``gen_ai.retrieval.documents``, a JSON list
  of ``{id, score, content}`` or the same as an array of key-value lists): a :class:`SpanLine`,
  whose id is the trace id and the span id in hex (``TRACE-SPAN``, so an export sent again names
  the same lines) and whose time is the span's start (UTC);
- a retriever span that breaks a rule (no query, a query that is not a string, a document field
  of the wrong type or over its size, a value nested deeper than :data:`MAX_DEPTH`, no start
  time, an all-zero id): a :class:`Rejected` span naming the attribute and why;
- any other span: counted (:attr:`Decoded.ignored`) and ignored.

The attribute names come from ``openinference-semantic-conventions`` and
``opentelemetry-semantic-conventions``, never retyped here.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from openinference.semconv.trace import DocumentAttributes, OpenInferenceSpanKindValues, SpanAttributes
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.common.v1.common_pb2 import AnyValue
from opentelemetry.proto.trace.v1.trace_pb2 import Span
from opentelemetry.semconv._incubating.attributes import gen_ai_attributes as gen_ai

from evalcore.traffic.otlp_body import decompressed, media_type, parse_request

#: characters of a document's id
MAX_DOCUMENT_ID = 200
#: levels of nesting of an attribute value read (a key-value list in a list in ...)
MAX_DEPTH = 8
#: documents of one retriever span
MAX_DOCUMENTS = 1000
#: characters of one document's text, and of its metadata written as JSON
MAX_CONTENT = 100_000
#: reasons the partial success's message names (the count says how many spans in all)
SHOWN_REASONS = 10

RETRIEVER = OpenInferenceSpanKindValues.RETRIEVER.value
RETRIEVAL = gen_ai.GenAiOperationNameValues.RETRIEVAL.value
SPAN_KIND = SpanAttributes.OPENINFERENCE_SPAN_KIND
INPUT_VALUE = SpanAttributes.INPUT_VALUE
DOCUMENTS = SpanAttributes.RETRIEVAL_DOCUMENTS
OPERATION = gen_ai.GEN_AI_OPERATION_NAME
QUERY_TEXT = gen_ai.GEN_AI_RETRIEVAL_QUERY_TEXT
GEN_AI_DOCUMENTS = gen_ai.GEN_AI_RETRIEVAL_DOCUMENTS
_DOC_FIELDS = {
    DocumentAttributes.DOCUMENT_ID: "id",
    DocumentAttributes.DOCUMENT_CONTENT: "content",
    DocumentAttributes.DOCUMENT_SCORE: "score",
    DocumentAttributes.DOCUMENT_METADATA: "metadata",
}
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


@dataclass(frozen=True)
class RetrievedDocument:
    """One document a retriever span says production retrieved (any field may be missing)."""

    id: str | None
    score: float | None
    content: str | None
    metadata: Any = None


@dataclass(frozen=True)
class SpanLine:
    """A retriever span read as a traffic line: ``id`` (trace id and span id, hex), ``query``,
    ``time`` (the span's start, UTC) and the documents it names, in rank order."""

    span: int  #: the span's place in the export, 1-based
    id: str
    query: str
    time: datetime
    documents: tuple[RetrievedDocument, ...] = ()
    query_key: str = INPUT_VALUE  #: the attribute the query came from

    def ndjson(self) -> bytes:
        """The line as the NDJSON route takes it: ``{id, query, time}``."""
        stamp = self.time.isoformat(timespec="microseconds").replace("+00:00", "Z")
        return json.dumps({"id": self.id, "query": self.query, "time": stamp}, ensure_ascii=False).encode("utf-8")


@dataclass(frozen=True)
class Rejected:
    """A retriever span that breaks a rule: its place (1-based), its id when it has one, and why."""

    span: int
    id: str | None
    reason: str

    def words(self) -> str:
        return f"span {self.span}" + (f" ({self.id})" if self.id else "") + f": {self.reason}"


@dataclass
class Decoded:
    """What an export holds: its retriever spans as lines, the retriever spans rejected, and how
    many other spans it held (ignored)."""

    lines: list[SpanLine] = field(default_factory=list)
    rejected: list[Rejected] = field(default_factory=list)
    ignored: int = 0

    @property
    def spans(self) -> int:
        return len(self.lines) + len(self.rejected) + self.ignored


class _Bad(Exception):
    """A retriever span's rule broken (the message names the attribute)."""


def read_export(body: bytes, content_type: str | None, encoding: str | None) -> tuple[str, Decoded]:
    """The body of an OTLP/HTTP export (as received) read: its media type and what it holds.
    OtlpMediaType, OtlpTooLarge or OtlpUndecodable when it is refused whole."""
    media = media_type(content_type)
    return media, decode_spans(parse_request(decompressed(body, encoding), media))


def decode_spans(request: ExportTraceServiceRequest) -> Decoded:
    """Every span of ``request`` sorted: a line, a rejected retriever span, or ignored."""
    out = Decoded()
    number = 0
    for resource in request.resource_spans:
        for scope in resource.scope_spans:
            for span in scope.spans:
                number += 1
                attributes = {kv.key: kv.value for kv in span.attributes}
                kind = _kind(attributes)
                if kind is None:
                    out.ignored += 1
                    continue
                line_id = _line_id(span)
                try:
                    out.lines.append(_line(number, span, line_id, kind, attributes))
                except _Bad as exc:
                    out.rejected.append(Rejected(number, line_id, str(exc)))
    return out


def _kind(attributes: dict[str, AnyValue]) -> str | None:
    """``openinference``, ``gen_ai`` or None (not a retriever span)."""
    kind = attributes.get(SPAN_KIND)
    if kind is not None and kind.WhichOneof("value") == "string_value" and kind.string_value.upper() == RETRIEVER:
        return "openinference"
    operation = attributes.get(OPERATION)
    if (
        operation is not None
        and operation.WhichOneof("value") == "string_value"
        and operation.string_value == RETRIEVAL
    ):
        return "gen_ai"
    return None


def _line_id(span: Span) -> str | None:
    if len(span.trace_id) != 16 or len(span.span_id) != 8 or not any(span.trace_id) or not any(span.span_id):
        return None
    return f"{span.trace_id.hex()}-{span.span_id.hex()}"


def _line(number: int, span: Span, line_id: str | None, kind: str, attributes: dict[str, AnyValue]) -> SpanLine:
    if line_id is None:
        raise _Bad(
            f"traceId and spanId: {len(span.trace_id)} and {len(span.span_id)} bytes, or all zero "
            "(16 and 8 bytes, not all zero: they make the line's id)"
        )
    if span.start_time_unix_nano == 0:
        raise _Bad("startTimeUnixNano: missing (the span's start is the line's time)")
    key = INPUT_VALUE if kind == "openinference" else QUERY_TEXT
    query = _query(key, attributes.get(key))
    if kind == "openinference":
        documents = _openinference_documents(attributes)
    else:
        documents = _gen_ai_documents(attributes.get(GEN_AI_DOCUMENTS))
    at = _EPOCH + timedelta(microseconds=span.start_time_unix_nano // 1000)
    return SpanLine(number, line_id, query, at, documents, key)


def _query(key: str, value: AnyValue | None) -> str:
    if value is None:
        raise _Bad(f"{key}: missing (a retriever span needs the query it retrieved for)")
    which = value.WhichOneof("value")
    if which != "string_value":
        raise _Bad(f"{key}: expected a string, got {_what(which)}")
    return str(value.string_value)  # its length and characters: checked as a posted query's


def _what(which: str | None) -> str:
    """The kind of an attribute's value, in words (``a double value``)."""
    return "no value" if which is None else f"a {which.replace('_value', '')} value"


def _openinference_documents(attributes: dict[str, AnyValue]) -> tuple[RetrievedDocument, ...]:
    prefix = DOCUMENTS + "."
    found: dict[int, dict[str, Any]] = {}
    for key, value in attributes.items():
        if not key.startswith(prefix):
            continue
        place, _, name = key[len(prefix) :].partition(".")
        if name not in _DOC_FIELDS:
            continue  # url, name, mime type: not kept
        if not place.isdigit() or len(place) > 6:
            raise _Bad(f"{key}: the document's place {place[:20]!r} is not a number")
        if int(place) >= MAX_DOCUMENTS:
            raise _Bad(f"{key}: a retriever span names at most {MAX_DOCUMENTS:,} documents")
        found.setdefault(int(place), {})[_DOC_FIELDS[name]] = _document_field(key, _DOC_FIELDS[name], value)
    return tuple(
        RetrievedDocument(d.get("id"), d.get("score"), d.get("content"), d.get("metadata"))
        for _, d in sorted(found.items())
    )


def _document_field(key: str, name: str, value: AnyValue) -> Any:
    which = value.WhichOneof("value")
    if name == "id":
        if which == "int_value":
            return str(value.int_value)
        if which != "string_value":
            raise _Bad(f"{key}: expected a string or an integer, got {_what(which)}")
        if len(value.string_value) > MAX_DOCUMENT_ID:
            raise _Bad(f"{key}: {len(value.string_value):,} characters; a document id is at most {MAX_DOCUMENT_ID}")
        return value.string_value
    if name == "score":
        if which not in ("double_value", "int_value"):
            raise _Bad(f"{key}: expected a number, got {_what(which)}")
        score = float(value.double_value if which == "double_value" else value.int_value)
        if not math.isfinite(score):
            raise _Bad(f"{key}: {score} is not a finite number")
        return score
    if name == "content":
        if which != "string_value":
            raise _Bad(f"{key}: expected a string, got {_what(which)}")
        if len(value.string_value) > MAX_CONTENT:
            raise _Bad(f"{key}: {len(value.string_value):,} characters; a document's text is at most {MAX_CONTENT:,}")
        return value.string_value
    metadata = _plain(value, key)
    if len(json.dumps(metadata, default=str)) > MAX_CONTENT:
        raise _Bad(f"{key}: more than {MAX_CONTENT:,} characters written as JSON")
    return metadata


def _plain(value: AnyValue, key: str, depth: int = 0) -> Any:
    """An attribute value as plain Python (str, int, float, bool, bytes, list, dict); _Bad when it
    is nested more than :data:`MAX_DEPTH` levels."""
    if depth > MAX_DEPTH:
        raise _Bad(f"{key}: nested more than {MAX_DEPTH} levels deep")
    which = value.WhichOneof("value")
    if which == "array_value":
        return [_plain(v, key, depth + 1) for v in value.array_value.values]
    if which == "kvlist_value":
        return {kv.key: _plain(kv.value, key, depth + 1) for kv in value.kvlist_value.values}
    return None if which is None else getattr(value, which)


def _gen_ai_documents(value: AnyValue | None) -> tuple[RetrievedDocument, ...]:
    key = GEN_AI_DOCUMENTS
    if value is None:
        return ()
    which = value.WhichOneof("value")
    if which == "string_value":
        if len(value.string_value) > MAX_DOCUMENTS * MAX_CONTENT // 10:
            raise _Bad(f"{key}: {len(value.string_value):,} characters, too long to read")
        try:
            items = json.loads(value.string_value)
        except (ValueError, RecursionError):
            raise _Bad(f"{key}: a string that is not a JSON list") from None
        if _depth(items) > MAX_DEPTH:
            raise _Bad(f"{key}: nested more than {MAX_DEPTH} levels deep")
    elif which == "array_value":
        items = _plain(value, key)
    else:
        raise _Bad(f"{key}: expected a list of documents (or a JSON string of one), got {_what(which)}")
    if not isinstance(items, list):
        raise _Bad(f"{key}: expected a list of documents, got {type(items).__name__}")
    if len(items) > MAX_DOCUMENTS:
        raise _Bad(f"{key}: {len(items):,} documents; a retriever span names at most {MAX_DOCUMENTS:,}")
    documents = []
    for i, item in enumerate(items):
        if not isinstance(item, dict):
            raise _Bad(f"{key}[{i}]: expected an object {{id, score, content}}, got {type(item).__name__}")
        documents.append(_gen_ai_document(f"{key}[{i}]", item))
    return tuple(documents)


def _gen_ai_document(key: str, item: dict[str, Any]) -> RetrievedDocument:
    doc_id, score, content = item.get("id"), item.get("score"), item.get("content")
    if doc_id is not None and (isinstance(doc_id, bool) or not isinstance(doc_id, (str, int))):
        raise _Bad(f"{key}.id: expected a string or an integer, got {type(doc_id).__name__}")
    if doc_id is not None and len(str(doc_id)) > MAX_DOCUMENT_ID:
        raise _Bad(f"{key}.id: more than {MAX_DOCUMENT_ID} characters")
    if score is not None and (
        isinstance(score, bool) or not isinstance(score, (int, float)) or not math.isfinite(score)
    ):
        raise _Bad(f"{key}.score: expected a finite number, got {score!r:.40}")
    if content is not None and (not isinstance(content, str) or len(content) > MAX_CONTENT):
        raise _Bad(f"{key}.content: expected a string of at most {MAX_CONTENT:,} characters")
    return RetrievedDocument(
        None if doc_id is None else str(doc_id), None if score is None else float(score), content, item.get("metadata")
    )


def _depth(value: Any) -> int:
    """How deeply ``value`` (plain JSON) nests, iteratively."""
    deepest = 0
    todo: list[tuple[Any, int]] = [(value, 0)]
    while todo:
        item, level = todo.pop()
        deepest = max(deepest, level)
        if isinstance(item, dict):
            todo.extend((v, level + 1) for v in item.values())
        elif isinstance(item, list):
            todo.extend((v, level + 1) for v in item)
    return deepest


def rejected_message(rejected: list[Rejected]) -> str:
    """The partial success's ``error_message``: the first :data:`SHOWN_REASONS` rejected spans and why."""
    shown = "; ".join(r.words() for r in rejected[:SHOWN_REASONS])
    more = len(rejected) - SHOWN_REASONS
    return f"{len(rejected)} span(s) rejected: {shown}" + (f"; and {more} more" if more > 0 else "")
