"""The server's limits as its environment sets them, read without loading any web framework (the
CLI checks them before it starts the server: a bad value stops it with one line naming the
variable). Enforced by :mod:`evalcore.api.serving.connections` (connections, headers, keep-alive) and
:class:`evalcore.api.serving.limits.BodyLimit` (the whole request's arrival); docs/DEPLOY.md, "Limits".
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from evalcore.errors import ConfigError

#: Seconds a whole request (headers and body) may take to arrive (a client sending a byte a
#: second is cut off); ``EVALCORE_API_BODY_SECONDS`` changes it.
BODY_DEADLINE = 120.0
BODY_DEADLINE_ENV = "EVALCORE_API_BODY_SECONDS"
#: The scope's extension that holds when the request's first byte arrived (``time.monotonic()``).
ARRIVAL_KEY = "evalcore.arrival"


def body_deadline() -> float:
    """``$EVALCORE_API_BODY_SECONDS`` (default 120); ConfigError naming it when bad."""
    raw = os.environ.get(BODY_DEADLINE_ENV, "").strip()
    try:
        value = float(raw) if raw else BODY_DEADLINE
    except ValueError:
        value = -1.0
    if not 0 < value < 86400:
        raise ConfigError(f"{BODY_DEADLINE_ENV} must be a number of seconds in (0, 86400), got {raw!r}")
    return value


CONNECTIONS_ENV = "EVALCORE_MAX_CONNECTIONS"
HEADER_ENV = "EVALCORE_HEADER_SECONDS"
DEFAULT_MAX_CONNECTIONS = 100
DEFAULT_HEADER_SECONDS = 10.0
KEEP_ALIVE_SECONDS = 5


@dataclass(frozen=True, slots=True)
class ConnectionLimits:
    """The most connections open at once, and the seconds a request's headers may take."""

    max_connections: int = DEFAULT_MAX_CONNECTIONS
    header_seconds: float = DEFAULT_HEADER_SECONDS


def connection_limits() -> ConnectionLimits:
    """``$EVALCORE_MAX_CONNECTIONS`` (default 100 connections open at once, HTTP and WebSocket) and
    ``$EVALCORE_HEADER_SECONDS`` (default 10 s for a request's headers); ConfigError naming the
    variable when bad."""
    raw = os.environ.get(CONNECTIONS_ENV, "").strip()
    if raw and (not raw.isdigit() or not 1 <= int(raw) <= 1_000_000):
        raise ConfigError(f"{CONNECTIONS_ENV} must be a whole number from 1 to 1,000,000, got {raw!r}")
    cap = int(raw) if raw else DEFAULT_MAX_CONNECTIONS
    raw = os.environ.get(HEADER_ENV, "").strip()
    try:
        seconds = float(raw) if raw else DEFAULT_HEADER_SECONDS
    except ValueError:
        seconds = -1.0
    if not 0 < seconds <= 3600:
        raise ConfigError(f"{HEADER_ENV} must be a number of seconds in (0, 3600], got {raw!r}")
    return ConnectionLimits(cap, seconds)
