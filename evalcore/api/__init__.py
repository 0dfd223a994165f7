"""evalcore's HTTP API, ``/api/v1``, served by the dashboard's own server (docs/API.md).

- :mod:`~evalcore.api.app`: the FastAPI application and its state.
- one module per resource: :mod:`~evalcore.api.health`, :mod:`~evalcore.api.runs` (runs,
  claims, decisions, the gate), :mod:`~evalcore.api.deployments` (deployments and their
  traffic), :mod:`~evalcore.api.evaluations`. A route is as thin as a screen: it parses, calls the library
  function the CLI calls, and answers with what the CLI prints as JSON.
- :mod:`~evalcore.api.serving.auth` (keys, scopes, the rate), :mod:`~evalcore.api.serving.limits` (body
  sizes, the deadline, the token bucket), :mod:`~evalcore.api.serving.problems` (every error as
  problem+json), :mod:`~evalcore.api.models` (request bodies), :mod:`~evalcore.api.serving.jsonout`.

:class:`ApiFirst` is how a server carries it: an ASGI middleware that hands every request under
``/<base>/api/v1`` to the API (as a Starlette ``Mount`` would) before anything of the host sees it,
so Streamlit's own middleware (its session cookie, its plain-text "Bad Request" for odd paths)
never touches an API answer, and every API answer, errors included, is the API's own: a path
holding a control character (CR, LF, NUL, ...: no route's path can) is a 404 problem before any
routing, no path is redirected, and an error nobody foresaw is a 500 problem and one line in the
log, never a traceback through the host's server. A revalidation of a deployment that is still
current is answered before the mount, by :mod:`~evalcore.api.serving.revalidate` (same checks, no
framework). This package never imports Streamlit: :mod:`evalcore_app.server` adds it to the
dashboard's ``st.App``.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pathlib import Path

    from starlette.types import ASGIApp, Message, Receive, Scope, Send

    from evalcore.api.serving.revalidate import Revalidation

PREFIX = "/api/v1"
#: C0 controls (NUL, CR, LF, ESC, ...) and DEL: no path of the API holds one
_CONTROL = re.compile("[\x00-\x1f\x7f]")


def prefix(base_url_path: str = "") -> str:
    """``/api/v1`` under a server's base path (Streamlit's ``server.baseUrlPath``)."""
    base = "/".join(p for p in base_url_path.strip("/").split("/") if p)
    return ("/" + base if base else "") + PREFIX


class ApiFirst:
    """ASGI middleware: requests under :func:`prefix` go to the API (mounted there), the rest to
    the wrapped app. ``api`` is built on the first request (:func:`evalcore.api.app.create_app`
    over ``store_path``) unless given."""

    def __init__(
        self, app: ASGIApp, base_url_path: str = "", store_path: str | Path | None = None, api: ASGIApp | None = None
    ) -> None:
        from evalcore.api.serving.rate import check_rates

        check_rates()  # a bad rate variable stops the server where this is built, naming it
        self.app = app
        self.prefix = prefix(base_url_path)
        self.store_path = store_path
        self._api = api
        self._fast: Revalidation | None = None

    def _mounted(self) -> ASGIApp:
        if self._api is None:
            from evalcore.api.app import create_api, guarded_api
            from evalcore.api.serving.revalidate import Revalidation

            built = create_api(self.store_path)
            self._fast = Revalidation(built, self.prefix)
            self._api = guarded_api(built)  # what create_app gives, with the FastAPI app at hand
        return self._api

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        path = str(scope.get("path", ""))
        if scope["type"] == "http" and (path == self.prefix or path.startswith(self.prefix + "/")):
            await self._serve(scope, receive, send)
            return
        await self.app(scope, receive, send)

    async def _serve(self, scope: Scope, receive: Receive, send: Send) -> None:
        """The API's answer to one request, whatever happens: a 500 problem (and one line in the
        log) for an error nobody foresaw, if nothing was sent yet; never an exception out of here."""
        from evalcore.api.serving.problems import internal, log_unexpected, logged, response

        started = False

        async def sending(message: Message) -> None:
            nonlocal started
            if message["type"] == "http.response.start":
                started = True
            await send(message)

        path = str(scope["path"])
        try:
            api = self._mounted()
            if not path.isprintable() and _CONTROL.search(path):
                found = _CONTROL.search(path)
                assert found is not None
                where = f"U+{ord(found.group()):04X} at character {found.start() + 1}"
                detail = (
                    f"no such resource: the path holds a control character ({where}); see {self.prefix}/openapi.json"
                )
                await response(404, detail, "not-found")(scope, receive, sending)
                return
            if self._fast is not None and await self._fast.answer(scope, sending):
                return
            # mounted as a Starlette Mount would, without its routing (no redirect, no path it cannot match)
            child = dict(scope)
            child["app_root_path"] = scope.get("app_root_path", scope.get("root_path", ""))
            child["root_path"] = self.prefix
            await api(child, receive, sending)
        except Exception as exc:  # noqa: BLE001 - the one place nothing unforeseen gets past
            if not logged(exc):
                log_unexpected(str(scope.get("method", "")), path, exc)
            if not started:
                await internal(exc)(scope, receive, send)
