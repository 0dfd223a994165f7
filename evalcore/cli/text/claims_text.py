"""How ``evalcore threshold`` prints claims (a table, then a sentence each), locally or from a
service (``--server``)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from evalcore.measures.rounding import threshold_text
from evalcore.read.claims import claim_sentence, separability

if TYPE_CHECKING:
    from evalcore.measures.claim import Claim


def print_claims(
    run_id: str, name: str, found: list[Claim], alpha: float, beta: float, confidence: float, splits: int | None
) -> None:
    """The claims on run ``run_id`` (named ``name``) as ``evalcore threshold`` prints them: the
    table, then a sentence each."""
    print(f"run {run_id} ({name}): bluffs <= {alpha!r}, lost <= {beta!r}, confidence {confidence!r}")
    header = f"{'configuration':<16} {'ood':>4} {'ans':>4} {'bluff':<9} {'ok up to':>8} {'lost':<9} "
    header += f"{'ok above':>8} {'feasible':<8} {'t':>6} {'bluffs':>6} {'lost':>5} {'AUC':>5}"
    if splits:
        header += f" {'held-out':>8}"
    print(header)
    for c in found:  # bounds rounded on their safe side, as in the sentences below
        line = (
            f"{c.configuration or '':<16} {c.n_ood:>4} {c.n_answerable:>4} {c.bluff_status:<9} "
            f"{c.bluff_bound_text():>8} {c.lost_status:<9} {c.lost_bound_text():>8} "
            f"{'yes' if c.feasible else 'no':<8} {'-' if c.recommended is None else threshold_text(c.recommended):>6} "
            f"{'-' if c.bluffs is None else c.bluffs:>6} {'-' if c.lost is None else c.lost:>5} {c.auc:>5.2f}"
        )
        if splits:
            line += f" {'-' if c.held_out_share is None else f'{c.held_out_share:.0%}':>8}"
        print(line)
    for c in found:
        print(f"\n{c.configuration}: {claim_sentence(c)} {separability(c)}")
    if splits:
        print(
            f"\nheld-out: over {splits} seeded splits (ground truths kept together), the share of splits "
            "whose other half kept bluffs <= the max bluff rate at the first half's threshold. A report, "
            "not a second guarantee."
        )
