"""Calling a live search service (:mod:`evalcore.external.endpoint` says what an endpoint is and
how its answers are read): one HTTP request per query, ``concurrency`` at a time, within a
whole-request deadline, an answer read up to a size cap, retried with backoff; answers cached
in the store; ``run-endpoint``'s run recorded.
"""

from __future__ import annotations

import http.client
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
from concurrent.futures import FIRST_COMPLETED, ThreadPoolExecutor
from concurrent.futures import wait as wait_first
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from evalcore import __version__
from evalcore.configurations import EXTERNAL, external
from evalcore.errors import Cancelled, ConfigError
from evalcore.external import responses
from evalcore.external.chunks import ChunkSet, read_chunks
from evalcore.external.endpoint import Endpoint, parse
from evalcore.external.hits import BadHits
from evalcore.external.importer import check_label
from evalcore.external.live import run_live
from evalcore.external.record import DEFAULT_MAX_FAILURES, Failure
from evalcore.external.responses import Response

if TYPE_CHECKING:
    from email.message import Message
    from pathlib import Path
    from typing import IO

    from evalcore.external.live import LiveResult, Outcome
    from evalcore.progress import Progress
    from evalcore.records import Corpus, GroundTruth
    from evalcore.store import Store

log = logging.getLogger(__name__)

RETRY_STATUS = frozenset({408, 425, 429, 500, 502, 503, 504})
MAX_RESPONSE = 4 * 1024 * 1024  # bytes read of one answer (default)
MAX_RESPONSE_ENV = "EVALCORE_MAX_RESPONSE_BYTES"  # the operator's cap on one answer's size
READ_PIECE = 64 * 1024
MAX_RETRY_AFTER = 60.0
FLUSH_EVERY = 1.0  # seconds between two writes of new answers to the cache


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
    max_response()  # a bad cap is the operator's error before anything is sent
    requests = {qid: endpoint.request(qid, text) for qid, text in queries}
    keys = {qid: responses.key(*req, headers=endpoint.headers) for qid, req in requests.items()}
    found = {} if endpoint.refresh else responses.cached_responses(store, list(keys.values()))

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
            done, pending = wait_first(pending, timeout=0.5, return_when=FIRST_COMPLETED)
            if cancelled is not None and cancelled():
                raise Cancelled("cancelled by the user")
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

    endpoint.check()
    check_label(chunker, "--chunker")
    check_label(retriever, "--retriever")
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
