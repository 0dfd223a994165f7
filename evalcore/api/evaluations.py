"""``/evaluations``: start a run of the built-in pipeline in the job runner (limited to what the New
run screen allows), watch it, cancel it; over :mod:`evalcore.service.evaluations`. A start beyond
the queue's caps (per key, in all: :func:`evalcore.jobs.queue_caps`) is 429 with ``Retry-After``,
and nothing is queued."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Depends, Request
from starlette.concurrency import run_in_threadpool
from starlette.responses import JSONResponse

from evalcore.api.models import EvaluationIn, EvaluationOut
from evalcore.api.runs import location
from evalcore.api.serving.auth import Caller, require
from evalcore.api.serving.jsonout import answer
from evalcore.api.serving.problems import Problem, from_error
from evalcore.errors import EvalcoreError, QueueFull
from evalcore.service.evaluations import cancel_evaluation, evaluation, start_evaluation

router = APIRouter(tags=["evaluations"])


@router.post(
    "/evaluations",
    status_code=202,
    summary="queue a run (demo, or a corpus and questions or a question set)",
    responses={202: {"model": EvaluationOut, "description": "queued"}},
)
async def start(
    request: Request, body: EvaluationIn, caller: Annotated[Caller, Depends(require("evaluate"))]
) -> JSONResponse:
    store = request.app.state.store
    try:
        started = await run_in_threadpool(start_evaluation, store, body.model_dump(exclude_none=True), caller.key_id)
    except QueueFull as exc:
        raise Problem(429, str(exc), "queue-full", headers={"Retry-After": str(exc.retry_after)}) from None
    except EvalcoreError as exc:
        raise from_error(exc, store.path) from None
    where = location(request, f"/evaluations/{started.evaluation_id}")
    return answer(started.to_json(), 202, {"Location": where})


@router.get(
    "/evaluations/{evaluation_id}",
    summary="an evaluation's status, stage, progress, and run_id once complete",
    responses={200: {"model": EvaluationOut}},
)
def status(request: Request, evaluation_id: str, _: Annotated[Caller, Depends(require("read"))]) -> JSONResponse:
    store = request.app.state.store
    try:
        return answer(evaluation(store, evaluation_id).to_json())
    except EvalcoreError as exc:
        raise from_error(exc, store.path) from None


@router.post(
    "/evaluations/{evaluation_id}/cancel",
    status_code=202,
    summary="cancel an evaluation",
    responses={202: {"model": EvaluationOut, "description": "cancelled (or already finished)"}},
)
def cancel(request: Request, evaluation_id: str, _: Annotated[Caller, Depends(require("evaluate"))]) -> JSONResponse:
    store = request.app.state.store
    try:
        with request.app.state.write_lock:
            return answer(cancel_evaluation(store, evaluation_id).to_json(), 202)
    except EvalcoreError as exc:
        raise from_error(exc, store.path) from None
