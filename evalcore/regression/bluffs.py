"""The gate's refusal contract (METHODS.md "The refusal threshold" and "The threshold claim";
CI.md "What the gate decides"): the baseline's saved threshold applied to the out-of-domain
queries of a run, and whether it still meets the decision's bluff claim."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from evalcore.configurations import info
from evalcore.measures.claim import ClaimError
from evalcore.measures.rounding import rate_text, threshold_text
from evalcore.measures.threshold import DEFAULT_TOP, gate, split_hits
from evalcore.read.claims import claim_of
from evalcore.read.decisions import latest_decision
from evalcore.read.sweeps import top_hits
from evalcore.records import Configuration

if TYPE_CHECKING:
    from collections.abc import Set

    from evalcore.measures.threshold import Axis
    from evalcore.store import Store


def axis_of(store: Store, run_id: str, configuration: str) -> Axis:
    """What the configuration's gate reads (:class:`evalcore.measures.threshold.Axis`)."""
    parsed = Configuration.parse(configuration)
    return info(store, run_id, parsed.strategy, parsed.retriever).axis


def bluff_outcomes(
    store: Store, run_id: str, configuration: str, ood: dict[str, str], threshold: float, skip: Set[str] = frozenset()
) -> dict[str, bool]:
    """{out-of-domain query id: does the gate at ``threshold`` keep a top-4 hit?} (METHODS.md "The refusal
    threshold"; on an external configuration's own score, METHODS.md "Runs made elsewhere"). A
    query the configuration could not answer (a failed endpoint call) is left out."""
    axis = axis_of(store, run_id, configuration)
    hits = top_hits(store, run_id, Configuration.parse(configuration))
    _, out_domain = split_hits(hits, column=axis.column)
    return {
        q: bool(gate(out_domain.get(q, []), threshold, DEFAULT_TOP, axis.higher_is_closer))
        for q in ood
        if q not in skip
    }


def saved_threshold(store: Store, run_id: str, configuration: str) -> dict[str, Any] | None:
    found = latest_decision(store, run_id, Configuration.parse(configuration))
    if found is None:
        return None
    return {"threshold": found.threshold, "decision_id": found.decision_id, "note": found.note, "claim": found.claim}


def claim_check(store: Store, run_id: str, configuration: str, threshold: float, claim: Any) -> tuple[bool, str]:
    """(failed, words): does ``threshold`` still meet the decision's stored bluff claim
    (``claim``: its JSON object) on the configuration of ``run_id``? The claim is recomputed
    there with the stored alpha, beta and confidence (METHODS.md "The threshold claim"); a decision stored without a
    bounded bluff claim is not checked (never failed). The check compares ``threshold`` with
    the exact bound; the words round the bound on its safe side, with the decimals it takes
    to read ``threshold`` the same way (they never contradict the verdict)."""
    if not claim or claim.get("bluff_status") not in ("bounded", "unbounded"):
        return False, "the decision stored no bluff claim (too few off-topic questions, or saved before claims)"
    alpha, confidence = float(claim["max_bluff_rate"]), float(claim["confidence"])
    stated = f"'bluffs <= {rate_text(alpha)} with {rate_text(confidence)} confidence'"
    try:
        cand = claim_of(
            store, run_id, Configuration.parse(configuration), alpha, float(claim["max_lost_rate"]), confidence
        )
    except ClaimError as exc:
        return True, f"the decision's claim {stated} cannot be checked on the candidate: {exc}"
    if cand.bluff_status == "unbounded":
        met = True
    elif cand.bluff_status == "bounded" and cand.bluff_ok_up_to is not None:
        met = threshold > cand.bluff_ok_up_to if cand.higher_is_closer else threshold <= cand.bluff_ok_up_to
    else:
        met = False
    where = cand.problem() if cand.bluff_status == "too_few" else f"it holds for {cand.bluff_region((threshold,))}"
    verdict = "meets it" if met else "no longer meets it"
    return (not met), (
        f"the decision's claim {stated}: on the candidate ({cand.n_ood} off-topic questions) {where}; "
        f"t = {threshold_text(threshold)} {verdict}"
    )
