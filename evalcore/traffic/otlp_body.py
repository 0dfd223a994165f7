"""The body of an OTLP/HTTP trace export, read and bounded before a span is looked at; and the
answer's body. Pure: no store, no network (:mod:`evalcore.traffic.otlp` reads the spans).

A body is an ``ExportTraceServiceRequest``, encoded as protobuf (``application/x-protobuf``) or
in OTLP's JSON mapping (``application/json``: ids in hex, field names in lowerCamelCase, 64-bit
integers as strings), gzip-compressed (``Content-Encoding: gzip``) or not. It is bounded: at most
:data:`MAX_DECODED` bytes once decompressed (a gzip bomb stops there, nothing more is inflated),
at most :data:`MAX_SPANS` spans (counted on the protobuf wire before the body is parsed, so a
million spans are refused after the first :data:`MAX_SPANS` + 1), at most :data:`MAX_JSON_OBJECTS`
JSON objects (counted while the JSON is read). A body past a bound is :class:`OtlpTooLarge`; one
that does not decode (truncated, a string that is not UTF-8, nested past protobuf's 100 levels, an
id that is not hex) :class:`OtlpUndecodable`; another media type or encoding :class:`OtlpMediaType`.
"""

from __future__ import annotations

import base64
import json
import zlib
from collections.abc import Iterator
from typing import Any

from google.protobuf import json_format  # type: ignore[import-untyped]
from google.protobuf.message import DecodeError  # type: ignore[import-untyped]
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTracePartialSuccess,
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)

from evalcore.errors import InputError

PROTOBUF = "application/x-protobuf"
JSON = "application/json"
MB = 1024 * 1024
#: bytes of a body once decompressed (the compressed body is bounded as a traffic post's)
MAX_DECODED = 20 * MB
#: spans of one export, of every kind (the SDK's batch exporter sends at most 512 by default)
MAX_SPANS = 1000
#: JSON objects of one export in the JSON encoding (bounds the memory a body of tiny objects takes)
MAX_JSON_OBJECTS = 200_000


class OtlpUndecodable(InputError):
    """The body is not an ``ExportTraceServiceRequest`` in the encoding it names (HTTP 400)."""


class OtlpTooLarge(InputError):
    """The body is over one of its bounds: decompressed size, spans, JSON objects (HTTP 413)."""


class OtlpMediaType(InputError):
    """The body's media type or content encoding is not one OTLP/HTTP uses (HTTP 415)."""


class _Broken(Exception):
    """The protobuf wire format ends or breaks before its field says."""


def media_type(content_type: str | None) -> str:
    """``application/x-protobuf`` or ``application/json`` from a ``Content-Type``; OtlpMediaType otherwise."""
    media = (content_type or "").split(";")[0].strip().lower()
    if media not in (PROTOBUF, JSON):
        raise OtlpMediaType(f"an OTLP export is sent as {PROTOBUF} or {JSON}, not {media[:80] or 'a body of no type'}")
    return media


def decompressed(body: bytes, encoding: str | None, cap: int = MAX_DECODED) -> bytes:
    """``body`` as sent (no ``Content-Encoding``, or ``identity``) or gunzipped (``gzip``), at most
    ``cap`` bytes: OtlpTooLarge past it (read no further), OtlpUndecodable for a broken gzip
    stream, OtlpMediaType for another encoding."""
    coding = (encoding or "identity").strip().lower()
    if coding == "identity":
        if len(body) > cap:
            raise OtlpTooLarge(f"the body is {len(body):,} bytes; an OTLP export may be at most {cap:,}")
        return body
    if coding not in ("gzip", "x-gzip"):
        raise OtlpMediaType(f"Content-Encoding {coding[:40]!r} is not taken (gzip, or none)")
    inflater = zlib.decompressobj(16 + zlib.MAX_WBITS)
    try:
        out = inflater.decompress(body, cap + 1)
    except zlib.error as exc:
        raise OtlpUndecodable(f"the body is not gzip ({exc})") from None
    if len(out) > cap:
        raise OtlpTooLarge(f"the body decompresses to more than {cap:,} bytes, the most an OTLP export may hold")
    if not inflater.eof:
        raise OtlpUndecodable("the gzip stream is truncated (it ends before its end)")
    if inflater.unused_data:
        raise OtlpUndecodable("bytes follow the gzip stream's end")
    return out


def parse_request(data: bytes, media: str) -> ExportTraceServiceRequest:
    """The export of a (decompressed) body in ``media``: OtlpTooLarge past :data:`MAX_SPANS`
    spans or :data:`MAX_JSON_OBJECTS` objects, OtlpUndecodable when it does not decode."""
    if media == PROTOBUF:
        try:
            spans = count_spans(data, MAX_SPANS)
        except _Broken as exc:
            raise OtlpUndecodable(f"the body is not an ExportTraceServiceRequest in protobuf: {exc}") from None
        _check_spans(spans)
        request = ExportTraceServiceRequest()
        try:
            request.ParseFromString(data)
        except (DecodeError, RecursionError) as exc:
            raise OtlpUndecodable(f"the body is not an ExportTraceServiceRequest in protobuf: {_why(exc)}") from None
        return request
    return _parse_json(data)


def _why(exc: BaseException) -> str:
    """Protobuf's reason for a body it cannot parse, in words."""
    text = str(exc)
    if isinstance(exc, RecursionError) or "MaxDepth" in text:
        return "a value is nested more deeply than protobuf reads (100 levels)"
    if "UTF-8" in text:
        return "a string field is not UTF-8"
    return "it is truncated, or not protobuf"


def _check_spans(spans: int) -> None:
    if spans > MAX_SPANS:
        raise OtlpTooLarge(
            f"the export holds more than {MAX_SPANS:,} spans, the most one export may hold "
            "(the SDK's batch processor sends 512 at most by default: OTEL_BSP_MAX_EXPORT_BATCH_SIZE)"
        )


def _parse_json(data: bytes) -> ExportTraceServiceRequest:
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise OtlpUndecodable(f"the body is not UTF-8 (byte {exc.start + 1})") from None
    objects = 0

    def counted(pairs: dict[str, Any]) -> dict[str, Any]:
        nonlocal objects
        objects += 1
        if objects > MAX_JSON_OBJECTS:
            raise OtlpTooLarge(f"the export holds more than {MAX_JSON_OBJECTS:,} JSON objects, the most it may hold")
        return pairs

    try:
        record = json.loads(text, object_hook=counted)
    except RecursionError:
        raise OtlpUndecodable("the body is nested too deeply to read") from None
    except ValueError as exc:
        raise OtlpUndecodable(f"the body is not JSON ({getattr(exc, 'msg', exc)})") from None
    if not isinstance(record, dict):
        raise OtlpUndecodable(
            f"the body is not a JSON object (an ExportTraceServiceRequest), but a {type(record).__name__}"
        )
    _check_spans(sum(1 for _ in _json_spans(record)))
    for where, span in _json_spans(record):
        _hex_ids(where, span)
    request = ExportTraceServiceRequest()
    try:
        json_format.ParseDict(record, request, ignore_unknown_fields=True)
    except RecursionError:
        raise OtlpUndecodable("the body is nested too deeply to read") from None
    except json_format.ParseError as exc:
        raise OtlpUndecodable(f"the body is not an ExportTraceServiceRequest in OTLP JSON: {str(exc)[:300]}") from None
    return request


def _json_spans(record: dict[str, Any]) -> Iterator[tuple[str, dict[str, Any]]]:
    """Each span object of an OTLP JSON export, with where it is (anything not a list of objects
    where spans belong is left for the parser to refuse)."""
    for r, resource in enumerate(_objects(record.get("resourceSpans", record.get("resource_spans")))):
        for s, scope in enumerate(_objects(resource.get("scopeSpans", resource.get("scope_spans")))):
            for n, span in enumerate(_objects(scope.get("spans"))):
                yield f"resourceSpans[{r}].scopeSpans[{s}].spans[{n}]", span


def _objects(value: Any) -> list[dict[str, Any]]:
    return [x for x in value if isinstance(x, dict)] if isinstance(value, list) else []


def _hex_ids(where: str, span: dict[str, Any]) -> None:
    """OTLP JSON writes ids in hex where protobuf's JSON mapping writes base64: the ids of
    ``span`` (and of its links) rewritten for the parser, OtlpUndecodable for one that is not hex."""
    links = [(f"{where}.links[{i}]", link) for i, link in enumerate(_objects(span.get("links")))]
    for place, holder in [(where, span), *links]:
        for key in ("traceId", "spanId", "parentSpanId", "trace_id", "span_id", "parent_span_id"):
            value = holder.get(key)
            if not isinstance(value, str):
                continue
            try:
                holder[key] = base64.b64encode(bytes.fromhex(value)).decode("ascii")
            except ValueError:
                raise OtlpUndecodable(
                    f"{place}.{key}: {value[:40]!r} is not hex (OTLP JSON writes ids in hex)"
                ) from None


def count_spans(data: bytes, cap: int) -> int:
    """The spans of a protobuf ``ExportTraceServiceRequest`` (``resource_spans`` = 1,
    ``scope_spans`` = 2, ``spans`` = 2), read from the wire without parsing them; stops once past
    ``cap``. _Broken when the wire format ends before a field says."""
    count = 0
    for number, start, end in _fields(data, 0, len(data)):
        if number != 1:
            continue
        for inner, s2, e2 in _fields(data, start, end):
            if inner != 2:
                continue
            for leaf, _, _ in _fields(data, s2, e2):
                if leaf == 2:
                    count += 1
                    if count > cap:
                        return count
    return count


def _varint(data: bytes, i: int, end: int) -> tuple[int, int]:
    value = shift = 0
    while True:
        if i >= end:
            raise _Broken("it ends inside a number")
        byte = data[i]
        i += 1
        value |= (byte & 0x7F) << shift
        if byte < 0x80:
            return value, i
        shift += 7
        if shift > 63:
            raise _Broken("a number of more than 10 bytes")


def _fields(data: bytes, i: int, end: int) -> Iterator[tuple[int, int, int]]:
    """The length-delimited fields between ``i`` and ``end`` (number, start, end); the others skipped."""
    while i < end:
        key, i = _varint(data, i, end)
        number, kind = key >> 3, key & 7
        if kind == 0:
            _, i = _varint(data, i, end)
        elif kind == 1:
            i += 8
        elif kind == 5:
            i += 4
        elif kind == 2:
            length, i = _varint(data, i, end)
            if i + length > end:
                raise _Broken(f"a field says {length:,} bytes and fewer follow (truncated)")
            yield number, i, i + length
            i += length
        else:
            raise _Broken(f"wire type {kind} of field {number} is not one protobuf writes")
        if i > end:
            raise _Broken("it ends inside a field (truncated)")


def export_response(rejected: int, message: str, media: str) -> tuple[bytes, str]:
    """The ``ExportTraceServiceResponse`` (in ``media``, the request's encoding): empty when
    no span was rejected, else its ``partial_success``: ``rejected`` spans, and why (``message``)."""
    response = ExportTraceServiceResponse()
    if rejected:
        response.partial_success.CopyFrom(ExportTracePartialSuccess(rejected_spans=rejected, error_message=message))
    if media == PROTOBUF:
        return response.SerializeToString(), PROTOBUF
    return json.dumps(json_format.MessageToDict(response), ensure_ascii=False).encode("utf-8"), JSON
