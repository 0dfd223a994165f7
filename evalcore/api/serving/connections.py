"""The connections of the dashboard's server (Streamlit's uvicorn): how many may be open at once,
and how long a request's headers may take to arrive, each enforced by the server itself, before
any application code sees the request.

- At most ``EVALCORE_MAX_CONNECTIONS`` connections (default 100), HTTP and WebSocket together
  (a dashboard tab holds one WebSocket). A connection beyond the cap is answered 503
  (problem+json, ``Retry-After``) and closed at once, so slow or idle clients can hold at most
  that many, and the server's memory for them is bounded.
- A request's headers must arrive within ``EVALCORE_HEADER_SECONDS`` (default 10 s) of the
  connection's opening or of the previous answer's end (a timer, not the next chunk): a client
  that sends part of its headers and goes silent is answered 408 and closed; one that sends
  nothing is closed. When the headers are in, the time of the request's first byte goes into
  the scope (:data:`evalcore.api.serving.settings.ARRIVAL_KEY`), so the API's body deadline
  (:class:`evalcore.api.serving.limits.BodyLimit`) counts the whole request.
- An idle kept-alive connection is closed after 5 s (uvicorn's ``timeout_keep_alive``).

Streamlit builds uvicorn's ``Config`` itself and offers no setting for these, so
:func:`guard_server` finds that ``Config`` while uvicorn imports the dashboard's module (the
dashboard calls it from :mod:`evalcore_app.server`) and wraps its HTTP protocol class
(:func:`guarded_protocol`). Only the server imports this module (and uvicorn); the variables are read by
:mod:`evalcore.api.serving.settings`, which the CLI checks before it starts the server.
"""

from __future__ import annotations

import asyncio
import json
import logging
import sys
import time
from typing import Any

import uvicorn

from evalcore.api.serving.settings import (
    ARRIVAL_KEY,
    CONNECTIONS_ENV,
    HEADER_ENV,
    KEEP_ALIVE_SECONDS,
    ConnectionLimits,
    connection_limits,
)

log = logging.getLogger("evalcore.api")

#: Seconds a refused connection is told to wait (``Retry-After``).
RETRY_AFTER = 5


def _problem(status: int, reason: str, kind: str, detail: str, extra: dict[str, str] | None = None) -> bytes:
    """A whole HTTP/1.1 answer holding a problem document, closing the connection."""
    body = json.dumps(
        {"type": "urn:evalcore:problem:" + kind, "title": reason, "status": status, "detail": detail}
    ).encode()
    headers = {
        "content-type": "application/problem+json",
        "content-length": str(len(body)),
        "connection": "close",
        **(extra or {}),
    }
    head = f"HTTP/1.1 {status} {reason}\r\n" + "".join(f"{k}: {v}\r\n" for k, v in headers.items()) + "\r\n"
    return head.encode("ascii") + body


class _Warned:
    """Logs a refused connection at most every 10 s (a flood must not flood the log)."""

    last = float("-inf")

    @classmethod
    def once(cls, message: str) -> None:
        if time.monotonic() - cls.last >= 10:
            cls.last = time.monotonic()
            log.warning("%s", message)


def guarded_protocol(base: type[asyncio.Protocol], limits: ConnectionLimits) -> type[asyncio.Protocol]:
    """A subclass of uvicorn's HTTP protocol class ``base`` that enforces ``limits`` (the module
    doc): its connections cap, and a timer on every wait for a request's headers."""
    too_many = _problem(
        503,
        "Service unavailable",
        "too-many-connections",
        f"the server holds {limits.max_connections} connections, the most it takes ({CONNECTIONS_ENV}); "
        "try again later",
        {"retry-after": str(RETRY_AFTER)},
    )
    too_slow = _problem(
        408,
        "Request timeout",
        "too-slow",
        f"the request's headers took more than {limits.header_seconds:g} s to arrive ({HEADER_ENV})",
    )

    class Guarded(base):  # type: ignore[misc, valid-type]
        _evalcore_timer: asyncio.TimerHandle | None = None
        _evalcore_first: float | None = None
        _evalcore_cycle: Any = None
        _evalcore_refused = False

        def connection_made(self, transport: Any) -> None:
            super().connection_made(transport)
            if len(self.connections) > limits.max_connections:
                self._evalcore_refused = True
                _Warned.once(f"refused a connection: {limits.max_connections} open ({CONNECTIONS_ENV})")
                transport.write(too_many)
                transport.close()
                return
            self._evalcore_wait(time.monotonic())

        def _evalcore_wait(self, since: float) -> None:
            """Wait for the next request's headers, at most the header deadline."""
            self._evalcore_first = None
            self._evalcore_cycle = getattr(self, "cycle", None)
            left = max(0.0, since + limits.header_seconds - time.monotonic())
            self._evalcore_timer = asyncio.get_running_loop().call_later(left, self._evalcore_late)

        def _evalcore_stop(self) -> None:
            if self._evalcore_timer is not None:
                self._evalcore_timer.cancel()
                self._evalcore_timer = None

        def _evalcore_late(self) -> None:
            self._evalcore_timer = None
            transport = self.transport
            if transport.is_closing() or transport.get_protocol() is not self:
                return
            if self._evalcore_first is not None:  # part of a request came: say why it ends
                transport.write(too_slow)
            transport.close()

        def _evalcore_check(self) -> None:
            """After data: the headers are in when a new request cycle began (or the connection
            became a WebSocket, which is no longer this protocol's)."""
            if self._evalcore_timer is None:
                return
            if self.transport.get_protocol() is not self:
                self._evalcore_stop()
                return
            cycle = getattr(self, "cycle", None)
            if cycle is not None and cycle is not self._evalcore_cycle:
                self._evalcore_stop()
                scope = getattr(cycle, "scope", None)
                if isinstance(scope, dict):
                    scope.setdefault("extensions", {})[ARRIVAL_KEY] = self._evalcore_first or time.monotonic()

        def data_received(self, data: bytes) -> None:
            if self._evalcore_refused:
                return
            if self._evalcore_timer is not None and self._evalcore_first is None and data:
                self._evalcore_first = time.monotonic()
            super().data_received(data)
            self._evalcore_check()

        def on_response_complete(self) -> None:
            super().on_response_complete()
            if self.transport.is_closing() or self._evalcore_timer is not None:
                return
            self._evalcore_wait(time.monotonic())
            self._evalcore_check()  # a pipelined request may have begun already

        def connection_lost(self, exc: Exception | None) -> None:
            self._evalcore_stop()
            super().connection_lost(exc)

    Guarded.__name__ = Guarded.__qualname__ = f"Guarded{base.__name__}"
    return Guarded


def _uvicorn_config() -> Any:
    """The ``uvicorn.Config`` that is loading the app now (a frame up the stack), or None."""
    frame = sys._getframe(1)
    while frame is not None:
        candidate = frame.f_locals.get("self")
        if isinstance(candidate, uvicorn.Config):
            return candidate
        frame = frame.f_back  # type: ignore[assignment]
    return None


def guard_server(limits: ConnectionLimits | None = None) -> bool:
    """Guard the uvicorn server that is importing the caller (see the module doc): its protocol
    class wrapped by :func:`guarded_protocol`, its keep-alive set. Returns whether a server was found
    (False, with a warning, when the caller was not imported by uvicorn)."""
    config = _uvicorn_config()
    if config is None or not hasattr(config, "http_protocol_class"):
        log.warning("no uvicorn server is loading the app: connection limits are not installed")
        return False
    limits = limits or connection_limits()
    if not getattr(config.http_protocol_class, "__name__", "").startswith("Guarded"):
        config.http_protocol_class = guarded_protocol(config.http_protocol_class, limits)
    config.timeout_keep_alive = KEEP_ALIVE_SECONDS
    return True
