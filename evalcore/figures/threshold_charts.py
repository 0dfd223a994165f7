"""Altair charts of the refusal threshold (no streamlit here): the distance distributions of
in-domain answers and out-of-domain top hits, and the threshold sweep. Colours, fonts and the
shared configuration come from :mod:`evalcore.figures.charts`.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

import altair as alt

from evalcore.figures.charts import (
    MEASURE_COLOURS,
    MEASURE_TITLES,
    SCORE_TITLES,
    SERIES_COLOURS,
    configure,
    inline_all_rows,
)
from evalcore.figures.encoding import Chart
from evalcore.measures.rounding import threshold_text

if TYPE_CHECKING:
    import pandas as pd


def distance_chart(
    histogram: pd.DataFrame, worst_in: float, best_out: float, axis: str = "cosine distance"
) -> alt.VConcatChart:
    """One histogram per measure, stacked on a shared distance axis, with rules at the worst
    in-domain answer and the best out-of-domain top hit; the band between them is shaded
    when the groups overlap (no threshold separates them there)."""
    inline_all_rows()
    import pandas as pd

    measures = [m for m in MEASURE_COLOURS if m in set(histogram["measure"])]
    low = float(histogram["bin_start"].min()) if len(histogram) else 0.0
    high = float(histogram["bin_end"].max()) if len(histogram) else 1.0
    scale = alt.Scale(domain=[low, high], nice=False, zero=False)
    marks = []
    if not math.isnan(worst_in):
        marks.append({"x": worst_in, "what": f"worst in-domain answer {worst_in:.3f}", "y": 0})
    if not math.isnan(best_out):
        marks.append({"x": best_out, "what": f"best out-of-domain top hit {best_out:.3f}", "y": 14})
    closer_low = axis != "score (higher = closer)"
    overlap = (
        not math.isnan(worst_in)
        and not math.isnan(best_out)
        and (best_out <= worst_in if closer_low else best_out >= worst_in)
    )
    rows = []
    for i, measure in enumerate(measures):
        part = histogram[histogram["measure"] == measure]
        n = int(part["count"].sum())
        layers = []
        if overlap:
            band = pd.DataFrame({"x": [best_out], "x2": [worst_in]})
            layers.append(
                Chart(band)
                .mark_rect(color="#f1c40f", opacity=0.25)
                .encode(
                    x=alt.X("x:Q", scale=scale),
                    x2="x2:Q",
                    tooltip=[
                        alt.Tooltip("x:Q", title="overlap from", format=".3f"),
                        alt.Tooltip("x2:Q", title="overlap to", format=".3f"),
                    ],
                )
            )
        layers.append(
            Chart(part)
            .mark_bar(binSpacing=0, color=MEASURE_COLOURS[measure])
            .encode(
                x=alt.X(
                    "bin_start:Q",
                    bin="binned",
                    scale=scale,
                    title=axis if i == len(measures) - 1 else None,
                    axis=alt.Axis(labels=i == len(measures) - 1),
                ),
                x2="bin_end:Q",
                y=alt.Y("count:Q", title="queries", axis=alt.Axis(tickMinStep=1, format="d")),
                tooltip=[
                    alt.Tooltip("bin_start:Q", format=".3f", title="from"),
                    alt.Tooltip("bin_end:Q", format=".3f", title="to"),
                    "count:Q",
                ],
            )
        )
        if marks:
            rule = Chart(pd.DataFrame(marks)).encode(x=alt.X("x:Q", scale=scale))
            layers.append(rule.mark_rule(strokeDash=[4, 3], color="black").encode(tooltip=["what:N"]))
        rows.append(
            alt.LayerChart(layer=layers).properties(
                width=640,
                height=90,
                title=alt.TitleParams(
                    f"{(MEASURE_TITLES if closer_low else SCORE_TITLES)[measure]} (n = {n})",
                    anchor="start",
                    fontSize=12,
                    color=MEASURE_COLOURS[measure],
                ),
            )
        )
    if marks:  # the rules' labels in a strip of their own above the bars, never over them
        middle = (low + high) / 2
        frame = pd.DataFrame(marks).assign(y=lambda d: [2 + 14 * j for j in range(len(d))])
        strip = Chart(frame).encode(x=alt.X("x:Q", scale=scale, axis=None))
        labels = [strip.mark_rule(strokeDash=[4, 3], color="black").encode(tooltip=["what:N"])]
        for right, part in ((False, frame[frame["x"] <= middle]), (True, frame[frame["x"] > middle])):
            if len(part):  # a label left of a rule in the right half, so it stays inside the chart
                labels.append(
                    Chart(part)
                    .mark_text(align="right" if right else "left", dx=-3 if right else 3, baseline="top", fontSize=10)
                    .encode(x=alt.X("x:Q", scale=scale, axis=None), y=alt.Y("y:Q", scale=None), text="what:N")
                )
        rows.insert(0, alt.LayerChart(layer=labels).properties(width=640, height=14 * len(marks) + 4))
    # resolve_scale returns Self, but altair's signature decorator hides that from mypy
    chart: alt.VConcatChart = alt.vconcat(*rows, spacing=8).resolve_scale(x="shared")
    subtitle = "dashed: worst in-domain answer and best out-of-domain top hit"
    if overlap:
        subtitle += "; shaded: where the groups overlap"
    return configure(chart, "In-domain against out-of-domain distances", subtitle)


def sweep_chart(
    sweep_long: pd.DataFrame,
    threshold: float,
    rates: bool,
    keep_rule: str = "distance < t",
    band: tuple[float, float, str] | None = None,
) -> alt.LayerChart:
    """Bluffs, lost answers and refusals against the threshold (step lines), a rule at the
    chosen ``threshold``; as rates, each with its 95% Wilson band. ``band``: (from, to, label)
    of the thresholds where the threshold claim holds, shaded green behind the lines.

    ``sweep_long``: threshold, series, count, rate, low, high (:func:`evalcore.read.sweeps.sweep_long`).
    """
    inline_all_rows()
    import pandas as pd

    field = "rate" if rates else "count"
    domain = list(SERIES_COLOURS)
    colour = alt.Color(
        "series:N",
        title=None,
        scale=alt.Scale(domain=domain, range=list(SERIES_COLOURS.values())),
        legend=alt.Legend(orient="bottom"),
    )
    x = alt.X(
        "threshold:Q",
        title=f"threshold t (the gate keeps top-4 hits with {keep_rule})",
        scale=alt.Scale(zero=False, nice=False),
    )
    lines = (
        Chart(sweep_long)
        .mark_line(interpolate="step-after", strokeWidth=2)
        .encode(
            x=x,
            y=alt.Y(
                f"{field}:Q",
                title="share of the group" if rates else "queries",
                axis=alt.Axis(format=".0%") if rates else alt.Axis(tickMinStep=1, format="d"),
                scale=alt.Scale(domain=[0, 1]) if rates else alt.Scale(),
            ),
            color=colour,
            strokeDash=alt.condition("datum.series == 'refused (in-domain)'", alt.value([5, 3]), alt.value([1, 0])),
            tooltip=[
                alt.Tooltip("threshold:Q", format=".4f"),
                "series:N",
                "count:Q",
                alt.Tooltip("rate:Q", format=".1%"),
                alt.Tooltip("low:Q", format=".1%", title="Wilson low"),
                alt.Tooltip("high:Q", format=".1%", title="Wilson high"),
            ],
        )
    )
    layers = []
    if band is not None:
        zone = pd.DataFrame({"from": [band[0]], "to": [band[1]], "label": [band[2]]})
        layers.append(
            Chart(zone)
            .mark_rect(color="#2ca02c", opacity=0.12)
            .encode(x="from:Q", x2="to:Q", tooltip=[alt.Tooltip("label:N", title="threshold claim")])
        )
        layers.append(
            Chart(zone)
            .mark_text(align="left", dx=3, baseline="bottom", fontSize=10, color="#1a6e1a")
            .encode(x="from:Q", y=alt.value(298), text=alt.value("claim holds"))
        )
    if rates:
        layers.append(
            Chart(sweep_long)
            .mark_area(interpolate="step-after", opacity=0.15)
            .encode(x=x, y="low:Q", y2="high:Q", color=colour)
        )
    layers.append(lines)
    mark = pd.DataFrame({"t": [threshold], "label": [f"t = {threshold_text(threshold)}"]})
    layers.append(
        Chart(mark)
        .mark_rule(color="black", strokeDash=[4, 3])
        .encode(x="t:Q", tooltip=[alt.Tooltip("t:Q", title="chosen threshold", format=".4f")])
    )
    layers.append(
        Chart(mark)
        .mark_text(align="left", dx=4, baseline="top", fontSize=11)
        .encode(x="t:Q", y=alt.value(2), text="label:N")
    )
    chart = alt.LayerChart(layer=layers).properties(width=640, height=300)
    what = "Bluffs, lost answers and refusals against the threshold"
    return configure(
        chart,
        what + (" (rates)" if rates else " (counts)"),
        "shaded: 95% Wilson interval of each rate" if rates else "queries of each group",
    )
