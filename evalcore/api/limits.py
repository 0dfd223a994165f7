"""Every request has a budget: how many bytes its body may hold (checked against
``Content-Length`` before a byte is read, and counted while a chunked body streams in), how long
the whole body may take to arrive, and how many requests a key may make (a token bucket per key,
``EVALCORE_API_RATE``: :mod:`evalcore.api.rate`). Each limit, when hit, is a problem document
naming it.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from evalcore.api.problems import Problem, response
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
#: Seconds a whole body may take to arrive (a client sending a byte a second is cut off);
#: ``EVALCORE_API_BODY_SECONDS`` changes it.
BODY_DEADLINE = 120.0
BODY_DEADLINE_ENV = "EVALCORE_API_BODY_SECONDS"


def run_file_limit() -> int:
    raw = os.environ.get(MAX_RUN_FILE_ENV, "").strip()
    if not raw:
        return MAX_RUN_FILE
    if not raw.isdigit() or int(raw) <= 0:
        raise ConfigError(f"{MAX_RUN_FILE_ENV} must be a positive number of bytes, got {raw!r}")
    return int(raw)


def body_deadline() -> float:
    raw = os.environ.get(BODY_DEADLINE_ENV, "").strip()
    try:
        value = float(raw) if raw else BODY_DEADLINE
    except ValueError:
        value = -1.0
    if not 0 < value < 86400:
        raise ConfigError(f"{BODY_DEADLINE_ENV} must be a number of seconds in (0, 86400), got {raw!r}")
    return value


def body_limit(path: str) -> tuple[int, str]:
    """The most bytes a request to ``path`` (under /api/v1) may send, and the limit's words."""
    if path.rstrip("/").endswith("/runs"):
        cap = run_file_limit()
        return cap, f"a run file may be at most {cap:,} bytes (${MAX_RUN_FILE_ENV})"
    if path.rstrip("/").endswith("/traffic"):
        return MAX_TRAFFIC, f"a traffic post may be at most {MAX_TRAFFIC:,} bytes and {MAX_TRAFFIC_LINES:,} lines"
    return MAX_JSON, f"a request body may be at most {MAX_JSON:,} bytes"


class BodyLimit:
    """ASGI wrapper: refuses a body over its path's limit (413) before reading it when its
    ``Content-Length`` says so, and stops reading one that streams past the limit or past
    :data:`BODY_DEADLINE` seconds (408)."""

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
        began = time.monotonic()

        async def counted() -> Message:
            nonlocal seen
            message = await receive()
            if message["type"] == "http.request":
                seen += len(message.get("body", b""))
                if seen > cap:
                    raise Problem(413, f"the body passed {cap:,} bytes; {words}", "too-large")
                if message.get("more_body") and time.monotonic() - began > self.deadline:
                    raise Problem(
                        408, f"the body took more than {self.deadline:g} s to arrive ({BODY_DEADLINE_ENV})", "too-slow"
                    )
            return message

        await self.app(scope, counted, send)
