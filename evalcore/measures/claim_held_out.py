"""The held-out check of the threshold claim (a report, not a second guarantee): the claim's
threshold computed on one half of the questions, the bluff and lost rates measured on the
other half, over many seeded random halvings. See :mod:`evalcore.measures.claim`."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from evalcore.measures.claim import (
    AXES,
    DEFAULT_ALPHA,
    DEFAULT_BETA,
    DEFAULT_CONFIDENCE,
    DEFAULT_SPLITS,
    MIN_RATE,
    Claim,
    ClaimError,
    _array,
    _bound,
    _rate,
)

if TYPE_CHECKING:  # pragma: no cover
    from evalcore.measures.claim import Values


@dataclass(frozen=True, slots=True)
class HeldOut:
    """The held-out check: over ``splits`` random halvings, ``used`` made a bounded bluff claim
    on the calibration half; ``share`` of those kept the other half's bluff rate <= alpha at
    the calibration threshold; the median held-out bluff and lost rates. A report, not a
    second guarantee."""

    splits: int
    used: int
    share: float | None
    median_bluff_rate: float | None
    median_lost_rate: float | None


def held_out(
    ood_min: Values,
    in_domain_correct_min: Values,
    in_domain_groups: Sequence[str],
    *,
    axis: str,
    alpha: float = DEFAULT_ALPHA,
    beta: float = DEFAULT_BETA,
    confidence: float = DEFAULT_CONFIDENCE,
    splits: int = DEFAULT_SPLITS,
    seed: int = 0,
) -> HeldOut:
    """Split the queries in halves ``splits`` times (seeded): in-domain queries by their ground
    truth group (``in_domain_groups``, one per entry of ``in_domain_correct_min``; every
    phrasing of one ground truth on the same side), off-topic queries at random. On the first
    half compute the bluff claim's threshold (``recommended`` of the bluff side alone: the
    boundary on a distance axis, the next observed value above it on a score axis); on the
    second half measure the bluff rate and the lost rate (over its answerable queries) at it.

    ``in_domain_correct_min``: per in-domain query ``c_q``, ``inf`` (``-inf`` on a score axis)
    when it is not answerable. A split whose first half is too small for a bounded claim is
    not used. ClaimError for bad options (as :func:`threshold_claim`).
    """
    import numpy as np

    if axis not in AXES:
        raise ClaimError(f"axis must be 'distance' or 'score', got {axis!r}")
    if isinstance(splits, bool) or not isinstance(splits, int) or splits < 1:
        raise ClaimError(f"--splits must be an integer >= 1, got {splits!r}")
    alpha = _rate(alpha, "max bluff rate (alpha)", MIN_RATE)
    _rate(beta, "max lost rate (beta)", MIN_RATE)
    delta = 1.0 - _rate(confidence, "confidence")
    higher = axis == "score"
    ood = _array(ood_min, "off-topic gate values", higher)
    correct = _array(in_domain_correct_min, "in-domain correct gate values", higher)
    groups = np.asarray([str(g) for g in in_domain_groups], dtype=object)
    if len(groups) != len(correct):
        raise ClaimError("in_domain_groups must name one group per in-domain query")
    unique, group_index = np.unique(groups, return_inverse=True) if len(groups) else (groups, groups)
    rng = np.random.default_rng(seed)
    bluff_rates: list[float] = []
    lost_rates: list[float] = []
    ok = 0
    for _ in range(splits):
        ood_side = rng.permutation(len(ood)) < (len(ood) + 1) // 2
        group_side = rng.permutation(len(unique)) < (len(unique) + 1) // 2
        in_side = group_side[group_index] if len(groups) else np.zeros(0, dtype=bool)
        calibration, test = ood[ood_side], ood[~ood_side]
        status, edge, _ = _bound(calibration, alpha, delta, smallest=not higher)
        if status != "bounded" or edge is None or len(test) == 0:
            continue
        if higher:
            observed = np.concatenate([calibration, correct[in_side]])
            observed = observed[np.isfinite(observed) & (observed > edge)]
            t = float(observed.min()) if len(observed) else math.nextafter(edge, math.inf)
            bluffs = int((test >= t).sum())
            held = correct[~in_side]
            held = held[np.isfinite(held)]
            lost = int((held < t).sum())
        else:
            t = edge
            bluffs = int((test < t).sum())
            held = correct[~in_side]
            held = held[np.isfinite(held)]
            lost = int((held >= t).sum())
        bluff_rate = bluffs / len(test)
        bluff_rates.append(bluff_rate)
        ok += bluff_rate <= alpha
        if len(held):
            lost_rates.append(lost / len(held))
    used = len(bluff_rates)
    return HeldOut(
        splits,
        used,
        ok / used if used else None,
        float(np.median(bluff_rates)) if used else None,
        float(np.median(lost_rates)) if lost_rates else None,
    )


def with_held_out(claim: Claim, check: HeldOut) -> Claim:
    """``claim`` with the held-out fields of ``check`` filled in."""
    return replace(
        claim,
        splits=check.splits,
        held_out_splits_used=check.used,
        held_out_share=check.share,
        held_out_bluff_rate=check.median_bluff_rate,
        held_out_lost_rate=check.median_lost_rate,
    )
