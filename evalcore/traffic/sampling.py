"""The review sample by design: which production lines are labelled, chosen with known
inclusion probabilities, so that the production rates computed from their labels
(:mod:`evalcore.read.traffic.estimates`) are unbiased and their bounds exact.

For each deployment version, every review period (7 days from 00:00 UTC of the version's first
day, :mod:`evalcore.read.traffic.review`) gets a **sampling frame** once it has ended: the lines
of the period stored then (those of the traffic imports no longer running when it is drawn; a
line stored later is outside the frame, and counted as late), split by what the gate did at the
deployed t into the **answered** and the **refused** stratum. The frame records the deployed
decision, its threshold and configuration, a random 64-bit seed, when it was drawn, N_A and N_R.

**Each stratum's order.** A line's place in its stratum's order is the SplitMix64 mix of the
seed with the line's identity (its ``line_key`` and ``occurrence``: unique among a deployment's
lines of one configuration), ties broken by that identity: a random permutation, the same every
time the frame is read. The **sample is the first n lines of that order** (n_A and n_R: 30 and 30
by default, ``--answered N --refused N`` or ``$EVALCORE_REVIEW_ANSWERED`` /
``$EVALCORE_REVIEW_REFUSED``), so each line of a stratum is sampled with probability n/N. Taking
more lines continues the same order (ranks n+1..n'): the union is still a uniform sample without
replacement, each line's inclusion n'/N. The order is computed in numpy (linear in the
lines: about 3 s for 10 million on a busy two-core machine); only the sampled lines are stored.

**Drift asks for more.** A period whose drift test moved (the Traffic screen's flag: a
Holm-adjusted KS p below 0.05, :func:`evalcore.read.traffic.periods.periods`) gets twice the
lines, and the frame says why (``drift: ...``).

**Second labels.** A share of the sampled lines (``$EVALCORE_REVIEW_SECOND_SHARE``, default 0.1,
fixed in the frame when it is drawn), chosen by a seeded mix of their stratum and rank, is offered
to a second person after its first label: their agreement is Cohen's kappa; second labels never
enter an estimate.

Drawing is idempotent: a frame drawn stays as it is (only more lines can be taken into it), so the
review reads (``GET /deployments/{name}/review``, the Review screen) may draw a frame that
``traffic sample`` has not drawn yet.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any

from evalcore.boundary.numbers import bounded_float, bounded_int
from evalcore.errors import InputError
from evalcore.measures.drift import first_start
from evalcore.read.traffic.periods import drift_sentence
from evalcore.read.traffic.periods import periods as period_rows
from evalcore.read.traffic.review import version_samples
from evalcore.read.traffic.review_periods import (
    REVIEW_PERIOD,
    ReviewPeriod,
    VersionSpan,
    frames,
    review_periods,
    utc_now,
    version_span,
)
from evalcore.read.traffic.stored import axis
from evalcore.store import review as rows
from evalcore.store.review import FrameDraw, FrameLines, FrameSpec
from evalcore.traffic.sample_order import choose, more_lines

if TYPE_CHECKING:
    import pandas as pd

    from evalcore.read.traffic.review import PeriodSample
    from evalcore.read.traffic.review_periods import ReviewFrame
    from evalcore.store import Store

DEFAULT_ANSWERED = 30
DEFAULT_REFUSED = 30
#: the most lines a stratum's sample may hold
MAX_SIZE = 100_000
ANSWERED_ENV = "EVALCORE_REVIEW_ANSWERED"
REFUSED_ENV = "EVALCORE_REVIEW_REFUSED"
SECOND_SHARE_ENV = "EVALCORE_REVIEW_SECOND_SHARE"
DEFAULT_SECOND_SHARE = 0.1
#: how much a period whose drift test moved raises its sizes
DRIFT_FACTOR = 2
_DAY = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}")

# --- sizes ---------------------------------------------------------------------------------------------


def sample_size(text: object, option: str) -> int:
    """A stratum's sample size: an integer in [1, :data:`MAX_SIZE`] (plain decimal digits), else
    ConfigError naming ``option``."""
    return bounded_int(str(text), option=option, low=1, high=MAX_SIZE)


def sizes(answered: object | None = None, refused: object | None = None) -> tuple[int, int]:
    """The sizes asked for the answered and refused strata: those given, else
    ``$EVALCORE_REVIEW_ANSWERED`` / ``$EVALCORE_REVIEW_REFUSED``, else 30 and 30."""
    out = []
    for given, option, env, default in (
        (answered, "--answered", ANSWERED_ENV, DEFAULT_ANSWERED),
        (refused, "--refused", REFUSED_ENV, DEFAULT_REFUSED),
    ):
        if given is not None:
            out.append(sample_size(given, option))
            continue
        raw = os.environ.get(env, "").strip()
        out.append(sample_size(raw, f"${env}") if raw else default)
    return out[0], out[1]


def second_share() -> float:
    """The share of sampled lines offered to a second person: ``$EVALCORE_REVIEW_SECOND_SHARE``
    in [0, 1], else 0.1."""
    raw = os.environ.get(SECOND_SHARE_ENV, "").strip()
    return bounded_float(raw, option=f"${SECOND_SHARE_ENV}", low=0.0, high=1.0) if raw else DEFAULT_SECOND_SHARE


# --- periods --------------------------------------------------------------------------------------------


def period_of(span: VersionSpan, text: str, now: datetime, field: str = "period") -> ReviewPeriod:
    """The review period of ``span`` that holds the day ``text`` (``YYYY-MM-DD``) and has ended by
    ``now``; InputError naming ``field`` for a text that is no date, a day outside the version, or
    a period that has not ended (its frame is drawn once it has)."""
    shown = text if len(text) <= 40 else text[:40] + "..."
    if not isinstance(text, str) or not _DAY.fullmatch(text):
        raise InputError(f"{field}: a day as YYYY-MM-DD (a day of a review period), got {shown!r}")
    try:
        day = datetime.strptime(text, "%Y-%m-%d")
    except ValueError:
        raise InputError(f"{field}: {shown!r} is no day of the calendar (YYYY-MM-DD)") from None
    first = first_start(span.deployed_at)
    if day < first:
        raise InputError(
            f"{field}: {text} is before version {span.version} of deployment {span.deployment!r} was deployed "
            f"({span.deployed_at:%Y-%m-%d %H:%M} UTC; its first review period starts {first:%Y-%m-%d})"
        )
    if day >= now:
        raise InputError(
            f"{field}: the review period holding {text} has not come to its end (it is {now:%Y-%m-%d %H:%M} UTC "
            "now): its sample is drawn once the period has ended"
        )
    if span.until is not None and day >= span.until:
        raise InputError(
            f"{field}: {text} is after version {span.version} of deployment {span.deployment!r} ended "
            f"({span.until:%Y-%m-%d %H:%M} UTC)"
        )
    k = (day - first) // REVIEW_PERIOD
    start = first + k * REVIEW_PERIOD
    end = start + REVIEW_PERIOD if span.until is None else min(start + REVIEW_PERIOD, span.until)
    if end > now:
        raise InputError(
            f"{field}: the review period from {start:%Y-%m-%d} ends {end:%Y-%m-%d %H:%M} UTC, which has not come: "
            "its sample is drawn once the period has ended"
        )
    return ReviewPeriod(int(k) + 1, start, end, max(start, span.deployed_at))


def _spec(span: VersionSpan, p: ReviewPeriod) -> FrameSpec:
    return FrameSpec(
        span.deployment,
        span.version,
        p.index,
        p.start,
        p.end,
        p.lines_from,
        span.decision_id,
        span.run_id,
        span.configuration.strategy,
        span.configuration.retriever,
        span.threshold,
    )


def _drift(store: Store, span: VersionSpan, wanted: list[ReviewPeriod], now: datetime) -> dict[datetime, str]:
    """Why each period of ``wanted`` takes more lines: ``drift: <its drift sentence>`` for a
    period whose drift test moved (by period start)."""
    if not wanted:
        return {}
    frame = period_rows(
        store,
        span.run_id,
        span.configuration,
        REVIEW_PERIOD,
        span.threshold,
        deployment=span.deployment,
        since=span.deployed_at,
        until=min(now, span.until) if span.until is not None else now,
        before=span.until,
    )
    starts = {p.start for p in wanted}
    return {
        row["start"]: "drift: " + drift_sentence(row)
        for row in frame.to_dict("records")
        if row["start"] in starts and bool(row["drifted"])
    }


# --- drawing -----------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class PeriodDraw:
    """What a draw did for one review period: ``drawn`` (a new frame), ``extended`` (more lines
    taken), ``kept`` (drawn before; as it was), ``not-ended``; and the period's sample now."""

    version: int
    sample: PeriodSample
    status: str
    added: int = 0

    def to_json(self) -> dict[str, Any]:
        s = self.sample
        return {
            "version": self.version,
            "period": s.index,
            "start": f"{s.start:%Y-%m-%dT%H:%M:%SZ}",
            "end": f"{s.end:%Y-%m-%dT%H:%M:%SZ}",
            "status": self.status,
            "frame_id": s.frame_id,
            "lines": {"answered": s.answered.lines, "refused": s.refused.lines},
            "sampled": {"answered": s.answered.sampled, "refused": s.refused.sampled},
            "labelled": {"answered": s.answered.labelled, "refused": s.refused.labelled},
            "added": self.added,
            "reason": s.reason,
            "late_lines": s.late_lines,
        }

    def text(self) -> str:
        s = self.sample
        span = f"version {self.version} period {s.index} ({s.start:%Y-%m-%d} .. {s.end:%Y-%m-%d %H:%M})"
        if self.status == "not-ended":
            return f"{span}: not ended yet; its sample is drawn once it has"
        verb = {"drawn": "drew", "extended": f"took {self.added} more lines:", "kept": "kept"}[self.status]
        parts = [
            f"{span}: {verb} {s.answered.sampled} of {s.answered.lines:,} answered and {s.refused.sampled} of "
            f"{s.refused.lines:,} refused lines (labelled: {s.answered.labelled} + {s.refused.labelled})"
        ]
        if s.reason:
            parts.append(f"; twice the lines, {s.reason}")
        if s.late_lines:
            parts.append(f"; {s.late_lines:,} lines stored after the frame was drawn are outside it")
        return "".join(parts)


@dataclass
class SampleReport:
    """``traffic sample``: what was drawn for each period of each version, as of ``as_of``."""

    deployment: str
    as_of: datetime
    periods: list[PeriodDraw] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return {
            "deployment": self.deployment,
            "as_of": f"{self.as_of:%Y-%m-%dT%H:%M:%SZ}",
            "periods": [p.to_json() for p in self.periods],
        }

    def text(self) -> str:
        head = f"review sample of deployment {self.deployment} as of {self.as_of:%Y-%m-%d %H:%M} UTC"
        return "\n".join([head, *(f"  {p.text()}" for p in self.periods)] or [head])


def _versions(store: Store, deployment: str, version: int | None) -> list[VersionSpan]:
    current = version_span(store, deployment)
    if version is not None:
        return [version_span(store, deployment, version)]
    return [
        current if v == current.version else version_span(store, deployment, v) for v in range(1, current.version + 1)
    ]


def draw_samples(
    store: Store,
    deployment: str,
    *,
    answered: object | None = None,
    refused: object | None = None,
    version: int | None = None,
    period: str | None = None,
    now: datetime | None = None,
    author: str | None = None,
    seed: Callable[[], int] = rows.new_seed,
) -> SampleReport:
    """Draw the frame of every review period that has ended (of ``version`` only, of the period
    holding the day ``period`` only, when given) and has none yet; with ``answered`` or
    ``refused`` given, take more lines into the frames drawn before whose samples are smaller
    (a size only grows). ``seed`` makes each new frame's seed (a test gives its own)."""
    at = now if now is not None else utc_now()
    asked = sizes(answered, refused)
    explicit = (answered is not None, refused is not None)
    share = second_share()
    report = SampleReport(deployment, at)
    for span in _versions(store, deployment, version):
        chosen = [period_of(span, period, at, "--period")] if period is not None else review_periods(span, at)
        done = frames(store, deployment, span.version)
        ended = [p for p in chosen if p.ended(at)]
        reasons = _drift(store, span, [p for p in ended if p.start not in done], at)
        higher = axis(store, span.run_id, span.configuration).higher_is_closer
        status: dict[datetime, tuple[str, int]] = {}
        for p in chosen:
            if not p.ended(at):
                status[p.start] = ("not-ended", 0)
            elif p.start not in done:
                status[p.start] = _new_frame(store, span, p, asked, reasons.get(p.start), higher, seed(), share, author)
            else:
                status[p.start] = _extend(store, span, p, done[p.start], asked, explicit, higher)
        for s in version_samples(store, deployment, span.version, now=at):
            if s.start in status:
                report.periods.append(PeriodDraw(span.version, s, *status[s.start]))
    return report


def _new_frame(
    store: Store,
    span: VersionSpan,
    p: ReviewPeriod,
    asked: tuple[int, int],
    reason: str | None,
    higher: bool,
    seed: int,
    share: float,
    author: str | None,
) -> tuple[str, int]:
    factor = DRIFT_FACTOR if reason else 1
    size = (min(asked[0] * factor, MAX_SIZE), min(asked[1] * factor, MAX_SIZE))

    def pick(lines: FrameLines) -> FrameDraw:
        return choose(lines, span.threshold, higher, asked, size, reason, seed, share)

    made = rows.draw_frame(store, _spec(span, p), pick, author)
    return ("drawn", 0) if made is not None else ("kept", 0)


def _extend(
    store: Store,
    span: VersionSpan,
    p: ReviewPeriod,
    frame: ReviewFrame,
    asked: tuple[int, int],
    explicit: tuple[bool, bool],
    higher: bool,
) -> tuple[str, int]:
    factor = DRIFT_FACTOR if frame.reason else 1
    new_asked = tuple(max(a, f) if e else f for a, f, e in zip(asked, frame.asked, explicit, strict=True))
    size = tuple(min(max(a * factor, f), MAX_SIZE) for a, f in zip(new_asked, frame.size, strict=True))
    if tuple(size) == frame.size:
        return ("kept", 0)
    target = (int(size[0]), int(size[1]))

    def pick(lines: FrameLines, held: pd.DataFrame) -> pd.DataFrame:
        return more_lines(lines, held, frame, higher, target)

    added = rows.extend_frame(
        store, frame.frame_id, _spec(span, p), target, (int(new_asked[0]), int(new_asked[1])), pick
    )
    return ("extended", added)


def ensure_drawn(
    store: Store,
    deployment: str,
    version: int | None = None,
    now: datetime | None = None,
    author: str | None = None,
) -> int:
    """Draw, at the sizes of the environment (or 30 + 30), the frame of every period of the
    version (default: the current one) that has ended and has none: what the review reads do
    before they read. Returns how many were drawn."""
    at = now if now is not None else utc_now()
    span = version_span(store, deployment, version)
    done = frames(store, deployment, span.version)
    missing = [p for p in review_periods(span, at) if p.ended(at) and p.start not in done]
    if not missing:
        return 0
    asked = sizes()
    share = second_share()
    reasons = _drift(store, span, missing, at)
    higher = axis(store, span.run_id, span.configuration).higher_is_closer
    made = [
        _new_frame(store, span, p, asked, reasons.get(p.start), higher, rows.new_seed(), share, author) for p in missing
    ]
    return sum(1 for status, _ in made if status == "drawn")
