"""The question-set tables (migrations 0008, 0011): a set, its numbered versions, their items
and out-of-domain queries. :mod:`evalcore.inputs.question_sets` checks what is saved and
prepares its rows; this writes them, and reads them back (:func:`version_rows`,
:func:`question_set_names`, :func:`item_rows`).

The write lock is held only for the insert itself: the items come prepared as DataFrames
(every check, every conversion done before), and the store copies each frame in one
statement, so a 200,000-question set holds the store for about a second, not the minutes a
row-by-row insert took while every other reader and writer waited.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any

from evalcore.authors import shown
from evalcore.boundary.text import for_terminal
from evalcore.errors import InputError, StoreError
from evalcore.store.basics import now

if TYPE_CHECKING:
    import pandas as pd

    from evalcore.store.connection import Connection

ITEM_COLUMNS = ("position", "item_id", "question", "group_id", "variant", "needle", "doc_id", "start", "end", "extra")
OOD_COLUMNS = ("position", "item_id", "query", "kind", "extra")
_TYPES = {"position": "int32", "start": "Int32", "end": "Int32"}


def frame(columns: tuple[str, ...], values: dict[str, list[object]]) -> pd.DataFrame:
    """A DataFrame of ``columns`` (whole numbers for position/start/end, possibly missing for
    start/end; text otherwise) from lists of values: what :func:`insert_version` takes."""
    import pandas as pd

    return pd.DataFrame({c: pd.Series(values[c], dtype=_TYPES.get(c, "object")) for c in columns})


class NameTaken(InputError):
    """A new set's name was taken, perhaps by another save that won the race: names the
    set's newest version, who saved it and when."""

    def __init__(self, name: str, version: int, author: str | None, created: datetime) -> None:
        self.name, self.version, self.author, self.created = name, version, author, created
        super().__init__(
            f"question set {name!r} already exists: its newest version is {name}@{version}, saved "
            f"{str(created)[:19]} by {for_terminal(shown(author))}; nothing was saved (import again to "
            f"save yours as {name}@{version + 1}, or choose another name)"
        )


@dataclass(frozen=True, slots=True)
class Inserted:
    """What :func:`insert_version` stored: the version, its time, the versions before it, the
    versions saved from the same parent, and how long the write lock was held (seconds)."""

    version: int
    created: datetime
    before: list[int]
    siblings: list[int]
    lock_seconds: float


def insert_version(
    store: Connection,
    name: str,
    parent: int | None,
    author: str | None,
    note: str,
    origin: str,
    items: pd.DataFrame,
    ood: pd.DataFrame,
) -> Inserted:
    """Store the next version of ``name`` (a new set when ``parent`` is None: NameTaken when
    the name is taken) with its ``items`` and ``ood`` rows (frames of ITEM_COLUMNS and
    OOD_COLUMNS, see :func:`frame`), in one transaction. The version number is the next
    free one, taken inside the transaction, so concurrent saves never collide."""
    with store.transaction() as con:
        held = time.perf_counter()  # the file is open for writing from here to the close
        existing = con.execute(
            "SELECT version, parent, author, created_at FROM question_set_versions WHERE name = ? ORDER BY version",
            [name],
        ).fetchall()
        numbers = [int(r[0]) for r in existing]
        if parent is None and numbers:
            raise NameTaken(name, numbers[-1], existing[-1][2], existing[-1][3])
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
        for table, columns, rows in (
            ("question_set_items", ITEM_COLUMNS, items),
            ("question_set_ood", OOD_COLUMNS, ood),
        ):
            if len(rows):
                listed = ", ".join(f'"{c}"' for c in columns)
                con.register("evalcore_new_rows", rows)
                try:
                    con.execute(
                        f"INSERT INTO {table} (name, version, {listed}) SELECT ?, ?, {listed} FROM evalcore_new_rows",
                        [name, version],
                    )
                finally:
                    con.unregister("evalcore_new_rows")
        siblings = [int(r[0]) for r in existing if parent is not None and r[1] == parent]
    return Inserted(version, created, numbers, siblings, time.perf_counter() - held)


_VERSIONS = """
    SELECT v.name, v.version, v.parent, v.author, v.created_at, v.note, v.origin,
           (SELECT count(*) FROM question_set_items i WHERE i.name = v.name AND i.version = v.version),
           (SELECT count(*) FROM question_set_ood o WHERE o.name = v.name AND o.version = v.version)
    FROM question_set_versions v
"""


def version_rows(store: Connection, name: str | None = None) -> list[tuple[Any, ...]]:
    """Every version (of ``name``, or of every set), by name then version: name, version,
    parent, author, created_at, note, origin, its item count, its off-topic count."""
    with store.read() as con:
        if name is None:
            return con.execute(_VERSIONS + " ORDER BY v.name, v.version").fetchall()
        return con.execute(_VERSIONS + " WHERE v.name = ? ORDER BY v.version", [name]).fetchall()


def question_set_names(store: Connection) -> list[str]:
    with store.read() as con:
        return [r[0] for r in con.execute("SELECT name FROM question_sets ORDER BY name").fetchall()]


def item_rows(store: Connection, name: str, version: int) -> tuple[list[tuple[Any, ...]], list[tuple[Any, ...]]]:
    """A version's in-domain rows (position, item_id, question, group_id, variant, needle,
    doc_id, start, end, extra) and off-topic rows (position, item_id, query, kind, extra), in order."""
    with store.read() as con:
        items = con.execute(
            'SELECT position, item_id, question, group_id, variant, needle, doc_id, start, "end", extra '
            "FROM question_set_items WHERE name = ? AND version = ? ORDER BY position",
            [name, version],
        ).fetchall()
        ood = con.execute(
            "SELECT position, item_id, query, kind, extra FROM question_set_ood WHERE name = ? AND version = ? "
            "ORDER BY position",
            [name, version],
        ).fetchall()
    return items, ood
