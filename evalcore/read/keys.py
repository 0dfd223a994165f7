"""The API keys read back: the list ``evalcore keys list`` prints, and the keys in use the API
checks a request's key against (hashes only: the store never holds a key)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from evalcore.store.connection import Connection


@dataclass(frozen=True, slots=True)
class ApiKey:
    """A key in use: its id, name, hash and scopes."""

    key_id: str
    name: str
    key_hash: str
    scopes: frozenset[str]


def keys(store: Connection) -> list[dict[str, Any]]:
    """Every key, revoked ones included, oldest first: name, scopes, author, created_at,
    last_used_at, revoked_at, key_id (never a key, never a hash)."""
    df = store.query(
        "SELECT name, scopes, author, created_at, last_used_at, revoked_at, key_id FROM api_keys "
        "ORDER BY created_at, key_id"
    )
    out = []
    for row in df.to_dict("records"):
        out.append({str(k): (None if v is None or v != v else v) for k, v in row.items()})  # NaT/NaN: None
    return out


def keys_in_use(store: Connection) -> list[ApiKey]:
    """The keys not revoked, with their hashes (for the API's constant-time comparison)."""
    with store.read() as con:
        rows = con.execute("SELECT key_id, name, key_hash, scopes FROM api_keys WHERE revoked_at IS NULL").fetchall()
    return [ApiKey(str(i), str(n), str(h), frozenset(str(s).split(","))) for i, n, h, s in rows]
