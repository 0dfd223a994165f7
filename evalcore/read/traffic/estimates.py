"""A deployment version's production rates, with exact bounds and the monitor's verdict: the one
reader behind the Review and Traffic screens, ``traffic check --deployment`` and
``GET /api/v1/deployments/{name}/estimate``, so that the three can never show different figures.

Each review period of a version (:mod:`evalcore.read.traffic.review`) has a sampling frame: its
lines split by what the gate did at the deployed t into the **answered** stratum (N_A lines) and
the **refused** one (N_R), and a uniform sample without replacement of each, of which the labelled
prefix counts (n_A, n_R lines). Of those, the labels say which lines were off-topic questions and
which answerable lines' hits hold the answer. From them (:mod:`evalcore.measures.production`):

- **bluff rate**: of production's off-topic lines, the share the gate answered, M_A / (M_A + M_R);
- **lost rate**: of production's answerable lines whose hits hold the answer, the share the gate
  refused;
- **answered bluff share**: of the answered lines, the share that went to off-topic questions,
  M_A / N_A.

Each is ``{"estimate", "lower", "upper"}`` at the decision's confidence 1 - delta, per period (that
period's strata) and for the whole version (every period's strata together). The **monitor**
(:mod:`evalcore.measures.monitor`) judges the version's bluff and lost claims against the
decision's alpha and beta with an anytime-valid confidence sequence: ``holding``, ``breached`` or
``undecided``, however often anyone looks. Periods without a frame yet are listed and count
nowhere. Reads only.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import TYPE_CHECKING, Any

from evalcore.errors import InputError, UnknownDeployment
from evalcore.measures.monitor import ClaimMonitor, monitor
from evalcore.measures.production import Bounds, Stratum, rate_bounds, share_bounds
from evalcore.read.traffic.review import PeriodSample, StratumCounts, version_samples
from evalcore.read.traffic.versions import iso
from evalcore.records import Configuration
from evalcore.store import deployments as rows

if TYPE_CHECKING:
    from evalcore.store import Store

#: the claim's defaults when a decision was saved without one (the Threshold screen's defaults)
DEFAULT_ALPHA, DEFAULT_BETA, DEFAULT_CONFIDENCE = 0.05, 0.20, 0.95


def _off_topic(s: StratumCounts) -> Stratum:
    return Stratum(s.lines, s.labelled, s.off_topic)


def _held(s: StratumCounts) -> Stratum:
    return Stratum(s.lines, s.labelled, s.answerable_held, s.answerable_unknown)


@dataclass(frozen=True, slots=True)
class Figures:
    """The three rates of one period (or of the whole version) and what they rest on."""

    lines: tuple[int, int]  #: (N_A, N_R): the frames' answered and refused lines
    labels: tuple[int, int]  #: (n_A, n_R): the labelled prefixes
    bluff_rate: Bounds
    lost_rate: Bounds
    answered_bluff_share: Bounds
    retrieval_misses: int  #: refused answerable lines whose hits miss the answer (shown apart)

    def to_json(self) -> dict[str, Any]:
        return {
            "lines": {"answered": self.lines[0], "refused": self.lines[1]},
            "labels": {"answered": self.labels[0], "refused": self.labels[1]},
            "bluff_rate": self.bluff_rate.to_json(),
            "lost_rate": self.lost_rate.to_json(),
            "answered_bluff_share": self.answered_bluff_share.to_json(),
            "retrieval_misses": self.retrieval_misses,
        }


def rate_figures(samples: Sequence[PeriodSample], delta: float) -> Figures:
    """The rates over the strata of ``samples`` (one period, or all of a version) at 1 - delta."""
    answered = [s.answered for s in samples]
    refused = [s.refused for s in samples]
    return Figures(
        lines=(sum(s.lines for s in answered), sum(s.lines for s in refused)),
        labels=(sum(s.labelled for s in answered), sum(s.labelled for s in refused)),
        bluff_rate=rate_bounds([_off_topic(s) for s in answered], [_off_topic(s) for s in refused], delta),
        lost_rate=rate_bounds([_held(s) for s in refused], [_held(s) for s in answered], delta),
        answered_bluff_share=share_bounds([_off_topic(s) for s in answered], delta),
        retrieval_misses=sum(s.answerable_missed for s in refused),
    )


@dataclass(frozen=True, slots=True)
class VersionEstimate:
    """What :func:`version_estimate` reads: the version, its claim, each period and the whole."""

    deployment: str
    version: int
    current: bool
    decision_id: str
    threshold: float
    run_id: str
    configuration: Configuration
    deployed_at: datetime
    until: datetime | None  #: the next move (None: the version runs now)
    alpha: float
    beta: float
    confidence: float
    claim_recorded: bool  #: False: the decision was saved without a claim (alpha, beta, confidence are defaults)
    periods: list[tuple[PeriodSample, Figures | None]] = field(default_factory=list)  #: None: no frame yet
    whole: Figures | None = None
    bluff: ClaimMonitor | None = None
    lost: ClaimMonitor | None = None

    def to_json(self) -> dict[str, Any]:
        """The keys of docs/TRAFFIC.md "Production rates": served at ``/estimate`` and in
        ``traffic check --deployment --json``."""
        return {
            "deployment": self.deployment,
            "version": self.version,
            "current": self.current,
            "decision_id": self.decision_id,
            "threshold": self.threshold,
            "run_id": self.run_id,
            "configuration": self.configuration.label,
            "deployed_at": iso(self.deployed_at),
            "until": None if self.until is None else iso(self.until),
            "claim": {
                "max_bluff_rate": self.alpha,
                "max_lost_rate": self.beta,
                "confidence": self.confidence,
                "recorded": self.claim_recorded,
            },
            "periods": [_period_json(p, f) for p, f in self.periods],
            **(self.whole.to_json() if self.whole is not None else _empty()),
            "monitor": {
                "bluff": None if self.bluff is None else self.bluff.to_json(),
                "lost": None if self.lost is None else self.lost.to_json(),
            },
        }

    @property
    def breached(self) -> list[str]:
        """The claims the monitor reports breached: ``bluff``, ``lost``, both or none."""
        return [
            name for name, m in (("bluff", self.bluff), ("lost", self.lost)) if m is not None and m.state == "breached"
        ]


def _empty() -> dict[str, Any]:
    none = {"estimate": None, "lower": None, "upper": None}
    return {
        "lines": {"answered": 0, "refused": 0},
        "labels": {"answered": 0, "refused": 0},
        "bluff_rate": none,
        "lost_rate": none,
        "answered_bluff_share": none,
        "retrieval_misses": 0,
    }


def _period_json(p: PeriodSample, f: Figures | None) -> dict[str, Any]:
    return {
        "index": p.index,
        "start": iso(p.start),
        "end": iso(p.end),
        "drawn": p.drawn,
        "reason": p.reason,
        "late_lines": p.late_lines,
        **(f.to_json() if f is not None else _empty()),
    }


def version_estimate(
    store: Store, name: str, version: int | None = None, *, now: datetime | None = None
) -> VersionEstimate:
    """Deployment ``name``'s version ``version`` (default: the current one), as the module
    docstring says. :class:`~evalcore.errors.InputError` when the deployment has no such version
    (the caller checks the deployment exists first). ``now`` (default: now) is when the
    version is read: only the periods begun by then count."""
    current = rows.deployment_row(store, name)
    if current is None:
        raise UnknownDeployment(f"no deployment {name!r}")
    now_version = int(current[11])
    wanted = now_version if version is None else int(version)
    found = rows.version_row(store, name, wanted)
    if found is None:
        raise InputError(f"version: deployment {name!r} has versions 1 to {now_version}, not {wanted}")
    decision_id, run_id, strategy, retriever, t, alpha, beta, confidence, _, moved_at, until = found
    recorded = alpha is not None and beta is not None and confidence is not None
    a = float(alpha) if recorded else DEFAULT_ALPHA
    b = float(beta) if recorded else DEFAULT_BETA
    level = float(confidence) if recorded else DEFAULT_CONFIDENCE
    delta = 1.0 - level
    samples = version_samples(store, name, wanted, now=now)
    drawn = [s for s in samples if s.drawn]
    # a period without a frame enters the monitor as empty strata, so that every period keeps its
    # own index (and its share of delta) whichever periods have frames
    framed = [s if s.drawn else _unframed(s) for s in samples]
    return VersionEstimate(
        deployment=name,
        version=wanted,
        current=wanted == now_version,
        decision_id=str(decision_id),
        threshold=float(t),
        run_id=str(run_id),
        configuration=Configuration(str(strategy), str(retriever)),
        deployed_at=current[10] if wanted == now_version else moved_at,
        until=until,
        alpha=a,
        beta=b,
        confidence=level,
        claim_recorded=recorded,
        periods=[(s, rate_figures([s], delta) if s.drawn else None) for s in samples],
        whole=rate_figures(drawn, delta) if drawn else None,
        bluff=monitor([_off_topic(s.answered) for s in framed], [_off_topic(s.refused) for s in framed], a, delta)
        if drawn
        else None,
        lost=monitor([_held(s.refused) for s in framed], [_held(s.answered) for s in framed], b, delta)
        if drawn
        else None,
    )


_NOTHING = StratumCounts(0, 0, 0, 0, 0, 0, 0)


def _unframed(s: PeriodSample) -> PeriodSample:
    return replace(s, answered=_NOTHING, refused=_NOTHING)
