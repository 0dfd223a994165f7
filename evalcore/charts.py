"""Altair chart builders for the dashboard (no streamlit here).

Each builder takes a frame returned by :mod:`evalcore.report` and returns an Altair
chart whose data is that frame (or a presentation-only reshaping of it), so the same
chart renders in the app and exports to PNG/SVG (:mod:`evalcore.export`) unchanged.
"""
from __future__ import annotations

import math
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import altair as alt
    import pandas as pd

_FONT = "sans-serif"  # a generic family: nothing is fetched when the chart is rendered


def _alt():
    import altair as alt

    # The charts inline their (already aggregated) data; large runs may pass 5000 rows.
    alt.data_transformers.disable_max_rows()
    return alt


def _configure(chart: alt.Chart | alt.LayerChart | alt.FacetChart, title: str):
    return chart.properties(title=title).configure(font=_FONT).configure_view(stroke=None)


def recall_chart(summary: pd.DataFrame) -> alt.FacetChart:
    """Recall@k per configuration as points with 95% Wilson error bars, one panel per k."""
    alt = _alt()
    data = summary[summary["metric"].str.startswith("recall@")].copy()
    data["k"] = data["k"].astype(int)
    base = alt.Chart(data).encode(
        x=alt.X("config:N", title=None, sort=None, axis=alt.Axis(labelOverlap=False, labelAngle=-90)),
        color=alt.Color("retriever:N", title="retriever"),
    )
    points = base.mark_point(filled=True, size=70).encode(
        y=alt.Y("value:Q", title="recall", scale=alt.Scale(domain=[0, 1])),
        tooltip=[
            alt.Tooltip("config:N", title="configuration"),
            alt.Tooltip("metric:N"),
            alt.Tooltip("value:Q", format=".3f", title="recall"),
            alt.Tooltip("low:Q", format=".3f", title="Wilson low"),
            alt.Tooltip("high:Q", format=".3f", title="Wilson high"),
            alt.Tooltip("successes:Q", title="hits"),
            alt.Tooltip("queries:Q", title="n"),
            alt.Tooltip("description:N", title="definition"),
        ],
    )
    bars = base.mark_errorbar(ticks=True).encode(y=alt.Y("low:Q", title="recall"), y2="high:Q")
    width = max(150, 14 * data["config"].nunique())
    chart = alt.layer(bars, points, data=data).properties(width=width, height=220).facet(
        facet=alt.Facet("k:O", title="recall@k by configuration (strategy/retriever), 95% Wilson interval",
                        header=alt.Header(labelExpr="'recall@' + datum.value")),
        columns=2,  # a 2 x 2 grid stays on screen where four panels in a row would not
    )
    return _configure(chart, "Recall@k per configuration")


def mrr_chart(summary: pd.DataFrame) -> alt.Chart:
    """MRR per configuration as bars (MRR is a mean of reciprocal ranks, no Wilson interval)."""
    alt = _alt()
    data = summary[summary["metric"] == "mrr"]
    chart = alt.Chart(data).mark_bar().encode(
        x=alt.X("config:N", title="configuration", sort=None),
        y=alt.Y("value:Q", title="MRR", scale=alt.Scale(domain=[0, 1])),
        color=alt.Color("retriever:N"),
        tooltip=[alt.Tooltip("config:N"), alt.Tooltip("value:Q", format=".3f", title="MRR"),
                 alt.Tooltip("queries:Q", title="n"), alt.Tooltip("description:N", title="definition")],
    ).properties(width=420, height=220)
    return _configure(chart, "MRR per configuration")


def destroyed_chart(counts: pd.DataFrame) -> alt.Chart:
    """Destroyed ground truths per strategy (bars, labelled with the count)."""
    alt = _alt()
    base = alt.Chart(counts).encode(x=alt.X("strategy:N"), y=alt.Y("destroyed:Q", title="destroyed ground truths"))
    chart = alt.layer(
        base.mark_bar(color="#c0392b"),
        base.mark_text(dy=-6).encode(text="destroyed:Q"),
    ).properties(width=300, height=200)
    return _configure(chart, "Destroyed answers per strategy")


def heatmap(matrix: pd.DataFrame, k: int, adjusted: bool) -> alt.LayerChart:
    """Win/loss matrix: cell colour = wins - losses, text "+w/-l" and p; click selects a cell."""
    alt = _alt()
    data = matrix.assign(net=matrix["wins"] - matrix["losses"],
                         text=[f"+{w}/-{l}" for w, l in zip(matrix["wins"], matrix["losses"])],
                         ptext=[f"p={p:.3g}" + ("*" if s else "") for p, s in
                                zip(matrix["p_shown"], matrix["significant"])])
    order = list(dict.fromkeys(list(matrix["row"]) + list(matrix["column"])))
    limit = max(1, int(data["net"].abs().max())) if len(data) else 1
    cell = alt.selection_point(name="cell", fields=["row", "column"], on="click")
    base = alt.Chart(data).encode(
        x=alt.X("column:N", sort=order, title="second configuration (losses)"),
        y=alt.Y("row:N", sort=order, title="first configuration (wins)"),
    )
    ptitle = "p (Holm)" if adjusted else "p (unadjusted)"
    rect = base.mark_rect().encode(
        color=alt.Color("net:Q", title="wins - losses",
                        scale=alt.Scale(scheme="redblue", domain=[-limit, limit])),
        opacity=alt.condition(cell, alt.value(1.0), alt.value(0.6)),
        tooltip=[alt.Tooltip("row:N", title="first"), alt.Tooltip("column:N", title="second"),
                 alt.Tooltip("wins:Q"), alt.Tooltip("losses:Q"), alt.Tooltip("ties:Q"),
                 alt.Tooltip("p_value:Q", format=".4g", title="p"),
                 alt.Tooltip("p_holm:Q", format=".4g", title="p (Holm)")],
    ).add_params(cell)
    text = base.mark_text(baseline="bottom", dy=-1, fontSize=10).encode(text="text:N")
    ptext = base.mark_text(baseline="top", dy=2, fontSize=9).encode(text="ptext:N")
    size = max(240, 56 * len(order))
    chart = alt.layer(rect, text, ptext).properties(width=size, height=size)
    return _configure(chart, f"Wins/losses at hit@{k}, {ptitle}; * p < 0.05")


def distance_chart(histogram: pd.DataFrame, worst_in: float, best_out: float) -> alt.LayerChart:
    """Overlaid histograms of distances with rules at the worst in-domain answer and the best
    out-of-domain top hit; the band between them is shaded when the groups overlap."""
    alt = _alt()
    layers = [
        alt.Chart(histogram).mark_bar(opacity=0.45, binSpacing=0).encode(
            x=alt.X("bin_start:Q", title="cosine distance", bin="binned"),
            x2="bin_end:Q",
            y=alt.Y("count:Q", title="queries", stack=None),
            color=alt.Color("measure:N", title="distance",
                            scale=alt.Scale(domain=["in: distance to answer", "in: top hit", "out: top hit"],
                                            range=["#1f77b4", "#7fb3d5", "#d62728"])),
            tooltip=["measure:N", alt.Tooltip("bin_start:Q", format=".3f"),
                     alt.Tooltip("bin_end:Q", format=".3f"), "count:Q"],
        )
    ]
    marks = []
    if not math.isnan(worst_in):
        marks.append({"x": worst_in, "what": f"worst in-domain answer {worst_in:.3f}"})
    if not math.isnan(best_out):
        marks.append({"x": best_out, "what": f"best out-of-domain {best_out:.3f}"})
    if not math.isnan(worst_in) and not math.isnan(best_out) and best_out <= worst_in:
        import pandas as pd

        band = pd.DataFrame({"x": [best_out], "x2": [worst_in]})
        layers.insert(0, alt.Chart(band).mark_rect(color="#f1c40f", opacity=0.25).encode(
            x="x:Q", x2="x2:Q", tooltip=[alt.Tooltip("x:Q", title="overlap from", format=".3f"),
                                         alt.Tooltip("x2:Q", title="overlap to", format=".3f")]))
    if marks:
        import pandas as pd

        rules = pd.DataFrame(marks)
        rule = alt.Chart(rules).encode(x="x:Q")
        layers.append(rule.mark_rule(strokeDash=[4, 3], color="black").encode(tooltip=["what:N"]))
        layers.append(rule.mark_text(align="left", dx=3, dy=-4, angle=0, baseline="bottom", fontSize=10)
                      .encode(text="what:N", y=alt.value(0)))
    chart = alt.layer(*layers).properties(width=640, height=300)
    return _configure(chart, "In-domain against out-of-domain distances")


def sweep_chart(sweep_long: pd.DataFrame, threshold: float, rates: bool) -> alt.LayerChart:
    """Bluffs and lost answers against the threshold (step lines), with a rule at ``threshold``.

    ``sweep_long``: threshold, series, count, rate (see :func:`evalcore.report.sweep_long`).
    """
    alt = _alt()
    import pandas as pd

    field = "rate" if rates else "count"
    lines = alt.Chart(sweep_long).mark_line(interpolate="step-after").encode(
        x=alt.X("threshold:Q", title="threshold t (keep hits with distance < t)"),
        y=alt.Y(f"{field}:Q", title="share of the group" if rates else "queries",
                axis=alt.Axis(format=".0%") if rates else alt.Axis()),
        color=alt.Color("series:N", title=None,
                        scale=alt.Scale(domain=["bluffs (out-of-domain)", "lost answers (in-domain)"],
                                        range=["#d62728", "#1f77b4"])),
        tooltip=[alt.Tooltip("threshold:Q", format=".4f"), "series:N", "count:Q",
                 alt.Tooltip("rate:Q", format=".1%")],
    )
    rule = alt.Chart(pd.DataFrame({"t": [threshold]})).mark_rule(color="black", strokeDash=[4, 3]).encode(
        x="t:Q", tooltip=[alt.Tooltip("t:Q", title="chosen threshold", format=".4f")])
    chart = alt.layer(lines, rule).properties(width=640, height=300)
    return _configure(chart, "Bluffs and lost answers against the threshold" + (" (rates)" if rates else ""))


def index_chart(health: pd.DataFrame) -> alt.Chart:
    """Chunks per strategy, coloured by the share of chunks over the window."""
    alt = _alt()
    base = alt.Chart(health).encode(x=alt.X("strategy:N"))
    chart = alt.layer(
        base.mark_bar().encode(y=alt.Y("chunks:Q"), tooltip=["strategy:N", "chunks:Q", "pieces:Q",
                                                             alt.Tooltip("header_share:Q", format=".1%"),
                                                             "over_window:Q", "destroyed:Q"]),
        base.mark_text(dy=-6).encode(y="chunks:Q", text="over_window:Q"),
    ).properties(width=320, height=200)
    return _configure(chart, "Chunks per strategy (label: chunks over the 256 window)")
