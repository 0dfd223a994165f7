"""The ``api_keys`` table (migration 0012): the keys machines present to the HTTP API.

A key is ``evk_`` and 32 random bytes (URL-safe base64). It is shown once, by :func:`create_key`'s
caller, and never stored: the table keeps its SHA-256 (hex), which the API compares in
constant time (:mod:`evalcore.api.serving.auth`). This module is the one writer of the table;
:mod:`evalcore.read.keys` reads it.
"""

from __future__ import annotations

import hashlib
import secrets
import uuid
from collections.abc import Iterable
from datetime import datetime

from evalcore.boundary.text import check_identifier, check_name
from evalcore.errors import InputError
from evalcore.store.basics import now, one_row
from evalcore.store.connection import Connection

PREFIX = "evk_"
KEY_BYTES = 32
#: Every scope a key may hold, in the order they are listed.
SCOPES = ("read", "runs:write", "evaluate", "gate", "deploy", "traffic:write", "label")
MAX_KEY_NAME = 100


def key_hash(key: str) -> str:
    """The hex SHA-256 of ``key`` (what the store keeps)."""
    return hashlib.sha256(key.encode("utf-8", "surrogatepass")).hexdigest()


def check_scopes(scopes: Iterable[str]) -> tuple[str, ...]:
    """The scopes named, each once, in :data:`SCOPES` order; InputError naming an unknown one."""
    wanted = {s.strip() for s in scopes if s.strip()}
    unknown = sorted(wanted - set(SCOPES))
    if unknown:
        raise InputError(f"--scope: unknown scope {', '.join(unknown)} (known: {', '.join(SCOPES)})")
    if not wanted:
        raise InputError(f"--scope: name at least one scope ({', '.join(SCOPES)})")
    return tuple(s for s in SCOPES if s in wanted)


def check_key_name(name: str) -> str:
    """A key's name as :func:`evalcore.boundary.text.check_name` reads it, at most 100 characters."""
    return check_name(name, field="key name", max_len=MAX_KEY_NAME)


def create_key(store: Connection, name: str, scopes: Iterable[str], author: str | None) -> str:
    """Store a new key named ``name`` with ``scopes``; returns the key (the only time it exists
    outside the caller). InputError for a bad name or scope, or when a key of that name is
    still in use (revoke it first). A new key's name is an identifier
    (:func:`evalcore.boundary.text.check_identifier`); one made before that rule can still be revoked."""
    name = check_identifier(check_key_name(name), field="key name", max_len=MAX_KEY_NAME)
    chosen = check_scopes(scopes)
    key = PREFIX + secrets.token_urlsafe(KEY_BYTES)
    with store.transaction() as con:
        row = one_row(con, "SELECT count(*) FROM api_keys WHERE name = ? AND revoked_at IS NULL", [name])
        if row[0]:
            raise InputError(f"key name {name!r}: a key of that name is in use; revoke it first (evalcore keys revoke)")
        con.execute(
            "INSERT INTO api_keys (key_id, name, key_hash, scopes, author, created_at) VALUES (?, ?, ?, ?, ?, ?)",
            [uuid.uuid4().hex[:12], name, key_hash(key), ",".join(chosen), author, now()],
        )
    return key


def revoke_key(store: Connection, name: str) -> int:
    """Revoke the key in use named ``name``; returns 1. InputError when there is none."""
    name = check_key_name(name)
    with store.transaction() as con:
        row = con.execute(
            "UPDATE api_keys SET revoked_at = ? WHERE name = ? AND revoked_at IS NULL RETURNING key_id", [now(), name]
        ).fetchall()
    if not row:
        raise InputError(f"key name {name!r}: no key in use of that name (see: evalcore keys list)")
    return len(row)


def touch_key(store: Connection, key_id: str, when: datetime | None = None) -> None:
    """Record that key ``key_id`` was used (the API calls it at most once a minute per key)."""
    with store.transaction() as con:
        con.execute("UPDATE api_keys SET last_used_at = ? WHERE key_id = ?", [when or now(), key_id])
