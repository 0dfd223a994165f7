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
"""

from __future__ import annotations

import http.client
import json
import logging
import os
import random
import socket
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from evalcore import __version__
from evalcore.errors import ConfigError
from evalcore.external.hits import BadHits, RawHit, number, offset, text_or_none
from evalcore.external.record import Failure
from evalcore.external.responses import Response
from evalcore.inputs import jsontext
from evalcore.pipeline.configurations import EXTERNAL

if TYPE_CHECKING:
    from email.message import Message
    from pathlib import Path
    from typing import IO

    from evalcore.external.live import LiveResult, Outcome
    from evalcore.progress import Progress
    from evalcore.records import Corpus, GroundTruth
    from evalcore.store.connection import Store

log = logging.getLogger(__name__)

DEFAULT_BODY = '{"query": "{query}", "k": "{k}"}'
RETRY_STATUS = frozenset({408, 425, 429, 500, 502, 503, 504})
MAX_RESPONSE = 4 * 1024 * 1024  # bytes read of one answer (default)
MAX_RESPONSE_ENV = "EVALCORE_MAX_RESPONSE_BYTES"  # the operator's cap on one answer's size
READ_PIECE = 64 * 1024
MAX_RETRY_AFTER = 60.0
FLUSH_EVERY = 1.0  # seconds between two writes of new answers to the cache
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
    import os

    return [p.strip() for p in os.environ.get(ALLOWED_ENV, "").split(",") if p.strip()]


def allowed(url: str) -> None:
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
                number(score, f"hit {i}: score"),
            )
        )
    return out


# --- sending requests -----------------------------------------------------------------------


class FetchFailed(Exception):
    """A request that failed for good: the reason and the requests sent."""

    def __init__(self, reason: str, attempts: int) -> None:
        super().__init__(reason)
        self.reason = reason
        self.attempts = attempts


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(
        self, req: urllib.request.Request, fp: IO[bytes], code: int, msg: str, headers: Message, newurl: str
    ) -> urllib.request.Request | None:
        return None  # urllib then raises HTTPError with the 3xx status


@dataclass
class Counters:
    """What a run sent: requests (retries included), answers from the cache, retries."""

    requests: int = 0
    cached: int = 0
    retries: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def add(self, **counts: int) -> None:
        with self.lock:
            for name, n in counts.items():
                setattr(self, name, getattr(self, name) + n)

    def as_dict(self) -> dict[str, int]:
        return {"requests": self.requests, "cached": self.cached, "retries": self.retries}


def _detail(exc: urllib.error.HTTPError) -> str:
    try:
        body = exc.read(300).decode("utf-8", errors="replace").strip().replace("\n", " ")
    except Exception:  # noqa: BLE001 - the status is what matters
        body = ""
    return f": {body[:200]}" if body else ""


def _retry_after(exc: urllib.error.HTTPError) -> float | None:
    value = exc.headers.get("Retry-After") if exc.headers else None
    try:
        return min(float(value), MAX_RETRY_AFTER) if value is not None else None
    except ValueError:
        return None


def max_response() -> int:
    """The most bytes of one answer that are read: ``$EVALCORE_MAX_RESPONSE_BYTES`` or 4 MiB."""
    raw = os.environ.get(MAX_RESPONSE_ENV, "").strip()
    if not raw:
        return MAX_RESPONSE
    if not raw.isdigit() or int(raw) < 1:
        raise ConfigError(f"{MAX_RESPONSE_ENV} must be a positive number of bytes, got {raw!r}")
    return int(raw)


class Deadline:
    """The end of one request, whatever the server does: at ``seconds`` (or on :meth:`expire`)
    every socket of the request is shut down, so a read blocked on a server that sends a byte
    now and then returns at once."""

    def __init__(self, seconds: float) -> None:
        self.lock = threading.Lock()
        self.sockets: list[socket.socket] = []
        self.expired = False
        self.timer = threading.Timer(seconds, self.expire)
        self.timer.daemon = True
        self.timer.start()

    def attach(self, sock: socket.socket) -> None:
        with self.lock:
            self.sockets.append(sock)
            if self.expired:
                _shut(sock)

    def expire(self) -> None:
        with self.lock:
            self.expired = True
            for sock in self.sockets:
                _shut(sock)

    def done(self) -> None:
        self.timer.cancel()


def _shut(sock: socket.socket) -> None:
    try:
        sock.shutdown(socket.SHUT_RDWR)
    except OSError:
        pass


def _opener(deadline: Deadline) -> urllib.request.OpenerDirector:
    """An opener that follows no redirect and hands each connection's socket to ``deadline``."""

    class Plain(http.client.HTTPConnection):
        def connect(self) -> None:
            super().connect()
            deadline.attach(self.sock)

    class Secure(http.client.HTTPSConnection):
        def connect(self) -> None:
            super().connect()
            deadline.attach(self.sock)

    class PlainHandler(urllib.request.HTTPHandler):
        def http_open(self, req: urllib.request.Request) -> http.client.HTTPResponse:
            return self.do_open(Plain, req)

    class SecureHandler(urllib.request.HTTPSHandler):
        def https_open(self, req: urllib.request.Request) -> http.client.HTTPResponse:
            return self.do_open(Secure, req, context=getattr(self, "_context", None))

    return urllib.request.build_opener(_NoRedirect(), PlainHandler(), SecureHandler())


def _read_capped(resp: http.client.HTTPResponse, cap: int, attempts: int) -> bytes:
    declared = resp.headers.get("Content-Length")
    if declared and declared.strip().isdigit() and int(declared) > cap:
        raise FetchFailed(
            f"answer of {int(declared):,} bytes is over the {cap:,}-byte limit (${MAX_RESPONSE_ENV})", attempts
        )
    pieces: list[bytes] = []
    size = 0
    while True:
        piece = resp.read1(READ_PIECE)
        if not piece:
            return b"".join(pieces)
        size += len(piece)
        if size > cap:
            raise FetchFailed(
                f"answer larger than the {cap:,}-byte limit (${MAX_RESPONSE_ENV}); not read further", attempts
            )
        pieces.append(piece)


class Requests:
    """The deadlines of the requests in flight, so that stopping a run ends them all at once."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.live: set[Deadline] = set()
        self.stopped = False

    def open(self, seconds: float) -> Deadline:
        deadline = Deadline(seconds)
        with self.lock:
            self.live.add(deadline)
            if self.stopped:
                deadline.expire()
        return deadline

    def close(self, deadline: Deadline) -> None:
        deadline.done()
        with self.lock:
            self.live.discard(deadline)

    def stop(self) -> None:
        with self.lock:
            self.stopped = True
            for deadline in self.live:
                deadline.expire()


def fetch(
    endpoint: Endpoint,
    method: str,
    url: str,
    body: str | None,
    counters: Counters,
    flights: Requests | None = None,
) -> Response:
    """One query's answer (2xx), with retries; FetchFailed with the reason otherwise. Each
    attempt ends within ``endpoint.timeout`` seconds, its answer read up to :func:`max_response`."""
    headers = {"Accept": "application/json", "User-Agent": f"evalcore/{__version__}", **dict(endpoint.headers)}
    if body is not None:
        headers.setdefault("Content-Type", "application/json")
    data = body.encode("utf-8") if body is not None else None
    cap = max_response()
    flights = flights or Requests()
    attempts = 0
    while True:
        attempts += 1
        counters.add(requests=1)
        wait: float | None = None
        t0 = time.perf_counter()
        deadline = flights.open(endpoint.timeout)
        try:
            if flights.stopped:
                raise FetchFailed("stopped", attempts)
            req = urllib.request.Request(url, data=data, method=method, headers=headers)
            with _opener(deadline).open(req, timeout=endpoint.timeout) as resp:
                raw = _read_capped(resp, cap, attempts)
                if deadline.expired:
                    raise TimeoutError("timed out")
                charset = resp.headers.get_content_charset() or "utf-8"
                try:
                    text = raw.decode(charset, errors="replace")
                except LookupError:
                    text = raw.decode("utf-8", errors="replace")
                return Response(resp.status, text, time.perf_counter() - t0, attempts)
        except urllib.error.HTTPError as exc:
            if 300 <= exc.code < 400:
                raise FetchFailed(
                    f"HTTP {exc.code}: redirected to {exc.headers.get('Location')}; redirects are "
                    "not followed (give the final URL)",
                    attempts,
                ) from None
            reason = f"HTTP {exc.code} {exc.reason}{_detail(exc)}"
            if exc.code not in RETRY_STATUS:
                raise FetchFailed(reason, attempts) from None
            wait = _retry_after(exc)
        except (TimeoutError, urllib.error.URLError, ConnectionError, OSError, http.client.HTTPException) as exc:
            inner = getattr(exc, "reason", exc)
            if deadline.expired or isinstance(inner, TimeoutError) or "timed out" in str(inner):
                reason = f"no complete answer within {endpoint.timeout:g} s"
            elif isinstance(exc, http.client.HTTPException):
                reason = f"a broken HTTP answer from {urllib.parse.urlsplit(url).netloc} ({type(exc).__name__})"
            else:
                reason = f"cannot reach {urllib.parse.urlsplit(url).netloc}: {inner}"
        finally:
            flights.close(deadline)
        if flights.stopped:
            raise FetchFailed("stopped", attempts)
        if attempts > endpoint.retries:
            tries = f" (after {attempts} attempts)" if attempts > 1 else ""
            raise FetchFailed(reason + tries, attempts)
        delay = endpoint.backoff * 2 ** (attempts - 1)
        delay += random.uniform(0, delay)
        if wait is not None:
            delay = max(delay, wait)
        counters.add(retries=1)
        log.info("%s %s: %s; retry %d in %.2f s", method, url, reason, attempts, delay)
        time.sleep(delay)


def answers(
    endpoint: Endpoint,
    store: Store,
    queries: list[tuple[str, str]],
    counters: Counters,
    cancelled: Callable[[], bool] | None = None,
) -> Iterator[Outcome]:
    """Each query's hits (or Failure), cached answers first, then as requests complete.
    ``cancelled`` is asked twice a second while requests are in flight; when it says so (or
    the run is stopped otherwise) every request in flight ends at once."""
    from concurrent.futures import FIRST_COMPLETED, wait

    from evalcore.errors import RunInterrupted
    from evalcore.external import responses

    max_response()  # a bad cap is the operator's error before anything is sent
    requests = {qid: endpoint.request(qid, text) for qid, text in queries}
    keys = {qid: responses.key(*req, headers=endpoint.headers) for qid, req in requests.items()}
    found = {} if endpoint.refresh else responses.cached(store, list(keys.values()))

    def outcome(qid: str, response: Response) -> Outcome:
        try:
            return qid, parse(response.text, endpoint.fields, endpoint.k)
        except BadHits as exc:
            return qid, Failure(str(exc), response.attempts)

    for qid, _ in queries:
        if keys[qid] in found:
            counters.add(cached=1)
            yield outcome(qid, found[keys[qid]])
    todo = [qid for qid, _ in queries if keys[qid] not in found]
    if not todo:
        return
    flights = Requests()
    pool = ThreadPoolExecutor(max_workers=endpoint.concurrency, thread_name_prefix="evalcore-endpoint")
    fresh: list[tuple[str, str, str, str | None, Response]] = []
    flushed = time.monotonic()
    try:
        futures = {pool.submit(fetch, endpoint, *requests[qid], counters, flights): qid for qid in todo}
        pending = set(futures)
        while pending:
            done, pending = wait(pending, timeout=0.5, return_when=FIRST_COMPLETED)
            if cancelled is not None and cancelled():
                raise RunInterrupted("cancelled by the user")
            for future in done:
                qid = futures.pop(future)  # its answer is not held longer than needed
                try:
                    response = future.result()
                except FetchFailed as exc:
                    yield qid, Failure(exc.reason, exc.attempts)
                    continue
                fresh.append((keys[qid], *requests[qid], response))
                if time.monotonic() - flushed > FLUSH_EVERY:
                    responses.keep(store, fresh)
                    fresh, flushed = [], time.monotonic()
                yield outcome(qid, response)
    finally:
        flights.stop()  # requests still in flight end now: no thread outlives the run
        pool.shutdown(wait=False, cancel_futures=True)
        responses.keep(store, fresh)


def run_endpoint(
    store: Store,
    corpus: Corpus,
    gt: GroundTruth,
    endpoint: Endpoint,
    name: str,
    chunker: str = EXTERNAL,
    retriever: str = EXTERNAL,
    score: str = "similarity",
    chunks_path: str | Path | None = None,
    max_failures: float | None = None,
    progress: Progress | None = None,
    cancelled: Callable[[], bool] | None = None,
    run_id: str | None = None,
) -> LiveResult:
    """Ask the service every query and store the run (:func:`evalcore.external.live.run_live`).

    ``chunks_path`` (optional) is the service's whole chunk set as a chunk file: hits may then
    name chunks by id alone, and destroyed answers can be counted; without it, the chunk set
    is what the service returned. Inputs are checked before the run row is written."""
    from evalcore.external.chunks import ChunkSet, read_chunks
    from evalcore.external.importer import _check_name
    from evalcore.external.live import run_live
    from evalcore.external.record import DEFAULT_MAX_FAILURES
    from evalcore.pipeline.configurations import external

    endpoint.check()
    _check_name(chunker, "--chunker")
    _check_name(retriever, "--retriever")
    share = DEFAULT_MAX_FAILURES if max_failures is None else float(max_failures)
    if not 0.0 <= share <= 1.0:
        raise ConfigError(f"--max-failures must lie in [0, 1] (a share of the queries), got {max_failures!r}")
    if not gt.valid_questions:
        raise ConfigError("no valid in-domain question to score (every needle is invalid); see validate")
    chunks = read_chunks(chunks_path, corpus) if chunks_path else ChunkSet(corpus, complete=False)
    detail = endpoint.described()
    config = external(chunker, retriever, "endpoint", score, {**detail, "chunks": str(chunks_path or "")})
    counters = Counters()
    settings = {"endpoint": detail, "chunks_path": str(chunks_path) if chunks_path else None, "max_failures": share}
    return run_live(
        store,
        corpus,
        gt,
        config,
        chunks,
        lambda queries: answers(endpoint, store, queries, counters, cancelled),
        name,
        settings,
        run_id=run_id,
        max_failures=share,
        progress=progress,
        cancelled=cancelled,
        stats=counters.as_dict,
    )
