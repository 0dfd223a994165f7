"""The Threshold slider's grid: a suggested threshold moved onto it, on its safe side.

The slider moves in steps of 0.001 (:data:`evalcore.measures.rounding.DIGITS` decimals). A
suggestion of the cost or ceiling rule (:func:`evalcore.measures.suggestion.suggest_threshold`)
is a short decimal inside its step, which may need more decimals than the slider holds; moved
to the nearest grid value, it could leave its step on the side that bluffs more. :func:`on_grid`
moves it only inside its step, or to the strict side.
"""

from __future__ import annotations

import math
from dataclasses import replace
from typing import TYPE_CHECKING

from evalcore.measures.rounding import DIGITS, grid_above, grid_at_or_below
from evalcore.measures.suggestion import Suggestion, suggestion_of

if TYPE_CHECKING:
    import pandas as pd


def on_grid(
    sweep_df: pd.DataFrame, s: Suggestion, higher_is_closer: bool = False, cost_ratio: float | None = None
) -> Suggestion:
    """The suggestion ``s`` on the Threshold slider's grid (multiples of 0.001,
    :data:`evalcore.measures.rounding.DIGITS` decimals), rounded only on its safe side: a grid
    value inside its step when there is one (the same counts); else the nearest grid value on
    the strict side (below the step for distances, above it for similarities), whose counts are
    those of the step it falls in: never more bluffs, and the rule says so. A threshold already
    on the grid, or infinite, is returned as it is."""
    t, low, high = s.threshold, s.t_from, s.t_to
    if not math.isfinite(t) or grid_at_or_below(t) == t:
        return s
    inside = grid_at_or_below(high) if math.isinf(low) else grid_above(low)
    if low < inside <= high:
        return replace(s, threshold=inside)
    snapped = grid_above(high) if higher_is_closer else grid_at_or_below(low)
    steps = sweep_df[(sweep_df["t_from"] < snapped) & (snapped <= sweep_df["threshold"])]
    if steps.empty:  # outside every step (cannot happen for a sweep's own suggestion)
        return s
    row = steps.iloc[0]
    cost = None if cost_ratio is None else float(cost_ratio) * float(row["bluffs"]) + float(row["lost"])
    note = (
        f" On the slider's 0.{'0' * (DIGITS - 1)}1 grid, rounded to the strict side: t = {snapped!r}, "
        f"{int(row['bluffs'])} bluffs, {int(row['lost'])} lost."
    )
    return replace(suggestion_of(row, s.rule + note, cost), threshold=snapped)
