"""The response cache of live search endpoints (the ``responses`` table, migration 0005).

Keyed by the sha256 of method, URL and request body, shared by every run, so running the same
endpoint on the same queries again sends nothing (unless asked to refresh). Only answers with
an HTTP 2xx status are kept, malformed ones included: a re-run reads the same answer and fails
the same query for the same reason, without asking the service again. Request headers are
part of the key only as hashes and are never stored (they may hold credentials). Its reads
and writes are :mod:`evalcore.store.responses` (reads are read only).
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import TYPE_CHECKING

from evalcore.store.responses import cached_rows, kept_count, write_responses

if TYPE_CHECKING:
    from evalcore.store import Store


@dataclass(frozen=True, slots=True)
class Response:
    """One answer of a service: status, body text, seconds it took, requests sent (1 + retries;
    0 when read from the cache)."""

    status: int
    text: str
    seconds: float
    attempts: int = 1


def key(method: str, url: str, body: str | None, headers: tuple[tuple[str, str], ...] = ()) -> str:
    """The cache key of a request: sha256 of ``METHOD\\nURL\\nBODY``, and, when the request
    sends headers of its own (credentials, a tenant), of each header's name and the sha256 of
    its value: an answer fetched with one credential is never served to a request without it
    or with another. Header values are never stored, only inside this hash."""
    text = f"{method.upper()}\n{url}\n{body or ''}"
    if headers:
        named = sorted((n.strip().lower(), hashlib.sha256(v.encode()).hexdigest()) for n, v in headers)
        text += "\n" + "\n".join(f"{n}: {v}" for n, v in named)
    return hashlib.sha256(text.encode()).hexdigest()


def cached_responses(store: Store, keys: list[str]) -> dict[str, Response]:
    """The cached responses of ``keys`` (missing keys are absent); attempts 0."""
    if not keys:
        return {}
    rows = cached_rows(store, keys)
    return {k: Response(int(status), text, float(seconds or 0.0), 0) for k, status, text, seconds in rows}


def keep(store: Store, items: list[tuple[str, str, str, str | None, Response]]) -> None:
    """Cache ``(key, method, url, body, response)`` items (2xx only); a key already cached is
    replaced (a refresh asked the service again)."""
    items = [item for item in items if 200 <= item[4].status < 300]
    if not items:
        return
    write_responses(store, [(k, method, url, body, r.status, r.text, r.seconds) for k, method, url, body, r in items])


def count(store: Store) -> int:
    """Responses in the cache."""
    return kept_count(store)
