"""Deployment versions cut into review periods, the ids of sampled lines, and the sampling
frames drawn for the periods, read back (migration 0016; drawn by :mod:`evalcore.traffic.sampling`).
Reads only.

**Review periods.** A version's lines (those its deployment posted for the version's
configuration, asked from its ``deployed_at`` until the next move) are cut into periods of
:data:`REVIEW_PERIOD` (7 days) from 00:00 UTC of the version's first day: the cut of
``traffic check --deployment --period 7d``. A version that ended inside a period ends that period
at its move. A period has **ended** once its end is not after now; only then is its sampling
frame drawn. What a frame's sample holds and counts: :mod:`evalcore.read.traffic.review`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

from evalcore.errors import InputError, UnknownDeployment
from evalcore.measures.drift import first_start
from evalcore.records import Configuration
from evalcore.store import deployments as rows
from evalcore.store.review import STRATA, FrameSpec, LineRef

if TYPE_CHECKING:
    from evalcore.store import Store

#: the length of a review period
REVIEW_PERIOD = timedelta(days=7)
#: the most periods a version is cut into (7-day periods over 190 years)
MAX_REVIEW_PERIODS = 10_000
_LINE_ID = re.compile(r"([0-9a-f]{12})-([ar])([1-9][0-9]{0,8})")


def line_id(frame_id: str, stratum: str, rank: int) -> str:
    """The id of a sampled line over HTTP: ``FRAME-aRANK`` (answered) or ``FRAME-rRANK`` (refused)."""
    return f"{frame_id}-{stratum[0]}{rank}"


def parse_line_id(text: str) -> LineRef | None:
    """The sampled line a :func:`line_id` names; None for a text that is no line id."""
    found = _LINE_ID.fullmatch(text)
    if found is None:
        return None
    return LineRef(found.group(1), "answered" if found.group(2) == "a" else "refused", int(found.group(3)))


# --- versions and their periods --------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class VersionSpan:
    """One version of a deployment: what was deployed, from when (``deployed_at``) until when
    (``until``: the next move; None while it runs). Times naive UTC."""

    deployment: str
    version: int
    current: int  #: the deployment's current version
    decision_id: str
    run_id: str
    configuration: Configuration
    threshold: float
    deployed_at: datetime
    until: datetime | None


@dataclass(frozen=True, slots=True)
class ReviewPeriod:
    """A review period: 1-based ``index``, ``[start, end)``, and ``lines_from`` (the version's
    first moment in its first period, else ``start``)."""

    index: int
    start: datetime
    end: datetime
    lines_from: datetime

    def ended(self, now: datetime) -> bool:
        return self.end <= now


def version_span(store: Store, deployment: str, version: int | None = None) -> VersionSpan:
    """Version ``version`` (default: the current one) of ``deployment``: UnknownDeployment when
    there is no such deployment, InputError (naming ``version``) when it has no such version."""
    current = rows.deployment_row(store, deployment)
    if current is None:
        raise UnknownDeployment(f"no deployment {deployment!r} in this store")
    now_version = int(current[11])
    wanted = now_version if version is None else int(version)
    found = rows.version_row(store, deployment, wanted) if 1 <= wanted <= now_version else None
    if found is None:
        raise InputError(f"version: deployment {deployment!r} has versions 1 to {now_version}, not {wanted}")
    decision_id, run_id, strategy, retriever, t, _, _, _, _, moved_at, until = found
    return VersionSpan(
        deployment,
        wanted,
        now_version,
        str(decision_id),
        str(run_id),
        Configuration(str(strategy), str(retriever)),
        float(t),
        moved_at,
        until,
    )


def utc_now() -> datetime:
    return datetime.now(UTC).replace(tzinfo=None)


def review_periods(span: VersionSpan, now: datetime) -> list[ReviewPeriod]:
    """The version's review periods that have begun by ``now`` (see the module docstring),
    oldest first; at least the first one."""
    first = first_start(span.deployed_at)
    last = min(now, span.until) if span.until is not None else now
    count = max(1, -(-(last - first) // REVIEW_PERIOD))
    if count > MAX_REVIEW_PERIODS:
        raise InputError(f"version {span.version} spans {count:,} review periods, more than {MAX_REVIEW_PERIODS:,}")
    out = []
    for k in range(count):
        start = first + k * REVIEW_PERIOD
        end = start + REVIEW_PERIOD
        if span.until is not None:
            end = min(end, span.until)
        out.append(ReviewPeriod(k + 1, start, end, max(start, span.deployed_at)))
    return out


# --- frames ------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ReviewFrame(FrameSpec):
    """A drawn frame's row (migration 0016): what it was drawn for, and what was drawn."""

    frame_id: str
    seed: int
    second_share: float
    drawn_at: datetime
    drawn_by: str | None
    lines: tuple[int, int]  #: (N_A, N_R)
    asked: tuple[int, int]
    size: tuple[int, int]
    reason: str | None

    def lines_of(self, stratum: str) -> int:
        return self.lines[STRATA.index(stratum)]


_FRAME_COLUMNS = (
    "frame_id, deployment, version, period_index, period_start, period_end, lines_from, decision_id, run_id, "
    "strategy, retriever, threshold, seed, second_share, drawn_at, drawn_by, answered_lines, refused_lines, "
    "answered_asked, refused_asked, answered_size, refused_size, reason"
)


def _frame(r: tuple[Any, ...]) -> ReviewFrame:
    return ReviewFrame(
        frame_id=str(r[0]),
        deployment=str(r[1]),
        version=int(r[2]),
        period_index=int(r[3]),
        period_start=r[4],
        period_end=r[5],
        lines_from=r[6],
        decision_id=str(r[7]),
        run_id=str(r[8]),
        strategy=str(r[9]),
        retriever=str(r[10]),
        threshold=float(r[11]),
        seed=int(r[12]),
        second_share=float(r[13]),
        drawn_at=r[14],
        drawn_by=None if r[15] is None else str(r[15]),
        lines=(int(r[16]), int(r[17])),
        asked=(int(r[18]), int(r[19])),
        size=(int(r[20]), int(r[21])),
        reason=None if r[22] is None else str(r[22]),
    )


def frames(store: Store, deployment: str, version: int) -> dict[datetime, ReviewFrame]:
    """The drawn frames of a deployment version, by period start."""
    with store.read() as con:
        got = con.execute(
            f"SELECT {_FRAME_COLUMNS} FROM review_frames WHERE deployment = ? AND version = ? ORDER BY period_start",
            [deployment, int(version)],
        ).fetchall()
    return {f.period_start: f for f in map(_frame, got)}


def frame_by_id(store: Store, frame_id: str) -> ReviewFrame | None:
    with store.read() as con:
        got = con.execute(f"SELECT {_FRAME_COLUMNS} FROM review_frames WHERE frame_id = ?", [frame_id]).fetchall()
    return _frame(got[0]) if got else None
