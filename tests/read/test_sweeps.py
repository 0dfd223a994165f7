"""evalcore.read.sweeps against a brute-force gate over the stored hits, and statsmodels' Wilson."""

from __future__ import annotations

import numpy as np
import pytest
from statsmodels.stats.proportion import proportion_confint

from evalcore.measures.suggestion import MAX_BLUFF_INTERVAL_WIDTH
from evalcore.measures.threshold import sweep as exact_sweep
from evalcore.read import runs, sweeps
from evalcore.store import Store


def _brute_gate(store: Store, run_id: str, config, t: float) -> dict[str, int]:
    hits = store.query(
        "SELECT h.*, q.domain AS qdomain FROM hits h JOIN queries q USING (run_id, query_id) "
        "WHERE h.run_id = ? AND strategy = ? AND retriever = ? AND rank <= 4 AND q.valid",
        [run_id, config.strategy, config.retriever],
    )
    out = {"bluffs": 0, "refused": 0, "lost": 0, "answered_wrong": 0, "answered_correct": 0, "in": 0, "out": 0}
    for _, g in hits.groupby("query_id"):
        kept = g[g["distance"] < t]
        if g["qdomain"].iloc[0] == "out":
            out["out"] += 1
            out["bluffs"] += len(kept) > 0
            continue
        out["in"] += 1
        out["refused"] += kept.empty
        out["lost"] += bool(g["correct"].any() and not kept["correct"].any())
        out["answered_wrong"] += bool(len(kept) and not kept["correct"].any())
        out["answered_correct"] += bool(kept["correct"].any())
    return out


def test_sweep_table_sentence_and_bluffs_match_brute_force(store, engine_run_id):
    config = runs.configurations(store, engine_run_id)[0]
    sweep = sweeps.run_sweep(store, engine_run_id, config)
    finite = sweep["threshold"][np.isfinite(sweep["threshold"])]
    for t in (float(finite.min()) - 0.01, float(finite.median()), float(finite.max()) + 0.01):
        expected = _brute_gate(store, engine_run_id, config, t)
        table = sweeps.gate_table(sweep, t).set_index("outcome")["queries"]
        assert table.iloc[0] == expected["bluffs"]
        assert table.iloc[2] == expected["refused"]
        assert table.iloc[4] == expected["answered_wrong"]
        assert table.iloc[5] == expected["lost"]
        assert len(sweeps.bluffs_at(store, engine_run_id, config, t)) == expected["bluffs"]
        full = sweeps.gate_table(sweep, t)
        for k, n, low, high in zip(full["queries"], full["of"], full["wilson low"], full["wilson high"], strict=True):
            assert (low, high) == pytest.approx(proportion_confint(k, n, method="wilson"))
        sentence = sweeps.sentence_at(sweep, t)
        share = lambda k, n: f"{100 * k / n:.0f}%"  # noqa: E731
        assert (
            f"{share(expected['answered_correct'], expected['in'])} of real questions "
            f"({expected['answered_correct']} of {expected['in']}) are answered from a right source" in sentence
        )
        assert f"{share(expected['refused'], expected['in'])} ({expected['refused']}) are refused" in sentence
        assert (
            f"{share(expected['bluffs'], expected['out'])} of off-topic questions ({expected['bluffs']} of "
            f"{expected['out']}) bluff" in sentence
        )


def test_sweep_long_carries_the_wilson_band_of_each_rate(store, engine_run_id):
    config = runs.configurations(store, engine_run_id)[1]
    sweep = sweeps.run_sweep(store, engine_run_id, config)
    long = sweeps.sweep_long(sweep)
    assert set(long["series"]) == set(sweeps.SERIES)
    assert np.isfinite(long["threshold"]).all()
    bluffs = long[long["series"] == "bluffs (out-of-domain)"].iloc[:-1]
    n = int(sweep["out_domain"].iloc[0])
    for count, low, high in zip(bluffs["count"], bluffs["low"], bluffs["high"], strict=True):
        assert (low, high) == pytest.approx(proportion_confint(count, n, method="wilson"))


def test_out_of_domain_set_too_small_is_said():
    # 10 out-of-domain queries, 3 of them bluff at t = 0.5: 30%, Wilson 11%-60%
    in_domain = {f"q{i}": [(0.2, True)] for i in range(20)}
    out_domain = {f"o{i}": [0.4 if i < 3 else 0.9] for i in range(10)}
    sweep = exact_sweep(in_domain, out_domain)
    low, high = proportion_confint(3, 10, method="wilson")
    assert high - low > MAX_BLUFF_INTERVAL_WIDTH
    warning = sweeps.ood_support(sweep, 0.5)
    assert warning is not None and "Only 10 out-of-domain queries" in warning
    assert f"{100 * low:.0f}% to {100 * high:.0f}%" in warning
    many = {f"o{i}": [0.9] for i in range(200)}
    assert sweeps.ood_support(exact_sweep(in_domain, many), 0.5) is None
    assert "no out-of-domain queries" in sweeps.ood_support(exact_sweep(in_domain, {}), 0.5)
