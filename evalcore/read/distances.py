"""Distances side by side (METHODS.md "The refusal threshold"): in-domain answers and top hits
against out-of-domain top hits."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING

from evalcore.configurations import info

if TYPE_CHECKING:
    import pandas as pd

    from evalcore.records import Configuration
    from evalcore.store import Store

#: The three measures, in the order they are drawn (top to bottom).
MEASURES = ("in: answer", "in: top hit", "out: top hit")


@dataclass(frozen=True, slots=True)
class DistanceSummary:
    """The two marks of the distance chart and how many queries each group holds.

    worst_in: largest distance of an in-domain query to its answer; best_out: smallest
    top-hit distance of an out-of-domain query; overlap_in / overlap_out: queries on the
    wrong side of the other group's extreme (answers at or beyond best_out, out-of-domain
    top hits at or below worst_in). n_in: scored in-domain queries; n_answer: those with a
    distance to their answer (the others are destroyed: no chunk holds the answer);
    n_out: out-of-domain queries with a top hit. NaN / 0 when a group is empty.
    """

    worst_in: float
    best_out: float
    overlap_in: int
    overlap_out: int
    n_in: int
    n_answer: int
    n_out: int
    axis: str = "cosine distance"  # what "distance" holds: threshold.Axis.label

    @property
    def lower_is_closer(self) -> bool:
        return self.axis != "score (higher = closer)"

    @property
    def separated(self) -> bool:
        if math.isnan(self.worst_in) or math.isnan(self.best_out):
            return False
        return self.worst_in < self.best_out if self.lower_is_closer else self.worst_in > self.best_out

    @property
    def without_answer(self) -> int:
        """In-domain queries without a distance to their answer (destroyed ground truths)."""
        return self.n_in - self.n_answer

    def n_text(self) -> str:
        """``"72 in-domain queries (54 with a distance to their answer, 18 destroyed) and 36 out-of-domain"``.

        On a score axis (a run made elsewhere ranks only the hits it returned) an answer without
        a score is destroyed or was not among those hits."""
        if self.lower_is_closer:
            answers = (
                f"{self.n_answer} with a distance to their answer, {self.without_answer} destroyed: "
                "no chunk holds their answer"
                if self.without_answer
                else "each with a distance to its answer"
            )
        else:
            answers = (
                f"{self.n_answer} with their answer among the hits returned, {self.without_answer} without: "
                "not returned, or no chunk holds it"
                if self.without_answer
                else "each with its answer among the hits returned"
            )
        return f"{self.n_in} in-domain queries ({answers}) and {self.n_out} out-of-domain queries"


def distances(store: Store, run_id: str, configuration: Configuration) -> pd.DataFrame:
    """Long frame: query_id, domain, kind, measure, distance.

    measure is ``"in: answer"`` (cosine distance of the best-ranked correct
    chunk, at any rank; in-domain queries whose answer is not destroyed), ``"in: top hit"``
    (every scored in-domain query) or ``"out: top hit"``. For a configuration whose gate
    reads the retriever's own score (a run made elsewhere, METHODS.md "Runs made elsewhere"), ``distance`` holds that
    score; the column ``axis`` names what it holds (:class:`evalcore.measures.threshold.Axis`).
    """
    gate = info(store, run_id, configuration.strategy, configuration.retriever).axis
    answer, top = ("answer_score", "top_score") if gate.column == "score" else ("answer_distance", "top_distance")
    frame = store.query(
        f"""
        WITH base AS (
            SELECT r.query_id, r.domain, q.kind, r.{answer} AS answer_distance, r.{top} AS top_distance
            FROM results r JOIN queries q ON q.run_id = r.run_id AND q.query_id = r.query_id
            WHERE r.run_id = ? AND r.strategy = ? AND r.retriever = ? AND q.valid)
        SELECT query_id, domain, kind, 'in: answer' AS measure, answer_distance AS distance
        FROM base WHERE domain = 'in' AND answer_distance IS NOT NULL
        UNION ALL
        SELECT query_id, domain, kind, 'in: top hit', top_distance FROM base
        WHERE domain = 'in' AND top_distance IS NOT NULL
        UNION ALL
        SELECT query_id, domain, kind, 'out: top hit', top_distance FROM base
        WHERE domain = 'out' AND top_distance IS NOT NULL
        ORDER BY measure, distance
        """,
        [run_id, configuration.strategy, configuration.retriever],
    )
    frame["axis"] = gate.label
    return frame


def distance_summary(frame: pd.DataFrame) -> DistanceSummary:
    """Worst in-domain answer distance, best out-of-domain top distance, their overlap, and n."""
    answer = frame.loc[frame["measure"] == MEASURES[0], "distance"]
    out = frame.loc[frame["measure"] == MEASURES[2], "distance"]
    n_in = int(frame.loc[frame["domain"] == "in", "query_id"].nunique())
    axis = str(frame["axis"].iloc[0]) if len(frame) and "axis" in frame else "cosine distance"
    sign = -1.0 if axis == "score (higher = closer)" else 1.0  # count a similarity on its negation
    answer, out = sign * answer, sign * out
    worst_in = sign * float(answer.max()) if len(answer) else math.nan
    best_out = sign * float(out.min()) if len(out) else math.nan
    overlap_in = int((answer >= out.min()).sum()) if len(out) else 0
    overlap_out = int((out <= answer.max()).sum()) if len(answer) else 0
    return DistanceSummary(worst_in, best_out, overlap_in, overlap_out, n_in, len(answer), len(out), axis)


def distance_histogram(frame: pd.DataFrame, bins: int = 40) -> pd.DataFrame:
    """Counts of :func:`distances` per measure on common equal-width bins (for the chart and
    its CSV): measure, bin_start, bin_end, count."""
    import numpy as np
    import pandas as pd

    if bins < 1:
        raise ValueError(f"bins must be at least 1, got {bins}")
    if frame.empty:
        return pd.DataFrame(columns=["measure", "bin_start", "bin_end", "count"])
    low, high = float(frame["distance"].min()), float(frame["distance"].max())
    if high <= low:
        high = low + 1e-6
    edges = np.linspace(low, high, bins + 1)
    rows = []
    for measure in [m for m in MEASURES if m in set(frame["measure"])]:
        counts, _ = np.histogram(frame.loc[frame["measure"] == measure, "distance"].to_numpy(dtype=float), edges)
        rows += [(measure, edges[i], edges[i + 1], int(c)) for i, c in enumerate(counts)]
    return pd.DataFrame(rows, columns=["measure", "bin_start", "bin_end", "count"])
