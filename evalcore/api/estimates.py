"""``GET /deployments/{name}/estimate``: a deployment version's production rates with their exact
bounds and the monitor's state per claim, the object ``traffic check --deployment --json``
carries (:func:`evalcore.read.traffic.estimates.version_estimate`)."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Depends, Query, Request
from starlette.concurrency import run_in_threadpool
from starlette.responses import JSONResponse

from evalcore.api.models import ApiAnswer
from evalcore.api.serving.auth import Caller, require
from evalcore.api.serving.jsonout import answer
from evalcore.api.serving.problems import from_error
from evalcore.boundary.text import check_identifier
from evalcore.errors import EvalcoreError
from evalcore.read.traffic.estimates import version_estimate

router = APIRouter(tags=["deployments"])


class EstimateOut(ApiAnswer):
    """A version's production rates (docs/TRAFFIC.md "Production rates"): each rate is
    ``{"estimate", "lower", "upper"}`` at the decision's confidence; ``periods`` holds the same
    per review period; ``monitor`` the anytime-valid state of the bluff and lost claims."""

    deployment: str
    version: int
    current: bool
    decision_id: str
    threshold: float
    run_id: str
    configuration: str
    deployed_at: str
    until: str | None
    claim: dict[str, Any]
    periods: list[dict[str, Any]]
    lines: dict[str, int]
    labels: dict[str, int]
    bluff_rate: dict[str, float | None]
    lost_rate: dict[str, float | None]
    answered_bluff_share: dict[str, float | None]
    retrieval_misses: int
    monitor: dict[str, dict[str, Any] | None]


@router.get(
    "/deployments/{name}/estimate",
    summary="a deployment version's production bluff and lost rates with exact bounds, per review period and "
    "for the version, and the monitor's state per claim (holding, breached, undecided)",
    responses={200: {"model": EstimateOut}},
)
async def get_estimate(
    request: Request,
    name: str,
    _: Annotated[Caller, Depends(require("read"))],
    version: Annotated[int | None, Query(ge=1, le=1_000_000, description="default: the current version")] = None,
) -> JSONResponse:
    store = request.app.state.store
    try:
        found = await run_in_threadpool(version_estimate, store, check_identifier(name, field="name"), version)
    except EvalcoreError as exc:
        raise from_error(exc, store.path) from None
    return answer(found.to_json())
