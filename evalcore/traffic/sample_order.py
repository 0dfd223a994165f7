"""The seeded order of a review frame's strata (:mod:`evalcore.traffic.sampling` says how the
sample is drawn from it): each line's place is the SplitMix64 mix of the frame's seed with the
line's identity, ties broken by that identity, computed in numpy, linear in the lines. The first
n lines of a stratum's order are its sample; taking more continues the same order. A seeded mix
of a stratum and rank says which sampled lines are offered to a second person.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from evalcore.read.traffic.stored import refused
from evalcore.store.review import STRATA, FrameDraw, FrameLines

if TYPE_CHECKING:
    import numpy as np
    import pandas as pd

    from evalcore.read.traffic.review_periods import ReviewFrame

# --- the seeded order ----------------------------------------------------------------------------------

_M1, _M2, _GAMMA = 0xBF58476D1CE4E5B9, 0x94D049BB133111EB, 0x9E3779B97F4A7C15
_MASK = (1 << 64) - 1


def _mix(x: np.ndarray) -> np.ndarray:
    """SplitMix64's finaliser on uint64 (wrapping arithmetic)."""
    import numpy as np

    with np.errstate(over="ignore"):
        x = x + np.uint64(_GAMMA)
        x = (x ^ (x >> np.uint64(30))) * np.uint64(_M1)
        x = (x ^ (x >> np.uint64(27))) * np.uint64(_M2)
        out: np.ndarray = x ^ (x >> np.uint64(31))
    return out


def order_keys(seed: int, line_key: np.ndarray, occurrence: np.ndarray) -> np.ndarray:
    """Each line's key in the seeded order (uint64): the mix of the seed, its ``line_key`` and
    its ``occurrence``. The same seed and lines give the same keys, on any machine."""
    import numpy as np

    s = np.uint64(int(seed) & _MASK)
    a = _mix(np.asarray(line_key, dtype=np.int64).view(np.uint64) ^ s)
    return _mix(a ^ _mix(np.asarray(occurrence, dtype=np.int64).view(np.uint64) ^ np.uint64(_GAMMA)))


def first_in_order(seed: int, line_key: np.ndarray, occurrence: np.ndarray, n: int) -> np.ndarray:
    """The indices of the first ``n`` lines of the seeded order (all of them when fewer), in
    order: by key, ties by (line_key, occurrence). Linear in the lines (a partition, then a sort
    of the first n only)."""
    import numpy as np

    keys = order_keys(seed, line_key, occurrence)
    total = len(keys)
    if n <= 0 or not total:
        return np.zeros(0, dtype=np.int64)
    if n < total:
        cut = np.partition(keys, n - 1)[n - 1]
        chosen = np.flatnonzero(keys <= cut)  # every line up to the n-th key, ties at the cut included
    else:
        chosen = np.arange(total)
    ordered = chosen[np.lexsort((occurrence[chosen], line_key[chosen], keys[chosen]))]
    return ordered[:n].astype(np.int64)


def offered_second(seed: int, stratum: str, ranks: np.ndarray, share: float) -> np.ndarray:
    """Whether each rank of ``stratum`` is offered to a second person: its seeded mix, read as a
    number in [0, 1), lies below ``share``."""
    import numpy as np

    salt = np.uint64((int(seed) ^ (0x5EC0_4D00 + STRATA.index(stratum))) & _MASK)
    mixed = _mix(_mix(np.asarray(ranks, dtype=np.int64).view(np.uint64) ^ salt))
    return (mixed >> np.uint64(11)).astype(np.float64) / float(1 << 53) < share


def _rows(stratum: str, ranks: np.ndarray, keys: np.ndarray, occ: np.ndarray, seed: int, share: float) -> pd.DataFrame:
    import pandas as pd

    return pd.DataFrame(
        {
            "stratum": stratum,
            "rank": ranks.astype("int64"),
            "line_key": keys.astype("int64"),
            "occurrence": occ.astype("int64"),
            "second": offered_second(seed, stratum, ranks, share),
        }
    )


def _split(lines: FrameLines, threshold: float, higher_is_closer: bool) -> dict[str, np.ndarray]:
    """The indices of each stratum's lines."""
    import numpy as np

    no = refused(lines.gate_value, threshold, higher_is_closer)
    return {"answered": np.flatnonzero(~no), "refused": np.flatnonzero(no)}


def choose(
    lines: FrameLines,
    threshold: float,
    higher_is_closer: bool,
    asked: tuple[int, int],
    size: tuple[int, int],
    reason: str | None,
    seed: int,
    share: float,
) -> FrameDraw:
    """The sample of a frame's ``lines``: each stratum's first ``size`` lines of the seeded order,
    ranked 1, 2, ..."""
    import numpy as np
    import pandas as pd

    strata = _split(lines, threshold, higher_is_closer)
    parts = []
    for stratum, n in zip(STRATA, size, strict=True):
        idx = strata[stratum]
        picked = idx[first_in_order(seed, lines.line_key[idx], lines.occurrence[idx], n)]
        ranks = np.arange(1, len(picked) + 1)
        parts.append(_rows(stratum, ranks, lines.line_key[picked], lines.occurrence[picked], seed, share))
    counts = (len(strata["answered"]), len(strata["refused"]))
    return FrameDraw(seed, share, counts, asked, size, reason, pd.concat(parts, ignore_index=True))


def more_lines(
    lines: FrameLines, held: pd.DataFrame, frame: ReviewFrame, higher_is_closer: bool, size: tuple[int, int]
) -> pd.DataFrame:
    """The lines to add to a frame's sample so that each stratum holds its first ``size`` lines
    of the frame's order: the next ranks, after those ``held`` (stratum, rank, line_key,
    occurrence), skipping any line held already."""
    import numpy as np
    import pandas as pd

    strata = _split(lines, frame.threshold, higher_is_closer)
    parts = []
    for stratum, n in zip(STRATA, size, strict=True):
        mine = held[held["stratum"] == stratum]
        if len(mine) >= n:
            continue
        idx = strata[stratum]
        picked = idx[first_in_order(frame.seed, lines.line_key[idx], lines.occurrence[idx], n)]
        have = set(zip(mine["line_key"].astype("int64"), mine["occurrence"].astype("int64"), strict=True))
        new = [i for i in picked if (int(lines.line_key[i]), int(lines.occurrence[i])) not in have]
        start = int(mine["rank"].max()) + 1 if len(mine) else 1
        ranks = np.arange(start, start + len(new))
        chosen = np.asarray(new, dtype=np.int64)
        parts.append(
            _rows(stratum, ranks, lines.line_key[chosen], lines.occurrence[chosen], frame.seed, frame.second_share)
        )
    if not parts:
        return pd.DataFrame(columns=["stratum", "rank", "line_key", "occurrence", "second"])
    return pd.concat(parts, ignore_index=True)
