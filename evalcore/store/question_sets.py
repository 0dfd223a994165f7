"""The question-set tables (migration 0008): a set, its numbered versions, their items and
out-of-domain queries. :mod:`evalcore.inputs.qsets` checks what is saved; this writes it."""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING, Any

from evalcore.errors import InputError, StoreError
from evalcore.store.basics import now

if TYPE_CHECKING:
    from evalcore.store.connection import Connection


def insert_version(
    store: Connection,
    name: str,
    parent: int | None,
    author: str | None,
    note: str,
    origin: str,
    items: list[list[Any]],
    ood: list[list[Any]],
) -> tuple[int, datetime, list[int], list[int]]:
    """Store the next version of ``name`` (a new set when ``parent`` is None, refused when the
    name is taken) with its ``items`` and ``ood`` rows (each without the leading name and
    version), in one transaction. The version number is the next free one, taken inside the
    transaction, so concurrent saves never collide. Returns (version, created, the versions
    before it, the versions saved from the same parent)."""
    with store.transaction() as con:
        existing = con.execute(
            "SELECT version, parent FROM question_set_versions WHERE name = ? ORDER BY version", [name]
        ).fetchall()
        numbers = [int(r[0]) for r in existing]
        if parent is None and numbers:
            raise InputError(
                f"question set {name!r} already exists (versions 1 to {numbers[-1]}); "
                "choose another name or save a new version of it"
            )
        if parent is not None and parent not in numbers:
            raise StoreError(f"question set {name!r} has no version {parent} to save from")
        version = (numbers[-1] if numbers else 0) + 1
        created = now()
        if not numbers:
            con.execute("INSERT INTO question_sets VALUES (?, ?, ?)", [name, created, author])
        con.execute(
            "INSERT INTO question_set_versions VALUES (?, ?, ?, ?, ?, ?, ?)",
            [name, version, parent, author, created, note, origin],
        )
        if items:
            con.executemany(
                "INSERT INTO question_set_items VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                [[name, version, *row] for row in items],
            )
        if ood:
            con.executemany(
                "INSERT INTO question_set_ood VALUES (?, ?, ?, ?, ?, ?)",
                [[name, version, *row] for row in ood],
            )
        siblings = [int(r[0]) for r in existing if parent is not None and r[1] == parent]
    return version, created, numbers, siblings
