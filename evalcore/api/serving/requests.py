"""The requests the service answered, by route, method and status: what ``GET /metrics`` shows.

:class:`CountRequests` wraps the whole API (the key check included, so a 401 counts too) and
counts each HTTP answer under the route's template (``/deployments/{name}``, never the path a
caller sent, which may hold anything) or ``unmatched`` for a path no route takes. The counts
live in memory, per server process, from its start: Prometheus reads them as counters.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable

from fastapi.routing import APIRoute
from starlette.routing import Match
from starlette.types import ASGIApp, Message, Receive, Scope, Send

UNMATCHED = "unmatched"
METHODS = frozenset({"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"})


class RequestCounts:
    """``{(route, method, status): answers}``, safe across threads."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._counts: dict[tuple[str, str, str], int] = {}

    def add(self, route: str, method: str, status: int) -> None:
        key = (route, method if method in METHODS else "other", str(status))
        with self._lock:
            self._counts[key] = self._counts.get(key, 0) + 1

    def snapshot(self) -> dict[tuple[str, str, str], int]:
        with self._lock:
            return dict(self._counts)


class CountRequests:
    """ASGI wrapper: ``app``'s HTTP answers counted into ``counts`` under the template of the
    first of ``routes`` that matches (the routers' own routes, included without a prefix)."""

    def __init__(self, app: ASGIApp, counts: RequestCounts, routes: Iterable[object]) -> None:
        self.app = app
        self.counts = counts
        self._routes = [r for r in routes if isinstance(r, APIRoute)]

    def _template(self, scope: Scope) -> str:
        for route in self._routes:
            match, _ = route.matches(scope)
            if match != Match.NONE:  # PARTIAL: the path is the route's, the method is not (405)
                return route.path
        return UNMATCHED

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        status = [500]  # an answer that never started is a failure of ours

        async def sent(message: Message) -> None:
            if message["type"] == "http.response.start":
                status[0] = int(message["status"])
            await send(message)

        try:
            await self.app(scope, receive, sent)
        finally:
            self.counts.add(self._template(scope), str(scope.get("method", "")), status[0])
