"""Every request has a budget: how many bytes its body may hold (checked against
``Content-Length`` before a byte is read, and counted while a chunked body streams in), how long
the whole request may take to arrive, and how many requests a key may make (a token bucket per
key, ``EVALCORE_API_RATE``: :mod:`evalcore.api.serving.rate`). Each limit, when hit, is a problem document
naming it.

The arrival deadline is a timer: each wait for the next piece of the body is bounded by the time
left (``asyncio.wait_for``), so a client that declares 100 bytes, sends 10 and goes silent is
answered 408 when the deadline passes, not when (if ever) its next chunk comes. The deadline
counts from the request's first byte when the server says when that was
(:data:`~evalcore.api.serving.settings.ARRIVAL_KEY` in the scope's extensions:
:mod:`evalcore.api.serving.connections`, which also bounds the time the headers may take), else from when the headers
were read.
"""

from __future__ import annotations

import asyncio
import os
import time
from collections.abc import Callable

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from evalcore.api.serving.problems import Problem, response
from evalcore.api.serving.settings import ARRIVAL_KEY, BODY_DEADLINE, BODY_DEADLINE_ENV, body_deadline
from evalcore.errors import ConfigError

MB = 1024 * 1024
#: A JSON body (a run spec, a decision, a gate request, a deployment).
MAX_JSON = 1 * MB
#: One traffic post: at most this many bytes and :data:`MAX_TRAFFIC_LINES` lines.
MAX_TRAFFIC = 5 * MB
MAX_TRAFFIC_LINES = 1000
#: A run file (``POST /runs``); ``EVALCORE_API_MAX_RUN_BYTES`` changes it.
MAX_RUN_FILE = 512 * MB
MAX_RUN_FILE_ENV = "EVALCORE_API_MAX_RUN_BYTES"
#: Seconds a wait for a part of the body may take when the app asks for it after the deadline
#: (the part may be waiting already; one still to come is too late).
GRACE = 0.5


def run_file_limit() -> int:
    raw = os.environ.get(MAX_RUN_FILE_ENV, "").strip()
    if not raw:
        return MAX_RUN_FILE
    if not raw.isdigit() or int(raw) <= 0:
        raise ConfigError(f"{MAX_RUN_FILE_ENV} must be a positive number of bytes, got {raw!r}")
    return int(raw)


def body_limit(path: str) -> tuple[int, str]:
    """The most bytes a request to ``path`` (under /api/v1) may send, and the limit's words."""
    if path.rstrip("/").endswith("/runs"):
        cap = run_file_limit()
        return cap, f"a run file may be at most {cap:,} bytes (${MAX_RUN_FILE_ENV})"
    if path.rstrip("/").endswith("/traffic"):
        return MAX_TRAFFIC, f"a traffic post may be at most {MAX_TRAFFIC:,} bytes and {MAX_TRAFFIC_LINES:,} lines"
    if path.rstrip("/").endswith("/otlp/v1/traces"):  # evalcore.api.otlp: an OTLP export, as a traffic post
        return MAX_TRAFFIC, f"an OTLP export may be at most {MAX_TRAFFIC:,} bytes (compressed as sent)"
    return MAX_JSON, f"a request body may be at most {MAX_JSON:,} bytes"


def arrival(scope: Scope) -> float | None:
    """When the request's first byte arrived (``time.monotonic()``), if its server said so."""
    value = (scope.get("extensions") or {}).get(ARRIVAL_KEY)
    return float(value) if isinstance(value, (int, float)) else None


class BodyLimit:
    """ASGI wrapper: refuses a body over its path's limit (413) before reading it when its
    ``Content-Length`` says so, stops reading one that streams past the limit (413), and answers
    408 (closing the connection) when the whole request has not arrived within
    :data:`BODY_DEADLINE` seconds: a timer bounds every wait for the body."""

    def __init__(self, app: ASGIApp, limit: Callable[[str], tuple[int, str]] = body_limit) -> None:
        self.app = app
        self.limit = limit
        self.deadline = body_deadline()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        cap, words = self.limit(str(scope.get("path", "")))
        length = None
        for name, value in scope.get("headers", []):
            if name == b"content-length":
                try:
                    length = int(value)
                except ValueError:
                    await response(400, "Content-Length is not a number", "bad-length")(scope, receive, send)
                    return
        if length is not None and length > cap:
            await response(413, f"the body is {length:,} bytes; {words}", "too-large")(scope, receive, send)
            return
        seen = 0
        due = (arrival(scope) or time.monotonic()) + self.deadline
        whole = False  # the body has arrived: later receives wait for a disconnect, with no deadline

        async def counted() -> Message:
            nonlocal seen, whole
            if whole:
                return await receive()
            try:  # a part already received is still taken after the deadline (within the grace)
                message = await asyncio.wait_for(receive(), max(GRACE, due - time.monotonic()))
            except TimeoutError:
                raise self.too_slow() from None
            if message["type"] == "http.request":
                seen += len(message.get("body", b""))
                if seen > cap:
                    raise Problem(413, f"the body passed {cap:,} bytes; {words}", "too-large")
                whole = not message.get("more_body", False)
                if not whole and time.monotonic() > due:
                    raise self.too_slow()
            else:
                whole = True
            return message

        await self.app(scope, counted, send)

    def too_slow(self) -> Problem:
        """408, closing the connection (the rest of the body is not waited for)."""
        return Problem(
            408,
            f"the request took more than {self.deadline:g} s to arrive ({BODY_DEADLINE_ENV})",
            "too-slow",
            headers={"Connection": "close"},
        )


__all__ = [
    "ARRIVAL_KEY",
    "BODY_DEADLINE",
    "BODY_DEADLINE_ENV",
    "GRACE",
    "BodyLimit",
    "arrival",
    "body_deadline",
    "body_limit",
    "run_file_limit",
]
