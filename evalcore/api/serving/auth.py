"""Who is calling: every request but ``/health`` and the OpenAPI document carries
``Authorization: Bearer evk_...``. The key's SHA-256 is compared in constant time with the hash of
every key in use (the store never holds a key); a missing, unknown or revoked key, or more than
one ``Authorization`` header, is 401, a key without the route's scope 403, a key over its rate
429 with ``Retry-After``.

:class:`KeyCheck` settles all of that before a byte of the body is read (a caller without a key
learns nothing about bodies), in this order: the client address's failed authentications
(429 once past ``EVALCORE_API_AUTH_FAILURES``), the service's rate (429,
``EVALCORE_API_GLOBAL_RATE``), the key (401), its scope (403), its rate (429), then the body's
media type (415 for a JSON route sent anything but JSON). The route's dependency
(:func:`require`) then finds the caller already admitted; without :class:`KeyCheck` in front
it does the same checks itself.

The keys in use are read again whenever the store changed (:mod:`evalcore.api.serving.snapshots`): a key
revoked by ``evalcore keys revoke`` is refused from the next request on. A key's last use is
recorded at most once a minute. A key never reaches a log or an error.
"""

from __future__ import annotations

import hmac
import logging
import threading
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING

from fastapi import Request
from fastapi.routing import APIRoute
from starlette.concurrency import run_in_threadpool
from starlette.routing import Match

from evalcore.api.serving.problems import Problem, response
from evalcore.api.serving.rate import (
    DEFAULT_FAILURES,
    DEFAULT_GLOBAL_RATE,
    FAILURES_ENV,
    GLOBAL_RATE_ENV,
    RATE_ENV,
    RateLimiter,
    parse_rate,
)
from evalcore.api.serving.snapshots import Snapshot
from evalcore.read.keys import keys_in_use
from evalcore.store.keys import PREFIX, SCOPES, key_hash, touch_key

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable, Iterable

    from fastapi import FastAPI
    from starlette.types import ASGIApp, Receive, Scope, Send

    from evalcore.read.keys import ApiKey
    from evalcore.store import Store

log = logging.getLogger("evalcore.api")

TOUCH_EVERY = 60.0  # seconds between two records of one key's last use
CHALLENGE = {"WWW-Authenticate": 'Bearer realm="evalcore"'}
#: where :class:`KeyCheck` leaves the admitted caller in the request's state
CALLER = "evalcore.caller"
#: the bucket of :attr:`Keys.service`: every request of the service
EVERYONE = "*"
#: the media types a JSON body may be sent as (``+json`` suffixes too)
JSON_TYPES = ("application/json",)


@dataclass(frozen=True, slots=True)
class Caller:
    """The key a request came with: its name (what its writes record as their author)."""

    key_id: str
    name: str
    scopes: frozenset[str]

    @property
    def author(self) -> str:
        return f"key:{self.name}"


class Keys:
    """The keys in use of one store, read again when the store changed."""

    def __init__(
        self,
        store: Store,
        limiter: RateLimiter,
        service: RateLimiter | None = None,
        failures: RateLimiter | None = None,
    ) -> None:
        self.store = store
        self.limiter = limiter  #: per key (EVALCORE_API_RATE)
        #: every request together (EVALCORE_API_GLOBAL_RATE), one bucket
        self.service = service or RateLimiter(parse_rate(None, GLOBAL_RATE_ENV, DEFAULT_GLOBAL_RATE))
        #: failed authentications per client address (EVALCORE_API_AUTH_FAILURES)
        self.failures = failures or RateLimiter(parse_rate(None, FAILURES_ENV, DEFAULT_FAILURES))
        self._lock = threading.Lock()
        self._keys: Snapshot[list[ApiKey]] = Snapshot(store.path, lambda: keys_in_use(store))
        self._touched: dict[str, float] = {}

    def _in_use(self) -> list[ApiKey]:
        return self._keys.get()

    def fresh(self) -> bool:
        """Whether the keys in use are known without reading the store."""
        return self._keys.fresh()

    def kept_at(self, seen: tuple[int, ...]) -> list[ApiKey] | None:
        """The keys in use when they were read at the store's signature ``seen``, else None."""
        ok, value = self._keys.kept_at(seen)
        return value if ok else None

    def identify(self, header: str | None) -> Caller:
        """The caller of an ``Authorization`` header; Problem 401 when it names no key in use."""
        return self.identify_among(header, None)

    def identify_among(self, header: str | None, in_use: list[ApiKey] | None) -> Caller:
        """:meth:`identify` among ``in_use`` (the keys in use, as :meth:`kept_at` gave them;
        None: read them, again if the store changed)."""
        if not header:
            raise Problem(401, "this resource needs a key: Authorization: Bearer evk_...", "no-key", headers=CHALLENGE)
        scheme, _, token = header.strip().partition(" ")
        token = token.strip()
        if scheme.lower() != "bearer" or not token.startswith(PREFIX) or len(token) > 200:
            raise Problem(401, "the Authorization header is not 'Bearer evk_...'", "bad-key", headers=CHALLENGE)
        wanted = key_hash(token)
        found = None
        # every key is compared, so the time says nothing about which matched
        for key in in_use if in_use is not None else self._in_use():
            if hmac.compare_digest(key.key_hash, wanted):
                found = key
        if found is None:
            raise Problem(401, "the key is unknown or revoked", "bad-key", headers=CHALLENGE)
        self._touch(found.key_id)
        return Caller(found.key_id, found.name, found.scopes)

    def _touch(self, key_id: str) -> None:
        now = time.monotonic()
        with self._lock:
            if now - self._touched.get(key_id, -1e9) < TOUCH_EVERY:
                return
            self._touched[key_id] = now

        def record() -> None:
            try:
                touch_key(self.store, key_id)
            except Exception as exc:  # noqa: BLE001 - a busy store must not refuse the request
                log.warning("could not record the last use of key %s: %s", key_id, type(exc).__name__)

        # beside the request, not in its way (a write opens the store: tens of milliseconds)
        threading.Thread(target=record, name="evalcore-key-use", daemon=True).start()


def address(scope: Scope) -> str:
    """The client's address as the server saw it (behind a proxy: what uvicorn's
    ``--forwarded-allow-ips`` lets it take from ``X-Forwarded-For``)."""
    client = scope.get("client")
    return str(client[0]) if client else "unknown"


def authorizations(headers: Iterable[tuple[bytes, bytes]]) -> list[str]:
    """Every ``Authorization`` header of a request, in order."""
    return [value.decode("latin-1") for name, value in headers if name == b"authorization"]


def _retry(wait: float) -> dict[str, str]:
    return {"Retry-After": str(max(1, int(wait + 0.999)))}


def throttled(keys: Keys, where: str) -> None:
    """Problem 429 when the address ``where`` is past its failed authentications, or the service
    past its rate (a token of the service's bucket is taken)."""
    wait = keys.failures.wait(where)
    if wait > 0:
        raise Problem(
            429,
            f"too many failed authentications from this address (bursts of {keys.failures.rate.burst:g}, then "
            f"{keys.failures.rate.per_second:g} a second; {FAILURES_ENV}); retry in {wait:.2f} s",
            "too-many-failures",
            headers=_retry(wait),
        )
    within_service_rate(keys)


def within_service_rate(keys: Keys) -> None:
    """Take a token of the service's bucket; Problem 429 when it has none."""
    wait = keys.service.take(EVERYONE)
    if wait > 0:
        raise Problem(
            429,
            f"the service is over its rate of {keys.service.rate.per_second:g} requests a second for all callers "
            f"together (bursts of {keys.service.rate.burst:g}; {GLOBAL_RATE_ENV}); retry in {wait:.2f} s",
            "rate-limited",
            headers=_retry(wait),
        )


async def admit(keys: Keys, headers: list[str], where: str, scope: str) -> Caller:
    """The caller of a request with the ``Authorization`` headers ``headers`` from the address
    ``where``, who must hold ``scope`` and be within its rate; Problem 401, 403 or 429 otherwise.
    A 401 counts as a failed authentication of ``where``."""
    try:
        if len(headers) > 1:
            raise Problem(
                401,
                f"{len(headers)} Authorization headers; send one: Authorization: Bearer evk_...",
                "bad-key",
                headers=CHALLENGE,
            )
        header = headers[0] if headers else None
        if keys.fresh():  # the usual case: no store read, so no thread needed
            caller = keys.identify(header)
        else:
            caller = await run_in_threadpool(keys.identify, header)
    except Problem:
        keys.failures.take(where)
        raise
    if scope not in caller.scopes:
        raise Problem(
            403,
            f"key {caller.name!r} lacks the scope {scope!r} (it has {', '.join(sorted(caller.scopes))})",
            "missing-scope",
        )
    wait = keys.limiter.take(caller.key_id)
    if wait > 0:
        raise Problem(
            429,
            f"key {caller.name!r} is over its rate of {keys.limiter.rate.per_second:g} requests a second "
            f"(bursts of {keys.limiter.rate.burst:g}; {RATE_ENV}); retry in {wait:.2f} s",
            "rate-limited",
            headers=_retry(wait),
        )
    return caller


def require(scope: str) -> Callable[[Request], Awaitable[Caller]]:
    """A dependency: the request's caller, who must hold ``scope`` and be within its rate (as
    :class:`KeyCheck` admitted it, else checked here)."""
    if scope not in SCOPES:
        raise ValueError(f"unknown scope {scope!r}")

    async def dependency(request: Request) -> Caller:
        admitted = request.scope.get("state", {}).get(CALLER)
        if isinstance(admitted, Caller) and scope in admitted.scopes:
            return admitted
        keys: Keys = request.app.state.keys
        throttled(keys, address(request.scope))
        return await admit(keys, authorizations(request.scope.get("headers", ())), address(request.scope), scope)

    dependency.__name__ = f"key_with_{scope.replace(':', '_')}"
    dependency.required_scope = scope  # type: ignore[attr-defined]  # read by KeyCheck
    return dependency


@dataclass(frozen=True, slots=True)
class _Route:
    route: APIRoute
    scope: str | None  #: the scope its key needs; None: no key
    json_body: bool  #: whether it reads a JSON body (a request model)


class KeyCheck:
    """ASGI wrapper in front of the body limit and the FastAPI app ``api`` (its ``routes``, as
    its routers hold them, included without a prefix): admits the caller of
    every route that needs a key before the body is read, and refuses a JSON route's body of
    another media type (415). A route that needs no key (``/health``, the OpenAPI document) or no
    route at all (404, 405) goes on to ``app`` as it is, after the service's rate (but
    ``/health``, which says whether the service is up)."""

    def __init__(self, api: FastAPI, app: ASGIApp, routes: Iterable[object]) -> None:
        self.api = api
        self.app = app
        self._given = list(routes)  # the routers' own routes (included without a prefix)
        self._routes: list[_Route] | None = None

    def _table(self) -> list[_Route]:
        if self._routes is None:
            table = []
            for route in self._given:
                if isinstance(route, APIRoute):
                    needed = [getattr(d.call, "required_scope", None) for d in route.dependant.dependencies]
                    scope = next((n for n in needed if isinstance(n, str)), None)
                    table.append(_Route(route, scope, route.body_field is not None))
            self._routes = table
        return self._routes

    def _route(self, scope: Scope) -> _Route | None:
        for entry in self._table():
            match, _ = entry.route.matches(scope)
            if match == Match.FULL:
                return entry
        return None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        keys: Keys = self.api.state.keys
        entry = self._route(scope)
        try:
            if entry is None or entry.scope is None:
                if entry is None or entry.route.path != "/health":
                    within_service_rate(keys)
            else:
                where = address(scope)
                throttled(keys, where)
                caller = await admit(keys, authorizations(scope.get("headers", ())), where, entry.scope)
                if entry.json_body:
                    _json_only(scope)
                scope.setdefault("state", {})[CALLER] = caller
        except Problem as exc:
            problem = response(exc.status_code, str(exc.detail), exc.kind, exc.errors, exc.headers)
            await problem(scope, receive, send)
            return
        await self.app(scope, receive, send)


def _json_only(scope: Scope) -> None:
    """Problem 415 when a request carries a body whose media type is not JSON (none given included)."""
    kind = None
    body = False
    for name, value in scope.get("headers", ()):
        if name == b"content-type":
            kind = value.decode("latin-1")
        elif name == b"content-length":
            body = body or value.strip() not in (b"0", b"")
        elif name == b"transfer-encoding":
            body = True
    if not body:  # nothing to read: the route says what is missing
        return
    media = (kind or "").split(";")[0].strip().lower()
    if media in JSON_TYPES or (media.startswith("application/") and media.endswith("+json")):
        return
    raise Problem(
        415,
        f"this route takes a JSON body (Content-Type: application/json), not {media or 'a body of no type'}",
        "media-type",
    )
