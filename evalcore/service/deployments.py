"""Named deployments: ``production`` (or any name) points at one saved threshold decision.

A product manager decides a refusal threshold on the Threshold screen (a saved decision, with
the claim it was made under); pointing a deployment at it is what production reads. Every move
is kept: who moved the deployment, when, from which decision and threshold to which. The
deployment's ``version`` rises by one with each move, and its :meth:`Deployment.etag` changes
with it, so a client polling the deployment gets "not modified" until someone moves it.

Usage::

    from evalcore.service.deployments import deploy, get_deployment

    deploy("runs/evalcore.duckdb", "production", "1a2b3c4d5e6f", author="ana@example.org")
    get_deployment("runs/evalcore.duckdb", "production").threshold   # 0.4137

A name is checked by :func:`evalcore.boundary.text.check_name` (InputError); a decision the
store does not hold (never saved, deleted, saved in another store) or whose run is not complete
is :class:`evalcore.errors.UnknownDecision`. The tables are written and
read by :mod:`evalcore.store.deployments`; reads open the store read-only.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from evalcore.authors import clean_author
from evalcore.boundary.text import check_name
from evalcore.errors import InputError, UnknownDecision
from evalcore.records import Configuration
from evalcore.store import Store
from evalcore.store import deployments as stored

#: what a store argument may be: a Store, or the path of its file
MAX_NAME = 100


def as_store(store: Store | str | os.PathLike[str]) -> Store:
    """``store`` itself, or the Store at that path."""
    return store if isinstance(store, Store) else Store(Path(store))


def check_deployment_name(name: str) -> str:
    """``name`` as a deployment name (NFC, stripped; at most 100 characters, no leading ``-``,
    no control, bidirectional or zero-width character, no ``/``); InputError naming the field."""
    text = check_name(name, field="deployment name", max_len=MAX_NAME)
    if "/" in text or "\\" in text:
        raise InputError(f"deployment name: {text!r} holds a slash (a name is one path segment)")
    return text


def _time(value: Any) -> str | None:
    return value.isoformat() + ("Z" if value.tzinfo is None else "") if isinstance(value, datetime) else None


@dataclass(frozen=True)
class Deployment:
    """Where a deployment points: the decision, its threshold and claim, who decided and who deployed."""

    name: str
    decision_id: str
    threshold: float
    run_id: str
    configuration: Configuration
    claim: dict[str, Any] | None  #: the decision's claim, as ``evalcore threshold --json`` shows it
    decided_by: str | None
    decided_at: datetime  #: UTC, naive
    deployed_by: str | None
    deployed_at: datetime  #: UTC, naive
    version: int

    def to_json(self) -> dict[str, Any]:
        """The JSON object the API answers (times as ISO 8601 UTC with ``Z``)."""
        return {
            "name": self.name,
            "decision_id": self.decision_id,
            "threshold": self.threshold,
            "run_id": self.run_id,
            "configuration": self.configuration.label,
            "claim": self.claim,
            "decided_by": self.decided_by,
            "decided_at": _time(self.decided_at),
            "deployed_by": self.deployed_by,
            "deployed_at": _time(self.deployed_at),
            "version": self.version,
        }

    def etag(self) -> str:
        """A strong ETag (quoted) that changes with every move: ``"v3-1a2b3c4d5e6f"``."""
        return f'"v{self.version}-{self.decision_id}"'


@dataclass(frozen=True)
class Move:
    """One move of a deployment: who, when, from which decision and threshold (None for its
    first deployment) to which; ``version`` is the deployment's version after it."""

    version: int
    moved_by: str | None
    moved_at: datetime
    from_decision_id: str | None
    from_threshold: float | None
    to_decision_id: str
    to_threshold: float

    def to_json(self) -> dict[str, Any]:
        return {
            "version": self.version,
            "moved_by": self.moved_by,
            "moved_at": _time(self.moved_at),
            "from_decision_id": self.from_decision_id,
            "from_threshold": self.from_threshold,
            "to_decision_id": self.to_decision_id,
            "to_threshold": self.to_threshold,
        }


@dataclass(frozen=True)
class DeploymentHistory:
    """A deployment and its moves, newest first."""

    deployment: Deployment
    moves: list[Move] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return {**self.deployment.to_json(), "moves": [m.to_json() for m in self.moves]}


def _deployment(row: tuple[Any, ...]) -> Deployment:
    (name, decision_id, run_id, strategy, retriever, threshold, claim, decided_by, decided_at) = row[:9]
    deployed_by, deployed_at, version = row[9:12]
    return Deployment(
        name=str(name),
        decision_id=str(decision_id),
        threshold=float(threshold),
        run_id=str(run_id),
        configuration=Configuration(str(strategy), str(retriever)),
        claim=json.loads(claim) if isinstance(claim, str) and claim else None,
        decided_by=decided_by,
        decided_at=decided_at,
        deployed_by=deployed_by,
        deployed_at=deployed_at,
        version=int(version),
    )


def deploy(store_path: Store | str | os.PathLike[str], name: str, decision_id: str, author: str | None) -> Deployment:
    """Point deployment ``name`` at the saved decision ``decision_id``, recorded as moved by
    ``author`` (:func:`evalcore.authors.clean_author`; ``key:NAME`` for an API key). Pointing
    it at the decision it names already changes nothing (same version). InputError for a bad
    name or id; :class:`~evalcore.errors.UnknownDecision` when the store holds no such decision
    of a complete run (nothing written)."""
    name = check_deployment_name(name)
    decision_id = check_name(str(decision_id), field="decision_id", max_len=64)
    store = as_store(store_path)
    version = stored.point(store, name, decision_id, clean_author(author))
    if version is None:
        raise UnknownDecision(
            f"decision_id: no saved decision {decision_id!r} of a complete run in this store "
            "(saved with the Threshold screen, `evalcore threshold`, or POST /runs/{ref}/decisions)"
        )
    found = get_deployment(store, name)
    if found is None:  # written just now, in one transaction
        raise UnknownDecision(f"deployment {name!r} could not be read back")
    return found


def get_deployment(store_path: Store | str | os.PathLike[str], name: str) -> Deployment | None:
    """Deployment ``name`` as it points now, or None when there is none (read-only store)."""
    name = check_deployment_name(name)
    store = as_store(store_path)
    found = stored.deployment_row(store, name)
    return _deployment(found) if found is not None else None


def list_deployments(store_path: Store | str | os.PathLike[str]) -> list[DeploymentHistory]:
    """Every deployment (by name) with its moves, newest first (read-only store)."""
    store = as_store(store_path)
    current, moves = stored.deployment_rows(store)
    by_name: dict[str, list[Move]] = {}
    for name, version, by, at, from_id, from_t, to_id, to_t in moves:
        by_name.setdefault(str(name), []).append(
            Move(
                int(version),
                by,
                at,
                from_id,
                None if from_t is None else float(from_t),
                str(to_id),
                float(to_t),
            )
        )
    return [DeploymentHistory(d, by_name.get(d.name, [])) for d in map(_deployment, current)]


def deployment_names(store_path: Store | str | os.PathLike[str]) -> list[str]:
    """The names of the store's deployments, sorted (read-only store)."""
    store = as_store(store_path)
    return stored.sorted_names(store)
