"""``run-endpoint``: measure a live search service over HTTP.

Each query becomes one request: by default ``POST URL`` with the JSON body
``{"query": "{query}", "k": "{k}"}``. The body template is JSON whose strings may hold
``{query}``, ``{query_id}`` and ``{k}`` (a string that is exactly ``"{k}"`` becomes the number);
values are inserted as JSON values, never spliced into the text, so a query cannot break the
body. With ``GET`` the same placeholders in the URL are URL-encoded.

The response must be JSON. Field paths (dotted, list indexes allowed: ``hits.hits``,
``_source.doc``, ``results.0.items``) say where the hit list is and, in each hit, the chunk id,
text, document, start and end offsets (each optional; a hit needs an id, a text, or a
document with offsets) and the score (required). The list's order is the service's ranking.

Requests run ``concurrency`` at a time with a ``timeout``: seconds for the whole request
(connecting, the headers and the whole body), so a server that sends a byte now and then cannot
hold a slot. An answer is read up to a size cap (4 MiB, or ``$EVALCORE_MAX_RESPONSE_BYTES``);
a larger one fails its query with the reason. Of a longer hit list only the first ``k`` hits
are kept. A timeout, a refused connection and HTTP 408, 425, 429, 500, 502, 503, 504 are tried
again up to ``retries`` times after an exponential backoff with jitter (``backoff * 2**n``
seconds plus up to as much again at random; a ``Retry-After`` of up to 60 s is honoured); other
statuses fail at once. Redirects are not followed: requests go only where the operator pointed
them. A query whose request finally fails, or whose answer is malformed (not JSON, no hit list,
a hit without score), fails with the reason; it is never scored as a miss.

Every 2xx answer is cached in the store (:mod:`evalcore.external.responses`), so a second run
on the same queries sends nothing unless ``refresh`` is set. Standard library only
(``urllib.request`` + a thread pool): one request per query needs no connection pooling,
and evalcore gains no dependency for it.

This module says what an endpoint is (:class:`Endpoint`, the allowed URL prefixes) and how an
answer is read (:func:`parse`); :mod:`evalcore.external.endpoint_calls` sends the requests.
"""

from __future__ import annotations

import json
import logging
import os
import urllib.parse
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from evalcore.errors import ConfigError
from evalcore.external.hits import BadHits, RawHit, finite_number, offset, text_or_none
from evalcore.inputs import jsontext

if TYPE_CHECKING:
    pass

log = logging.getLogger(__name__)

DEFAULT_BODY = '{"query": "{query}", "k": "{k}"}'
PLACEHOLDERS = ("{query}", "{query_id}", "{k}")
ALLOWED_ENV = "EVALCORE_ENDPOINTS"  # URL prefixes the dashboard may send queries to


@dataclass(frozen=True, slots=True)
class Fields:
    """Where things are in an answer: the hit list (``""``: the answer itself is the list),
    then in each hit the chunk id, text, document, offsets and score ("" to leave one out)."""

    hits: str = "hits"
    chunk_id: str = "id"
    text: str = "text"
    document: str = "document"
    start: str = "start"
    end: str = "end"
    score: str = "score"


@dataclass(frozen=True, slots=True)
class Endpoint:
    """A search service and how to talk to it (see the module docstring)."""

    url: str
    method: str = "POST"
    body: str | None = DEFAULT_BODY
    headers: tuple[tuple[str, str], ...] = ()
    fields: Fields = field(default_factory=Fields)
    k: int = 20
    concurrency: int = 4
    timeout: float = 30.0
    retries: int = 3
    backoff: float = 0.5
    refresh: bool = False

    def check(self) -> None:
        """ConfigError naming the option for anything that cannot work."""
        parts = urllib.parse.urlsplit(self.url)
        if parts.scheme not in ("http", "https") or not parts.netloc:
            raise ConfigError(f"--url {self.url!r}: an http:// or https:// URL with a host")
        if self.method not in ("GET", "POST"):
            raise ConfigError(f"--method {self.method!r}: GET or POST")
        if self.method == "POST":
            if "{query}" not in json.dumps(self._template()):
                raise ConfigError(f"--body {self.body!r}: the template never uses {{query}}")
        elif "{query}" not in self.url:
            raise ConfigError(f"--url {self.url!r}: a GET request needs {{query}} in the URL")
        for name, value in (("--concurrency", self.concurrency), ("--k", self.k)):
            if not isinstance(value, int) or value < 1:
                raise ConfigError(f"{name} must be an integer >= 1, got {value!r}")
        if not isinstance(self.retries, int) or self.retries < 0:
            raise ConfigError(f"--retries must be an integer >= 0, got {self.retries!r}")
        if not self.timeout > 0 or not self.backoff >= 0:
            raise ConfigError(f"--timeout must be > 0 and the backoff >= 0, got {self.timeout!r}, {self.backoff!r}")
        if not self.fields.score:
            raise ConfigError("--score: a field path is required (the gate reads the service's score)")
        for header, text in self.headers:
            if not header or any(ch in header for ch in ":\r\n") or any(ch in text for ch in "\r\n"):
                raise ConfigError(f"--header {header!r}: expected 'Name: value'")

    def _template(self) -> Any:
        try:
            return jsontext.loads(self.body or "")
        except json.JSONDecodeError as exc:
            raise ConfigError(
                f"--body {self.body!r}: not JSON ({exc.msg} at column {exc.colno}); e.g. {DEFAULT_BODY}"
            ) from None

    def request(self, query_id: str, query: str) -> tuple[str, str, str | None]:
        """``(method, url, body)`` of one query."""
        values = {"{query}": query, "{query_id}": query_id, "{k}": str(self.k)}

        def fill(text: str, quote: bool) -> str:
            for p, v in values.items():
                text = text.replace(p, urllib.parse.quote(v, safe="") if quote else v)
            return text

        def walk(node: Any) -> Any:
            if isinstance(node, str):
                return self.k if node == "{k}" else fill(node, False)
            if isinstance(node, list):
                return [walk(x) for x in node]
            if isinstance(node, dict):
                return {fill(k, False): walk(v) for k, v in node.items()}
            return node

        url = fill(self.url, True)
        if self.method == "GET":
            return "GET", url, None
        return "POST", url, json.dumps(walk(self._template()), ensure_ascii=False, sort_keys=True)

    def described(self) -> dict[str, Any]:
        """What a run stores about the endpoint: never header values (they may be credentials)."""
        return {
            "url": self.url,
            "method": self.method,
            "body": self.body if self.method == "POST" else None,
            "header_names": [n for n, _ in self.headers],
            "fields": {f: getattr(self.fields, f) for f in Fields.__dataclass_fields__},
            "k": self.k,
            "concurrency": self.concurrency,
            "timeout": self.timeout,
            "retries": self.retries,
            "refresh": self.refresh,
        }


def allowed_prefixes() -> list[str]:
    """The URL prefixes in ``$EVALCORE_ENDPOINTS`` (comma-separated; empty when unset)."""

    return [p.strip() for p in os.environ.get(ALLOWED_ENV, "").split(",") if p.strip()]


def check_allowed(url: str) -> None:
    """ConfigError unless ``url`` lies under one of the operator's prefixes in
    ``$EVALCORE_ENDPOINTS`` (comma-separated). The dashboard checks this before it queues an
    endpoint run (and the job again before it sends anything), so its users reach only
    services the operator allowed; the CLI's operator needs no such list.

    URLs are compared parsed, never as strings: the same scheme, host and port (the scheme's
    default port when none is written), and the prefix's path segments first in the URL's
    path after ``.`` and ``..`` segments are resolved (percent-encoded ones too). So
    ``http://127.0.0.1:1876`` does not admit ``http://127.0.0.1:18766/``, and
    ``http://h/search/`` does not admit ``http://h/search/../admin``. A user name or password
    in the URL, a path segment that decodes to a slash or backslash, and ``{query}`` or
    ``{query_id}`` in the path (a query could then climb out) are refused."""
    prefixes = allowed_prefixes()
    if not prefixes:
        raise ConfigError(
            f"endpoint runs from the dashboard are off: the operator allows services by URL prefix "
            f"in ${ALLOWED_ENV} (e.g. {ALLOWED_ENV}=http://localhost:9200/)"
        )
    target = _origin_and_path(url, "--url")
    if "{query}" in urllib.parse.urlsplit(url).path or "{query_id}" in urllib.parse.urlsplit(url).path:
        raise ConfigError(f"--url {url!r}: {{query}} may stand only in the query string (after '?') of a dashboard run")
    for prefix in prefixes:
        origin, segments = _origin_and_path(prefix, f"${ALLOWED_ENV} entry")
        if origin == target[0] and target[1][: len(segments)] == segments:
            return
    raise ConfigError(f"--url {url!r} is not under a prefix the operator allows (${ALLOWED_ENV})")


_DEFAULT_PORTS = {"http": 80, "https": 443}


def _origin_and_path(url: str, what: str) -> tuple[tuple[str, str, int], list[str]]:
    """``((scheme, host, port), path segments)`` of ``url``, dot segments resolved; the empty
    segment a trailing ``/`` leaves is dropped (a prefix ``/search`` and ``/search/`` both mean
    the folder ``search``)."""
    parts = urllib.parse.urlsplit(url.strip())
    scheme = parts.scheme.lower()
    if scheme not in _DEFAULT_PORTS or not parts.hostname:
        raise ConfigError(f"{what} {url!r}: an http:// or https:// URL with a host")
    if parts.username is not None or parts.password is not None:
        raise ConfigError(f"{what} {url!r}: a user name or password in the URL is not allowed")
    try:
        port = parts.port or _DEFAULT_PORTS[scheme]
    except ValueError:
        raise ConfigError(f"{what} {url!r}: the port is not a number from 0 to 65535") from None
    segments: list[str] = []
    for raw in parts.path.split("/"):
        segment = urllib.parse.unquote(raw)
        if "/" in segment or "\\" in segment:
            raise ConfigError(f"{what} {url!r}: a path segment holds an encoded slash or a backslash")
        if segment in ("", "."):
            continue
        if segment == "..":
            if segments:
                segments.pop()
            continue
        segments.append(segment)
    return (scheme, parts.hostname.lower(), port), segments


def from_spec(spec: dict[str, Any]) -> Endpoint:
    """An Endpoint from a job's JSON spec (``fields`` a dict; no headers: they are never stored)."""
    known = {k: v for k, v in spec.items() if k in Endpoint.__dataclass_fields__ and k not in ("fields", "headers")}
    return Endpoint(**known, fields=Fields(**spec.get("fields", {})))


def parse_header(text: str) -> tuple[str, str]:
    """``'Authorization: Bearer x'`` -> ``("Authorization", "Bearer x")``; ConfigError otherwise."""
    name, sep, value = str(text).partition(":")
    if not sep or not name.strip():
        raise ConfigError(f"--header {text!r}: expected 'Name: value'")
    return name.strip(), value.strip()


# --- reading answers ------------------------------------------------------------------------


_MISSING = object()


def at(obj: Any, path: str) -> Any:
    """The value at a dotted ``path`` (list indexes allowed); ``_MISSING`` when absent."""
    if path == "":
        return obj
    for part in path.split("."):
        if isinstance(obj, dict) and part in obj:
            obj = obj[part]
        elif isinstance(obj, list) and part.lstrip("-").isdigit() and -len(obj) <= int(part) < len(obj):
            obj = obj[int(part)]
        else:
            return _MISSING
    return obj


def parse(text: str, fields: Fields, k: int | None = None) -> list[RawHit]:
    """The hits of one answer (the first ``k`` when given); BadHits with the reason when it is
    not what ``fields`` says."""
    try:
        doc = jsontext.loads(text)
    except json.JSONDecodeError as exc:
        shown = text[:80].replace("\n", " ")
        raise BadHits(
            f"malformed JSON in the answer ({exc.msg} at line {exc.lineno} column {exc.colno}): {shown!r}"
        ) from None
    hits = at(doc, fields.hits)
    if hits is _MISSING:
        raise BadHits(f"no hit list at {fields.hits!r} in the answer")
    if not isinstance(hits, list):
        raise BadHits(f"the value at {fields.hits!r} is not a list but {type(hits).__name__}")
    out = []
    for i, hit in enumerate(hits[:k] if k is not None else hits, start=1):

        def get(path: str, hit: Any = hit) -> Any:
            if not path:
                return None
            value = at(hit, path)
            return None if value is _MISSING else value

        score = at(hit, fields.score)
        if score is _MISSING:
            raise BadHits(f"hit {i} has no score at {fields.score!r}")
        out.append(
            RawHit(
                text_or_none(get(fields.chunk_id), f"hit {i}: chunk id"),
                text_or_none(get(fields.text), f"hit {i}: text"),
                text_or_none(get(fields.document), f"hit {i}: document"),
                offset(get(fields.start), f"hit {i}: start"),
                offset(get(fields.end), f"hit {i}: end"),
                finite_number(score, f"hit {i}: score"),
            )
        )
    return out
