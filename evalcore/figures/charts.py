"""Altair chart builders for the dashboard and its exports (no streamlit here).

Each builder takes a frame from :mod:`evalcore.read` and returns an Altair chart whose data
is that frame (or a presentation-only reshaping of it), so the same chart renders in the app
and exports to PNG/SVG (:mod:`evalcore.files.figure_files`) unchanged. Colours are fixed here, by name,
so a retriever or an outcome has the same colour on every screen and in every file.
The refusal threshold's charts are :mod:`evalcore.figures.threshold_charts`.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any, Literal, TypeVar

import altair as alt

from evalcore.figures.encoding import Chart
from evalcore.measures.stats import ALPHA

if TYPE_CHECKING:
    import pandas as pd

FONT = "sans-serif"  # a generic family: nothing is fetched when the chart is rendered
MATRIX_WIDTH = 980  # px: the win/loss matrix, row labels included, fits a wide page at 1400 px
NUMBER_COLUMNS_AFTER = 16  # characters: longer labels put numbers on the matrix's columns
LABEL_LIMIT = 420  # px: axis labels (configuration labels) are never cut short before this

#: One colour per retriever, everywhere (colour-blind-safe Tableau hues).
RETRIEVER_COLOURS = {"dense": "#4c78a8", "bm25": "#f58518", "hybrid": "#54a24b", "rerank": "#b279a2"}
_SPARE_COLOURS = ("#e45756", "#72b7b2", "#9d755d", "#bab0ac", "#eeca3b", "#ff9da6")

#: Win/loss cells: only a significant difference gets a strong colour; noise stays pale.
VERDICT_COLOURS = {
    "significantly better": "#2166ac",
    "significantly worse": "#b2182b",
    "not significant, more wins": "#dbe6f1",
    "not significant, more losses": "#f3dede",
    "not significant, even": "#efefef",
}
#: Threshold sweep series (bluffs red, lost answers blue, refusals grey).
SERIES_COLOURS = {
    "bluffs (out-of-domain)": "#d62728",
    "lost answers (in-domain)": "#1f77b4",
    "refused (in-domain)": "#7f7f7f",
}
#: Distance measures: the two in-domain blues apart in lightness, out-of-domain red.
MEASURE_COLOURS = {"in: answer": "#1f4e9c", "in: top hit": "#6baed6", "out: top hit": "#d62728"}
MEASURE_TITLES = {
    "in: answer": "in-domain: distance to the answer",
    "in: top hit": "in-domain: distance of the top hit",
    "out: top hit": "out-of-domain: distance of the top hit",
}
#: The same on a score axis (a run made elsewhere, ranked by its retriever's own score).
SCORE_TITLES = {
    "in: answer": "in-domain: score of the answer",
    "in: top hit": "in-domain: score of the top hit",
    "out: top hit": "out-of-domain: score of the top hit",
}


def inline_all_rows() -> None:
    """The charts inline their (already aggregated) data; large runs may pass 5000 rows."""
    alt.data_transformers.disable_max_rows()


_Top = TypeVar("_Top", "alt.Chart", "alt.LayerChart", "alt.FacetChart", "alt.VConcatChart")


def configure(
    chart: _Top,
    title: str,
    subtitle: str | list[str] | None = None,
    legend: Literal["right", "bottom"] = "right",
) -> _Top:
    inline_all_rows()
    # "pad": the plot is exactly width x height and the figure grows by its axes and titles, on
    # screen (Streamlit would otherwise "fit" axes and titles into that size) as in the files.
    # altair's configure methods return Self, but its signature decorator hides that from mypy
    configured: _Top = (
        chart.properties(
            title=alt.TitleParams(text=title, anchor="start", fontSize=14, subtitle=subtitle or alt.Undefined),
            autosize=alt.AutoSizeParams(type="pad", contains="padding"),
        )
        .configure(font=FONT)
        .configure_view(stroke=None)
        .configure_axis(labelLimit=LABEL_LIMIT, labelFontSize=11, titleFontSize=11)
        .configure_legend(labelLimit=LABEL_LIMIT, orient=legend)
    )
    return configured


def retriever_scale(retrievers: Iterable[str]) -> alt.Scale:
    """The colour scale of the retrievers present, in a fixed order and fixed colours."""
    present = set(retrievers)
    known = [r for r in RETRIEVER_COLOURS if r in present]
    extra = sorted(present - set(RETRIEVER_COLOURS))
    domain = known + extra
    colours = [RETRIEVER_COLOURS[r] for r in known] + [
        _SPARE_COLOURS[i % len(_SPARE_COLOURS)] for i in range(len(extra))
    ]
    return alt.Scale(domain=domain, range=colours)


def _rows_height(n: int, per_row: int = 20, minimum: int = 90) -> int:
    return max(minimum, per_row * n)


def recall_chart(table: pd.DataFrame) -> alt.FacetChart:
    """Recall@k of each configuration as a point with its 95% Wilson interval, one panel per k,
    configurations down the side (their labels read horizontally, never cut)."""
    inline_all_rows()
    data = table[table["metric"].str.startswith("recall@")].copy()
    data["k"] = data["k"].astype(int)
    order = list(dict.fromkeys(data["label"]))
    base = Chart().encode(
        y=alt.Y("label:N", title=None, sort=order),
        color=alt.Color("retriever:N", title="retriever", scale=retriever_scale(data["retriever"])),
    )
    bars = base.mark_rule(strokeWidth=2).encode(
        x=alt.X("low:Q", title="recall (95% Wilson interval)", scale=alt.Scale(domain=[0, 1])), x2="high:Q"
    )
    points = base.mark_point(filled=True, size=60, opacity=1).encode(
        x=alt.X("value:Q", scale=alt.Scale(domain=[0, 1])),
        tooltip=[
            alt.Tooltip("label:N", title="configuration"),
            alt.Tooltip("metric:N"),
            alt.Tooltip("value:Q", format=".3f", title="recall"),
            alt.Tooltip("low:Q", format=".3f", title="Wilson low"),
            alt.Tooltip("high:Q", format=".3f", title="Wilson high"),
            alt.Tooltip("successes:Q", title="hits"),
            alt.Tooltip("queries:Q", title="n"),
            alt.Tooltip("description:N", title="definition"),
        ],
    )
    # the panels share what a 1400 px page leaves beside the labels (long labels across two
    # runs: narrower panels), and the legend sits below, so nothing is cut at the right
    labels = min(LABEL_LIMIT, 6.5 * max((len(str(x)) for x in order), default=0) + 16)
    panels = max(len(set(data["k"])), 1)
    width = int(max(110, min(170, (MATRIX_WIDTH - labels) / panels - 12)))
    chart = (
        alt.LayerChart(layer=[bars, points], data=data)
        .properties(width=width, height=_rows_height(len(order)))
        .facet(
            column=alt.Column(
                "k:O", title=None, header=alt.Header(labelExpr="'recall@' + datum.value", labelFontSize=12)
            )
        )
    )
    return configure(chart, "Recall@k per configuration", "point: recall; line: 95% Wilson interval", "bottom")


def mrr_chart(table: pd.DataFrame) -> alt.LayerChart:
    """MRR of each configuration as a bar (a mean of reciprocal ranks: no Wilson interval)."""
    inline_all_rows()
    data = table[table["metric"] == "mrr"]
    order = list(dict.fromkeys(data["label"]))
    bars = (
        Chart(data)
        .mark_bar()
        .encode(
            y=alt.Y("label:N", title=None, sort=order),
            x=alt.X("value:Q", title="MRR", scale=alt.Scale(domain=[0, 1])),
            color=alt.Color("retriever:N", title="retriever", scale=retriever_scale(data["retriever"])),
            tooltip=[
                alt.Tooltip("label:N", title="configuration"),
                alt.Tooltip("value:Q", format=".3f", title="MRR"),
                alt.Tooltip("queries:Q", title="n"),
                alt.Tooltip("description:N", title="definition"),
            ],
        )
    )
    text = (
        Chart(data)
        .mark_text(align="left", dx=3, fontSize=10)
        .encode(y=alt.Y("label:N", sort=order), x="value:Q", text=alt.Text("value:Q", format=".3f"))
    )
    chart = alt.LayerChart(layer=[bars, text]).properties(width=420, height=_rows_height(len(order)))
    return configure(chart, "MRR per configuration", "mean of 1/rank of the first correct chunk (0 when none)")


def destroyed_chart(counts: pd.DataFrame) -> alt.LayerChart:
    """Destroyed ground truths per strategy (bars, labelled with the count)."""
    inline_all_rows()
    order = list(counts["strategy"])
    base = Chart(counts).encode(
        y=alt.Y("strategy:N", sort=order, title="strategy"),
        x=alt.X("destroyed:Q", title="destroyed ground truths", axis=alt.Axis(tickMinStep=1, format="d")),
    )
    chart = alt.LayerChart(
        layer=[
            base.mark_bar(color="#c0392b").encode(
                tooltip=["strategy:N", "destroyed:Q", alt.Tooltip("queries:Q", title="queries affected")]
            ),
            base.mark_text(align="left", dx=3, fontSize=11).encode(text="destroyed:Q"),
        ]
    ).properties(width=360, height=_rows_height(len(order), 24))
    return configure(chart, "Destroyed answers per strategy", "ground truths no chunk holds whole")


def verdict_of(wins: int, losses: int, significant: bool) -> str:
    """The colour category of a win/loss cell (see :data:`VERDICT_COLOURS`)."""
    if significant:
        return "significantly better" if wins > losses else "significantly worse"
    if wins == losses:
        return "not significant, even"
    return "not significant, more wins" if wins > losses else "not significant, more losses"


def heatmap(matrix: pd.DataFrame, labels: Sequence[str], k: int, p_name: str) -> alt.LayerChart:
    """The win/loss matrix as a square grid, readable from 2 to 21 configurations.

    Cell text: "+wins/-losses" and the p-value the matrix shows (``p_text``). Colour says
    only what the test says: a strong blue or red for a significant difference, pale tints
    for differences the test cannot tell from noise; significant cells also get bold white
    text. The diagonal is drawn empty. A click selects a cell (selection ``cell``).
    """
    inline_all_rows()
    import pandas as pd

    data = matrix[
        ["row", "column", "wins", "losses", "ties", "n", "p_value_text", "p_shown", "p_text", "significant"]
    ].copy()
    data["verdict"] = [
        verdict_of(wins, losses, s)
        for wins, losses, s in zip(data["wins"], data["losses"], data["significant"], strict=True)
    ]
    data["counts"] = [f"+{wins}/-{losses}" for wins, losses in zip(data["wins"], data["losses"], strict=True)]
    data["ptext"] = [f"p{t}" if t.startswith("<") else f"p={t}" for t in data["p_text"]]
    diagonal = pd.DataFrame(
        {"row": list(labels), "column": list(labels), "verdict": "same configuration", "counts": "", "ptext": ""}
    )
    order = list(labels)
    n = len(order)
    longest = max((len(label) for label in order), default=0)
    numbered = longest > NUMBER_COLUMNS_AFTER  # long labels (two runs): columns by number, rows say which
    label_width = 6.5 * (longest + (5 if numbered else 0)) + 16
    cell = int(max(44, min(96, (MATRIX_WIDTH - label_width) // max(n, 1))))
    big, small = cell >= 60, cell < 52
    select = alt.selection_point(name="cell", fields=["row", "column"], on="click", clear=False)
    position = f"indexof({json.dumps(order)}, datum.value) + 1"
    x = alt.X(
        "column:N",
        sort=order,
        title="second configuration (its wins are the first's losses)" + (": numbered as the rows" if numbered else ""),
        axis=alt.Axis(
            labelAngle=0 if numbered or n <= 3 else -40,
            orient="top",
            labelLimit=LABEL_LIMIT,
            labelExpr=position if numbered else "datum.value",
        ),
    )
    y = alt.Y(
        "row:N",
        sort=order,
        title=None,
        axis=alt.Axis(
            labelLimit=LABEL_LIMIT, labelExpr=f"({position}) + ' · ' + datum.value" if numbered else "datum.value"
        ),
    )
    domain = list(VERDICT_COLOURS) + ["same configuration"]
    colours = list(VERDICT_COLOURS.values()) + ["#ffffff"]
    rect = (
        Chart(data)
        .mark_rect(stroke="#ffffff", strokeWidth=1.5)
        .encode(
            x=x,
            y=y,
            color=alt.Color(
                "verdict:N",
                title=f"difference ({p_name} < {ALPHA:g})",
                scale=alt.Scale(domain=domain, range=colours),
                legend=alt.Legend(values=list(VERDICT_COLOURS), orient="bottom", columns=2, titleLimit=LABEL_LIMIT),
            ),
            tooltip=[
                alt.Tooltip("row:N", title="first"),
                alt.Tooltip("column:N", title="second"),
                alt.Tooltip("wins:Q"),
                alt.Tooltip("losses:Q"),
                alt.Tooltip("ties:Q"),
                alt.Tooltip("p_text:N", title=p_name),
                alt.Tooltip("p_value_text:N", title="unadjusted p"),
                alt.Tooltip("verdict:N"),
            ],
            opacity=alt.condition(select, alt.value(1.0), alt.value(0.75)),
        )
        .add_params(select)
    )
    empty = Chart(diagonal).mark_rect(color="#f7f7f7").encode(x=x, y=y)
    texts = []
    styles: tuple[tuple[bool, str, Literal["normal", "bold"]], ...] = (
        (False, "#222222", "normal"),
        (True, "#ffffff", "bold"),
    )
    for significant, colour, weight in styles:
        part = data[data["significant"] == significant]
        if part.empty:
            continue
        texts.append(
            Chart(part)
            .mark_text(
                baseline="bottom",
                dy=-1,
                fontSize=12 if big else 10 if not small else 9,
                color=colour,
                fontWeight=weight,
            )
            .encode(x=x, y=y, text="counts:N")
        )
        texts.append(
            Chart(part)
            .mark_text(
                baseline="top", dy=2, fontSize=11 if big else 9 if not small else 8, color=colour, fontWeight=weight
            )
            .encode(x=x, y=y, text="ptext:N")
        )
    chart = alt.LayerChart(layer=[empty, rect, *texts]).properties(width=cell * n, height=cell * n)
    chart = configure(
        chart,
        f"Wins and losses at hit@{k}",
        # two short lines: a matrix of two or three configurations is narrow
        ["row: the first configuration; cell: its wins/losses", f"against the column's, and their {p_name}"],
    )
    # the browser draws this chart as SVG, so each cell is an element a test can click
    return chart.properties(usermeta={"embedOptions": {"renderer": "svg"}})


def index_chart(health: pd.DataFrame) -> alt.LayerChart:
    """Chunks per strategy (bars), labelled with the chunks over the model's 256-piece window."""
    import pandas as pd

    inline_all_rows()
    data = health.assign(
        label=[
            f"{c} chunks, {o} over the window" if pd.notna(o) else f"{c} chunks (window not measured: ranked elsewhere)"
            for c, o in zip(health["chunks"], health["over_window"], strict=True)
        ]
    )
    order = list(data["strategy"])
    base = Chart(data).encode(y=alt.Y("strategy:N", sort=order, title="strategy"))
    chart = alt.LayerChart(
        layer=[
            base.mark_bar(color="#4c78a8").encode(
                x=alt.X("chunks:Q", title="chunks"),
                tooltip=[
                    "strategy:N",
                    "chunks:Q",
                    "pieces:Q",
                    alt.Tooltip("header_share:Q", format=".1%"),
                    "over_window:Q",
                    "destroyed:Q",
                ],
            ),
            base.mark_text(align="left", dx=3, fontSize=10).encode(x="chunks:Q", text="label:N"),
        ]
    ).properties(width=360, height=_rows_height(len(order), 24))
    return configure(chart, "Chunks per strategy", "label: chunks over the model's 256-piece window")


def coverage_chart(coverage: pd.DataFrame, at: float | None) -> alt.LayerChart:
    """The threshold read as coverage, for readers to whom t means nothing: per step of the
    sweep, the share of off-topic questions answered (bluffs) and of real questions answered
    from a right source, against the share of real questions answered; a rule at the coverage
    of the chosen threshold (``at``).

    ``coverage``: threshold, coverage, answered_correct_share, bluff_rate
    (:func:`evalcore.read.claims.coverage`)."""
    import pandas as pd

    inline_all_rows()
    long = pd.concat(
        [
            coverage.assign(series="off-topic questions answered (bluffs)", share=coverage["bluff_rate"]),
            coverage.assign(
                series="real questions answered from a right source", share=coverage["answered_correct_share"]
            ),
        ],
        ignore_index=True,
    )[["threshold", "coverage", "series", "share"]].dropna()
    x = alt.X(
        "coverage:Q",
        title="share of real questions answered",
        axis=alt.Axis(format=".0%"),
        scale=alt.Scale(domain=[0, 1]),
    )
    lines = (
        Chart(long)
        .mark_line(interpolate="step-after", strokeWidth=2, point=False)
        .encode(
            x=x,
            y=alt.Y("share:Q", title="share of the group", axis=alt.Axis(format=".0%"), scale=alt.Scale(domain=[0, 1])),
            color=alt.Color(
                "series:N",
                title=None,
                scale=alt.Scale(
                    domain=["off-topic questions answered (bluffs)", "real questions answered from a right source"],
                    range=["#d62728", "#2ca02c"],
                ),
                legend=alt.Legend(orient="bottom"),
            ),
            order="coverage:Q",
            tooltip=[
                alt.Tooltip("coverage:Q", format=".1%", title="real questions answered"),
                "series:N",
                alt.Tooltip("share:Q", format=".1%"),
                alt.Tooltip("threshold:Q", format=".4f"),
            ],
        )
    )
    layers: list[Any] = [lines]
    if at is not None:
        mark = pd.DataFrame({"c": [at], "label": [f"at t: {at:.0%} answered"]})
        layers.append(Chart(mark).mark_rule(color="black", strokeDash=[4, 3]).encode(x="c:Q"))
        layers.append(
            Chart(mark)
            .mark_text(align="left", dx=4, baseline="top", fontSize=11)
            .encode(x="c:Q", y=alt.value(2), text="label:N")
        )
    chart = alt.LayerChart(layer=layers).properties(width=640, height=300)
    return configure(
        chart,
        "What the gate does, read as coverage",
        "each point is a threshold; left: refuse more, right: answer more",
    )
