"""Stored traffic cut into periods: volume, refused share and drift per period (the Traffic
screen's charts and drift table, ``traffic check``), and the gate values of one period.

Periods are half-open ``[start, start + P)`` from 00:00 UTC of the earliest stored query's day
to the period of the latest, empty ones included. The last period's end is capped at
9999-12-31T23:59:59.999999 (the latest time a log line may have).

**Bounded work.** The number of periods follows from the earliest and latest stored times and
is known before any period is built: above :data:`MAX_PERIODS` the periods are refused with a
:class:`~evalcore.errors.ConfigError` that names the earliest stored query (its time, log file
and line: often a logger's default time such as 1970-01-01) and says what to do (forget the
lines before the first real day, or a longer period), instead of building hundreds of thousands
of empty periods.

**What each measure of a period means.**

- ``ks_statistic``, ``ks_pvalue``: the two-sample Kolmogorov-Smirnov test of the period's gate
  values against the evaluation's in-domain + off-topic gate values (raw p).
- ``prev_statistic``, ``prev_pvalue``: the same test against the previous period with queries.
- ``ks_padj``, ``prev_padj``: those p-values Holm-adjusted over the tests run for the period;
  ``drifted`` (the flag) is true when an *adjusted* p is below 0.05, so these are the values to
  show beside the flag.
- ``psi``: the population stability index against the evaluation, a size of shift read from ten
  bins, not a test: it never raises the flag. With few queries in a period it is large by
  chance (a bin the period leaves empty alone adds about 0.69).
"""

from __future__ import annotations

import math
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

from evalcore.errors import ConfigError
from evalcore.measures.drift import first_start, ks_test, period_index, psi, psi_words
from evalcore.measures.stats import ALPHA, format_p_plain, holm, wilson_intervals
from evalcore.read.traffic.stored import _key, axis, evaluation_gate_values, reference_values, refused, stored

if TYPE_CHECKING:
    import numpy as np
    import pandas as pd

    from evalcore.records import Configuration
    from evalcore.store import Store

#: the most periods a read builds (the Traffic screen's day view over 27 years, a check by
#: the hour over 14 months); a chart draws at most ``evalcore.figures.traffic_charts.CHART_PERIODS``
MAX_PERIODS = 10_000
LAST = datetime(9999, 12, 31, 23, 59, 59, 999999)
COLUMNS = [
    "start", "end", "queries", "refused", "refused_share", "refused_low", "refused_high",
    "ks_statistic", "ks_pvalue", "prev_statistic", "prev_pvalue", "ks_padj", "prev_padj", "psi", "psi_reading",
    "drifted",
]  # fmt: skip


def _at(start: datetime, k: int, period: timedelta) -> datetime:
    """``start + k * period``, capped at :data:`LAST` (no overflow past the year 9999)."""
    try:
        return min(start + k * period, LAST)
    except OverflowError:
        return LAST


def _gates(
    store: Store,
    run_id: str,
    configuration: Configuration,
    window: tuple[datetime, datetime] | None = None,
    *,
    deployment: str | None = None,
    since: datetime | None = None,
    before: datetime | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """``asked_at`` (datetime64[us]), ``gate_value`` (NaN: no hit) of the answered lines (in
    ``window``: half-open, except that a window capped at :data:`LAST` holds that time), as numpy;
    only ``deployment``'s lines when given (``""``: the imported logs'), only those asked at or
    after ``since`` and before ``before`` when given."""
    import numpy as np

    upto = "<=" if window and window[1] >= LAST else "<"
    where, params = "", list[object]()
    if window:
        where += f" AND q.asked_at >= ? AND q.asked_at {upto} ?"
        params += list(window)
    if deployment is not None:
        where += " AND q.deployment = ?"
        params.append(deployment)
    if since is not None:
        where += " AND q.asked_at >= ?"
        params.append(since)
    if before is not None:
        where += " AND q.asked_at < ?"
        params.append(before)
    with store.read() as con:
        got = con.execute(
            "SELECT epoch_us(q.asked_at) AS at, coalesce(t.gate_value, 'NaN'::DOUBLE) AS gate_value "
            "FROM traffic_queries q JOIN traffic_texts t USING (run_id, strategy, retriever, text_hash) "
            "WHERE q.run_id = ? AND q.strategy = ? AND q.retriever = ? AND t.failure IS NULL" + where,
            [*_key(run_id, configuration), *params],
        ).fetchnumpy()
    at = np.asarray(got["at"], dtype=np.int64).view("datetime64[us]")
    return at, np.asarray(got["gate_value"], dtype=np.float64)


def _duration(period: timedelta) -> str:
    days = period / timedelta(days=1)
    return f"{days:g} day{'s' if days != 1 else ''}" if days >= 1 else f"{period / timedelta(hours=1):g} h"


def earliest_source(store: Store, run_id: str, configuration: Configuration) -> str:
    """Where the earliest stored query of the configuration came from, as `` (FILE line N)``
    (the Traffic screen and :func:`too_many` name it: often a logger's default time), or ``""``."""
    first = store.query(
        "SELECT i.source, q.line FROM traffic_queries q LEFT JOIN traffic_imports i USING (import_id) "
        "WHERE q.run_id = ? AND q.strategy = ? AND q.retriever = ? ORDER BY q.asked_at, i.source, q.line LIMIT 1",
        _key(run_id, configuration),
    )
    if not len(first) or bool(first.iloc[0].isna().any()):
        return ""
    return f" ({first['source'].iloc[0]} line {int(first['line'].iloc[0])})"


def too_many(
    store: Store, run_id: str, configuration: Configuration, period: timedelta, earliest: datetime, latest: datetime
) -> ConfigError:
    """The refusal of :func:`periods` when the stored times span more than :data:`MAX_PERIODS`
    periods: how many, from when to when, the earliest stored query, and what to do."""
    count = (latest - first_start(earliest)) // period + 1
    where = earliest_source(store, run_id, configuration)
    span = latest - first_start(earliest)
    shortest = math.ceil(span / timedelta(days=1) / MAX_PERIODS) if span >= timedelta(days=1) else 1
    return ConfigError(
        f"{count:,} periods of {_duration(period)} from {earliest:%Y-%m-%d} to {latest:%Y-%m-%d} are more than the "
        f"{MAX_PERIODS:,} evalcore builds: the earliest stored query was asked {earliest:%Y-%m-%d %H:%M} UTC{where}. "
        "If that time is a logger's default, forget the lines before the first real day with "
        f"`evalcore traffic forget --before YYYY-MM-DD --run {run_id}`, or choose a period of at least "
        f"{shortest}d"
    )


def periods(
    store: Store,
    run_id: str,
    configuration: Configuration,
    period: timedelta,
    threshold: float,
    *,
    deployment: str | None = None,
    since: datetime | None = None,
    until: datetime | None = None,
    before: datetime | None = None,
) -> pd.DataFrame:
    """One row per period (see the module docstring): start, end, queries, refused,
    refused_share with its Wilson ``refused_low``/``refused_high``; the KS tests and their
    Holm-adjusted p-values; ``psi`` and its reading; ``drifted`` when an adjusted p is below
    0.05. ConfigError (nothing built) above :data:`MAX_PERIODS` periods.

    By default every stored line of the configuration counts, and the periods run from 00:00
    UTC of the earliest line's day to the latest line's period. A deployment's version
    (``traffic check --deployment``) gives ``deployment`` (only its lines), ``since`` (only lines
    asked from then on; the periods start at 00:00 UTC of that day) and ``until`` (the periods
    run on to the one holding that time, empty ones included, so that the periods that have
    ended by then are all there). An earlier version of a deployment gives ``before`` too (its
    next move): only lines asked before it count."""
    import numpy as np
    import pandas as pd

    times, values = _gates(store, run_id, configuration, deployment=deployment, since=since, before=before)
    if not len(times) and since is None:
        return pd.DataFrame(columns=COLUMNS)
    earliest = pd.Timestamp(times.min()).to_pydatetime() if len(times) else since
    latest = pd.Timestamp(times.max()).to_pydatetime() if len(times) else since
    assert earliest is not None and latest is not None  # a line, or since
    start = first_start(since if since is not None else earliest)
    if until is not None and until > latest:
        latest = min(until, LAST)
    if (latest - start) // period + 1 > MAX_PERIODS:
        raise too_many(store, run_id, configuration, period, start, latest)
    ax = axis(store, run_id, configuration)
    reference = reference_values(store, run_id, configuration)
    index = period_index(times, start, period)
    order = np.argsort(index, kind="stable")
    index, values = index[order], values[order]
    count = max(int(index.max()) + 1 if len(index) else 0, (latest - start) // period + 1)
    bounds = np.searchsorted(index, np.arange(count + 1))
    sizes = np.diff(bounds)
    refusals = np.bincount(index, weights=refused(values, threshold, ax.higher_is_closer), minlength=count)
    has, lows, highs = sizes > 0, np.full(count, math.nan), np.full(count, math.nan)
    if has.any():  # every period's Wilson interval in one vectorised statsmodels call
        lows[has], highs[has] = wilson_intervals(refusals[has], sizes[has])
    rows: list[dict[str, Any]] = []
    previous: np.ndarray | None = None
    for i in range(count):
        g = values[bounds[i] : bounds[i + 1]]
        finite = g[np.isfinite(g)]
        n, k = int(sizes[i]), int(refusals[i])
        vs_eval = ks_test(finite, reference)
        vs_prev = ks_test(finite, previous) if previous is not None else None
        ps = [t.pvalue for t in (vs_eval, vs_prev) if t is not None]
        adjusted = holm(ps) if ps else []
        padj_eval = adjusted[0] if vs_eval is not None else math.nan
        padj_prev = adjusted[-1] if vs_prev is not None else math.nan
        shift = psi(finite, reference)
        rows.append(
            {
                "start": _at(start, i, period),
                "end": _at(start, i + 1, period),
                "queries": n,
                "refused": k,
                "refused_share": k / n if n else math.nan,
                "refused_low": float(lows[i]),
                "refused_high": float(highs[i]),
                "ks_statistic": vs_eval.statistic if vs_eval else math.nan,
                "ks_pvalue": vs_eval.pvalue if vs_eval else math.nan,
                "prev_statistic": vs_prev.statistic if vs_prev else math.nan,
                "prev_pvalue": vs_prev.pvalue if vs_prev else math.nan,
                "ks_padj": padj_eval,
                "prev_padj": padj_prev,
                "psi": shift,
                "psi_reading": psi_words(shift),
                "drifted": any(p < ALPHA for p in adjusted),
            }
        )
        if len(finite):
            previous = finite
    return pd.DataFrame(rows, columns=COLUMNS)


def drift_sentence(row: Any) -> str:
    """One plain sentence about a period's drift, with the Holm-adjusted p-values the flag uses."""
    day = f"{row['start']:%Y-%m-%d}"
    if not row["queries"]:
        return f"The period from {day} has no queries."
    if not row["drifted"]:
        return (
            f"The period from {day} sits where the evaluation's queries did "
            f"(KS D = {row['ks_statistic']:.3f}, Holm-adjusted p = {format_p_plain(row['ks_padj'])}; "
            f"PSI {row['psi']:.2f}, not a test)."
        )
    parts = []
    if row["ks_padj"] < ALPHA:
        parts.append(
            f"away from the evaluation's queries (KS D = {row['ks_statistic']:.3f}, "
            f"Holm-adjusted p = {format_p_plain(row['ks_padj'])})"
        )
    if row["prev_padj"] < ALPHA:
        parts.append(
            f"away from the previous period (KS D = {row['prev_statistic']:.3f}, "
            f"Holm-adjusted p = {format_p_plain(row['prev_padj'])})"
        )
    return f"The period from {day} moved " + " and ".join(parts) + f"; PSI against the evaluation {row['psi']:.2f}."


def distributions(
    store: Store, run_id: str, configuration: Configuration, period: timedelta, start: datetime | None = None
) -> pd.DataFrame:
    """``group, gate_value``: the evaluation's in-domain, off-topic queries, the period from ``start`` (or the last)."""
    import numpy as np
    import pandas as pd

    ev = evaluation_gate_values(store, run_id, configuration)
    parts = [
        pd.DataFrame(
            {
                "group": np.where(ev["domain"] == "in", "evaluation: in-domain", "evaluation: off-topic"),
                "gate_value": ev["gate_value"].astype("float64"),
            }
        )
    ]
    held = stored(store, run_id, configuration)
    if held.since is not None and held.until is not None:  # only the chosen period leaves DuckDB
        first = first_start(held.since)
        k = (held.until - first) // period if start is None else (start - first) // period
        lo, hi = _at(first, k, period), _at(first, k + 1, period)
        _, chosen = _gates(store, run_id, configuration, (lo, hi))
        parts.append(pd.DataFrame({"group": f"traffic: {lo:%Y-%m-%d}", "gate_value": chosen}))
    out = pd.concat(parts, ignore_index=True)
    kept: pd.DataFrame = out[np.isfinite(out["gate_value"])].reset_index(drop=True)
    return kept
