"""evalcore's HTTP API, ``/api/v1``, served by the dashboard's own server (docs/API.md).

- :mod:`~evalcore.api.app`: the FastAPI application and its state; :func:`routes` mounts it.
- :mod:`~evalcore.api.routes`: one module per resource (health, runs and the gate, deployments
  and traffic, evaluations). A route is as thin as a screen: it parses, calls the library
  function the CLI calls, and answers with what the CLI prints as JSON.
- :mod:`~evalcore.api.auth` (keys, scopes, the rate), :mod:`~evalcore.api.limits` (body
  sizes, the deadline, the token bucket), :mod:`~evalcore.api.problems` (every error as
  problem+json), :mod:`~evalcore.api.models` (request bodies), :mod:`~evalcore.api.jsonout`.

This package never imports Streamlit: :mod:`evalcore_app.server` mounts it beside the dashboard.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pathlib import Path

    from starlette.routing import BaseRoute

PREFIX = "/api/v1"


def routes(base_url_path: str = "", store_path: str | Path | None = None) -> list[BaseRoute]:
    """The routes a server adds to serve the API at ``/<base_url_path>/api/v1`` (Streamlit's
    ``server.baseUrlPath``: the API moves with the dashboard behind a proxy)."""
    from starlette.routing import Mount

    from evalcore.api.app import create_app

    base = "/".join(p for p in base_url_path.strip("/").split("/") if p)
    return [Mount(("/" + base if base else "") + PREFIX, app=create_app(store_path))]
