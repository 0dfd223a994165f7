"""Every error of the API as RFC 9457 problem details (``application/problem+json``): ``type``,
``title``, ``status``, ``detail``, and ``errors[]`` (each with the ``field`` path and its
``detail``) when a request did not validate. Never a traceback, never a key, never a server path.

:class:`Problem` is what a route raises; :func:`install` registers the handlers that turn
:class:`Problem`, FastAPI's validation errors, Starlette's HTTP errors, evalcore's named errors
and anything unforeseen into one problem document. Text that looks like a key (``evk_...``) is
redacted from every detail, whatever sent it there (a key pasted as a run reference). Anything
unforeseen is logged as one line (:func:`log_unexpected`: the error, its message and the line of
evalcore that raised it), never as a traceback.
"""

from __future__ import annotations

import logging
import re
import traceback
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from fastapi import HTTPException
from fastapi.exceptions import RequestValidationError
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.responses import JSONResponse

from evalcore.errors import EvalcoreError, StoreBusy, StoreError

if TYPE_CHECKING:
    from fastapi import FastAPI
    from starlette.requests import Request

log = logging.getLogger("evalcore.api")
#: ``run ID (NAME) is running`` and the like (evalcore.read.runs.require_complete)
_NOT_COMPLETE = re.compile(r"run \S+ \(.*\) is (running|queued|failed|cancelled)\b")

#: what a key looks like (evalcore.store.keys: evk_ and URL-safe base64); redacted from every detail
_KEY = re.compile(r"evk_[A-Za-z0-9_\-]+")
REDACTED = "evk_(redacted)"

MEDIA_TYPE = "application/problem+json"
BUSY_RETRY = 2  # seconds a caller waits before it sends again while the store is busy
#: The URN every problem type of evalcore lives under (docs/API.md lists them).
TYPE_PREFIX = "urn:evalcore:problem:"

TITLES = {
    400: "Bad request",
    401: "Unauthorized",
    403: "Forbidden",
    404: "Not found",
    405: "Method not allowed",
    406: "Not acceptable",
    408: "Request timeout",
    409: "Conflict",
    411: "Length required",
    412: "Precondition failed",
    413: "Content too large",
    415: "Unsupported media type",
    422: "Unprocessable content",
    429: "Too many requests",
    500: "Internal server error",
    503: "Service unavailable",
}


class Problem(HTTPException):
    """An error a route answers with: ``status``, a ``kind`` (the last part of its ``type``),
    a ``detail`` for people, optional ``errors`` and response ``headers``."""

    def __init__(
        self,
        status: int,
        detail: str,
        kind: str | None = None,
        errors: Sequence[Mapping[str, Any]] = (),
        headers: Mapping[str, str] | None = None,
    ) -> None:
        super().__init__(status_code=status, detail=detail, headers=dict(headers or {}))
        self.kind = kind
        self.errors = [dict(e) for e in errors]


def response(
    status: int,
    detail: str,
    kind: str | None = None,
    errors: Sequence[Mapping[str, Any]] = (),
    headers: Mapping[str, str] | None = None,
) -> JSONResponse:
    """The problem document as a response."""
    body: dict[str, Any] = {
        "type": TYPE_PREFIX + kind if kind else "about:blank",
        "title": TITLES.get(status, "Error"),
        "status": status,
        "detail": redact(detail),
    }
    if errors:
        body["errors"] = [{k: redact(v) if isinstance(v, str) else v for k, v in e.items()} for e in errors]
    return JSONResponse(body, status_code=status, headers=dict(headers or {}), media_type=MEDIA_TYPE)


def redact(text: str) -> str:
    """``text`` with anything that looks like a key (``evk_...``) replaced by ``evk_(redacted)``."""
    return _KEY.sub(REDACTED, text) if "evk_" in text else text


def log_unexpected(method: str, path: str, exc: BaseException) -> None:
    """One line in the server's log for an error nobody foresaw: the request (its path with any
    key redacted and control characters escaped), the error's type and message, and the line of
    evalcore (else the innermost line) that raised it. No traceback: one request, one line."""
    frames = traceback.extract_tb(exc.__traceback__)
    ours = [f for f in frames if "/evalcore/" in f.filename.replace("\\", "/")]
    where = (ours or frames)[-1:] if frames else []
    at = f" at {_short(where[0].filename)}:{where[0].lineno} in {where[0].name}" if where else ""
    message = " ".join(str(exc).split())[:300]
    shown = redact(path).encode("unicode_escape").decode("ascii")[:300]
    log.error("unexpected %s on %s %s%s: %s", type(exc).__name__, method, shown, at, redact(message))
    setattr(exc, "_evalcore_logged", True)  # noqa: B010 - the ASGI wrapper logs nothing more for it


def logged(exc: BaseException) -> bool:
    """Whether :func:`log_unexpected` has logged ``exc`` already."""
    return bool(getattr(exc, "_evalcore_logged", False))


def _short(filename: str) -> str:
    path = filename.replace("\\", "/")
    for marker in ("/evalcore/", "/site-packages/"):
        if marker in path:
            return path[path.rindex(marker) + 1 :]
    return path.rsplit("/", 1)[-1]


def scrub(text: str, replacements: Sequence[tuple[object, str]] = ()) -> str:
    """``text`` on one line with the server's own paths (the store, a temporary file) named by
    what they are: an error message never shows where the server keeps its files."""
    for path, name in replacements:
        if str(path):
            text = text.replace(str(path), name)
    return " ".join(text.split())[:2000]


def from_error(exc: EvalcoreError, store_path: object, *replacements: tuple[object, str]) -> Problem:
    """A problem for one of evalcore's named errors: 503 (``Retry-After``) while another process
    holds the store's lock, 404 for a run, decision or deployment that is not there, 409 for a
    run that is not complete, 422 for everything else the caller can fix. The store's path and
    ``replacements`` (path, name) are replaced in the message."""
    text = scrub(str(exc), [*replacements, (store_path, "the service's store")])
    if isinstance(exc, StoreBusy):  # another process holds the store's lock for a moment: nothing was written
        return Problem(503, f"{text}; send again", "store-busy", headers={"Retry-After": str(BUSY_RETRY)})
    if type(exc).__name__ == "UnknownDecision":  # the body names a decision the store does not hold
        return Problem(422, text, "unknown-decision", [{"field": "body.decision_id", "detail": text}])
    if type(exc).__name__ == "UnknownDeployment":
        return Problem(404, text, "not-found")
    if isinstance(exc, StoreError):
        if text.startswith(("no run", "no decision", "no deployment", "no evaluation")):
            return Problem(404, text, "not-found")
        if "no complete run" in text or _NOT_COMPLETE.match(text):
            return Problem(409, text, "not-complete")
    return Problem(422, text, "invalid-input")


def _field(loc: Sequence[Any]) -> str:
    return ".".join(str(p) for p in loc)


def _validation(_: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, RequestValidationError)
    errors = [{"field": _field(e.get("loc", ())), "detail": str(e.get("msg", "invalid"))} for e in exc.errors()]
    first = errors[0] if errors else {"field": "", "detail": "invalid"}
    detail = f"{first['field']}: {first['detail']}" + (f" (and {len(errors) - 1} more)" if len(errors) > 1 else "")
    return response(422, detail, "validation", errors)


def _problem(_: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, StarletteHTTPException)
    kind = getattr(exc, "kind", None)
    errors = getattr(exc, "errors", ())
    detail = exc.detail if isinstance(exc.detail, str) else TITLES.get(exc.status_code, "Error")
    if exc.status_code == 404 and detail == "Not Found":
        detail = "no such resource (see /api/v1/openapi.json)"
    if exc.status_code == 400 and isinstance(exc.__cause__, RecursionError):
        detail = "the body is nested too deeply to read"
    if exc.status_code == 405 and detail == "Method Not Allowed":
        detail = "this resource does not take that method (see /api/v1/openapi.json)"
    return response(exc.status_code, detail, kind, errors, exc.headers)


def _unexpected(request: Request, exc: Exception) -> JSONResponse:
    if isinstance(exc, RecursionError):
        setattr(exc, "_evalcore_logged", True)  # noqa: B010 - answered, nothing to log
        return response(400, "the body is nested too deeply to read", "too-deep")
    log_unexpected(request.method, request.url.path, exc)
    return internal(exc)


def internal(exc: BaseException) -> JSONResponse:
    """The 500 problem for an unforeseen error (its type only: the log has the rest)."""
    return response(500, f"unexpected {type(exc).__name__}; the server's log has the details", "internal")


def install(app: FastAPI) -> None:
    """Register the handlers that turn every error into a problem document."""
    app.add_exception_handler(RequestValidationError, _validation)
    app.add_exception_handler(StarletteHTTPException, _problem)
    app.add_exception_handler(Exception, _unexpected)
