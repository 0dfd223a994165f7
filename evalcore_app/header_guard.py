"""A page request whose headers the dashboard's live connection would refuse gets a page that
says so, instead of a blank page.

The dashboard draws nothing over plain HTTP: the page it serves opens a WebSocket, and the
browser sends that handshake with the same headers (an authenticating proxy adds its header to
both). The WebSocket layer of the server (the ``websockets`` package) refuses a handshake with a
header line longer than its limit (8,192 bytes unless ``WEBSOCKETS_MAX_LINE_LENGTH`` says
otherwise) or with more than its number of headers (128, ``WEBSOCKETS_MAX_NUM_HEADERS``): it
answers 431 before any code of the dashboard runs, and the page stays blank, with no word.

The page request itself still reaches the application, so :class:`HeaderGuard` (ASGI middleware,
after the API's :class:`evalcore.api.ApiFirst`: the API keeps its own rules) answers it with
431 and a short HTML page naming the header, its size and the limit, and saying when it is the
trusted header (``EVALCORE_USER_HEADER``); the log gets one line. Header values are never
echoed. Raising the limit is not the fix: a header that large is a proxy's mistake.
"""

from __future__ import annotations

import html
import logging
from typing import TYPE_CHECKING

from websockets import http11

from evalcore.authors import trusted_header

if TYPE_CHECKING:
    from starlette.types import ASGIApp, Receive, Scope, Send

log = logging.getLogger("evalcore.dashboard")


def limits() -> tuple[int, int]:
    """(the longest header line, the most headers) the server's WebSocket layer accepts (its
    defaults, or what ``WEBSOCKETS_MAX_LINE_LENGTH`` and ``WEBSOCKETS_MAX_NUM_HEADERS`` set)."""
    return int(http11.MAX_LINE_LENGTH), int(http11.MAX_NUM_HEADERS)


def refusal(headers: list[tuple[bytes, bytes]], trusted: str | None = None) -> str | None:
    """Why a handshake with ``headers`` (the ASGI scope's) would be refused, in one sentence
    naming the header, or None when it would be accepted. ``trusted``: the trusted header's
    name (``EVALCORE_USER_HEADER``), said as such."""
    longest, most = limits()
    if len(headers) > most:
        return f"the request carries {len(headers):,} headers, more than the {most:,} the dashboard's connection takes"
    for name, value in headers:
        size = len(name) + 2 + len(value) + 2  # "Name: value\r\n", as the line travels
        if size > longest:
            shown = name.decode("latin-1")
            which = (
                f"the trusted header {trusted} (EVALCORE_USER_HEADER)"
                if trusted and shown.lower() == trusted.lower()
                else f"the header {shown}"
            )
            return f"{which} is a line of {size:,} bytes, more than the {longest:,} the dashboard's connection takes"
    return None


PAGE = """<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>evalcore: request refused</title></head>
<body style="font-family:sans-serif;max-width:48em;margin:3em auto;line-height:1.5">
<h1>The dashboard cannot open with this request</h1>
<p>{why}.</p>
<p>The dashboard draws its pages over a live connection that the server refuses with headers
this large, so the page would stay blank. {hint}</p>
</body></html>
"""


class HeaderGuard:
    """ASGI middleware: an HTTP request whose headers the WebSocket handshake would be refused
    with (:func:`refusal`) is answered 431 with a page that says why; everything else passes."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        trusted = trusted_header()
        why = refusal(list(scope.get("headers", [])), trusted)
        if why is None:
            await self.app(scope, receive, send)
            return
        log.warning("request refused with 431: %s", why)
        hint = (
            "Ask the operator to check what the proxy in front of the dashboard puts in that header."
            if trusted and "trusted header" in why
            else "Remove or shorten that header (a browser extension or a proxy may add it), then reload."
        )
        body = PAGE.format(why=html.escape(why[0].upper() + why[1:]), hint=html.escape(hint)).encode("utf-8")
        await send(
            {
                "type": "http.response.start",
                "status": 431,
                "headers": [
                    (b"content-type", b"text/html; charset=utf-8"),
                    (b"content-length", str(len(body)).encode()),
                    (b"cache-control", b"no-store"),
                ],
            }
        )
        await send({"type": "http.response.body", "body": body})
