"""``GET /metrics``: the service's figures in Prometheus's text format (key scope ``read``);
what it holds: :mod:`evalcore.traffic.metrics`."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Depends, Request, Response
from prometheus_client.exposition import CONTENT_TYPE_PLAIN_0_0_4
from starlette.concurrency import run_in_threadpool

from evalcore.api.serving.auth import Caller, require
from evalcore.api.serving.problems import from_error
from evalcore.errors import EvalcoreError
from evalcore.traffic.metrics import exposition

router = APIRouter(tags=["metrics"])
#: the classic text format every Prometheus reads (our names need none of 1.0.0's escaping)
MEDIA = CONTENT_TYPE_PLAIN_0_0_4


@router.get(
    "/metrics",
    summary="Prometheus text format: per deployment (labelled by deployment and version) lines posted, "
    "replayed, failed and pending, the deployed t, the refused share of the last ended period, the claim, "
    "production's rates and the monitor's state; per server requests by route and status and the replay queue",
    response_class=Response,
    responses={
        200: {
            "content": {
                "text/plain": {"schema": {"type": "string", "description": f"Prometheus's text format ({MEDIA})"}}
            },
            "description": "the metrics",
        }
    },
)
async def get_metrics(request: Request, _: Annotated[Caller, Depends(require("read"))]) -> Response:
    store = request.app.state.store
    counts = request.app.state.requests.snapshot()
    try:
        body = await run_in_threadpool(exposition, store, counts)
    except EvalcoreError as exc:
        raise from_error(exc, store.path) from None
    return Response(body, 200, media_type=MEDIA)
