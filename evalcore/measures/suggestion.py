"""The suggested refusal threshold (METHODS.md "The refusal threshold"): one step of a
:func:`~evalcore.measures.threshold.sweep` chosen by the cost rule or the bluff ceiling, at a
short decimal inside it, with the rule that chose it said in words.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # pragma: no cover
    import pandas as pd

#: The suggestion's default weighting: one bluff costs as much as 3 lost answers.
DEFAULT_COST_RATIO = 3.0
#: The threshold used when a sweep offers nothing to suggest from (no scored queries).
FALLBACK_THRESHOLD = 0.5
#: The out-of-domain set is too small to support a suggestion when the 95% Wilson interval
#: of the bluff rate at the suggested threshold is wider than this (20 percentage points).
MAX_BLUFF_INTERVAL_WIDTH = 0.20


@dataclass(frozen=True, slots=True)
class Suggestion:
    """A suggested threshold, the rule that chose it, and its counts.

    ``threshold`` lies in the step ``(t_from, t_to]`` of the sweep; every threshold in that
    step gives the same counts, which :func:`~evalcore.measures.threshold.counts_at` reproduces at ``threshold``.
    ``cost`` is ``cost_ratio * bluffs + lost`` under the cost rule, None under the ceiling rule.
    """

    threshold: float
    rule: str
    bluffs: int
    lost: int
    refused: int
    answered_correct: int
    answered_wrong: int
    ood_refused: int
    bluff_rate: float
    t_from: float
    t_to: float
    cost: float | None = None


def _plain_value(low: float, high: float) -> float:
    """A short decimal ``t`` with ``low < t <= high`` (``low`` may be -inf, ``high`` inf).

    The fewest decimals first: near the middle of a finite step, the largest short value
    <= high for the first step, the smallest short value > low for the last one. A user can
    type it back without leaving the step.
    """
    if math.isinf(low) and math.isinf(high):
        return 1.0
    for decimals in range(16):
        step = 10.0**-decimals
        if math.isinf(low):
            candidate = round(math.floor(high / step) * step, decimals)
        elif math.isinf(high):
            candidate = round((math.floor(low / step) + 1) * step, decimals)
        else:
            candidate = round((low + high) / 2, decimals)
        if low < candidate <= high:
            return candidate
    return high if math.isfinite(high) else math.nextafter(low, math.inf)


def suggestion_of(row: Any, rule: str, cost: float | None) -> Suggestion:
    """The :class:`Suggestion` of one sweep row (a step), at a short decimal inside it."""
    t = _plain_value(float(row["t_from"]), float(row["threshold"]))
    return Suggestion(
        t,
        rule,
        int(row["bluffs"]),
        int(row["lost"]),
        int(row["refused"]),
        int(row["answered_correct"]),
        int(row["answered_wrong"]),
        int(row["ood_refused"]),
        float(row["bluff_rate"]),
        float(row["t_from"]),
        float(row["threshold"]),
        cost,
    )


def suggest_threshold(
    sweep_df: pd.DataFrame,
    cost_ratio: float | None = None,
    max_bluff_rate: float | None = None,
    higher_is_closer: bool = False,
) -> Suggestion:
    """Suggest a threshold from a :func:`~evalcore.measures.threshold.sweep` frame under exactly one of two rules.

    - ``cost_ratio = N``: one bluff costs as much as N lost answers; minimise
      ``N * bluffs + lost``. A lost answer is an answerable in-domain query refused or
      answered from wrong chunks only; refusing or wrongly answering an in-domain query that
      had no correct hit in the top 4 costs nothing extra. Ties go to the strictest gate
      (the fewest bluffs): the lowest threshold for distances, the highest for similarities.
    - ``max_bluff_rate = r``: among steps with ``bluff_rate <= r``, the most correct answers
      (``answered_correct``), then the fewest bluffs (the strictest such gate).

    ``higher_is_closer`` must be the value the sweep was made with. The returned
    ``threshold`` is a short decimal inside the chosen step (see :class:`Suggestion`), so
    ``counts_at(..., suggestion.threshold)`` gives its counts.
    ValueError when neither or both rules are given, for a negative or non-finite ratio, a
    ceiling outside [0, 1], or a ceiling without out-of-domain queries.
    """
    if (cost_ratio is None) == (max_bluff_rate is None):
        raise ValueError(
            "give exactly one of cost_ratio and max_bluff_rate, got "
            f"cost_ratio={cost_ratio!r}, max_bluff_rate={max_bluff_rate!r}"
        )
    if len(sweep_df) == 0:
        raise ValueError("empty sweep: nothing to suggest")
    # rows from the strictest gate (nothing kept) to the loosest: a first minimum is the strictest
    strict = sweep_df.iloc[::-1] if higher_is_closer else sweep_df
    strictest = "highest" if higher_is_closer else "lowest"
    if cost_ratio is not None:
        ratio = float(cost_ratio)
        if not (math.isfinite(ratio) and ratio >= 0):
            raise ValueError(f"cost_ratio must be a finite number >= 0, got {cost_ratio!r}")
        costs = ratio * strict["bluffs"].to_numpy(dtype=float) + strict["lost"].to_numpy(dtype=float)
        best = int(costs.argmin())  # first minimum = the strictest gate
        row = strict.iloc[best]
        rule = (
            f"cost ratio {ratio:g}: one bluff costs as much as {ratio:g} lost answers; "
            f"minimise {ratio:g} x bluffs + lost answers (lost = answerable in-domain queries "
            f"refused or answered from wrong chunks only; other refusals add nothing); ties go "
            f"to the {strictest} threshold. Here: {int(row['bluffs'])} bluffs, {int(row['lost'])} lost, "
            f"cost {float(costs[best]):g}."
        )
        return suggestion_of(row, rule, float(costs[best]))

    ceiling = float(max_bluff_rate)  # type: ignore[arg-type]
    if not 0.0 <= ceiling <= 1.0:
        raise ValueError(f"max_bluff_rate must lie in [0, 1], got {max_bluff_rate!r}")
    if int(sweep_df["out_domain"].iloc[0]) == 0:
        raise ValueError("no out-of-domain queries: a bluff-rate ceiling cannot be checked")
    rates = strict["bluff_rate"].to_numpy(dtype=float)
    feasible = strict[rates <= ceiling]  # a prefix: bluffs only grow as the gate loosens
    most = feasible["answered_correct"].max()
    row = feasible[feasible["answered_correct"] == most].iloc[0]
    rule = (
        f"bluff ceiling {ceiling:.1%}: the most correct answers with a bluff rate at most the "
        f"ceiling, then the fewest bluffs. Here: {int(row['bluffs'])} of "
        f"{int(row['out_domain'])} out-of-domain queries bluffed ({float(row['bluff_rate']):.1%}), "
        f"{int(row['answered_correct'])} answered correctly, {int(row['lost'])} lost."
    )
    return suggestion_of(row, rule, None)
