"""What the regression gate reports (:func:`evalcore.regression.gate.run_gate`): each side with
its Wilson interval, the queries that changed, the refusal-contract check, and the verdicts."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

PASS, REGRESSION, BELOW_FLOOR, MORE_BLUFFS = "pass", "regression", "below floor", "more bluffs"
CLAIM_BROKEN = "bluff claim not met"


@dataclass(frozen=True, slots=True)
class Side:
    """One side of a comparison: a configuration of a run and its metric with a Wilson interval."""

    run_id: str
    run_name: str
    configuration: str
    successes: int
    n: int
    low: float
    high: float

    @property
    def value(self) -> float:
        return self.successes / self.n

    @property
    def label(self) -> str:
        return f"{self.run_name}:{self.configuration}"


@dataclass(frozen=True, slots=True)
class QueryChange:
    """A query whose outcome differs between the runs: id, text, and the rank of the first
    correct hit on each side (None: no correct hit at any rank)."""

    query_id: str
    text: str
    baseline_rank: int | None
    candidate_rank: int | None


@dataclass(frozen=True, slots=True)
class BluffCheck:
    """The refusal contract of one configuration: the baseline's saved threshold applied to the
    out-of-domain queries of both runs, paired. ``new`` are queries only the candidate bluffs
    on, ``fixed`` queries only the baseline bluffs on; ``p_adjusted`` is Holm-adjusted over the
    configurations checked. ``new_queries`` lists the new bluffs."""

    threshold: float
    decision_id: str
    note: str
    baseline_bluffs: int
    candidate_bluffs: int
    out_domain: int
    new: int
    fixed: int
    p_value: float
    p_adjusted: float
    failed: bool
    new_queries: tuple[tuple[str, str], ...] = ()  # (query id, text) of the new bluffs
    more_bluffs: bool = False  # significantly more bluffs (paired)
    claim_failed: bool = False  # the decided threshold no longer meets the decision's bluff claim
    claim_note: str | None = None  # the claim check in words (None: no claim stored)


@dataclass(frozen=True, slots=True)
class ConfigResult:
    """The gate's finding for one compared configuration (candidate first in wins/losses)."""

    baseline: Side
    candidate: Side
    wins: int
    losses: int
    ties: int
    p_value: float
    p_adjusted: float
    alpha: float
    regressed: bool
    below_floor: bool
    detectable: float
    lost: tuple[QueryChange, ...]
    won: tuple[QueryChange, ...]
    bluffs: BluffCheck | None = None
    bluff_note: str | None = None

    @property
    def difference(self) -> float:
        """Candidate minus baseline (negative: the candidate finds fewer)."""
        return (self.candidate.successes - self.baseline.successes) / self.baseline.n

    @property
    def improved(self) -> bool:
        """Significantly better: wins > losses and the (adjusted) p below alpha (never a failure)."""
        return self.wins > self.losses and self.p_adjusted < self.alpha

    @property
    def failed(self) -> bool:
        return self.regressed or self.below_floor or bool(self.bluffs and self.bluffs.failed)

    @property
    def verdicts(self) -> tuple[str, ...]:
        """Why it fails (``regression``, ``below floor``, ``more bluffs``), or ``("pass",)``."""
        out = tuple(
            v
            for v, hit in (
                (REGRESSION, self.regressed),
                (BELOW_FLOOR, self.below_floor),
                (MORE_BLUFFS, bool(self.bluffs and self.bluffs.more_bluffs)),
                (CLAIM_BROKEN, bool(self.bluffs and self.bluffs.claim_failed)),
            )
            if hit
        )
        return out or (PASS,)

    @property
    def name(self) -> str:
        """``"G/hybrid"``, or ``"G/hybrid -> tiny/hybrid"`` when the two sides differ."""
        b, c = self.baseline.configuration, self.candidate.configuration
        return b if b == c else f"{b} -> {c}"


@dataclass(frozen=True, slots=True)
class GateReport:
    """Everything the gate found; :mod:`evalcore.regression.report` formats it."""

    metric: str
    k: int
    alpha: float
    holm: bool
    min_effect: float | None
    threshold_from_decision: bool
    baseline_run: dict[str, Any]
    candidate_run: dict[str, Any]
    n: int
    results: tuple[ConfigResult, ...]
    statement: str
    smallest_flag: int | None
    notes: tuple[str, ...] = ()

    @property
    def failed(self) -> tuple[ConfigResult, ...]:
        return tuple(r for r in self.results if r.failed)

    @property
    def exit_code(self) -> int:
        """0: no configuration fails; 1: at least one does."""
        return 1 if self.failed else 0

    @property
    def adjusted(self) -> bool:
        """True when p-values are Holm-adjusted (several configurations and ``holm``)."""
        return self.holm and len(self.results) > 1

    @property
    def test_alpha(self) -> float:
        """The level the first Holm step needs (``alpha / m``); ``alpha`` when unadjusted."""
        return self.alpha / len(self.results) if self.adjusted else self.alpha
