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

A new deployment's name follows the rule of names of things a URL or a header names
(:func:`evalcore.boundary.text.check_identifier`: letters, digits, ``-``, ``_`` and ``.``, at most
100 characters, starting with a letter or a digit; InputError otherwise, before anything is
written). A name is looked up (read, moved, posted to) under the looser rule of every name
(:func:`check_deployment_name`), so a deployment made before the rule stays addressable. A
decision the store does not hold (never saved, deleted, saved in another store) or whose run is
not complete is :class:`evalcore.errors.UnknownDecision`. ``If-Match`` and ``If-None-Match: *``
are checked in the write's own transaction (:class:`PreconditionFailed`: nothing written). The tables are written and
read by :mod:`evalcore.store.deployments`; reads open the store read-only.
"""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from evalcore.authors import clean_author
from evalcore.boundary.text import check_identifier, check_name
from evalcore.errors import EvalcoreError, InputError, UnknownDecision
from evalcore.measures.claim import ClaimError
from evalcore.measures.claim_check import ClaimCheck
from evalcore.read.claims import check_of
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


def check_new_deployment_name(name: str) -> str:
    """``name`` as the name of a new deployment: :func:`check_deployment_name`, then
    :func:`~evalcore.boundary.text.check_identifier` (InputError naming the field and the character)."""
    text = check_deployment_name(name)
    return check_identifier(text, field="deployment name", max_len=MAX_NAME)


class PreconditionFailed(EvalcoreError):
    """A conditional move did not hold: ``If-Match`` names another version of the deployment
    (or there is none), or ``If-None-Match: *`` and it exists. Nothing was written."""


def etag_of(decision_id: str, version: int) -> str:
    """The strong ETag of a deployment at ``version`` pointing at ``decision_id``."""
    return f'"v{version}-{decision_id}"'


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
    #: whether the deployed threshold meets the claim it was saved under, side by side, with the
    #: bounds as the screens print them and the bluffs and lost answers at it (None: no claim stored)
    meets_claim: ClaimCheck | None = None

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
            "meets_claim": self.meets_claim.to_json() if self.meets_claim is not None else None,
        }

    def etag(self) -> str:
        """A strong ETag (quoted) that changes with every move: ``"v3-1a2b3c4d5e6f"``."""
        return etag_of(self.decision_id, self.version)


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


#: :func:`_check`'s answers, per store file, run, configuration, claim and threshold (at most 256)
_CHECKS: dict[tuple[str, str, str, str, float], ClaimCheck | None] = {}
_CHECKS_LOCK = threading.Lock()


def _check(store: Store, run_id: str, configuration: Configuration, claim: Any, threshold: float) -> ClaimCheck | None:
    """Whether the deployed ``threshold`` meets its stored ``claim``
    (:func:`evalcore.read.claims.check_of`: the bluffs and lost answers at it counted over the
    run's gate values); None without a claim, or one that cannot be read as a claim.

    Kept per store file, run, configuration, claim and threshold: a saved decision never changes,
    nor do the gate values of its complete run, so the count (a store query of about a tenth of
    a second) is made once, not on every read of a deployment that production polls."""
    if not isinstance(claim, dict):
        return None
    key = (str(Path(store.path).resolve()), run_id, configuration.label, json.dumps(claim, sort_keys=True), threshold)
    with _CHECKS_LOCK:
        if key in _CHECKS:
            return _CHECKS[key]
    try:
        found: ClaimCheck | None = check_of(store, run_id, configuration, claim, threshold)
    except ClaimError:
        found = None
    with _CHECKS_LOCK:
        if len(_CHECKS) >= 256:
            _CHECKS.clear()
        _CHECKS[key] = found
    return found


def _deployment(row: tuple[Any, ...], store: Store) -> Deployment:
    (name, decision_id, run_id, strategy, retriever, threshold, claim, decided_by, decided_at) = row[:9]
    deployed_by, deployed_at, version = row[9:12]
    configuration = Configuration(str(strategy), str(retriever))
    stored_claim = json.loads(claim) if isinstance(claim, str) and claim else None
    return Deployment(
        name=str(name),
        decision_id=str(decision_id),
        threshold=float(threshold),
        run_id=str(run_id),
        configuration=configuration,
        claim=stored_claim,
        decided_by=decided_by,
        decided_at=decided_at,
        deployed_by=deployed_by,
        deployed_at=deployed_at,
        version=int(version),
        meets_claim=_check(store, str(run_id), configuration, stored_claim, float(threshold)),
    )


def deploy(
    store_path: Store | str | os.PathLike[str],
    name: str,
    decision_id: str,
    author: str | None,
    *,
    if_match: Sequence[str] | None = None,
    if_none_match: bool = False,
) -> Deployment:
    """Point deployment ``name`` at the saved decision ``decision_id``, recorded as moved by
    ``author`` (:func:`evalcore.authors.clean_author`; ``key:NAME`` for an API key). Pointing
    it at the decision it names already changes nothing (same version). InputError for a bad
    name (a new deployment's name: :func:`check_new_deployment_name`) or id;
    :class:`~evalcore.errors.UnknownDecision` when the store holds no such decision of a complete
    run; :class:`PreconditionFailed` when ``if_match`` (ETags, or ``"*"``: any version) does
    not name the deployment's current version, or ``if_none_match`` and it exists. Nothing is
    written on any refusal."""
    name = check_deployment_name(name)
    decision_id = check_name(str(decision_id), field="decision_id", max_len=64)
    store = as_store(store_path)
    try:
        check_identifier(name, field="deployment name", max_len=MAX_NAME)
    except InputError:
        if get_deployment(store, name) is None:  # a name of before the rule stays movable; no new one
            raise
    wanted = list(if_match) if if_match is not None else None

    def precondition(current: tuple[str, int] | None) -> None:
        if current is None:
            if wanted is not None:
                raise PreconditionFailed(f"If-Match: there is no deployment {name!r} (yet); nothing moved")
            return
        etag = etag_of(*current)
        if if_none_match:
            raise PreconditionFailed(f"If-None-Match: *: deployment {name!r} exists (now {etag}); nothing moved")
        if wanted is not None and "*" not in wanted and etag not in wanted:
            raise PreconditionFailed(
                f"If-Match: deployment {name!r} is now {etag}, not {', '.join(wanted)}; read it again, nothing moved"
            )

    check = precondition if (wanted is not None or if_none_match) else None
    version = stored.point(store, name, decision_id, clean_author(author), check)
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
    return _deployment(found, store) if found is not None else None


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
    return [DeploymentHistory(_deployment(row, store), by_name.get(str(row[0]), [])) for row in current]


def deployment_names(store_path: Store | str | os.PathLike[str]) -> list[str]:
    """The names of the store's deployments, sorted (read-only store)."""
    store = as_store(store_path)
    return stored.sorted_names(store)
