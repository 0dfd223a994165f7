"""Has traffic moved away from the evaluation? Periods, the two-sample KS test, the PSI.

- Periods are half-open windows ``[start, start + P)``; the first starts at 00:00 UTC of the
  earliest query's day (METHODS.md "Real traffic"), so weeks run from that day, not from a Monday.
- The drift test of a period is the two-sample Kolmogorov-Smirnov test (two-sided, scipy's
  ``ks_2samp`` with its default exact/asymptotic choice) of the period's gate values against a
  reference sample: the evaluation's in-domain and off-topic gate values together, or the
  previous period's.
- The population stability index beside it: ``PSI = sum_i (a_i - e_i) ln(a_i / e_i)`` over ten
  bins cut at the reference's deciles (open-ended first and last bins), ``e_i`` the reference's
  share in bin i and ``a_i`` the period's, each share floored at ``PSI_FLOOR`` so an empty bin
  stays finite. Read as usual: < 0.1 little change, 0.1-0.25 some, > 0.25 a large shift.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import TYPE_CHECKING

from evalcore.errors import ConfigError

if TYPE_CHECKING:
    import numpy as np
    import pandas as pd

PSI_BINS = 10
PSI_FLOOR = 1e-4
HISTOGRAM_BINS = 30
_PERIOD = re.compile(r"^\s*(\d+)\s*([hdw])\s*$", re.I)
_UNITS = {"h": timedelta(hours=1), "d": timedelta(days=1), "w": timedelta(weeks=1)}
LONGEST_PERIOD = timedelta(days=3660)  # ten years: longer would be one period for any real log


@dataclass(frozen=True, slots=True)
class KS:
    """A two-sample KS test: the statistic (largest gap between the two empirical CDFs) and p."""

    statistic: float
    pvalue: float


def parse_period(text: str) -> timedelta:
    """``"7d"`` -> 7 days (``h`` hours, ``d`` days, ``w`` weeks; ``day`` and ``week`` too), at
    most :data:`LONGEST_PERIOD`; ConfigError naming the value otherwise."""
    raw = str(text).strip().lower()
    raw = {"day": "1d", "week": "7d", "hour": "1h"}.get(raw, raw)
    m = _PERIOD.match(raw[:40])
    if not m or int(m.group(1)) < 1:
        raise ConfigError(
            f"--period looks like 7d, 1d, 12h or 2w (a positive whole number and a unit), got {text[:40]!r}"
        )
    unit = _UNITS[m.group(2).lower()]
    if int(m.group(1)) > LONGEST_PERIOD // unit:
        raise ConfigError(f"--period must be at most {LONGEST_PERIOD.days} days, got {text[:40]!r}")
    return int(m.group(1)) * unit


def first_start(earliest: datetime) -> datetime:
    """00:00 UTC of the earliest query's day: where the first period starts."""
    return datetime(earliest.year, earliest.month, earliest.day)


def period_index(times: np.ndarray, start: datetime, period: timedelta) -> np.ndarray:
    """0-based period of each time (``datetime64``): ``floor((t - start) / P)``."""
    import numpy as np

    delta = (np.asarray(times, dtype="datetime64[us]") - np.datetime64(start, "us")).astype(np.int64)
    step = int(period / timedelta(microseconds=1))
    return np.floor_divide(delta, step)


def ks_test(sample: Sequence[float] | np.ndarray, reference: Sequence[float] | np.ndarray) -> KS | None:
    """scipy's two-sample KS test; None when either sample is empty."""
    import numpy as np
    from scipy.stats import ks_2samp

    a = np.asarray(sample, dtype=np.float64)
    b = np.asarray(reference, dtype=np.float64)
    if len(a) == 0 or len(b) == 0:
        return None
    res = ks_2samp(a, b)
    return KS(float(res.statistic), float(res.pvalue))


def psi(sample: Sequence[float] | np.ndarray, reference: Sequence[float] | np.ndarray, bins: int = PSI_BINS) -> float:
    """Population stability index of ``sample`` against ``reference`` (see the module doc);
    NaN when either is empty."""
    import numpy as np

    a = np.asarray(sample, dtype=np.float64)
    e = np.asarray(reference, dtype=np.float64)
    if len(a) == 0 or len(e) == 0:
        return math.nan
    inner = np.unique(np.quantile(e, np.arange(1, bins) / bins))
    # bin i holds values in [edge_{i-1}, edge_i): searchsorted right puts a value equal to an edge above it
    ai = np.bincount(np.searchsorted(inner, a, side="right"), minlength=len(inner) + 1) / len(a)
    ei = np.bincount(np.searchsorted(inner, e, side="right"), minlength=len(inner) + 1) / len(e)
    ai = np.maximum(ai, PSI_FLOOR)
    ei = np.maximum(ei, PSI_FLOOR)
    return float(np.sum((ai - ei) * np.log(ai / ei)))


def psi_words(value: float) -> str:
    """How large a PSI is, in the usual words."""
    if math.isnan(value):
        return "n/a"
    if value < 0.1:
        return "little change"
    if value <= 0.25:
        return "some change"
    return "a large shift"


def binned_shares(frame: pd.DataFrame, bins: int = HISTOGRAM_BINS) -> pd.DataFrame:
    """A long ``group, gate_value`` frame as a histogram: ``bins`` equal-width bins over the
    finite values of all groups together (the same edges for every group), one row per group and
    bin: group, bin_start, bin_end, n, share (of the group's values). Binned here, so a chart of
    a period with a million queries carries ``bins`` rows a group, not a million."""
    import numpy as np
    import pandas as pd

    values = frame["gate_value"].to_numpy(dtype=np.float64)
    finite = np.isfinite(values)
    cols = ["group", "bin_start", "bin_end", "n", "share"]
    if not finite.any():
        return pd.DataFrame(columns=cols)
    low, high = float(values[finite].min()), float(values[finite].max())
    edges = np.linspace(low, high if high > low else low + 1e-9, bins + 1)
    rows = []
    for group, part in frame[finite].groupby("group", sort=False):
        counts, _ = np.histogram(part["gate_value"].to_numpy(dtype=np.float64), edges)
        for i in range(bins):
            rows.append([group, edges[i], edges[i + 1], int(counts[i]), counts[i] / len(part)])
    return pd.DataFrame(rows, columns=cols)
