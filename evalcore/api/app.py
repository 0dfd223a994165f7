"""The FastAPI application of ``/api/v1``: its state (the store, the keys, the rate limiters, the
one lock the API's writes take), its routers and its error handlers, behind the key check and the
body limit (:func:`guarded_api`). No trailing-slash redirect: ``/runs/`` is a 404 like any path no
route takes (a redirect would name the ``Host`` the caller sent)."""

from __future__ import annotations

import os
import threading
from pathlib import Path
from typing import Any

from fastapi import FastAPI
from starlette.types import ASGIApp

from evalcore import __version__
from evalcore.api import deployments, estimates, evaluations, health, metrics, otlp, runs
from evalcore.api import review as review_api
from evalcore.api.serving import problems
from evalcore.api.serving.auth import KeyCheck, Keys
from evalcore.api.serving.limits import BodyLimit
from evalcore.api.serving.problems import MEDIA_TYPE, TITLES
from evalcore.api.serving.rate import RATE_ENV, RateLimiter, failure_rate, global_rate, parse_rate
from evalcore.api.serving.requests import CountRequests, RequestCounts
from evalcore.api.serving.snapshots import Deployments
from evalcore.store import Store
from evalcore.store.connection import default_store_path

DESCRIPTION = (
    "evalcore's HTTP API: runs, threshold claims and decisions, the regression gate, evaluations, "
    "deployments of a decided threshold and production traffic. Every request but /health carries "
    "`Authorization: Bearer evk_...` (a key made with `evalcore keys create`); every error is "
    "application/problem+json (RFC 9457). See docs/API.md."
)


ROUTERS = (
    health.router,
    runs.router,
    deployments.router,
    otlp.router,
    evaluations.router,
    review_api.router,
    estimates.router,
    metrics.router,
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
        redirect_slashes=False,
    )
    store = Store(Path(store_path) if store_path is not None else default_store_path())
    api.state.store = store
    api.state.keys = Keys(
        store,
        RateLimiter(parse_rate(os.environ.get(RATE_ENV))),
        service=RateLimiter(global_rate(), max_keys=1),
        failures=RateLimiter(failure_rate()),
    )
    api.state.write_lock = threading.Lock()
    api.state.deployments = Deployments(store)
    api.state.requests = RequestCounts()
    problems.install(api)
    for router in ROUTERS:
        api.include_router(router)
    _document(api)
    return api


PROBLEM_SCHEMA: dict[str, Any] = {
    "type": "object",
    "description": "RFC 9457 problem details; `errors` names each field that did not validate",
    "required": ["type", "title", "status", "detail"],
    "properties": {
        "type": {"type": "string"},
        "title": {"type": "string"},
        "status": {"type": "integer"},
        "detail": {"type": "string"},
        "errors": {
            "type": "array",
            "items": {
                "type": "object",
                "required": ["field", "detail"],
                "properties": {"field": {"type": "string"}, "detail": {"type": "string"}},
            },
        },
    },
}
#: what each error status of the API means, as the OpenAPI document says it
ERRORS = {
    400: "the request cannot be read (a bad Content-Length, JSON nested too deeply)",
    401: "no key, an unknown or revoked key, or more than one Authorization header",
    403: "the key lacks the route's scope",
    404: "no such run, decision, deployment or evaluation (in the path, or named in the body); or a path no "
    "route takes (with any key or none)",
    408: "the body took longer than its deadline to arrive",
    412: "If-Match names another version of the deployment (or If-None-Match: * and it exists)",
    413: "the body is over its limit",
    409: "the run named is not complete (running, queued, failed or cancelled)",
    415: "the body's media type is not the one the route takes",
    422: "a field out of its range or refused (errors[] names it)",
    429: "over a rate (the key's, the service's, or the failed authentications of an address): see Retry-After",
    503: "the store cannot be read",
}


def _document(api: FastAPI) -> None:
    """The OpenAPI document names the key every route but /health needs (a bearer token) and
    every error a route may answer, each a problem document (``application/problem+json``)."""
    plain = api.openapi

    def openapi() -> dict[str, Any]:
        if api.openapi_schema is None:
            schema = plain()
            components = schema.setdefault("components", {})
            components["securitySchemes"] = {
                "key": {
                    "type": "http",
                    "scheme": "bearer",
                    "description": "a key made with `evalcore keys create`: evk_...",
                }
            }
            schemas = components.setdefault("schemas", {})
            schemas.pop("HTTPValidationError", None)
            schemas.pop("ValidationError", None)
            schemas["Problem"] = PROBLEM_SCHEMA
            for path, operations in schema.get("paths", {}).items():
                for method, operation in operations.items():
                    _errors(path, method, operation)
            api.openapi_schema = schema
        return api.openapi_schema

    api.openapi = openapi  # type: ignore[method-assign]


def _errors(path: str, method: str, operation: dict[str, Any]) -> None:
    """Name on ``operation`` the errors it may answer, each a problem document: those every route
    of its kind answers (a key, a path parameter, a body), and those its route declares in its
    ``responses`` (a reference in the body that names no run: 404; a run not complete: 409)."""
    keyed = path != "/health"
    if keyed:
        operation["security"] = [{"key": []}]
    codes = {429} if keyed else set()
    if keyed:
        codes |= {401, 403}
    if "{" in path:
        codes |= {404, 422}
    if operation.get("parameters"):
        codes.add(422)
    if "requestBody" in operation:
        codes |= {400, 408, 413, 415, 422}
    if method == "put" and path == "/deployments/{name}":
        codes.add(412)
    responses = operation.setdefault("responses", {})
    codes |= {int(code) for code in responses if code.isdigit() and int(code) >= 400}
    for code in sorted(codes):
        entry = responses.get(str(code), {})
        responses[str(code)] = {
            "description": entry.get("description") if code not in (422,) and entry else ERRORS.get(code, TITLES[code]),
            "content": {MEDIA_TYPE: {"schema": {"$ref": "#/components/schemas/Problem"}}},
        }


def guarded_api(api: FastAPI) -> ASGIApp:
    """``api`` behind the key check and the body limit, in that order: a caller without a key is
    answered before a byte of its body is read; every answer is counted (``GET /metrics``)."""
    routes = [route for router in ROUTERS for route in router.routes]
    return CountRequests(KeyCheck(api, BodyLimit(api), routes), api.state.requests, routes)


def create_app(store_path: str | Path | None = None) -> ASGIApp:
    """:func:`create_api` behind the key check and the body limit: what the dashboard's server mounts."""
    return guarded_api(create_api(store_path))
