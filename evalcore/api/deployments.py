"""``/deployments``: a named deployment points at a saved decision (``PUT``, with ``If-Match``
honoured: 412 when the deployment moved since the ETag it names), production reads it
(``GET``, with a strong ``ETag``: ``If-None-Match`` gets 304; ``meets_claim`` says whether the
deployed threshold meets the claim it was saved under) and posts its queries to it
(``POST /deployments/{name}/traffic``, NDJSON, 207 with one result a line). The routes call
:mod:`evalcore.service.deployments` and :mod:`evalcore.service.ingest`."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Depends, Request
from starlette.concurrency import run_in_threadpool
from starlette.responses import JSONResponse, Response

from evalcore.api.models import DeploymentIn, DeploymentList, DeploymentOut, TrafficResults
from evalcore.api.runs import location
from evalcore.api.serving.auth import Caller, require
from evalcore.api.serving.jsonout import answer
from evalcore.api.serving.limits import MAX_TRAFFIC, MAX_TRAFFIC_LINES
from evalcore.api.serving.problems import Problem, from_error
from evalcore.api.serving.revalidate import etag_matches
from evalcore.errors import EvalcoreError
from evalcore.service.deployments import PreconditionFailed, deploy
from evalcore.service.deployments import get_deployment as deployment_named
from evalcore.service.deployments import list_deployments as listed
from evalcore.service.ingest import ingest_traffic

router = APIRouter(tags=["deployments"])
NDJSON = "application/x-ndjson"


def _tagged(body: dict[str, Any], etag: str, status: int = 200, headers: dict[str, str] | None = None) -> JSONResponse:
    return answer(body, status, {"ETag": etag, "Cache-Control": "no-cache", **(headers or {})})


@router.put(
    "/deployments/{name}",
    summary="point deployment NAME at a saved decision (201 when new); If-Match: its ETag, for a move "
    "that fails (412) when someone moved it since",
    responses={
        200: {"model": DeploymentOut, "description": "moved (or already there)"},
        201: {"model": DeploymentOut, "description": "made"},
    },
)
def put_deployment(
    request: Request, name: str, body: DeploymentIn, caller: Annotated[Caller, Depends(require("deploy"))]
) -> JSONResponse:
    store = request.app.state.store
    if_match = etags(request.headers.getlist("if-match"))
    if_none_match = etags(request.headers.getlist("if-none-match"))
    if if_none_match is not None and if_none_match != ["*"]:
        raise Problem(
            422,
            "If-None-Match on PUT takes only * (make the deployment only when it does not exist)",
            "validation",
            [{"field": "header.if-none-match", "detail": "only * is taken"}],
        )
    try:
        with request.app.state.write_lock:
            before = deployment_named(store, name)
            moved = deploy(
                store, name, body.decision_id, caller.author, if_match=if_match, if_none_match=if_none_match is not None
            )
    except PreconditionFailed as exc:
        raise Problem(412, str(exc), "precondition-failed") from None
    except EvalcoreError as exc:
        raise from_error(exc, store.path) from None
    status = 201 if before is None else 200
    return _tagged(moved.to_json(), moved.etag(), status, {"Location": location(request, f"/deployments/{moved.name}")})


def etags(values: list[str]) -> list[str] | None:
    """The entity tags of ``If-Match`` (or ``If-None-Match``) headers, in order; None when none
    was sent. A weak tag (``W/"..."``) never matches a move (RFC 9110: strong comparison), so it
    is kept as sent and matches nothing."""
    if not values:
        return None
    return [tag.strip() for value in values for tag in value.split(",") if tag.strip()]


@router.get(
    "/deployments/{name}",
    summary="where deployment NAME points: threshold, configuration, claim and whether the threshold meets it "
    "(meets_claim), who and when, version (ETag)",
    responses={
        200: {"model": DeploymentOut},
        304: {"description": "not modified since the ETag named in If-None-Match"},
    },
)
async def get_deployment(request: Request, name: str, _: Annotated[Caller, Depends(require("read"))]) -> Response:
    store = request.app.state.store
    kept = request.app.state.deployments
    try:  # read again only when the store changed, then in a thread (a read blocks)
        found = kept.get(name) if kept.fresh(name) else await run_in_threadpool(kept.get, name)
    except EvalcoreError as exc:
        raise from_error(exc, store.path) from None
    if found is None:
        raise Problem(404, f"no deployment {name!r} (PUT /deployments/{{name}} points one at a decision)", "not-found")
    etag = found.etag()
    if etag_matches(request.headers.get("if-none-match"), etag):
        return Response(status_code=304, headers={"ETag": etag, "Cache-Control": "no-cache"})
    return _tagged(found.to_json(), etag)


@router.get(
    "/deployments",
    summary="every deployment and its moves: who moved it, when, from what to what",
    responses={200: {"model": DeploymentList}},
)
def list_deployments(request: Request, _: Annotated[Caller, Depends(require("read"))]) -> JSONResponse:
    store = request.app.state.store
    try:
        return answer({"data": [h.to_json() for h in listed(store)]})
    except EvalcoreError as exc:
        raise from_error(exc, store.path) from None


@router.post(
    "/deployments/{name}/traffic",
    status_code=207,
    summary=f"production's queries, NDJSON {{id, query, time, label?}}: at most {MAX_TRAFFIC_LINES:,} lines "
    f"and {MAX_TRAFFIC // (1024 * 1024)} MB a post; 207 with one result a line",
    responses={207: {"model": TrafficResults, "description": "one result a line, in order"}},
    openapi_extra={
        "requestBody": {
            "required": True,
            "content": {NDJSON: {"schema": {"type": "string", "example": '{"id": "q1", "query": "...", "time": 0}'}}},
        }
    },
)
async def post_traffic(
    request: Request, name: str, caller: Annotated[Caller, Depends(require("traffic:write"))]
) -> JSONResponse:
    kind = request.headers.get("content-type", "").split(";")[0].strip().lower()
    if kind not in (NDJSON, "application/jsonl", "application/json-lines"):
        raise Problem(
            415, f"traffic is posted as {NDJSON}, one JSON object a line, not {kind or 'no type'}", "media-type"
        )
    parts: list[bytes] = []
    newlines = 0
    async for chunk in request.stream():
        newlines += chunk.count(b"\n")
        if newlines > MAX_TRAFFIC_LINES:
            raise Problem(
                413,
                f"more than {MAX_TRAFFIC_LINES:,} lines; a traffic post may hold at most {MAX_TRAFFIC_LINES:,} "
                f"lines and {MAX_TRAFFIC:,} bytes (split it into several posts)",
                "too-many-lines",
            )
        parts.append(chunk)
    lines = b"".join(parts).splitlines()
    if len(lines) > MAX_TRAFFIC_LINES:
        raise Problem(
            413, f"{len(lines):,} lines; a traffic post may hold at most {MAX_TRAFFIC_LINES:,}", "too-many-lines"
        )
    if not lines:
        raise Problem(422, "the body holds no line (NDJSON: one JSON object a line)", "validation")
    store = request.app.state.store
    try:
        results = await run_in_threadpool(ingest_traffic, store, name, lines, caller.author)
    except EvalcoreError as exc:
        raise from_error(exc, store.path) from None
    return answer(
        {"results": [{"line": r.line, "id": r.id, "status": r.status, "reason": r.reason} for r in results]}, 207
    )
