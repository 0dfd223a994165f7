"""evalcore's HTTP API, ``/api/v1``, served by the dashboard's own server (docs/API.md).

- :mod:`~evalcore.api.app`: the FastAPI application and its state.
- one module per resource: :mod:`~evalcore.api.health`, :mod:`~evalcore.api.runs` (runs,
  claims, decisions, the gate), :mod:`~evalcore.api.deployments` (deployments and their
  traffic), :mod:`~evalcore.api.evaluations`. A route is as thin as a screen: it parses, calls the library
  function the CLI calls, and answers with what the CLI prints as JSON.
- :mod:`~evalcore.api.auth` (keys, scopes, the rate), :mod:`~evalcore.api.limits` (body
  sizes, the deadline, the token bucket), :mod:`~evalcore.api.problems` (every error as
  problem+json), :mod:`~evalcore.api.models` (request bodies), :mod:`~evalcore.api.jsonout`.

:class:`ApiFirst` is how a server carries it: an ASGI middleware that hands every request under
``/<base>/api/v1`` to the API (as a Starlette ``Mount`` would) before anything of the host sees it,
so Streamlit's own middleware (its session cookie, its plain-text "Bad Request" for odd paths)
never touches an API answer, and every API answer, errors included, is the API's own. A
revalidation of a deployment that is still current is answered before the mount, by
:mod:`~evalcore.api.revalidate` (same checks, no framework). This
package never imports Streamlit: :mod:`evalcore_app.server` adds it to the dashboard's ``st.App``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pathlib import Path

    from starlette.types import ASGIApp, Receive, Scope, Send

    from evalcore.api.revalidate import Revalidation

PREFIX = "/api/v1"


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
        self.app = app
        self.prefix = prefix(base_url_path)
        self.store_path = store_path
        self._api = api
        self._router: ASGIApp | None = None
        self._fast: Revalidation | None = None

    def _mounted(self) -> ASGIApp:
        if self._router is None:
            from starlette.routing import Mount, Router

            from evalcore.api.app import create_api
            from evalcore.api.limits import BodyLimit
            from evalcore.api.revalidate import Revalidation

            api = self._api
            if api is None:
                built = create_api(self.store_path)
                api = BodyLimit(built)  # what create_app gives, with the FastAPI app at hand
                self._fast = Revalidation(built, self.prefix)
            self._router = Router(routes=[Mount(self.prefix, app=api)])
        return self._router

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        path = str(scope.get("path", ""))
        if scope["type"] == "http" and (path == self.prefix or path.startswith(self.prefix + "/")):
            router = self._mounted()
            if self._fast is not None and await self._fast.answer(scope, send):
                return
            await router(scope, receive, send)
            return
        await self.app(scope, receive, send)
