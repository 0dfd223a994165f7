"""The refusal threshold (METHODS.md "The refusal threshold" and "Runs made elsewhere"): the
gate and its exact sweep (the threshold suggested from a sweep: :mod:`evalcore.measures.suggestion`).

The gate at threshold ``t`` keeps, from a retriever's top 4 (``top``), the hits whose cosine
distance is *strictly* below ``t``; nothing kept means NO ANSWER before any model is called.
A configuration made elsewhere (an imported run, a live endpoint) has no cosine distance: its
gate reads the retriever's own score in the score's direction (:class:`Axis`): a similarity
(``higher_is_closer``) is kept when ``score >= t``, a distance when ``score < t``. Every
function below takes ``higher_is_closer`` (default False: distances); "distance" in the names
then stands for whatever value the gate reads.

For one configuration, per threshold ``t``:

- **bluffs**: out-of-domain queries with at least one hit kept; ``ood_refused`` the others;
- **refused**: in-domain queries with nothing kept;
- **answered_correct**: in-domain queries with a correct hit kept;
- **answered_wrong**: in-domain queries answered from wrong chunks only (hits kept, none correct);
- **answerable**: in-domain queries with a correct hit in the top ``top`` (constant in t);
- **lost**: answerable queries whose correct hits are all dropped by the gate
  (``answerable - answered_correct``; refused or answered from wrong chunks only).

Input shapes (one configuration):

- ``in_domain``: ``{query_id: [(distance, correct), ...]}``, hits in rank order;
- ``out_domain``: ``{query_id: [distance, ...]}``, distances in rank order.

Only the first ``top`` entries are read; longer lists (the stored top 20) are fine.
:func:`split_hits` builds both from a hits DataFrame as stored.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from evalcore.measures.stats import wilson_intervals

if TYPE_CHECKING:  # pragma: no cover
    import numpy as np
    import pandas as pd
    from numpy.typing import NDArray

log = logging.getLogger(__name__)

DEFAULT_TOP = 4  #: the gate looks at a retriever's top 4 (METHODS.md "The refusal threshold")

#: Integer count columns of :func:`sweep` (and fields of :class:`GateCounts`).
COUNT_COLUMNS = (
    "bluffs",
    "ood_refused",
    "refused",
    "answered_correct",
    "answered_wrong",
    "lost",
    "answerable",
    "in_domain",
    "out_domain",
)
#: Rate columns of :func:`sweep`: name -> (numerator column, denominator column).
RATES = {
    "bluff_rate": ("bluffs", "out_domain"),
    "refused_rate": ("refused", "in_domain"),
    "lost_rate": ("lost", "answerable"),
    "answered_wrong_rate": ("answered_wrong", "in_domain"),
}

InDomain = Mapping[str, Sequence[tuple[float, bool]]]
OutDomain = Mapping[str, Sequence[float]]


@dataclass(frozen=True, slots=True)
class Axis:
    """The value a configuration's gate thresholds: ``column`` of the stored hits (``distance``:
    the cosine distance of built-in configurations; ``score``: an external retriever's own
    score) and its direction (``higher_is_closer``: a similarity, kept when ``>= t``)."""

    column: str = "distance"
    higher_is_closer: bool = False

    def __post_init__(self) -> None:
        if self.column not in ("distance", "score"):
            raise ValueError(f"an axis reads 'distance' or 'score', got {self.column!r}")

    @property
    def label(self) -> str:
        """``cosine distance``, ``score (higher = closer)`` or ``score (lower = closer)``."""
        if self.column == "distance":
            return "cosine distance"
        return f"score ({'higher' if self.higher_is_closer else 'lower'} = closer)"

    @property
    def keep_rule(self) -> str:
        """How the gate reads a threshold ``t``: ``distance < t``, ``score >= t``, ``score < t``."""
        name = "distance" if self.column == "distance" else "score"
        return f"{name} {'>=' if self.higher_is_closer else '<'} t"

    @property
    def keeps(self) -> str:
        """The gate's rule in a sentence: ``cosine distance < t``, ``score >= t``, ``score < t``."""
        return "cosine distance < t" if self.column == "distance" else self.keep_rule


COSINE = Axis()  #: the built-in pipeline's gate: cosine distance, kept when d < t


@dataclass(frozen=True, slots=True)
class GateCounts:
    """Counts of one configuration at one threshold (see the module docstring)."""

    bluffs: int
    ood_refused: int
    refused: int
    answered_correct: int
    answered_wrong: int
    lost: int
    answerable: int
    in_domain: int
    out_domain: int


def _distance(value: object) -> float:
    d = float(value)  # type: ignore[arg-type]
    if not math.isfinite(d):
        raise ValueError(f"a distance must be a finite number, got {value!r}")
    return d


def _threshold(t: object) -> float:
    value = float(t)  # type: ignore[arg-type]
    if math.isnan(value):
        raise ValueError(f"a threshold must be a number, got {t!r}")
    return value


def _top(top: int) -> int:
    if isinstance(top, bool) or not isinstance(top, int) or top < 1:
        raise ValueError(f"top must be an integer >= 1, got {top!r}")
    return top


def gate(
    distances_in_rank_order: Sequence[float], t: float, top: int = DEFAULT_TOP, higher_is_closer: bool = False
) -> list[int]:
    """Indices (0-based, in rank order) of the hits the gate keeps: among the first ``top``,
    those with ``distance < t`` (strict), or with ``score >= t`` when ``higher_is_closer``
    (a similarity). An empty list means NO ANSWER."""
    t = _threshold(t)
    head = distances_in_rank_order[: _top(top)]
    if higher_is_closer:
        return [i for i, s in enumerate(head) if _distance(s) >= t]
    return [i for i, d in enumerate(head) if _distance(d) < t]


def counts_at(
    in_domain: InDomain, out_domain: OutDomain, t: float, top: int = DEFAULT_TOP, higher_is_closer: bool = False
) -> GateCounts:
    """Brute force: apply :func:`gate` to every query at threshold ``t`` and count."""
    bluffs = refused = correct = wrong = lost = answerable = 0
    for hits in in_domain.values():
        kept = gate([d for d, _ in hits], t, top, higher_is_closer)
        has_correct = any(bool(c) for _, c in hits[:top])
        kept_correct = any(bool(hits[i][1]) for i in kept)
        answerable += has_correct
        refused += not kept
        correct += kept_correct
        wrong += bool(kept) and not kept_correct
        lost += has_correct and not kept_correct
    for distances in out_domain.values():
        bluffs += bool(gate(distances, t, top, higher_is_closer))
    return GateCounts(
        bluffs, len(out_domain) - bluffs, refused, correct, wrong, lost, answerable, len(in_domain), len(out_domain)
    )


def _rates(frame: pd.DataFrame, confidence: float = 0.95) -> None:
    """Add each rate of :data:`RATES` with its Wilson ``_low``/``_high`` (NaN where n == 0)."""
    import numpy as np

    for name, (num, den) in RATES.items():
        k = frame[num].to_numpy(dtype=float)
        n = frame[den].to_numpy(dtype=float)
        stem = name.removesuffix("_rate")
        if len(n) and n[0] > 0:  # denominators are constant down the sweep
            low, high = wilson_intervals(k, n, confidence)
            frame[name] = k / n
            frame[f"{stem}_low"] = low
            frame[f"{stem}_high"] = high
        else:
            frame[name] = frame[f"{stem}_low"] = frame[f"{stem}_high"] = np.nan


def sweep(
    in_domain: InDomain, out_domain: OutDomain, top: int = DEFAULT_TOP, higher_is_closer: bool = False
) -> pd.DataFrame:
    """The exact step function of the gate's counts over the threshold, for one configuration.

    Each row is one step: it holds for every threshold ``t`` with ``t_from < t <= threshold``.
    For distances the gate keeps ``d < t``, so a hit at exactly distance ``threshold`` is *not*
    kept; for similarities (``higher_is_closer``) it keeps ``s >= t``, so a hit at exactly
    ``threshold`` is kept. Either way the counts change only at observed values: the thresholds
    are the sorted distinct observed values at which some count changes (per in-domain query
    the closest top-``top`` value and the closest correct one, per out-of-domain query the
    closest), followed by a last row ``threshold = inf``. ``t_from`` is the previous row's
    threshold, ``-inf`` for the first row. For distances the first row keeps nothing and the
    last everything in the top ``top``; for similarities the other way round. Plugging a row's
    ``threshold`` into :func:`counts_at` reproduces the row, and :func:`state_at` finds the
    row for any ``t``.

    Columns: ``t_from``, ``threshold``, :data:`COUNT_COLUMNS` (ints), then for each rate of
    :data:`RATES` the rate and its 95% Wilson ``_low``/``_high`` (``bluff_rate``, ``bluff_low``,
    ``bluff_high``, ``refused_rate``, ..., ``answered_wrong_high``); rates are NaN when their
    denominator is 0 (e.g. no out-of-domain queries). Plot with a step-after line on
    ``t_from`` or a step-before line on ``threshold``, clipping the infinite ends.
    """
    import numpy as np

    top = _top(top)
    inf = math.inf
    none = -inf if higher_is_closer else inf  # the closest value of a query with nothing to keep
    closest = max if higher_is_closer else min
    first = np.empty(len(in_domain))  # closest top-`top` value per in-domain query
    first_correct = np.empty(len(in_domain))  # closest correct value in the top `top`
    for i, hits in enumerate(in_domain.values()):
        m = c = none
        for d, correct in hits[:top]:
            d = _distance(d)
            m = closest(m, d)
            if correct:
                c = closest(c, d)
        first[i], first_correct[i] = m, c
    ood_first = np.array(
        [closest((_distance(d) for d in ds[:top]), default=none) for ds in out_domain.values()], dtype=float
    )
    return sweep_from_minima(first, first_correct, ood_first, higher_is_closer)


def sweep_from_minima(
    first: Sequence[float] | NDArray[np.floating[Any]],
    first_correct: Sequence[float] | NDArray[np.floating[Any]],
    ood_first: Sequence[float] | NDArray[np.floating[Any]],
    higher_is_closer: bool = False,
) -> pd.DataFrame:
    """:func:`sweep` from each query's closest values in the gate's top ``top``: ``first``
    (per in-domain query, any hit), ``first_correct`` (per in-domain query, correct hits) and
    ``ood_first`` (per out-of-domain query): the smallest distances, ``inf`` where there is no
    such hit; for similarities (``higher_is_closer``) the largest scores, ``-inf`` where
    there is none. The counts at any threshold depend on nothing else, so a store can compute
    these in one query. ValueError for NaN or the other infinity among them."""
    import numpy as np
    import pandas as pd

    inf = math.inf
    wrong = inf if higher_is_closer else -inf
    any_s, correct_s, ood_s = (np.sort(np.asarray(a, dtype=float)) for a in (first, first_correct, ood_first))
    for values in (any_s, correct_s, ood_s):
        if np.isnan(values).any() or (values == wrong).any():
            raise ValueError(f"a distance must be a finite number (or {-wrong}: no hit)")
    observed = np.concatenate([any_s, correct_s, ood_s])
    breaks = np.unique(observed[np.isfinite(observed)])
    thresholds = np.append(breaks, inf)
    n_in, n_out = len(any_s), len(ood_s)
    answerable = int(np.isfinite(correct_s).sum())

    def kept(values: NDArray[np.float64]) -> NDArray[np.intp]:
        """#{v < t} per threshold (distances), #{v >= t} (similarities)."""
        below = np.searchsorted(values, thresholds, side="left")
        return len(values) - below if higher_is_closer else below

    answered = kept(any_s)
    correct = kept(correct_s)
    bluffs = kept(ood_s)
    frame = pd.DataFrame(
        {
            "t_from": np.insert(breaks, 0, -inf),
            "threshold": thresholds,
            "bluffs": bluffs,
            "ood_refused": n_out - bluffs,
            "refused": n_in - answered,
            "answered_correct": correct,
            "answered_wrong": answered - correct,
            "lost": answerable - correct,
            "answerable": answerable,
            "in_domain": n_in,
            "out_domain": n_out,
        }
    )
    frame = frame.astype(dict.fromkeys(COUNT_COLUMNS, "int64"))
    _rates(frame)
    return frame


def state_at(sweep_df: pd.DataFrame, t: float) -> GateCounts:
    """The counts at threshold ``t`` read from a :func:`sweep` frame (the row with
    ``t_from < t <= threshold``)."""
    import numpy as np

    t = _threshold(t)
    thresholds = sweep_df["threshold"].to_numpy(dtype=float)
    i = int(np.searchsorted(thresholds, t, side="left"))
    if i >= len(thresholds):  # only for t = +inf when the frame has no inf row
        i = len(thresholds) - 1
    row = sweep_df.iloc[i]
    return GateCounts(*(int(row[c]) for c in COUNT_COLUMNS))


def split_hits(
    hits: pd.DataFrame | Iterable[Mapping[str, Any]], domains: Mapping[str, str] | None = None, column: str = "distance"
) -> tuple[dict[str, list[tuple[float, bool]]], dict[str, list[float]]]:
    """``(in_domain, out_domain)`` inputs for :func:`sweep` from stored hits of ONE configuration.

    ``hits``: a DataFrame (or records) with columns ``query_id``, ``domain`` (``in`` or
    ``out``; ``ood`` is read as ``out``), ``rank``, ``correct`` and the value the gate reads
    (``column``: ``distance``, or ``score`` for an :class:`Axis` on the score). Hits are
    ordered by rank per query. ``domains`` ({query_id: domain}) adds queries that have no hits
    at all (they are always refused).
    """
    records = hits.to_dict("records") if hasattr(hits, "to_dict") else list(hits)
    per_query: dict[str, list[tuple[int, float, bool]]] = {}
    domain_of: dict[str, str] = dict(domains or {})
    for r in records:
        q = r["query_id"]
        per_query.setdefault(q, []).append((int(r["rank"]), _distance(r[column]), bool(r["correct"])))
        domain_of.setdefault(q, r["domain"])
    in_domain: dict[str, list[tuple[float, bool]]] = {}
    out_domain: dict[str, list[float]] = {}
    for q, domain in domain_of.items():
        ranked = sorted(per_query.get(q, []))
        if domain == "in":
            in_domain[q] = [(d, c) for _, d, c in ranked]
        elif domain in ("out", "ood"):
            out_domain[q] = [d for _, d, _ in ranked]
        else:
            raise ValueError(f"query {q!r}: domain must be 'in' or 'out', got {domain!r}")
    return in_domain, out_domain
