"""``GET /health``: is the service up, which evalcore and which store schema (no key needed)."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request

from evalcore import __version__
from evalcore.api.serving.problems import Problem
from evalcore.errors import EvalcoreError
from evalcore.store.migrate import applied_version, schema_version

router = APIRouter(tags=["health"])


@router.get(
    "/health",
    summary="the service is up: evalcore's version and the schema version",
    responses={503: {"description": "the store cannot be read"}},
)
def health(request: Request) -> dict[str, Any]:
    store = request.app.state.store
    try:
        with store.read() as con:
            stored = applied_version(con)
    except EvalcoreError:
        raise Problem(503, "the store cannot be read", "store-unavailable") from None
    return {
        "status": "ok",
        "evalcore": __version__,
        "schema_version": schema_version(),
        "store_schema_version": stored,
    }
