"""The chart builders' encodings are made by the channel classes' constructors
(evalcore/figures/encoding.py) because Altair's own ``encode`` spends most of a figure's build
in ``from_dict``. The specifications must not change: every figure of the Export screen, for
one run and for two runs compared, is built twice, once as the product builds it and once with
Altair's own ``alt.Chart.encode``, and the two Vega-Lite specifications must be equal, dict for
dict (view names and dataset names included)."""

from __future__ import annotations

import json

import altair as alt
import pytest

from evalcore.figures import build as figures
from evalcore.figures import charts, encoding, threshold_charts, traffic_charts
from evalcore.read import runs
from evalcore.records import Configuration, RunConfiguration
from evalcore.store import Store

BUILDERS = (charts, threshold_charts, traffic_charts)


def _specs(store: Store, selection: figures.Selection) -> dict[str, str]:
    return {f.slug: json.dumps(f.chart.to_dict(), sort_keys=True) for f in figures.selection_figures(store, selection)}


def _both(store: Store, selection: figures.Selection, monkeypatch) -> tuple[dict[str, str], dict[str, str]]:
    monkeypatch.setattr(figures, "_now", lambda: "2026-12-05 12:00 UTC")  # one caption date for both
    ours = _specs(store, selection)
    with monkeypatch.context() as plain:
        for module in BUILDERS:
            assert module.Chart is encoding.Chart  # what the product builds with
            plain.setattr(module, "Chart", alt.Chart)
        altairs = _specs(store, selection)
    return ours, altairs


def test_every_figure_of_one_run_is_the_same_as_altairs_own_encoding(engine_store, engine_run_id, monkeypatch):
    store = Store(engine_store)
    config = Configuration("E", "dense")
    sides = tuple(runs.run_configurations(store, engine_run_id)[:3])
    selection = figures.Selection(engine_run_id, config, 0.4321, "test", sides, 4, True, (0.2, 0.3, 0.9))
    ours, altairs = _both(store, selection, monkeypatch)
    assert {"recall", "mrr", "destroyed", "winloss-hit4", "distances", "sweep-rates", "sweep-counts", "index"} <= set(
        ours
    )
    assert ours == altairs


def test_every_figure_of_two_runs_compared_is_the_same_as_altairs_own_encoding(two_run_store, two_run_ids, monkeypatch):
    first, second = two_run_ids
    sides = (
        RunConfiguration(first, Configuration("E", "dense")),
        RunConfiguration(second, Configuration("wide", "dense")),
    )
    selection = figures.Selection(first, Configuration("E", "dense"), 0.4, "test", sides, 4, True)
    ours, altairs = _both(Store(two_run_store), selection, monkeypatch)
    assert {"destroyed", f"destroyed-{second}", "winloss-hit4"} <= set(ours), sorted(ours)
    assert ours == altairs


@pytest.mark.parametrize(
    ("name", "spec", "made"),
    [
        ("x", "count:Q", alt.X("count:Q")),
        ("strokeDash", "series:N", alt.StrokeDash("series:N")),
        ("tooltip", ["a:Q", alt.Tooltip("b:N", title="B")], [alt.Tooltip("a:Q"), alt.Tooltip("b:N", title="B")]),
        ("y", alt.value(298), alt.YValue(value=298)),
    ],
)
def test_a_shorthand_or_a_constant_becomes_its_channel_class(name, spec, made):
    got = encoding.channel(name, spec)
    assert type(got) is type(made) and repr(got) == repr(made)


def test_a_condition_and_a_channel_object_are_left_to_altair():
    condition = alt.condition("datum.a > 1", alt.value(1.0), alt.value(0.5))
    assert encoding.channel("opacity", condition) is condition
    x = alt.X("a:Q", title="a")
    assert encoding.channel("x", x) is x
