"""Agreement between two people who labelled the same lines: Cohen's kappa (statsmodels'
``cohens_kappa``), the share of lines they agree on beyond what their own label frequencies
would give by chance: 1 is full agreement, 0 is chance, below 0 worse than chance."""

from __future__ import annotations

import math
import warnings
from collections.abc import Sequence


def cohens_kappa(first: Sequence[str], second: Sequence[str]) -> float | None:
    """Cohen's kappa of two labellings of the same lines (``first[i]`` and ``second[i]`` label
    line i), over the categories either uses. None when it is not defined: no line, or both
    people used one and the same category only (chance agreement is then 1)."""
    if len(first) != len(second):
        raise ValueError(f"two labellings of the same lines, got {len(first)} and {len(second)} labels")
    if not first:
        return None
    import numpy as np
    from statsmodels.stats.inter_rater import cohens_kappa as statsmodels_kappa

    categories = sorted(set(first) | set(second))
    if len(categories) < 2:
        return None
    index = {c: i for i, c in enumerate(categories)}
    table = np.zeros((len(categories), len(categories)), dtype=np.int64)
    for a, b in zip(first, second, strict=True):
        table[index[a], index[b]] += 1
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # its kappa_max divides by zero on a degenerate table
        kappa = float(statsmodels_kappa(table).kappa)
    return kappa if math.isfinite(kappa) else None
