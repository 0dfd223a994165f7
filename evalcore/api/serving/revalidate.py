"""The revalidation fast path: ``GET /deployments/{name}`` with ``If-None-Match``, answered 304
as a plain ASGI exchange, before FastAPI's routing, dependencies and response classes.

Production revalidates its deployment many times a second; almost every such request is the
same question with the same answer. This path answers it from what the API already keeps in
memory (the keys in use, the deployment), after the same checks as the route, in the same order:
the key's hash compared in constant time with every key in use, the scope ``read``, the
deployment's current version, a token from the key's rate bucket. One ``stat`` of the store's
files (:func:`evalcore.api.serving.snapshots.signature`) per request says whether what is kept is still
the store's: a move or a revoked key, by any process, is seen by the very next request.

Anything else falls through to FastAPI, which answers it in full (and alone writes errors): a
missing, unknown or revoked key, more than one ``Authorization`` header, an address past its
failed authentications, a key without ``read``, a store changed since the last read, a
deployment not kept, an ETag that does not match (200 with the body), an empty bucket (429),
a request with a body. A request that falls through has spent no key token here, so each
request spends exactly one of its key's (and at most two of the service's).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from evalcore.api.serving.auth import EVERYONE
from evalcore.api.serving.problems import Problem
from evalcore.api.serving.snapshots import signature

if TYPE_CHECKING:
    from fastapi import FastAPI
    from starlette.types import Scope, Send

SEGMENT = "/deployments/"
SCOPE = "read"  # the scope of GET /deployments/{name} (evalcore.api.deployments)


def etag_matches(header: str | None, etag: str) -> bool:
    """Whether ``If-None-Match`` names ``etag`` (or is ``*``); weak tags compare weakly (RFC 9110)."""
    if not header:
        return False
    for tag in header.split(","):
        tag = tag.strip()
        if tag == "*" or tag.removeprefix("W/") == etag:
            return True
    return False


class Revalidation:
    """Answers a matching revalidation of ``{prefix}/deployments/{name}`` with 304, or says it
    did not (:meth:`answer` returns False and has sent nothing)."""

    def __init__(self, api: FastAPI, prefix: str) -> None:
        self.state = api.state
        self.start = prefix + SEGMENT

    async def answer(self, scope: Scope, send: Send) -> bool:
        if scope.get("method") != "GET":
            return False
        path = str(scope.get("path", ""))
        if not path.startswith(self.start):
            return False
        name = path[len(self.start) :]
        if not name or "/" in name:
            return False
        authorization = if_none_match = None
        for header, value in scope.get("headers", ()):
            if header == b"authorization":
                if authorization is not None:
                    return False  # two: refused (401) by the full path
                authorization = value.decode("latin-1")
            elif header == b"if-none-match":
                if if_none_match is None:
                    if_none_match = value.decode("latin-1")
            elif header in (b"content-length", b"transfer-encoding"):
                return False  # a body: the body limit and FastAPI deal with it
        if authorization is None or if_none_match is None:
            return False
        keys = self.state.keys
        client = scope.get("client")
        if client and keys.failures.wait(str(client[0])) > 0:
            return False  # an address past its failed authentications: 429 by the full path
        now = signature(keys.store.path)
        in_use = keys.kept_at(now)
        if in_use is None:  # the store changed: the keys are read again on the full path
            return False
        try:
            caller = keys.identify_among(authorization, in_use)
        except Problem:
            return False  # 401, written by the full path
        if SCOPE not in caller.scopes:
            return False  # 403
        found = self.state.deployments.kept_at(name, now)
        if found is None:
            return False  # not kept, or read before the store last changed
        etag = found.etag()
        if not etag_matches(if_none_match, etag):
            return False  # 200 with the body
        if keys.service.take(EVERYONE) > 0:
            return False  # the service's 429
        if keys.limiter.take(caller.key_id) > 0:
            return False  # 429 with Retry-After
        await send(
            {
                "type": "http.response.start",
                "status": 304,
                "headers": [(b"etag", etag.encode("latin-1")), (b"cache-control", b"no-cache")],
            }
        )
        await send({"type": "http.response.body", "body": b""})
        return True
