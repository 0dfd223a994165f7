"""``/runs`` (list, upload), ``/runs/{ref}`` (``show --json``), ``/runs/{ref}/claim``
(``threshold --json``), ``/runs/{ref}/decisions`` (the Threshold screen's Save) and ``/gate``
(``gate --format json``). Each calls the library function its command calls."""

from __future__ import annotations

import base64
import binascii
import os
import tempfile
from typing import Annotated, Any
from urllib.parse import quote

from fastapi import APIRouter, Depends, Query, Request
from starlette.concurrency import run_in_threadpool
from starlette.responses import JSONResponse

from evalcore.api.models import ClaimOut, DecisionIn, DecisionOut, GateIn, GateOut, RunPage, RunSummary, Uploaded
from evalcore.api.serving.auth import Caller, require
from evalcore.api.serving.jsonout import answer, jsonable
from evalcore.api.serving.problems import Problem, from_error
from evalcore.boundary.numbers import bounded_float
from evalcore.boundary.text import clean_text
from evalcore.errors import ConfigError, EvalcoreError
from evalcore.files.run_files import load_run
from evalcore.measures.claim import DEFAULT_ALPHA, DEFAULT_BETA, DEFAULT_CONFIDENCE, MIN_RATE
from evalcore.read.claims import claim_of, claims_of_ref
from evalcore.read.decisions import save_decision as save
from evalcore.read.refs import find_run, resolve_run
from evalcore.read.summary import summary_json
from evalcore.records import Configuration
from evalcore.regression.gate import run_gate
from evalcore.regression.report import to_dict
from evalcore.store import reading

router = APIRouter(tags=["runs"])
MAX_PAGE = 200
ZIP = "application/zip"
#: the errors of a route whose reference (in its path or its body) must name a complete run
NOT_COMPLETE: dict[int | str, dict[str, Any]] = {409: {"description": "the run named is not complete"}}


def _store(request: Request) -> Any:
    return request.app.state.store


#: what RFC 3986 lets a path hold as it is (unreserved, sub-delims, ':' and '@', and '/'); the rest is %XX of UTF-8
PATH_SAFE = "/-._~!$&'()*+,;=:@"


def location(request: Request, path: str) -> str:
    """``path`` under the API's own prefix (``/api/v1``, below ``server.baseUrlPath``), percent-
    encoded as RFC 3986 says (a name in Cyrillic, a ``%`` or a space is never raw in a header)."""
    return quote(f"{request.scope.get('root_path', '')}{path}", safe=PATH_SAFE)


def _cursor(run_id: str) -> str:
    return base64.urlsafe_b64encode(run_id.encode("utf-8")).decode("ascii").rstrip("=")


def _after(cursor: str) -> str:
    try:
        return base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)).decode("utf-8")
    except (binascii.Error, UnicodeDecodeError, ValueError):
        raise Problem(
            422,
            "cursor: not a cursor this API gave",
            "validation",
            [{"field": "query.cursor", "detail": "unknown cursor"}],
        ) from None


@router.get(
    "/runs",
    summary="the runs, newest first, a page at a time (as `evalcore list --json`)",
    responses={200: {"model": RunPage}},
)
def list_runs(
    request: Request,
    _: Annotated[Caller, Depends(require("read"))],
    limit: Annotated[int, Query(ge=1, le=MAX_PAGE)] = 50,
    cursor: Annotated[str | None, Query(max_length=400)] = None,
) -> JSONResponse:
    store = _store(request)
    try:
        rows = store.runs().drop(columns=["settings"]).to_dict("records")
    except EvalcoreError as exc:
        raise from_error(exc, store.path) from None
    start = 0
    if cursor is not None:
        after = _after(cursor)
        ids = [str(r["run_id"]) for r in rows]
        if after not in ids:
            raise Problem(
                422,
                "cursor: its run is no longer in the store; start again without a cursor",
                "validation",
                [{"field": "query.cursor", "detail": "unknown cursor"}],
            )
        start = ids.index(after) + 1
    page = rows[start : start + limit]
    more = start + limit < len(rows)
    return answer({"data": page, "next_cursor": _cursor(str(page[-1]["run_id"])) if more and page else None})


@router.post(
    "/runs",
    status_code=201,
    summary="upload a run file (as `evalcore load-run`): 201 when stored, 200 when it was already",
    responses={
        200: {"model": Uploaded, "description": "stored already"},
        201: {"model": Uploaded, "description": "stored"},
    },
    openapi_extra={
        "requestBody": {"required": True, "content": {ZIP: {"schema": {"type": "string", "format": "binary"}}}}
    },
)
async def upload_run(request: Request, caller: Annotated[Caller, Depends(require("runs:write"))]) -> JSONResponse:
    kind = request.headers.get("content-type", "").split(";")[0].strip().lower()
    if kind != ZIP:
        raise Problem(415, f"a run file is sent as {ZIP} (export-run writes it), not {kind or 'no type'}", "media-type")
    store = _store(request)
    with tempfile.TemporaryDirectory(prefix="evalcore-upload-") as folder:
        path = os.path.join(folder, "upload.evalcore.zip")
        with open(path, "wb") as out:
            async for chunk in request.stream():
                out.write(chunk)

        def load() -> Any:
            with request.app.state.write_lock:
                return load_run(store, path)

        try:
            done = await run_in_threadpool(load)
        except EvalcoreError as exc:
            raise from_error(exc, store.path, (path, "the uploaded run file")) from None
    body = {
        "run_id": done.run_id,
        "run_name": done.run_name,
        "loaded": done.loaded,
        "rows": done.rows,
        "notes": [n.replace(path, "the uploaded run file") for n in done.notes],
    }
    where = location(request, f"/runs/{done.run_id}")
    return answer(body, 201 if done.loaded else 200, {"Location": where})


@router.get(
    "/runs/{ref}",
    summary="one run and its per-configuration summary (as `evalcore show --json`)",
    responses={200: {"model": RunSummary}},
)
def show_run(request: Request, ref: str, _: Annotated[Caller, Depends(require("read"))]) -> JSONResponse:
    store = _store(request)
    try:
        with reading():  # one connection for its reads, as `evalcore show`
            run = find_run(store, ref)
            return answer(summary_json(store, run.run_id))
    except EvalcoreError as exc:
        raise from_error(exc, store.path) from None


@router.get(
    "/runs/{ref}/claim",
    summary="the refusal threshold claim (as `evalcore threshold --json`)",
    responses={200: {"model": list[ClaimOut]}, **NOT_COMPLETE},  # type: ignore[valid-type]
)
def claim(
    request: Request,
    ref: str,
    _: Annotated[Caller, Depends(require("read"))],
    configuration: Annotated[str | None, Query(max_length=300, examples=["G/hybrid"])] = None,
    max_bluff_rate: Annotated[str, Query(max_length=40, description="a number in [1e-06, 1)")] = repr(DEFAULT_ALPHA),
    max_lost_rate: Annotated[str, Query(max_length=40, description="a number in [1e-06, 1)")] = repr(DEFAULT_BETA),
    confidence: Annotated[str, Query(max_length=40, description="a number in (0, 1)")] = repr(DEFAULT_CONFIDENCE),
) -> JSONResponse:
    store = _store(request)
    try:
        alpha = _query_number(max_bluff_rate, "max_bluff_rate", MIN_RATE)
        beta = _query_number(max_lost_rate, "max_lost_rate", MIN_RATE)
        conf = _query_number(confidence, "confidence", 0.0)
        if configuration:
            try:
                Configuration.parse(configuration)
            except ValueError as exc:
                raise Problem(
                    422, f"configuration: {exc}", "validation", [{"field": "query.configuration", "detail": str(exc)}]
                ) from None
        reference = f"{ref}:{configuration}" if configuration else ref
        with reading():  # one connection for its reads, as `evalcore threshold`
            _run, found = claims_of_ref(store, reference, alpha, beta, conf)
    except EvalcoreError as exc:
        raise from_error(exc, store.path) from None
    return answer([c.to_json() for c in found])


def _query_number(text: str, name: str, low: float) -> float:
    """Query parameter ``name`` as a number in ``[low, 1)`` (``(0, 1)`` when ``low`` is 0), read as
    the CLI reads it; Problem 422 naming ``query.NAME`` otherwise."""
    try:
        return bounded_float(text, option=name, low=low, high=1.0, low_open=low == 0.0, high_open=True)
    except ConfigError as exc:
        raise Problem(422, str(exc), "validation", [{"field": f"query.{name}", "detail": str(exc)}]) from None


@router.post(
    "/runs/{ref}/decisions",
    status_code=201,
    summary="save a threshold decision with its claim, as the Threshold screen saves it",
    responses={201: {"model": DecisionOut, "description": "saved"}, **NOT_COMPLETE},
)
def save_decision(
    request: Request, ref: str, body: DecisionIn, caller: Annotated[Caller, Depends(require("deploy"))]
) -> JSONResponse:
    store = _store(request)
    try:
        note = clean_text(body.note, field="note", max_len=2000)
        try:
            config = Configuration.parse(body.configuration)
        except ValueError as exc:
            raise Problem(
                422, f"configuration: {exc}", "validation", [{"field": "body.configuration", "detail": str(exc)}]
            ) from None
        run = resolve_run(store, ref)
        made_under = claim_of(store, run.run_id, config, body.max_bluff_rate, body.max_lost_rate, body.confidence)
        with request.app.state.write_lock:
            decision_id = save(store, run.run_id, config, body.threshold, note, caller.author, made_under)
    except EvalcoreError as exc:
        raise from_error(exc, store.path) from None
    saved = {
        "decision_id": decision_id,
        "run_id": run.run_id,
        "configuration": config.label,
        "threshold": float(body.threshold),
        "note": note,
        "author": caller.author,
        "claim": made_under.to_json(),
    }
    return answer(saved, 201, {"Location": location(request, f"/runs/{run.run_id}/decisions/{decision_id}")})


@router.post(
    "/gate",
    summary="the regression gate (as `evalcore gate --format json`); a regression is passed: false",
    responses={
        200: {"model": GateOut},
        404: {"description": "no run the baseline or the candidate names"},
        **NOT_COMPLETE,
    },
)
def gate(request: Request, body: GateIn, _: Annotated[Caller, Depends(require("gate"))]) -> JSONResponse:
    store = _store(request)
    try:
        with reading():  # one connection for its reads, as `evalcore gate`
            report = run_gate(
                store,
                body.baseline,
                body.candidate,
                metric=body.metric,
                alpha=body.alpha,
                holm=body.holm,
                min_effect=body.min_effect,
                threshold_from_decision=body.threshold_from_decision,
            )
    except EvalcoreError as exc:
        raise from_error(exc, store.path) from None
    out = to_dict(report)
    out["passed"] = not report.failed
    return JSONResponse(jsonable(out))
