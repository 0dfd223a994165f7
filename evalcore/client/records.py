"""The library's records from the service's JSON, checked field by field: a field missing, of
another type, or a number that is not finite is a ValueError naming the field (the client turns
it into :class:`~evalcore.errors.ServiceUnavailable`: an answer that is not what the API answers)."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, fields
from datetime import UTC, datetime
from typing import Any

from evalcore.measures.claim import Claim
from evalcore.measures.claim_check import ClaimCheck
from evalcore.records import Configuration
from evalcore.service.deployments import Deployment, DeploymentHistory, Move
from evalcore.service.evaluations import QueuedEvaluation


@dataclass(frozen=True)
class LiveDeployment(Deployment):
    """A deployment as the client last knew it: ``stale`` when the service could not be reached,
    or answered what is not a deployment, at the last revalidation (the value is the last one it
    answered); ``checked_at`` is when the service last confirmed it (``time.time()``)."""

    stale: bool = False
    checked_at: float = 0.0


def _object(data: Any, what: str) -> Mapping[str, Any]:
    if not isinstance(data, Mapping):
        raise ValueError(f"{what}: not a JSON object but {type(data).__name__}")
    return data


def _text(data: Mapping[str, Any], name: str) -> str:
    value = data.get(name)
    if not isinstance(value, str):
        raise ValueError(f"{name}: not a text but {type(value).__name__}")
    return value


def _optional_text(data: Mapping[str, Any], name: str) -> str | None:
    return None if data.get(name) is None else _text(data, name)


def _number(data: Mapping[str, Any], name: str) -> float:
    value = data.get(name)
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ValueError(f"{name}: not a number but {type(value).__name__}")
    number = float(value)
    if not math.isfinite(number):
        raise ValueError(f"{name}: not a finite number ({number!r})")
    return number


def _optional_number(data: Mapping[str, Any], name: str) -> float | None:
    return None if data.get(name) is None else _number(data, name)


def _integer(data: Mapping[str, Any], name: str) -> int:
    value = data.get(name)
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValueError(f"{name}: not an integer but {type(value).__name__}")
    return value


def _time(data: Mapping[str, Any], name: str) -> datetime:
    """An ISO 8601 time as the library keeps it: UTC, naive."""
    text = _text(data, name)
    try:
        when = datetime.fromisoformat(text[:-1] if text.endswith("Z") else text)
    except ValueError:
        raise ValueError(f"{name}: not an ISO 8601 time ({text[:40]!r})") from None
    return when if when.tzinfo is None else when.astimezone(UTC).replace(tzinfo=None)


def _optional_bool(data: Mapping[str, Any], name: str) -> bool | None:
    value = data.get(name)
    if value is not None and not isinstance(value, bool):
        raise ValueError(f"{name}: not true, false or null but {type(value).__name__}")
    return value


def _count(data: Mapping[str, Any], name: str) -> int:
    value = _integer(data, name)
    if value < 0:
        raise ValueError(f"{name}: not a count ({value})")
    return value


def _optional_count(data: Mapping[str, Any], name: str) -> int | None:
    return None if data.get(name) is None else _count(data, name)


def _one_of(data: Mapping[str, Any], name: str, allowed: tuple[str, ...]) -> str:
    value = _text(data, name)
    if value not in allowed:
        raise ValueError(f"{name}: {value[:40]!r} is none of {', '.join(allowed)}")
    return value


def claim_check_from_json(data: Any) -> ClaimCheck:
    """A :class:`~evalcore.measures.claim_check.ClaimCheck` from its JSON (``meets_claim`` of a
    deployment); ValueError naming the first field that is missing or of another type, or a
    ``met`` that does not follow from the two sides."""
    data = _object(data, "meets_claim")
    check = ClaimCheck(
        threshold=_number(data, "threshold"),
        axis=_one_of(data, "axis", ("distance", "score")),
        bluff=_optional_bool(data, "bluff"),
        lost=_optional_bool(data, "lost"),
        bluff_op=_one_of(data, "bluff_op", ("<=", ">")),
        lost_op=_one_of(data, "lost_op", ("<=", ">")),
        bluff_bound=_optional_number(data, "bluff_bound"),
        lost_bound=_optional_number(data, "lost_bound"),
        bluff_bound_text=_optional_text(data, "bluff_bound_text"),
        lost_bound_text=_optional_text(data, "lost_bound_text"),
        max_bluff_rate=_number(data, "max_bluff_rate"),
        max_lost_rate=_number(data, "max_lost_rate"),
        confidence=_number(data, "confidence"),
        n_ood=_count(data, "n_ood"),
        n_answerable=_count(data, "n_answerable"),
        bluffs_at_t=_optional_count(data, "bluffs_at_t"),
        lost_at_t=_optional_count(data, "lost_at_t"),
    )
    if "met" in data and _optional_bool(data, "met") is not check.met:
        raise ValueError(f"met: {data.get('met')!r}, but the bluff and lost sides say {check.met!r}")
    return check


def deployment_from_json(data: Any) -> Deployment:
    """A :class:`Deployment` from its JSON (:meth:`Deployment.to_json`); ValueError naming the
    first field that is missing or of another type. ``meets_claim`` may be absent (a server of
    before it: the record's ``meets_claim`` is None, as for a decision saved without a claim, and
    the answer is still a valid deployment); when sent, it must be a whole ``meets_claim`` object
    or null (:func:`claim_check_from_json`)."""
    data = _object(data, "deployment")
    claim = data.get("claim")
    if claim is not None and not isinstance(claim, Mapping):
        raise ValueError(f"claim: not a JSON object but {type(claim).__name__}")
    version = _integer(data, "version")
    if version < 1:
        raise ValueError(f"version: not a version ({version})")
    try:
        configuration = Configuration.parse(_text(data, "configuration"))
    except ValueError as exc:
        raise ValueError(f"configuration: {exc}") from None
    return Deployment(
        name=_text(data, "name"),
        decision_id=_text(data, "decision_id"),
        threshold=_number(data, "threshold"),
        run_id=_text(data, "run_id"),
        configuration=configuration,
        claim=dict(claim) if claim is not None else None,
        decided_by=_optional_text(data, "decided_by"),
        decided_at=_time(data, "decided_at"),
        deployed_by=_optional_text(data, "deployed_by"),
        deployed_at=_time(data, "deployed_at"),
        version=version,
        meets_claim=None if data.get("meets_claim") is None else claim_check_from_json(data["meets_claim"]),
    )


def live_from_json(data: Any, name: str, checked_at: float) -> LiveDeployment:
    """What :meth:`evalcore.Client.deployment` answers: the deployment ``name`` from its JSON,
    confirmed at ``checked_at``; ValueError when it is not that deployment."""
    base = deployment_from_json(data)
    if base.name != name:
        raise ValueError(f"name: the answer is deployment {base.name[:80]!r}, not {name[:80]!r}")
    return LiveDeployment(**{f.name: getattr(base, f.name) for f in fields(Deployment)}, checked_at=checked_at)


def history_from_json(data: Any) -> DeploymentHistory:
    """A :class:`DeploymentHistory` (the deployment and its moves, newest first) from its JSON."""
    data = _object(data, "deployment")
    moves = data.get("moves") or []
    if not isinstance(moves, list):
        raise ValueError(f"moves: not a list but {type(moves).__name__}")
    return DeploymentHistory(
        deployment_from_json(data),
        [
            Move(
                version=_integer(m, "version"),
                moved_by=_optional_text(m, "moved_by"),
                moved_at=_time(m, "moved_at"),
                from_decision_id=_optional_text(m, "from_decision_id"),
                from_threshold=_optional_number(m, "from_threshold"),
                to_decision_id=_text(m, "to_decision_id"),
                to_threshold=_number(m, "to_threshold"),
            )
            for m in (_object(x, "move") for x in moves)
        ],
    )


def claim_from_json(data: Any) -> Claim:
    """A :class:`Claim` from its JSON (the fields a Claim has; others are ignored)."""
    names = {f.name for f in fields(Claim)}
    return Claim(**{k: v for k, v in _object(data, "claim").items() if k in names})


def evaluation_from_json(data: Any) -> QueuedEvaluation:
    """An :class:`~evalcore.service.evaluations.QueuedEvaluation` from its JSON."""
    data = _object(data, "evaluation")

    def when(name: str) -> datetime | None:
        return None if data.get(name) is None else _time(data, name)

    position = data.get("position")
    return QueuedEvaluation(
        evaluation_id=_text(data, "id"),
        name=str(data.get("name") or ""),
        status=_text(data, "status"),
        stage=_optional_text(data, "stage"),
        progress=_optional_number(data, "progress") or 0.0,
        run_id=_optional_text(data, "run_id"),
        reason=_optional_text(data, "reason"),
        created_at=when("created_at"),
        started_at=when("started_at"),
        finished_at=when("finished_at"),
        position=position if isinstance(position, int) and not isinstance(position, bool) else None,
    )
