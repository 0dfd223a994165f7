"""The version of a deployment that production runs now, and what of its traffic is stored.

A deployment (migration 0013) points at one saved decision; every move to another decision
raises its ``version`` by one and is kept in ``deployment_moves``. A **version** is what
production ran between two moves: its decision, threshold and configuration, from the time
it was deployed (``deployed_at``, UTC) until the next move. A line a deployment posted belongs
to the version that was deployed when the line was asked (its ``asked_at``): a line asked
before the move that made the current version is the previous version's, even when it arrived
or was replayed later.

:func:`deployed_version` reads the current version (None: no such deployment), with the
previous versions' times so that a reader can say what it leaves out; :func:`pending_lines`
counts the deployment's posted lines that wait for their replay (not stored as traffic yet),
and :func:`posted_counts` what was posted, replayed and failed (the service's metrics).
Reads only.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any

from evalcore.records import Configuration
from evalcore.store import deployments as rows

if TYPE_CHECKING:
    from evalcore.store import Store


def iso(at: datetime) -> str:
    """A naive UTC time as ISO 8601 with ``Z``, to the second (``2026-12-05T00:00:00Z``)."""
    return at.strftime("%Y-%m-%dT%H:%M:%SZ")


@dataclass(frozen=True, slots=True)
class DeployedVersion:
    """The version a deployment runs now: ``version`` (1 for the first deployment, +1 each
    move), the decision and its threshold, the run and configuration, who deployed it and when
    (``deployed_at``, naive UTC: the version's first moment), and the earlier versions as
    ``(version, moved_at)``, newest first."""

    name: str
    version: int
    decision_id: str
    threshold: float
    run_id: str
    configuration: Configuration
    deployed_by: str | None
    deployed_at: datetime
    earlier: list[tuple[int, datetime]] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return {
            "deployment": self.name,
            "version": self.version,
            "decision_id": self.decision_id,
            "threshold": self.threshold,
            "run_id": self.run_id,
            "configuration": self.configuration.label,
            "deployed_by": self.deployed_by,
            "deployed_at": iso(self.deployed_at),
        }


def deployed_version(store: Store, name: str) -> DeployedVersion | None:
    """Deployment ``name``'s current version (see the module docstring), or None when the store
    has no deployment of that name."""
    found = rows.deployment_row(store, name)
    if found is None:
        return None
    _, decision_id, run_id, strategy, retriever, threshold, _, _, _, deployed_by, deployed_at, version = found
    with store.read() as con:
        moves = con.execute(
            "SELECT version, moved_at FROM deployment_moves WHERE name = ? AND version < ? ORDER BY version DESC",
            [name, int(version)],
        ).fetchall()
    return DeployedVersion(
        name=name,
        version=int(version),
        decision_id=str(decision_id),
        threshold=float(threshold),
        run_id=str(run_id),
        configuration=Configuration(str(strategy), str(retriever)),
        deployed_by=None if deployed_by is None else str(deployed_by),
        deployed_at=deployed_at,
        earlier=[(int(v), at) for v, at in moves],
    )


def pending_lines(store: Store, name: str) -> int:
    """How many lines deployment ``name`` posted that wait for their replay (stored as traffic
    once the job runner has scored them)."""
    with store.read() as con:
        got = con.execute(
            "SELECT count(*) FROM traffic_posted WHERE deployment = ? AND import_id IS NULL", [name]
        ).fetchall()
    return int(got[0][0])


@dataclass(frozen=True, slots=True)
class PostedCounts:
    """A deployment's posted lines: ``posted`` (every line stored once, by NDJSON or OTLP),
    ``replayed`` (scored by the job runner), ``pending`` (waiting for their replay), ``failed``
    (replayed lines the run's endpoint could not answer) and ``oldest_pending`` (naive UTC: when
    the oldest waiting line arrived; None when none waits)."""

    posted: int
    replayed: int
    pending: int
    failed: int
    oldest_pending: datetime | None


def posted_counts(store: Store, name: str) -> PostedCounts:
    """:class:`PostedCounts` of deployment ``name`` (zeros for a name that posted nothing)."""
    with store.read() as con:
        posted, replayed, oldest = con.execute(
            "SELECT count(*), count(import_id), min(received_at) FILTER (WHERE import_id IS NULL) "
            "FROM traffic_posted WHERE deployment = ?",
            [name],
        ).fetchall()[0]
        failed = con.execute(
            "SELECT count(*) FROM traffic_queries q JOIN traffic_texts t USING (run_id, strategy, retriever, "
            "text_hash) WHERE q.deployment = ? AND t.failure IS NOT NULL",
            [name],
        ).fetchall()[0][0]
    return PostedCounts(int(posted), int(replayed), int(posted) - int(replayed), int(failed), oldest)


def version_lines(store: Store, version: DeployedVersion) -> tuple[int, int]:
    """The stored lines deployment ``version.name`` posted for the version's configuration:
    ``(asked while the version was deployed, asked before it)``; the second are earlier
    versions' (a check of the version leaves them out)."""
    with store.read() as con:
        got = con.execute(
            "SELECT count(*) FILTER (WHERE asked_at >= ?), count(*) FILTER (WHERE asked_at < ?) FROM traffic_queries "
            "WHERE run_id = ? AND strategy = ? AND retriever = ? AND deployment = ?",
            [
                version.deployed_at,
                version.deployed_at,
                version.run_id,
                version.configuration.strategy,
                version.configuration.retriever,
                version.name,
            ],
        ).fetchall()
    return int(got[0][0]), int(got[0][1])
