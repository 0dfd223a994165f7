"""Saved threshold decisions: listed, the latest one read back, and a new one stored.

A decision is a product choice (SPEC 7): one configuration of a complete run, the
threshold chosen for it, and the note saying why. The dashboard opens on the latest one.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any

from evalcore.records import Configuration

if TYPE_CHECKING:
    import pandas as pd

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

    def describe(self) -> str:
        """``"t = 0.5060 for G/dense, saved 2026-11-30 10:12 (decision 1a2b3c4d5e6f)"``."""
        when = (
            self.created_at.strftime("%Y-%m-%d %H:%M") if hasattr(self.created_at, "strftime") else str(self.created_at)
        )
        return f"t = {self.threshold:.4f} for {self.configuration.label}, saved {when} (decision {self.decision_id})"


def decisions(store: Store, run_id: str | None = None) -> pd.DataFrame:
    """Saved threshold decisions, newest first (of one run, or all): created_at, run_id,
    run_name, configuration, threshold, note, decision_id."""
    sql = (
        "SELECT d.created_at, d.run_id, r.name AS run_name, d.strategy || '/' || d.retriever AS configuration, "
        "d.threshold, coalesce(d.note, '') AS note, d.decision_id "
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
    return Decision(
        str(row["decision_id"]),
        str(row["run_id"]),
        Configuration(row["strategy"], row["retriever"]),
        float(row["threshold"]),
        str(row["note"] or ""),
        row["created_at"],
    )


def save_decision(store: Store, run_id: str, configuration: Configuration, threshold: float, note: str) -> str:
    """Store a chosen threshold for one configuration of a complete run; returns its id."""
    from evalcore.read.runs import require_complete

    require_complete(store, run_id)
    if not math.isfinite(float(threshold)):
        raise ValueError(f"threshold must be a finite number, got {threshold!r}")
    return store.save_decision(run_id, configuration.strategy, configuration.retriever, float(threshold), note)
