"""The Traffic screen's charts (Altair, no streamlit here), returned as Vega-Lite specs: built
once per stored traffic and cached by the screen, so a warm rerun neither rebuilds nor validates
an Altair chart (that alone took most of a second a rerun).

- volume and refused share per period (:func:`evalcore.read.traffic.periods.periods`), the
  share with its 95% Wilson interval as an error bar; a chart draws the last
  :data:`CHART_PERIODS` periods at most (the table beside it holds them all), so it is never
  handed more rows than it can draw;
- the gate values of one period beside the evaluation's in-domain and off-topic ones, binned on
  the read side (:func:`evalcore.measures.drift.binned_shares`: 30 bins a group, however many
  queries the period holds), with the threshold as a dashed rule.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

import altair as alt

from evalcore.figures.encoding import Chart
from evalcore.measures.drift import binned_shares
from evalcore.read.traffic.periods import distributions, periods

if TYPE_CHECKING:
    import pandas as pd

    from evalcore.records import Configuration
    from evalcore.store import Store

HEIGHT = 220
CHART_PERIODS = 400  # bars a chart draws at most: the last ones (Altair refuses 5,000 rows)


def period_view(
    store: Store, run_id: str, configuration: Configuration, period: timedelta, threshold: float, unit: str
) -> tuple[pd.DataFrame, dict[str, Any], dict[str, Any]]:
    """The periods frame (:func:`evalcore.read.traffic.periods.periods`, with a ``period`` label
    column), the volume chart's spec and the refused share chart's spec (the last
    :data:`CHART_PERIODS` periods). ConfigError when there are too many periods to build."""

    frame = periods(store, run_id, configuration, period, threshold)
    label = "%Y-%m-%d" if period >= timedelta(days=1) else "%Y-%m-%d %H:%M"
    shown = frame.assign(period=[f"{d:{label}}" for d in frame["start"]])
    data = shown[["period", "queries", "refused", "refused_share", "refused_low", "refused_high"]].tail(CHART_PERIODS)
    # however narrow the column, the labels never overlap: Vega drops those that would (a few
    # hundred weeks keep a readable dozen), level, so that each is read where it stands
    ticks = alt.Axis(labelOverlap="greedy", labelAngle=0, labelSeparation=10, labelFlush=True)
    base = Chart(data).encode(x=alt.X("period:O", title=f"{unit} starting (UTC)", axis=ticks))
    volume = base.mark_bar(color="#4c78a8").encode(
        y=alt.Y("queries:Q", title="queries"), tooltip=["period:N", "queries:Q", "refused:Q"]
    )
    band = base.mark_errorbar(color="#e45756").encode(
        y=alt.Y("refused_low:Q", title="refused share (95% Wilson)", scale=alt.Scale(domain=[0, 1])),
        y2="refused_high:Q",
    )
    point = base.mark_point(color="#e45756", filled=True).encode(
        y="refused_share:Q", tooltip=["period:N", alt.Tooltip("refused_share:Q", format=".1%")]
    )
    return (
        shown,
        volume.properties(height=HEIGHT).to_dict(),
        (band + point).properties(height=HEIGHT).to_dict(),
    )


def histogram_spec(
    store: Store,
    run_id: str,
    configuration: Configuration,
    period: timedelta,
    start: datetime | None,
    threshold: float,
) -> dict[str, Any]:
    """The binned gate values of the period starting at ``start`` (default: the last) beside
    the evaluation's, and the threshold."""
    import pandas as pd

    bins = binned_shares(distributions(store, run_id, configuration, period, start))
    hist = (
        Chart(bins)
        .mark_bar(opacity=0.5)
        .encode(
            x=alt.X("bin_start:Q", title="gate value (smallest top-4 distance)"),
            x2="bin_end:Q",
            y=alt.Y("share:Q", title="share of the group", stack=None),
            color=alt.Color("group:N", title=None),
            tooltip=["group:N", "bin_start:Q", "bin_end:Q", "n:Q", alt.Tooltip("share:Q", format=".1%")],
        )
    )
    rule = Chart(pd.DataFrame({"t": [float(threshold)]})).mark_rule(strokeDash=[4, 3]).encode(x="t:Q")
    spec: dict[str, Any] = (hist + rule).properties(height=240).to_dict()
    return spec
