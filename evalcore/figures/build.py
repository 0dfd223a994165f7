"""Every exportable figure assembled once: chart, data and provenance (no streamlit here).

The dashboard's pages, its Export screen and review pack, and ``tools/export_figures.py``
all build figures through these functions, so a chart on screen, its PNG/SVG/CSV and the
README's pictures are the same figure with the same caption.

A figure's :class:`Provenance` names what a reviewer needs to trace it back: the figure,
the run(s) (name, id, date), the configuration(s), n, the test, the interval method, the
threshold where one applies, the date and the evalcore version.
"""

from __future__ import annotations

import textwrap
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from datetime import UTC, date, datetime
from typing import TYPE_CHECKING, Any

from evalcore import __version__
from evalcore.figures import charts, threshold_charts
from evalcore.figures.localize import TEMPLATES, localize_spec
from evalcore.i18n import DEFAULT, ENGLISH, N_, Translator, translator
from evalcore.measures.rounding import threshold_text
from evalcore.measures.stats import INTERVAL_METHOD, PAIRED_TEST
from evalcore.read.claims import band_of
from evalcore.read.compare import compare, destroyed_counts, recall_table
from evalcore.read.distances import distance_histogram, distance_summary, distances
from evalcore.read.index import index_health
from evalcore.read.runs import named_runs
from evalcore.read.sweeps import run_sweep, sweep_long
from evalcore.records import Configuration, RunConfiguration

if TYPE_CHECKING:
    from evalcore.store import Store


def _now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")


def _version() -> str:
    return f"evalcore {__version__}"


@dataclass(frozen=True, slots=True)
class Provenance:
    """Where a figure comes from, as ordered (name, value) fields."""

    what: str
    runs: tuple[str, ...]
    configurations: tuple[str, ...]
    n: str
    test: str | None = None
    interval: str | None = None
    threshold: float | None = None
    made: str = field(default_factory=_now)
    software: str = field(default_factory=_version)
    note: str | None = None  # how to read the data (printed last, only when given)
    lang: str = DEFAULT  # the language of the caption (English: as before, no language field)

    def fields(self) -> list[tuple[str, str]]:
        """(name, value) pairs, in the order they are printed (in :attr:`lang`, which a caption
        in another language names in a last field)."""
        english = self.english_fields()
        if self.lang == DEFAULT:
            return english
        tr = translator(self.lang)
        out = [
            (tr.gettext(name), _made(tr, value) if name == "made" else tr.rewrite(value, TEMPLATES))
            for name, value in english
        ]
        return [*out, (tr.gettext("language"), f"{tr.name} ({tr.lang})")]

    def english(self) -> Provenance:
        """The same provenance in English (a CSV's machine-readable lines)."""
        return replace(self, lang=DEFAULT)

    def english_fields(self) -> list[tuple[str, str]]:
        """:meth:`fields` in English, whatever :attr:`lang` is."""
        return [
            ("figure", self.what),
            ("run", "; ".join(self.runs)),
            ("configurations", ", ".join(self.configurations) or "all"),
            ("n", self.n),
            ("test", self.test or "none"),
            ("interval", self.interval or "none"),
            ("threshold", f"t = {threshold_text(self.threshold, 4)}" if self.threshold is not None else "none"),
            ("made", self.made),
            ("software", self.software),
            *([("note", self.note)] if self.note else []),
        ]

    def text(self) -> str:
        """One line: ``"<figure> — run ...; configurations ...; n = ...; test: ...; ..."``."""
        values = [value for _name, value in self.fields()]
        f = dict(zip(FIELDS, values, strict=False))
        line = (
            translator(self.lang)
            .gettext(
                "{figure} — run {run}; configurations {configurations}; n = {n}; test: {test}; interval: {interval}; "
                "threshold: {threshold}; made {made} by {software}"
            )
            .format(**{name: f.get(name, "") for name in FIELDS})
        )
        if self.lang == DEFAULT:
            return line
        return line + translator(self.lang).gettext("; language: {language}").format(language=values[-1])

    def lines(self, width: int = 110) -> list[str]:
        """The caption wrapped to ``width`` characters, one field a line (for drawing)."""
        out: list[str] = []
        for name, value in self.fields():
            out += textwrap.wrap(f"{name}: {value}", width=width, subsequent_indent="    ") or [f"{name}:"]
        return out

    def stamped(self) -> Provenance:
        """The same provenance, made now (an export is dated when its file is written)."""
        return replace(self, made=_now())


FIELDS = ("figure", "run", "configurations", "n", "test", "interval", "threshold", "made", "software")
#: The caption's field names, translated where shown.
NAMES = (
    N_("figure"),
    N_("run"),
    N_("configurations"),
    N_("n"),
    N_("test"),
    N_("interval"),
    N_("threshold"),
    N_("made"),
    N_("software"),
    N_("note"),
    N_("language"),
)


def _made(tr: Translator, made: str) -> str:
    """When a figure was made (``2026-12-04 20:10 UTC``) as the locale writes dates."""
    try:
        when = datetime.strptime(made, "%Y-%m-%d %H:%M UTC")
    except ValueError:
        return made
    return f"{tr.date(when, seconds=False)} UTC"


@dataclass(frozen=True, slots=True)
class Figure:
    """One exportable chart: a slug, the chart, its data, its provenance, and the record it
    was drawn from (``detail``: a Comparison, a DistanceSummary, a sweep frame, ...)."""

    slug: str
    title: str
    chart: Any  # an Altair chart
    data: Any  # pd.DataFrame
    provenance: Provenance
    configurations: tuple[str, ...] = ()  # named in file names
    threshold: float | None = None  # named in file names
    detail: Any = None

    @property
    def caption(self) -> str:
        return self.provenance.text()


def localize(figure: Figure, tr: Translator) -> Figure:
    """``figure`` with its chart, title and caption in ``tr``'s language (English: as it is);
    the chart and caption texts as :mod:`evalcore.figures.localize` matches them."""
    if tr.lang == DEFAULT:
        return figure
    chart = figure.chart
    if chart is not None:
        spec = localize_spec(chart.to_dict(), tr)
        chart = type(chart).from_dict(spec, validate=False)
    provenance = replace(figure.provenance, lang=tr.lang)
    return replace(figure, title=tr.rewrite(figure.title, TEMPLATES), chart=chart, provenance=provenance)


def runs_text(store: Store, run_ids: tuple[str, ...] | list[str]) -> tuple[str, ...]:
    """How a caption names each run (one query for all):
    ``"demo 20261129-225237-0ff462 (created 2026-11-29 22:52)"``."""
    ids = list(dict.fromkeys(run_ids))
    if not ids:
        return ()
    rows = named_runs(store, ids)
    found = {row.run_id: row for row in rows.itertuples()}
    out = []
    for run_id in ids:
        row = found.get(run_id)
        if row is None:
            out.append(str(run_id))
            continue
        created = row.created_at
        when = created.strftime("%Y-%m-%d %H:%M") if isinstance(created, date) else str(created)
        out.append(f"{row.name} {run_id} (created {when})")
    return tuple(out)


def run_text(store: Store, run_id: str) -> str:
    """:func:`runs_text` of one run."""
    return runs_text(store, [run_id])[0]


def recall_figures(
    store: Store, sides: tuple[RunConfiguration, ...], tr: Translator = ENGLISH
) -> tuple[Figure, Figure]:
    """Recall@k with 95% Wilson intervals of each side (one panel per k), and MRR: one read."""
    table = recall_table(store, sides)
    runs = runs_text(store, [s.run_id for s in sides])
    labels = tuple(dict.fromkeys(table["label"]))
    n = int(table["queries"].iloc[0]) if len(table) else 0
    recall = Figure(
        "recall",
        "Recall@k",
        charts.recall_chart(table) if len(table) else None,
        table,
        Provenance("Recall@k per configuration", runs, labels, f"{n} in-domain queries", None, INTERVAL_METHOD),
        labels,
    )
    mrr = table[table["metric"] == "mrr"].reset_index(drop=True)
    mrr_figure = Figure(
        "mrr",
        "MRR",
        charts.mrr_chart(mrr) if len(mrr) else None,
        mrr,
        Provenance("MRR per configuration", runs, labels, f"{n} in-domain queries"),
        labels,
    )
    return localize(recall, tr), localize(mrr_figure, tr)


def destroyed_figure(store: Store, run_id: str, tr: Translator = ENGLISH) -> Figure:
    """Destroyed ground truths per strategy of one run."""
    counts = destroyed_counts(store, run_id)
    prov = Provenance(
        "Destroyed answers per strategy",
        (run_text(store, run_id),),
        ("every strategy",),
        f"{int(counts['destroyed'].sum())} destroyed ground truths over {len(counts)} strategies",
    )
    return localize(Figure("destroyed", "Destroyed answers", charts.destroyed_chart(counts), counts, prov), tr)


def matrix_figure(
    store: Store, sides: tuple[RunConfiguration, ...], k: int, adjust: bool, tr: Translator = ENGLISH
) -> Figure:
    """The win/loss matrix of ``sides`` at hit@k (detail: the :class:`~evalcore.read.compare.Comparison`)."""
    comparison = compare(store, sides, k, adjust)
    runs = runs_text(store, [s.run_id for s in comparison.sides])
    pairs = len(comparison.sides) * (len(comparison.sides) - 1) // 2
    test = PAIRED_TEST + (
        f", Holm-adjusted over the {pairs} pair{'s' if pairs != 1 else ''} shown" if adjust else ", unadjusted"
    )
    prov = Provenance(
        f"Win/loss matrix at hit@{k}", runs, comparison.labels, f"{comparison.n} in-domain queries (paired)", test
    )
    # the data's verdict in the words of the chart's legend (what the screen shows)
    data = comparison.matrix.assign(
        verdict=[
            charts.verdict_of(int(w), int(lost), bool(s))
            for w, lost, s in zip(
                comparison.matrix["wins"], comparison.matrix["losses"], comparison.matrix["significant"], strict=True
            )
        ]
    )
    chart = (
        charts.heatmap(comparison.matrix, comparison.labels, k, comparison.p_name)
        if len(comparison.sides) > 1
        else None
    )
    return localize(
        Figure(
            f"winloss-hit{k}", f"Win/loss matrix at hit@{k}", chart, data, prov, comparison.labels, detail=comparison
        ),
        tr,
    )


def distance_figure(store: Store, run_id: str, configuration: Configuration, tr: Translator = ENGLISH) -> Figure:
    """Distances in and out of domain of one configuration (detail: (frame, DistanceSummary))."""
    frame = distances(store, run_id, configuration)
    summary = distance_summary(frame)
    hist = distance_histogram(frame)
    prov = Provenance(
        on_axis("Distances in and out of domain", summary.axis),
        (run_text(store, run_id),),
        (configuration.label,),
        summary.n_text(),
    )
    chart = (
        threshold_charts.distance_chart(hist, summary.worst_in, summary.best_out, summary.axis) if len(hist) else None
    )
    figure = Figure("distances", "Distances", chart, hist, prov, (configuration.label,), detail=(frame, summary))
    return localize(figure, tr)


def sweep_figure(store: Store, run_id: str, configuration: Configuration, threshold: float, rates: bool) -> Figure:
    """The threshold sweep (counts, or rates with Wilson bands) with a rule at ``threshold``
    (detail: the sweep frame)."""
    return sweep_figure_of(
        run_sweep(store, run_id, configuration), run_text(store, run_id), configuration, threshold, rates
    )


def sweep_figures(
    store: Store,
    run_id: str,
    configuration: Configuration,
    threshold: float,
    claim_params: tuple[float, float, float] | None = None,
    tr: Translator = ENGLISH,
) -> tuple[Figure, Figure]:
    """The sweep as counts and as rates, from one read; with ``claim_params`` (alpha, beta,
    confidence) the threshold claim's band is shaded and the claim stated in the captions."""
    frame, run = run_sweep(store, run_id, configuration), run_text(store, run_id)
    band = band_of(store, run_id, configuration, *claim_params) if claim_params else None
    return (
        sweep_figure_of(frame, run, configuration, threshold, False, band, tr),
        sweep_figure_of(frame, run, configuration, threshold, True, band, tr),
    )


def sweep_figure_of(
    frame: Any,
    run: str,
    configuration: Configuration,
    threshold: float,
    rates: bool,
    band: tuple[float, float, str] | None = None,
    tr: Translator = ENGLISH,
) -> Figure:
    """:func:`sweep_figure` from a sweep frame already read (a slider move redraws, never rereads).

    ``band``: (from, to, the claim in words) of the thresholds where the threshold claim holds
    (:func:`evalcore.read.claims.band`), shaded on the chart and stated in the caption."""
    n_in = int(frame["in_domain"].iloc[0]) if len(frame) else 0
    n_out = int(frame["out_domain"].iloc[0]) if len(frame) else 0
    mode = "rates" if rates else "counts"
    what = on_axis(f"Threshold sweep ({mode})", sweep_axis(frame))
    if band is not None:
        what += f"; shaded: {band[2]}"
    prov = Provenance(
        what,
        (run,),
        (configuration.label,),
        f"{n_in} in-domain and {n_out} out-of-domain queries",
        None,
        INTERVAL_METHOD if rates else None,
        float(threshold),
        # one caption line: a row's threshold is where its step starts (METHODS: Exports)
        note=f"a row's counts hold for t above its threshold, up to the next row's (gate: {keep_rule(frame)})",
    )
    long = sweep_long(frame)
    keep = keep_rule(frame)
    chart = threshold_charts.sweep_chart(long, float(threshold), rates, keep, band) if len(long) else None
    figure = Figure(
        f"sweep-{mode}",
        f"Threshold sweep ({mode})",
        chart,
        long,
        prov,
        (configuration.label,),
        float(threshold),
        detail=frame,
    )
    return localize(figure, tr)


def sweep_axis(sweep_frame: Any) -> str:
    """The axis a sweep frame's thresholds are on: ``cosine distance`` or a run made elsewhere's
    ``score (higher = closer)`` / ``score (lower = closer)``."""
    return str(sweep_frame["axis"].iloc[0]) if "axis" in sweep_frame and len(sweep_frame) else "cosine distance"


def keep_rule(sweep_frame: Any) -> str:
    """What the gate keeps, read off a sweep frame: ``distance < t`` (cosine distance),
    ``score >= t`` or ``score < t`` (a run made elsewhere's own score)."""
    axis = sweep_axis(sweep_frame)
    return {"score (higher = closer)": "score >= t", "score (lower = closer)": "score < t"}.get(axis, "distance < t")


def on_axis(what: str, axis: str) -> str:
    """A figure's name, with its axis when that is not the cosine distance (a retriever's own
    score), so a caption, an SVG's <desc> and a CSV's first lines say what the numbers are."""
    return what if axis == "cosine distance" else f"{what}; axis: {axis}"


def index_figure(store: Store, run_id: str, tr: Translator = ENGLISH) -> Figure:
    """Chunks per strategy with the chunks over the window (detail: the index-health frame)."""
    health = index_health(store, run_id)
    prov = Provenance(
        "Index health per strategy",
        (run_text(store, run_id),),
        ("every strategy",),
        f"{int(health['chunks'].sum())} chunks over {len(health)} strategies",
    )
    return localize(
        Figure(
            "index", "Index health", charts.index_chart(health) if len(health) else None, health, prov, detail=health
        ),
        tr,
    )


@dataclass(frozen=True, slots=True)
class Selection:
    """What the screens currently show, so an export equals them.

    ``sides``, ``k``, ``adjust``: the Compare screen's configurations, hit@k and Holm switch;
    ``configuration``, ``threshold``: the configuration and threshold of the Threshold
    screen (shared by Query and Export); ``threshold_source`` says where t came from;
    ``claim_params``: the threshold claim's (alpha, beta, confidence) set there.
    """

    run_id: str
    configuration: Configuration
    threshold: float
    threshold_source: str
    sides: tuple[RunConfiguration, ...]
    k: int
    adjust: bool
    claim_params: tuple[float, float, float] = (0.05, 0.20, 0.95)


def selection_figures(
    store: Store, selection: Selection, call: Callable[..., Any] | None = None, tr: Translator = ENGLISH
) -> list[Figure]:
    """Every figure of the current selection, in the order the Export screen shows them.

    ``call(fn, *args)`` runs ``fn(store, *args)``; the dashboard passes its cache, so the
    Export screen reuses the figures the other screens already drew.
    """
    call = call or (lambda fn, *args: fn(store, *args))
    figures = [*call(recall_figures, selection.sides, tr), call(destroyed_figure, selection.run_id, tr)]
    for other in dict.fromkeys(s.run_id for s in selection.sides if s.run_id != selection.run_id):
        # two runs compared: the other run's destroyed answers too (its own file names)
        theirs = call(destroyed_figure, other, tr)
        title = tr.gettext("Destroyed answers · run {run}").format(run=other)
        figures.append(replace(theirs, slug=f"destroyed-{other}", title=title))
    if len(selection.sides) > 1:
        figures.append(call(matrix_figure, selection.sides, selection.k, selection.adjust, tr))
    figures += [
        call(distance_figure, selection.run_id, selection.configuration, tr),
        *call(
            sweep_figures, selection.run_id, selection.configuration, selection.threshold, selection.claim_params, tr
        ),
        call(index_figure, selection.run_id, tr),
    ]
    return [f for f in figures if f.chart is not None]
