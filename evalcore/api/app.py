"""The FastAPI application of ``/api/v1``: its state (the store, the keys, the rate limiter, the
one lock the API's writes take), its routers and its error handlers, wrapped in the body limit."""

from __future__ import annotations

import os
import threading
from pathlib import Path
from typing import Any

from fastapi import FastAPI
from starlette.types import ASGIApp

from evalcore import __version__
from evalcore.api import deployments, evaluations, health, problems, runs
from evalcore.api.auth import Keys
from evalcore.api.limits import BodyLimit
from evalcore.api.rate import RATE_ENV, RateLimiter, parse_rate
from evalcore.api.snapshots import Deployments
from evalcore.store import Store
from evalcore.store.connection import default_store_path

DESCRIPTION = (
    "evalcore's HTTP API: runs, threshold claims and decisions, the regression gate, evaluations, "
    "deployments of a decided threshold and production traffic. Every request but /health carries "
    "`Authorization: Bearer evk_...` (a key made with `evalcore keys create`); every error is "
    "application/problem+json (RFC 9457). See docs/API.md."
)


def create_api(store_path: str | Path | None = None) -> FastAPI:
    """The FastAPI app over the store ``store_path`` (default: ``$EVALCORE_STORE``, else
    ``runs/evalcore.duckdb``), to be mounted at ``/api/v1``."""
    api = FastAPI(
        title="evalcore",
        version=__version__,
        description=DESCRIPTION,
        openapi_url="/openapi.json",
        docs_url=None,  # the interactive pages load their assets from a CDN: none is served
        redoc_url=None,
        swagger_ui_oauth2_redirect_url=None,
    )
    store = Store(Path(store_path) if store_path is not None else default_store_path())
    api.state.store = store
    api.state.keys = Keys(store, RateLimiter(parse_rate(os.environ.get(RATE_ENV))))
    api.state.write_lock = threading.Lock()
    api.state.deployments = Deployments(store)
    problems.install(api)
    for router in (health.router, runs.router, deployments.router, evaluations.router):
        api.include_router(router)
    _document_keys(api)
    return api


def _document_keys(api: FastAPI) -> None:
    """The OpenAPI document names the key every route but /health needs (a bearer token)."""
    plain = api.openapi

    def openapi() -> dict[str, Any]:
        if api.openapi_schema is None:
            schema = plain()
            schema.setdefault("components", {})["securitySchemes"] = {
                "key": {
                    "type": "http",
                    "scheme": "bearer",
                    "description": "a key made with `evalcore keys create`: evk_...",
                }
            }
            for path, operations in schema.get("paths", {}).items():
                if path != "/health":
                    for operation in operations.values():
                        operation["security"] = [{"key": []}]
            api.openapi_schema = schema
        return api.openapi_schema

    api.openapi = openapi  # type: ignore[method-assign]


def create_app(store_path: str | Path | None = None) -> ASGIApp:
    """:func:`create_api` behind the body limit: what the dashboard's server mounts."""
    return BodyLimit(create_api(store_path))
