"""The Compare screen's choice lives in the page's address (issue 34): a reload, of Compare or of
Export, keeps the configurations, the second run, hit@k and the Holm switch; and the review
pack compares exactly those configurations, says which and how many pairs, as its charts do."""

from __future__ import annotations

import shutil

from streamlit.testing.v1 import AppTest

from dashboard.test_app import APP, open_page
from evalcore.figures import build
from evalcore.figures.review import review_summary
from evalcore.read import runs
from evalcore.read.comparison import statements
from evalcore.records import Configuration
from evalcore.store import Store


def test_a_reload_keeps_the_compare_choice_and_export_uses_it(engine_store, engine_run_id, monkeypatch, tmp_path):
    copy = tmp_path / "copy.duckdb"
    shutil.copy(engine_store, copy)
    at = open_page(copy, "compare", monkeypatch)
    assert not at.exception, [e.value for e in at.exception]
    keys = [f"{engine_run_id}|{label}" for label in ("A/bm25", "C/dense", "E/hybrid", "F/dense")]
    at.multiselect(key="w_matrix_configs").set_value(keys).run()
    at.selectbox(key="w_hit_k").set_value(8).run()
    at.toggle(key="w_holm").set_value(False).run()
    assert not at.exception, [e.value for e in at.exception]
    address = dict(at.query_params)
    assert address["compare"] == keys and address["k"] == "8" and address["holm"] == "0", address
    assert address["run_id"] == engine_run_id

    for page in ("compare", "export"):  # a reload: a new session that has only the address
        fresh = AppTest.from_file(APP, default_timeout=180)
        fresh.query_params = dict(address)
        fresh.run()
        fresh.switch_page(f"evalcore_app/screens/{page}.py").run()
        assert not fresh.exception, [e.value for e in fresh.exception]
        assert fresh.session_state["matrix_configs"] == keys, page
        assert (fresh.session_state["hit_k"], fresh.session_state["holm"]) == (8, False), page
        if page == "compare":
            assert fresh.multiselect(key="w_matrix_configs").value == keys
        else:
            shown = next(h.proto.body for h in fresh.get("html") if "export-compared" in h.proto.body)
            assert "Compared at hit@8 (unadjusted p): A/bm25, C/dense, E/hybrid, F/dense." in shown, shown


def test_the_pack_compares_what_the_screen_compares(engine_store, engine_run_id):
    store = Store(engine_store)
    every = {s.configuration.label: s for s in runs.run_configurations(store, engine_run_id)}
    sides = tuple(every[label] for label in ("A/bm25", "C/dense", "E/hybrid", "F/dense"))
    decided = Configuration("B", "dense")  # decided, but not among the configurations compared
    selection = build.Selection(engine_run_id, decided, 0.5, "set", sides, 4, True)
    summary = review_summary(store, selection, [], {})
    charts = build.matrix_figure(store, sides, 4, True).detail  # the pack's matrix chart
    top = statements.best(charts)
    assert top is not None
    assert "Configurations compared: A/bm25, C/dense, E/hybrid, F/dense (4 configurations, 6 pairs," in summary
    assert "p-values Holm-adjusted over the 6 pairs" in summary
    assert f"Best at hit@4: {top.label}" in summary
    assert "The decided configuration, B/dense, is not among them" in summary
    assert "B/dense" not in summary.split("## Comparison")[1].split("is not among them")[1]
    inside = build.Selection(engine_run_id, Configuration("C", "dense"), 0.5, "set", sides, 4, False)
    other = review_summary(store, inside, [], {})
    assert "(4 configurations, 6 pairs" in other and "p-values not adjusted" in other
    assert "The decided configuration, C/dense: hit@4" in other
