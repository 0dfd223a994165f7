"""The client's HTTP exchange, which never holds its caller longer than the call's deadline.

* One **wall-clock deadline** a call, over the name's lookup, connect, TLS, sending and the whole
  answer: every socket operation httpx makes during the call gets the time left as its timeout
  (:class:`DeadlineBackend`, under httpcore's connection pool), and the time is checked again
  between the answer's chunks, so a server sending a byte a second is cut at the deadline as a
  silent one is. The name's lookup (``getaddrinfo``, which no socket timeout bounds) runs in a
  thread of its own that the call stops waiting for at the deadline.
* An answer is read as it streams, up to a **cap**: past it (or when its ``Content-Length``
  declares more) the connection is closed and the call fails; nothing is read whole first.
* **Redirects** are followed only for GET, only within the service's own origin (scheme, host
  and port, parsed and compared), at most :data:`MAX_REDIRECTS` times; the key never goes elsewhere.
* The answer is asked for without compression (``Accept-Encoding: identity``); an answer encoded
  all the same is refused rather than decompressed.

Every failure is :class:`~evalcore.errors.ServiceUnavailable` with the reason in words.
"""

from __future__ import annotations

import contextvars
import ipaddress
import json
import math
import socket
import threading
import time
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any
from urllib.parse import urljoin

import httpcore
import httpx

from evalcore.client.origin import Origin, origin_of
from evalcore.errors import ConfigError, ServiceUnavailable

MAX_REDIRECTS = 3  #: same-origin redirects a GET follows
PROBLEM_BYTES = 64 * 1024  #: bytes of an error answer read for its problem document (the rest is dropped)
WRITE_PIECE = 16 * 1024  #: bytes sent a socket write, so that a slow reader cannot stretch one write
ETAG_CHARS = 256  #: longest ETag kept for revalidation

_DEADLINE: contextvars.ContextVar[float | None] = contextvars.ContextVar("evalcore_client_deadline", default=None)


def _left(timeout: float | None, late: type[Exception]) -> float | None:
    """The socket timeout for one operation: ``timeout`` or the time left to the call's deadline,
    whichever is shorter; ``late`` raised when the deadline has passed."""
    deadline = _DEADLINE.get()
    if deadline is None:
        return timeout
    left = deadline - time.monotonic()
    if left <= 0:
        raise late("the call's deadline has passed")
    return left if timeout is None else min(timeout, left)


class _DeadlineStream(httpcore.NetworkStream):
    """A connection whose every read and write waits at most the time left to the call."""

    def __init__(self, inner: httpcore.NetworkStream) -> None:
        self._inner = inner

    def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        return self._inner.read(max_bytes, _left(timeout, httpcore.ReadTimeout))

    def write(self, buffer: bytes, timeout: float | None = None) -> None:
        view = memoryview(buffer)
        for start in range(0, len(view), WRITE_PIECE):
            self._inner.write(bytes(view[start : start + WRITE_PIECE]), _left(timeout, httpcore.WriteTimeout))

    def close(self) -> None:
        self._inner.close()

    def start_tls(
        self,
        ssl_context: Any,
        server_hostname: str | None = None,
        timeout: float | None = None,
    ) -> httpcore.NetworkStream:
        wait = _left(timeout, httpcore.ConnectTimeout)
        return _DeadlineStream(self._inner.start_tls(ssl_context, server_hostname, wait))

    def get_extra_info(self, info: str) -> Any:
        return self._inner.get_extra_info(info)


def lookup_addresses(host: str, port: int, wait: float | None) -> list[str]:
    """The addresses of ``host`` (an address is its own), looked up in a thread that the caller
    waits for at most ``wait`` seconds (httpcore's ConnectTimeout past it)."""
    try:
        return [str(ipaddress.ip_address(host))]
    except ValueError:
        pass
    found: list[str] = []
    failed: list[OSError] = []
    done = threading.Event()

    def look() -> None:
        try:
            for *_, address in socket.getaddrinfo(host, port, type=socket.SOCK_STREAM):
                if str(address[0]) not in found:
                    found.append(str(address[0]))
        except OSError as exc:
            failed.append(exc)
        finally:
            done.set()

    threading.Thread(target=look, name="evalcore-client-lookup", daemon=True).start()
    if not done.wait(wait):
        raise httpcore.ConnectTimeout("no address for the host within the deadline")
    if failed or not found:
        raise httpcore.ConnectError(f"no address for the host ({type(failed[0]).__name__ if failed else 'none'})")
    return found


class DeadlineBackend(httpcore.NetworkBackend):
    """httpcore's network backend under the call's deadline: the lookup, each connect attempt
    and every operation of the connection it makes wait at most the time left."""

    def __init__(self, inner: httpcore.NetworkBackend) -> None:
        self._inner = inner

    def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,
        local_address: str | None = None,
        socket_options: Iterable[Any] | None = None,
    ) -> httpcore.NetworkStream:
        last: Exception | None = None
        for address in lookup_addresses(host, port, _left(timeout, httpcore.ConnectTimeout)):
            try:
                stream = self._inner.connect_tcp(
                    address, port, _left(timeout, httpcore.ConnectTimeout), local_address, socket_options
                )
            except httpcore.ConnectError as exc:  # the next address, as socket.create_connection does
                last = exc
                continue
            return _DeadlineStream(stream)
        raise last or httpcore.ConnectError("no address to connect to")

    def connect_unix_socket(
        self, path: str, timeout: float | None = None, socket_options: Iterable[Any] | None = None
    ) -> httpcore.NetworkStream:
        wait = _left(timeout, httpcore.ConnectTimeout)
        return _DeadlineStream(self._inner.connect_unix_socket(path, wait, socket_options))

    def sleep(self, seconds: float) -> None:
        self._inner.sleep(seconds)


def bound_http(http: httpx.Client) -> httpx.Client:
    """``http`` with :class:`DeadlineBackend` under each of its transports (the direct one and
    any proxy's from the environment); RuntimeError when this httpx keeps its pool elsewhere."""
    for transport in [http._transport, *http._mounts.values()]:
        if transport is None:
            continue
        pool = getattr(transport, "_pool", None)
        backend = getattr(pool, "_network_backend", None)
        if not isinstance(backend, httpcore.NetworkBackend):
            raise RuntimeError("evalcore.Client cannot bound this httpx's connections (it needs httpx 0.28)")
        if not isinstance(backend, DeadlineBackend):
            pool._network_backend = DeadlineBackend(backend)  # type: ignore[union-attr]
    return http


@dataclass(frozen=True)
class ServiceAnswer:
    """An answer read whole within the deadline and the cap."""

    status: int
    reason: str
    headers: httpx.Headers
    body: bytes

    def json(self) -> Any:
        """The body as JSON; ValueError when it is not JSON (``NaN`` and ``Infinity``, which JSON
        has not, included)."""
        return json.loads(self.body, parse_constant=_no_constant)

    @property
    def is_json(self) -> bool:
        kind = str(self.headers.get("Content-Type", "")).split(";", 1)[0].strip().lower()
        return kind == "application/json" or (kind.startswith("application/") and kind.endswith("+json"))

    @property
    def etag(self) -> str | None:
        found = self.headers.get("ETag")
        return found if found and len(found) <= ETAG_CHARS and found.isascii() and found.isprintable() else None


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON number")


@dataclass(frozen=True)
class Exchange:
    """How one call talks to the service at ``base`` (its ``origin``)."""

    http: httpx.Client
    base: str
    origin: Origin
    prefix: str = ""  #: the API's path under ``base``, named in messages

    def call(
        self,
        method: str,
        path: str,
        *,
        timeout: float,
        max_bytes: int,
        headers: dict[str, str] | None = None,
        **kw: Any,
    ) -> ServiceAnswer:
        """``method path`` (under the API's prefix) answered whole within ``timeout`` seconds of
        wall-clock time and ``max_bytes`` bytes; ServiceUnavailable with the reason otherwise."""
        deadline = time.monotonic() + timeout
        token = _DEADLINE.set(deadline)
        what = f"{method} {self.prefix}{path}"
        try:
            target: str = path.lstrip("/")
            for _ in range(MAX_REDIRECTS + 1):
                left = deadline - time.monotonic()
                if left <= 0:
                    raise httpx.ReadTimeout("the call's deadline has passed")
                request = self.http.build_request(method, target, headers=headers, timeout=httpx.Timeout(left), **kw)
                response = self.http.send(request, stream=True)
                try:
                    if response.is_redirect and response.status_code != 304:
                        target = self._follow(response, method, what)
                        continue
                    return _read(response, deadline, max_bytes, f"{self.base}: {what}")
                finally:
                    response.close()
            raise ServiceUnavailable(f"{self.base}: {what}: redirected more than {MAX_REDIRECTS} times")
        except httpx.TimeoutException:
            raise ServiceUnavailable(f"{self.base}: {what}: no whole answer within {timeout:g} s") from None
        except httpx.TransportError as exc:
            raise ServiceUnavailable(f"{self.base}: {what}: cannot reach the service ({type(exc).__name__})") from None
        finally:
            _DEADLINE.reset(token)

    def _follow(self, response: httpx.Response, method: str, what: str) -> str:
        """The URL a redirect points to, when the client may follow it."""
        status = response.status_code
        if method not in ("GET", "HEAD"):
            raise ServiceUnavailable(f"{self.base}: {what}: answered a redirect ({status}); not followed")
        location = str(response.headers.get("Location", ""))
        target = urljoin(str(response.request.url), location)
        found = origin_of(target)
        if found != self.origin:
            elsewhere = str(found) if found is not None else repr(location[:80])
            raise ServiceUnavailable(
                f"{self.base}: {what}: redirected to another origin ({elsewhere}); not followed", status
            )
        return target


def _read(response: httpx.Response, deadline: float, max_bytes: int, what: str) -> ServiceAnswer:
    """The answer's body read as it streams, cut at the cap (an error answer: at
    :data:`PROBLEM_BYTES`, kept) and at the deadline."""
    status = response.status_code
    failed = status >= 400
    cap = min(max_bytes, PROBLEM_BYTES) if failed else max_bytes
    encoding = response.headers.get("Content-Encoding", "identity").strip().lower()
    if encoding not in ("", "identity"):
        if failed:
            return ServiceAnswer(status, response.reason_phrase, response.headers, b"")
        raise ServiceUnavailable(f"{what}: answered in a Content-Encoding it was not asked for ({encoding[:40]!r})")
    declared = response.headers.get("Content-Length", "")
    if not failed and declared.isdigit() and int(declared) > cap:
        raise ServiceUnavailable(f"{what}: the answer is larger than {cap:,} bytes (it declares {int(declared):,})")
    body = bytearray()
    for chunk in response.iter_raw():
        body += chunk
        if len(body) > cap:
            if failed:
                del body[cap:]
                break
            raise ServiceUnavailable(f"{what}: the answer is larger than {cap:,} bytes (cut)")
        if time.monotonic() >= deadline:
            raise httpx.ReadTimeout("the call's deadline has passed")
    return ServiceAnswer(status, response.reason_phrase, response.headers, bytes(body))


def check_seconds(value: float, name: str) -> float:
    """``value`` as seconds above 0 and finite; ConfigError naming ``name`` otherwise."""
    try:
        seconds = float(value)
    except (TypeError, ValueError):
        raise ConfigError(f"{name} must be a number of seconds, got {value!r}") from None
    if not (seconds > 0 and math.isfinite(seconds)):
        raise ConfigError(f"{name} must be more than 0 seconds and finite, got {value!r}")
    return seconds
