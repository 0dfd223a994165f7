"""Saved threshold decisions: listed, the latest one read back, and a new one stored.

A decision is a product choice (METHODS.md "The refusal threshold"): one configuration of a complete run, the
threshold chosen for it, and the note saying why. The dashboard opens on the latest one.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any

from evalcore.authors import clean_author, shown
from evalcore.measures.rounding import rate_text, region_text, threshold_text
from evalcore.read.runs import require_complete
from evalcore.records import Configuration

if TYPE_CHECKING:
    import pandas as pd

    from evalcore.measures.claim import Claim
    from evalcore.store import Store


@dataclass(frozen=True, slots=True)
class Decision:
    """One saved decision."""

    decision_id: str
    run_id: str
    configuration: Configuration
    threshold: float
    note: str
    created_at: datetime
    author: str | None = None
    claim: dict[str, Any] | None = None  #: the claim it was made under (``evalcore threshold --json``)

    def describe(self) -> str:
        """``"t = 0.5060 for G/dense, saved 2026-11-30 10:12 by ana@example.org (decision 1a2b3c4d5e6f)"``."""
        when = (
            self.created_at.strftime("%Y-%m-%d %H:%M") if hasattr(self.created_at, "strftime") else str(self.created_at)
        )
        return (
            f"t = {threshold_text(self.threshold, 4)} for {self.configuration.label}, saved {when} "
            f"by {shown(self.author)} (decision {self.decision_id})"
        )

    def claim_text(self) -> str:
        """The claim the decision was saved under, in one line, or that none was stored; the
        bluff bound rounded on its safe side, with the decimals the decided t needs."""
        c = self.claim
        if not c:
            return "No threshold claim stored with this decision."
        bound = c.get("bluff_ok_up_to")
        op = ">" if c.get("axis") == "score" else "<="
        return (
            f"Saved under the claim: bluffs <= {rate_text(c['max_bluff_rate'])} and lost <= "
            f"{rate_text(c['max_lost_rate'])} with {rate_text(c['confidence'])} confidence, on {c['n_ood']} "
            f"off-topic and {c['n_answerable']} answerable questions: bluff {c['bluff_status']}, lost "
            f"{c['lost_status']}"
            + (
                f", the bluff claim holding for {region_text(op, float(bound), against=(self.threshold,))}"
                if bound is not None
                else ""
            )
            + f" ({c['method']})."
        )


def decisions(store: Store, run_id: str | None = None) -> pd.DataFrame:
    """Saved threshold decisions, newest first (of one run, or all): created_at, run_id,
    run_name, configuration, threshold, author ("not recorded" when none), claim (alpha, beta,
    confidence and the statuses in a few words; empty when none was stored), note, decision_id."""
    sql = (
        "SELECT d.created_at, d.run_id, r.name AS run_name, d.strategy || '/' || d.retriever AS configuration, "
        "d.threshold, coalesce(d.author, 'not recorded') AS author, "
        "CASE WHEN d.bluff_status IS NULL THEN '' ELSE 'bluffs <= ' || (100 * d.max_bluff_rate)::DECIMAL(6, 1) "
        "|| '% (' || d.bluff_status || '), lost <= ' || (100 * d.max_lost_rate)::DECIMAL(6, 1) || '% (' "
        "|| d.lost_status || '), ' || (100 * d.confidence)::DECIMAL(6, 1) || '% confidence, n = ' || d.n_ood "
        "|| ' off-topic' END AS claim, "
        "coalesce(d.note, '') AS note, d.decision_id "
        "FROM decisions d LEFT JOIN runs r USING (run_id)"
    )
    params: list[Any] = []
    if run_id is not None:
        sql += " WHERE d.run_id = ?"
        params.append(run_id)
    return store.query(sql + " ORDER BY d.created_at DESC, d.decision_id", params)


def latest_decision(store: Store, run_id: str, configuration: Configuration | None = None) -> Decision | None:
    """The newest decision saved for ``run_id`` (and ``configuration``, when given), or None."""
    sql = "SELECT * FROM decisions WHERE run_id = ?"
    params: list[Any] = [run_id]
    if configuration is not None:
        sql += " AND strategy = ? AND retriever = ?"
        params += [configuration.strategy, configuration.retriever]
    df = store.query(sql + " ORDER BY created_at DESC LIMIT 1", params)
    if df.empty:
        return None
    row = df.iloc[0]

    import pandas as pd

    author = row.get("author")
    stored = row.get("claim")
    return Decision(
        str(row["decision_id"]),
        str(row["run_id"]),
        Configuration(row["strategy"], row["retriever"]),
        float(row["threshold"]),
        str(row["note"] or ""),
        row["created_at"],
        None if author is None or pd.isna(author) else str(author),
        json.loads(stored) if isinstance(stored, str) and stored else None,
    )


def save_decision(
    store: Store,
    run_id: str,
    configuration: Configuration,
    threshold: float,
    note: str,
    author: str | None = None,
    claim: Claim | None = None,
) -> str:
    """Store a chosen threshold for one configuration of a complete run, with who chose it
    (:mod:`evalcore.authors`) and the claim it was made under; returns its id."""
    require_complete(store, run_id)
    if not math.isfinite(float(threshold)):
        raise ValueError(f"threshold must be a finite number, got {threshold!r}")
    return store.save_decision(
        run_id,
        configuration.strategy,
        configuration.retriever,
        float(threshold),
        note,
        clean_author(author),
        claim.to_json() if claim is not None else None,
    )
