"""What a reader opens on when nobody chose: the configuration of a run, the configurations
compared, the pair of them whose queries are listed, and the refusal threshold, each with the
sentence that says why. The dashboard's screens use these; so may the CLI and the review pack.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING

from evalcore.measures.rounding import rate_text
from evalcore.measures.suggestion import DEFAULT_COST_RATIO, FALLBACK_THRESHOLD, suggest_threshold
from evalcore.read import compare, decisions, runs, sweeps
from evalcore.records import Configuration, RunConfiguration

if TYPE_CHECKING:
    from evalcore.measures.claim import Claim
    from evalcore.store import Store

PICK_K = 4  #: the default configuration is the best by recall@4
MAX_ALL = 8  #: up to this many configurations are all compared by default
BEST_OF_EACH = 4  #: two runs: the best four configurations of each are compared by default


def _decision_why(decision: decisions.Decision) -> str:
    return f"the configuration of the latest saved decision ({decision.describe()})"


def default_configuration(store: Store, run_id: str, configs: Sequence[Configuration]) -> tuple[Configuration, str]:
    """The configuration a run opens on, and why: the run's latest saved decision's, else the
    best by recall@4 (ties: the first in the run's order), else its first. ``configs`` are the
    run's configurations (not empty)."""
    latest = decisions.latest_decision(store, run_id)
    if latest is not None and latest.configuration in configs:
        return latest.configuration, _decision_why(latest)
    order = compare.ranked(store, run_id, PICK_K)
    if len(order) >= 2:
        best, hits, n = order[0]
        return best, f"the best configuration by recall@{PICK_K} ({hits / n:.3f}); no decision is saved for this run"
    return configs[0], "the run's only configuration" if len(configs) == 1 else "the run's first configuration"


def why_linked(store: Store, run_id: str, label: str) -> str:
    """Why a configuration named in a shared link is shown: it is the latest decision's, or the link's."""
    latest = decisions.latest_decision(store, run_id)
    if latest is not None and latest.configuration.label == label:
        return _decision_why(latest)
    return "the configuration named in the link"


def compared(store: Store, run_id: str, other: str = "") -> tuple[list[RunConfiguration], list[RunConfiguration]]:
    """Every configuration that can be compared (``run_id``'s, and ``other``'s when given) and
    the default choice among them: all of them when there are at most 8; else, for two runs,
    the best four of each by recall@4, and for one run every strategy under the retriever of
    its best configuration."""
    available = list(runs.run_configurations(store, run_id))
    if other and other != run_id:
        available += runs.run_configurations(store, other)
    if len(available) <= MAX_ALL:
        return available, list(available)
    default: list[RunConfiguration] = []
    for rid in dict.fromkeys(s.run_id for s in available):
        order = [c for c, _, _ in compare.ranked(store, rid, PICK_K)]
        mine = {s.configuration: s for s in available if s.run_id == rid}
        if other:
            default += [mine[c] for c in order[:BEST_OF_EACH] if c in mine]
        else:
            default += [s for c, s in mine.items() if c.retriever == order[0].retriever]
    return available, default


def pair(labels: Sequence[str], first: str | None = None, second: str | None = None) -> tuple[str, str]:
    """The two compared configurations whose differing queries are listed: ``first`` and
    ``second`` when they are two different ``labels``; else the first label, then the first
    other one. ``labels`` holds at least two labels."""
    one = first if first is not None and first in labels else labels[0]
    two = second if second is not None and second in labels and second != one else None
    return one, two if two is not None else next(x for x in labels if x != one)


def default_threshold(
    store: Store, run_id: str, configuration: Configuration, claim: Claim | None = None
) -> tuple[float, str]:
    """The refusal threshold of a configuration when none was set, and where it came from: the
    latest decision saved for it; else ``claim``'s recommendation when the claim is feasible;
    else the suggestion at cost ratio 3; else the fallback 0.5 (nothing to suggest from)."""
    decision = decisions.latest_decision(store, run_id, configuration)
    if decision is not None:
        return decision.threshold, f"saved decision: {decision.describe()}"
    label = configuration.label
    if claim is not None and claim.feasible and claim.recommended is not None:
        return float(claim.recommended), (
            f"the threshold claim's recommendation for {label} (bluffs <= "
            f"{rate_text(claim.max_bluff_rate)} with {rate_text(claim.confidence)} confidence; no decision saved "
            "for it yet)"
        )
    fallback = FALLBACK_THRESHOLD, f"the fallback {FALLBACK_THRESHOLD:g} (nothing to suggest from)"
    try:
        t = float(suggest_threshold(sweeps.run_sweep(store, run_id, configuration), DEFAULT_COST_RATIO, None).threshold)
    except ValueError:
        return fallback
    if not math.isfinite(t):
        return fallback
    return t, f"suggested for {label} at cost ratio {DEFAULT_COST_RATIO:g} (no decision saved for it yet)"
