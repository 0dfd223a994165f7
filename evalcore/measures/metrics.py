"""Retrieval metrics over the rank of each query's first correct hit (METHODS.md "Correct hits").

A query's *first rank* is the 1-based rank of its first correct hit over the full ranking,
or None when there is none (including destroyed ground truths). Pandas' missing values
(NaN, ``pd.NA``) are read as None, and integral floats (``3.0``) as ints, so a column read
from the store can be passed as it is.
"""

from __future__ import annotations

import logging
import math
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from evalcore.errors import ConfigError
from evalcore.measures.stats import wilson_interval
from evalcore.records import Configuration

if TYPE_CHECKING:  # pragma: no cover
    import pandas as pd

log = logging.getLogger(__name__)

DEFAULT_KS: tuple[int, ...] = (1, 4, 8, 20)

#: Columns of :func:`summarize`, in order.
SUMMARY_COLUMNS = ("strategy", "retriever", "config", "metric", "k", "value", "low", "high", "successes", "queries")


def _first_rank(value: object) -> int | None:
    """Normalise one first-correct rank: None/NaN/NA -> None, else an int >= 1."""
    if value is None:
        return None
    try:
        if value != value:  # NaN is the only value unequal to itself
            return None
    except TypeError:  # pd.NA: `NA != NA` is NA, whose truth value raises
        return None
    if isinstance(value, bool):
        raise ValueError(f"a first rank must be an int >= 1 or None, got {value!r}")
    try:
        rank: int = int(value)  # type: ignore[call-overload]  # any object; the check below rejects what is no rank
    except (TypeError, ValueError):
        raise ValueError(f"a first rank must be an int >= 1 or None, got {value!r}") from None
    if rank != value or rank < 1:
        raise ValueError(f"a first rank must be an int >= 1 or None, got {value!r}")
    return rank


def _k(k: object) -> int:
    if isinstance(k, bool) or not hasattr(k, "__index__"):
        raise ValueError(f"k must be an integer >= 1, got {k!r}")
    k = int(k)
    if k < 1:
        raise ValueError(f"k must be an integer >= 1, got {k!r}")
    return k


def _ranks(first_ranks: Iterable[object]) -> list[int | None]:
    ranks = [_first_rank(r) for r in first_ranks]
    if not ranks:
        raise ValueError("no queries: a metric over an empty list of first ranks is undefined")
    return ranks


def hit_at_k(first_rank: int | None, k: int) -> bool:
    """True when the first correct hit is at rank <= k; False when there is none."""
    rank = _first_rank(first_rank)
    return rank is not None and rank <= _k(k)


def reciprocal_rank(first_rank: int | None) -> float:
    """``1 / rank`` of the first correct hit; 0.0 when there is none."""
    rank = _first_rank(first_rank)
    return 0.0 if rank is None else 1.0 / rank


def recall_at_k(first_ranks: Sequence[int | None], k: int) -> float:
    """Share of queries with a correct hit at rank <= k: ``#{q : rank_q <= k} / #queries``.

    This is "hit rate@k" in ranx' terms (at least one correct chunk in the top k), not the
    share of relevant items retrieved. ValueError on empty input or ``k < 1``.
    """
    k = _k(k)
    ranks = _ranks(first_ranks)
    return sum(1 for r in ranks if r is not None and r <= k) / len(ranks)


def mrr(first_ranks: Sequence[int | None]) -> float:
    """Mean reciprocal rank: mean over queries of ``1 / rank``, 0 where there is no correct hit.

    ValueError on empty input.
    """
    ranks = _ranks(first_ranks)
    return sum(0.0 if r is None else 1.0 / r for r in ranks) / len(ranks)


def hits_by_query(first_ranks: Mapping[str, int | None], k: int) -> dict[str, bool]:
    """{query id: hit@k} — the per-query outcome that :func:`evalcore.measures.stats.paired_test` takes."""
    k = _k(k)
    return {q: hit_at_k(r, k) for q, r in first_ranks.items()}


# --- Registry --------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class MetricSpec:
    """One metric family. ``description`` (with ``{k}``) doubles as the dashboard tooltip.

    ``function(first_ranks, k)`` aggregates over queries; ``per_query(first_rank, k)`` is the
    per-query value whose mean it is. ``k`` is None for families without a cutoff.
    """

    key: str
    pattern: str
    description: str
    takes_k: bool
    function: Callable[[Sequence[int | None], int | None], float]
    per_query: Callable[[int | None, int | None], float]


@dataclass(frozen=True, slots=True)
class Metric:
    """A parsed metric name such as ``recall@20``: its family and cutoff."""

    name: str
    spec: MetricSpec
    k: int | None

    @property
    def description(self) -> str:
        return self.spec.description.format(k=self.k if self.k is not None else "k")

    def __call__(self, first_ranks: Sequence[int | None]) -> float:
        return self.spec.function(first_ranks, self.k)

    def per_query(self, first_rank: int | None) -> float:
        return self.spec.per_query(first_rank, self.k)


METRICS: dict[str, MetricSpec] = {
    "recall": MetricSpec(
        "recall",
        "recall@k",
        "Share of queries with a correct chunk in the top {k} (first correct rank <= {k}).",
        True,
        lambda ranks, k: recall_at_k(ranks, _k(k)),
        lambda r, k: float(hit_at_k(r, _k(k))),
    ),
    "hit": MetricSpec(
        "hit",
        "hit@k",
        "Per query: is a correct chunk in the top {k}? Its mean over queries is recall@{k}.",
        True,
        lambda ranks, k: recall_at_k(ranks, _k(k)),
        lambda r, k: float(hit_at_k(r, _k(k))),
    ),
    "mrr": MetricSpec(
        "mrr",
        "mrr",
        "Mean reciprocal rank: mean of 1/rank of the first correct chunk, 0 when none is found.",
        False,
        lambda ranks, _k: mrr(ranks),
        lambda r, _k: reciprocal_rank(r),
    ),
}

#: The largest cutoff of a metric: no run keeps more ranks a query (an engine run keeps 20).
MAX_K = 10_000
_NAME = re.compile(r"^\s*([a-z_]+)\s*(?:@\s*(\d+))?\s*$")


def known_metrics() -> str:
    """The known metric patterns, for messages and help text."""
    return ", ".join(spec.pattern for spec in METRICS.values())


def parse_metric(name: str) -> Metric:
    """Parse ``recall@20``, ``hit@4``, ``mrr`` (case-insensitive) into a :class:`Metric`.

    One ConfigError for anything else (unknown family, missing or zero k, k on ``mrr``),
    listing the known patterns.
    """
    match = _NAME.match(str(name).lower())
    spec = METRICS.get(match.group(1)) if match else None
    k_text = match.group(2) if match else None
    if spec is None or spec.takes_k != (k_text is not None) or (k_text is not None and int(k_text) < 1):
        raise ConfigError(f"unknown metric {name!r}; known: {known_metrics()} (k an integer >= 1, e.g. recall@20)")
    k = int(k_text) if k_text is not None else None
    if k is not None and k > MAX_K:
        raise ConfigError(f"metric {name!r}: k must be an integer in [1, {MAX_K:,}] (and at most the run's depth)")
    return Metric(f"{spec.key}@{k}" if k is not None else spec.key, spec, k)


# --- Summary table ---------------------------------------------------------------------------


def summarize(
    first_ranks_by_config: Mapping[tuple[str, str], Sequence[int | None]],
    ks: Sequence[int] = DEFAULT_KS,
    confidence: float = 0.95,
) -> pd.DataFrame:
    """Tidy summary: one row per configuration and metric.

    ``first_ranks_by_config`` maps ``(strategy, retriever)`` to the first ranks of its queries.
    Columns (:data:`SUMMARY_COLUMNS`): ``strategy``, ``retriever``, ``config``
    (``"strategy/retriever"``), ``metric`` (``recall@k`` for each k in ``ks``, then ``mrr``),
    ``k`` (nullable Int64; NA for mrr), ``value``, ``low``/``high`` (Wilson interval at
    ``confidence`` for recall; NaN for mrr, which is not a proportion), ``successes`` (queries
    with rank <= k; NA for mrr), ``queries`` (n). Configurations keep their input order.
    For a wide table (one row per configuration), see :func:`wide`.
    ValueError for a configuration without queries.
    """
    import pandas as pd

    ks = tuple(_k(k) for k in ks)
    rows: list[tuple[object, ...]] = []
    for key, raw in first_ranks_by_config.items():
        if isinstance(key, str) or len(key) != 2:
            raise ValueError(f"configuration keys must be (strategy, retriever) pairs, got {key!r}")
        strategy, retriever = key
        config = Configuration(strategy, retriever).label
        try:
            ranks = _ranks(raw)
        except ValueError as exc:
            raise ValueError(f"{config}: {exc}") from None
        n = len(ranks)
        for k in ks:
            hits = sum(1 for r in ranks if r is not None and r <= k)
            low, high = wilson_interval(hits, n, confidence)
            rows.append((strategy, retriever, config, f"recall@{k}", k, hits / n, low, high, hits, n))
        rows.append((strategy, retriever, config, "mrr", None, mrr(ranks), math.nan, math.nan, None, n))
    frame = pd.DataFrame(rows, columns=list(SUMMARY_COLUMNS))
    return frame.astype(
        {
            "k": "Int64",
            "successes": "Int64",
            "queries": "int64",
            "value": "float64",
            "low": "float64",
            "high": "float64",
        }
    )


def wide(summary: pd.DataFrame) -> pd.DataFrame:
    """One row per configuration: strategy, retriever, config, queries, then for each recall
    metric ``recall@k``, ``recall@k low``, ``recall@k high``, then ``mrr``."""
    import pandas as pd

    out = []
    for config, group in summary.groupby("config", sort=False):
        first = group.iloc[0]
        row: dict[str, object] = {
            "strategy": first["strategy"],
            "retriever": first["retriever"],
            "config": config,
            "queries": int(first["queries"]),
        }
        for rec in group.itertuples(index=False):
            row[str(rec.metric)] = rec.value
            if rec.metric != "mrr":
                row[f"{rec.metric} low"] = rec.low
                row[f"{rec.metric} high"] = rec.high
        out.append(row)
    return pd.DataFrame(out)
