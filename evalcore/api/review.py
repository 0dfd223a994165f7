"""``GET /deployments/{name}/review`` (the next sampled lines to label) and ``POST
/deployments/{name}/labels`` (labels for them, 207 with one result a label), for annotation
tools. Both need the scope ``label``; a label's author is the key's name. The routes call
:mod:`evalcore.service.review`; a review read first draws the frames of the periods that have
ended without one (under the API's write lock)."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from fastapi import APIRouter, Depends, Query, Request
from pydantic import BaseModel, Field
from starlette.concurrency import run_in_threadpool
from starlette.responses import JSONResponse

from evalcore.api.models import ApiAnswer, Body
from evalcore.api.serving.auth import Caller, require
from evalcore.api.serving.jsonout import answer
from evalcore.api.serving.problems import from_error
from evalcore.errors import EvalcoreError
from evalcore.service.review import MAX_LABELS, MAX_LIMIT, draw_missing, label_lines, review_lines

router = APIRouter(tags=["deployments"])


class ReviewHitOut(ApiAnswer):
    """One of the line's top 4 hits: the chunk, where it is (``locator``), its words, the value
    the gate reads and whether the gate kept it at the deployed t."""

    rank: int
    chunk_id: int
    doc_id: str | None
    section: str | None
    locator: str | None
    content: str | None
    value: float | None
    kept: bool


class ReviewLineOut(ApiAnswer):
    """A sampled line to label: ``stratum`` says what the gate did (``answered``: a top-4 hit
    kept; ``refused``), ``inclusion_probability`` is n/N of its stratum, ``period`` the day its
    review period starts, ``role`` whether it waits for its first label or is offered for a
    second one (by another author)."""

    line_id: str
    query: str
    stratum: Literal["answered", "refused"]
    inclusion_probability: float
    period: str
    period_end: str
    rank: int
    role: Literal["first", "second"]
    asked_at: str
    gate_value: float | None
    threshold: float
    keep_rule: str
    hits: list[ReviewHitOut]


class ReviewPage(ApiAnswer):
    """The next unlabelled lines of the sample, oldest period first, each stratum's lowest ranks
    first (only a stratum's labelled prefix counts: a line skipped holds back the ones after it)."""

    data: list[ReviewLineOut]


class LabelItem(BaseModel):
    """One label (checked one by one: a bad one is a problem in the 207, never the request's)."""

    line_id: str = Field(description="a line id from GET /deployments/{name}/review")
    label: Literal["off-topic", "answerable"]
    hits_hold_answer: bool | None = Field(None, description="answerable only: whether its hits hold the answer")
    role: Literal["first", "second"] | None = Field(None, description="default: first, else second")


class LabelsIn(Body):
    """At most 1,000 labels a request."""

    labels: Annotated[
        list[Any],
        Field(min_length=1, max_length=MAX_LABELS, json_schema_extra={"items": LabelItem.model_json_schema()}),
    ]


class LabelResultOut(ApiAnswer):
    """What became of one label (``index`` 1-based, in the request's order)."""

    index: int
    line_id: str | None
    status: Literal["stored", "updated", "unchanged", "problem"]
    role: Literal["first", "second"] | None
    reason: str | None
    field: str | None


class LabelResults(ApiAnswer):
    """One result a label, in order."""

    results: list[LabelResultOut]


@router.get(
    "/deployments/{name}/review",
    summary="the next sampled lines of deployment NAME's review sample to label (query, stratum, inclusion "
    "probability n/N, period, top 4 hits); draws the frames of the periods that have ended",
    responses={200: {"model": ReviewPage}},
)
async def get_review(
    request: Request,
    name: str,
    caller: Annotated[Caller, Depends(require("label"))],
    period: Annotated[
        str | None, Query(max_length=40, description="YYYY-MM-DD: only the review period holding that day")
    ] = None,
    limit: Annotated[int, Query(ge=1, le=MAX_LIMIT)] = 10,
    version: Annotated[int | None, Query(ge=1, le=1_000_000, description="default: the current version")] = None,
) -> JSONResponse:
    store = request.app.state.store

    def work() -> list[dict[str, Any]]:
        with request.app.state.write_lock:
            draw_missing(store, name, version, caller.author)
        found = review_lines(store, name, period=period, limit=limit, author=caller.author, version=version)
        return [line.to_json() for line in found]

    try:
        data = await run_in_threadpool(work)
    except EvalcoreError as exc:
        raise from_error(exc, store.path) from None
    return answer({"data": data})


@router.post(
    "/deployments/{name}/labels",
    status_code=207,
    summary=f"labels for sampled lines of deployment NAME (at most {MAX_LABELS:,}): off-topic or answerable, and "
    "whether the hits hold the answer; the author is the key's name; 207 with one result a label",
    responses={207: {"model": LabelResults, "description": "one result a label, in order"}},
)
def post_labels(
    request: Request, name: str, body: LabelsIn, caller: Annotated[Caller, Depends(require("label"))]
) -> JSONResponse:
    store = request.app.state.store
    try:
        with request.app.state.write_lock:
            results = label_lines(store, name, body.labels, caller.author)
    except EvalcoreError as exc:
        raise from_error(exc, store.path) from None
    return answer({"results": [r.to_json() for r in results]}, 207)
