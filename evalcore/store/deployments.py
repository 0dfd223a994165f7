"""The ``deployments`` and ``deployment_moves`` tables (migration 0013): a named deployment
pointed at a saved decision, and every move of it. :mod:`evalcore.service.deployments` checks
the name and the decision; these are its statements, reads (read only) and writes."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from evalcore.store.basics import now

if TYPE_CHECKING:
    from evalcore.store.connection import Connection

#: the decision's columns a deployment copies (a saved decision never changes)
_DECISION = "d.decision_id, d.run_id, d.strategy, d.retriever, d.threshold, d.claim, d.author, d.created_at"


def point(
    store: Connection,
    name: str,
    decision_id: str,
    author: str | None,
    check: Callable[[tuple[str, int] | None], None] | None = None,
) -> int | None:
    """Point deployment ``name`` at decision ``decision_id`` in one transaction: its row
    (created, or moved with its version raised by one) and the move. Returns the new version;
    None when the store holds no such decision of a complete run (nothing written). Pointing a deployment at the
    decision it already names is no move: its version is returned unchanged. ``check`` is
    called first, in the transaction, with the deployment's (decision_id, version) or None when
    there is none: an exception it raises writes nothing (a precondition such as ``If-Match``)."""
    with store.transaction() as con:
        if check is not None:
            now_at = con.execute("SELECT decision_id, version FROM deployments WHERE name = ?", [name]).fetchall()
            check((str(now_at[0][0]), int(now_at[0][1])) if now_at else None)
        found = con.execute(
            f"SELECT {_DECISION} FROM decisions d JOIN runs r ON r.run_id = d.run_id "
            "WHERE d.decision_id = ? AND r.status = 'complete'",
            [decision_id],
        ).fetchall()
        if not found:
            return None
        d_id, run_id, strategy, retriever, threshold, claim, decided_by, decided_at = found[0]
        before = con.execute(
            "SELECT decision_id, threshold, version FROM deployments WHERE name = ?", [name]
        ).fetchall()
        if before and before[0][0] == d_id:
            return int(before[0][2])
        version = int(before[0][2]) + 1 if before else 1
        at = now()
        values: list[Any] = [
            d_id,
            run_id,
            strategy,
            retriever,
            float(threshold),
            claim,
            decided_by,
            decided_at,
            author,
            at,
            version,
        ]
        if before:
            con.execute(
                "UPDATE deployments SET decision_id = ?, run_id = ?, strategy = ?, retriever = ?, threshold = ?, "
                "claim = ?, decided_by = ?, decided_at = ?, deployed_by = ?, deployed_at = ?, version = ? "
                "WHERE name = ?",
                [*values, name],
            )
        else:
            con.execute("INSERT INTO deployments VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)", [name, *values])
        con.execute(
            "INSERT INTO deployment_moves VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            [
                name,
                version,
                author,
                at,
                before[0][0] if before else None,
                float(before[0][1]) if before else None,
                d_id,
                float(threshold),
            ],
        )
    return version


def pointed_at(store: Connection, name: str) -> tuple[str, str, str] | None:
    """The run and configuration (``run_id``, ``strategy``, ``retriever``) deployment ``name``
    points at now, or None when there is no such deployment: what the replay of its posted
    traffic scores against (:mod:`evalcore.traffic.posted`)."""
    with store.read() as con:
        found = con.execute("SELECT run_id, strategy, retriever FROM deployments WHERE name = ?", [name]).fetchall()
    return (str(found[0][0]), str(found[0][1]), str(found[0][2])) if found else None


#: a deployment's columns as :func:`deployment_row` and :func:`deployment_rows` give them, in order
_COLUMNS = (
    "name, decision_id, run_id, strategy, retriever, threshold, claim, decided_by, decided_at, "
    "deployed_by, deployed_at, version"
)


def deployment_row(store: Connection, name: str) -> tuple[Any, ...] | None:
    """Deployment ``name``'s row (name, decision_id, run_id, strategy, retriever, threshold,
    claim, decided_by, decided_at, deployed_by, deployed_at, version), or None (read only)."""
    with store.read() as con:
        found = con.execute(f"SELECT {_COLUMNS} FROM deployments WHERE name = ?", [name]).fetchall()
    return tuple(found[0]) if found else None


def deployment_rows(store: Connection) -> tuple[list[tuple[Any, ...]], list[tuple[Any, ...]]]:
    """Every deployment's row (columns as :func:`deployment_row`), by name; and every move
    (name, version, moved_by, moved_at, from_decision_id, from_threshold, to_decision_id,
    to_threshold), by name and newest first: both in one read-only connection."""
    with store.read() as con:
        current = con.execute(f"SELECT {_COLUMNS} FROM deployments ORDER BY name").fetchall()
        moves = con.execute(
            "SELECT name, version, moved_by, moved_at, from_decision_id, from_threshold, to_decision_id, "
            "to_threshold FROM deployment_moves ORDER BY name, version DESC"
        ).fetchall()
    return current, moves


def sorted_names(store: Connection) -> list[str]:
    """The names of the store's deployments, sorted (read only)."""
    with store.read() as con:
        return [str(r[0]) for r in con.execute("SELECT name FROM deployments ORDER BY name").fetchall()]


def version_row(store: Connection, name: str, version: int) -> tuple[Any, ...] | None:
    """Version ``version`` of deployment ``name`` as its move made it: (decision_id, run_id,
    strategy, retriever, threshold, max_bluff_rate, max_lost_rate, confidence, moved_by,
    moved_at, the next move's moved_at or None while it is current), or None (read only). The
    claim's alpha, beta and confidence are the decision's (NULL when it was saved without one)."""
    with store.read() as con:
        found = con.execute(
            "SELECT d.decision_id, d.run_id, d.strategy, d.retriever, m.to_threshold, d.max_bluff_rate, "
            "d.max_lost_rate, d.confidence, m.moved_by, m.moved_at, "
            "(SELECT n.moved_at FROM deployment_moves n WHERE n.name = m.name AND n.version = m.version + 1) "
            "FROM deployment_moves m JOIN decisions d ON d.decision_id = m.to_decision_id "
            "WHERE m.name = ? AND m.version = ?",
            [name, int(version)],
        ).fetchall()
    return tuple(found[0]) if found else None
