"""Who is calling: every request but ``/health`` and the OpenAPI document carries
``Authorization: Bearer evk_...``. The key's SHA-256 is compared in constant time with the hash of
every key in use (the store never holds a key); a missing, unknown or revoked key is 401, a key
without the route's scope 403, a key over its rate 429 with ``Retry-After``.

The keys in use are read again whenever the store changed (:mod:`evalcore.api.snapshots`): a key
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
from starlette.concurrency import run_in_threadpool

from evalcore.api.problems import Problem
from evalcore.api.snapshots import Snapshot
from evalcore.read.keys import keys_in_use
from evalcore.store.keys import PREFIX, SCOPES, key_hash, touch_key

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable

    from evalcore.api.rate import RateLimiter
    from evalcore.read.keys import ApiKey
    from evalcore.store import Store

log = logging.getLogger("evalcore.api")

TOUCH_EVERY = 60.0  # seconds between two records of one key's last use
CHALLENGE = {"WWW-Authenticate": 'Bearer realm="evalcore"'}


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

    def __init__(self, store: Store, limiter: RateLimiter) -> None:
        self.store = store
        self.limiter = limiter
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


def require(scope: str) -> Callable[[Request], Awaitable[Caller]]:
    """A dependency: the request's caller, who must hold ``scope`` and be within its rate."""
    if scope not in SCOPES:
        raise ValueError(f"unknown scope {scope!r}")

    async def dependency(request: Request) -> Caller:
        keys: Keys = request.app.state.keys
        header = request.headers.get("authorization")
        if keys.fresh():  # the usual case: no store read, so no thread needed
            caller = keys.identify(header)
        else:
            caller = await run_in_threadpool(keys.identify, header)
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
                f"(bursts of {keys.limiter.rate.burst:g}; EVALCORE_API_RATE); retry in {wait:.2f} s",
                "rate-limited",
                headers={"Retry-After": str(max(1, int(wait + 0.999)))},
            )
        return caller

    dependency.__name__ = f"key_with_{scope.replace(':', '_')}"
    return dependency
