"""`evalcore threshold RUN[:CONFIG] --json` against an independent computation on the stored hits
(scipy's binom and mannwhitneyu), on the engine-made mini run and on a run of real data
(XQuAD + COVID-19 FAQ questions), and its bad input (exit 2, one line naming the option or run)."""

from __future__ import annotations

import json
import math
from fractions import Fraction

import numpy as np
import pytest
from external.test_external import bm25_files  # noqa: F401  (a fixture)
from scipy.stats import binom, mannwhitneyu

from evalcore.cli import main
from evalcore.store import Store


def _run_json(capsys, store, *argv: str) -> list[dict]:
    assert main(["--store", str(store), "threshold", *argv, "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def _grid_at_or_below(x: float) -> float:
    """The multiple of 0.001 nearest to ``x`` when its float is at most ``x``, else the one
    below (exact rational arithmetic)."""
    exact = Fraction(x) * 1000
    nearest = Fraction(round(exact), 1000)
    return float(nearest) if float(nearest) <= x else float(Fraction(math.floor(exact), 1000))


def _expected(store_path, run_id: str, config: str, alpha=0.05, beta=0.20, confidence=0.95) -> dict:
    """The claim from the raw hits: per query the smallest top-4 distance, per answerable one the
    smallest correct one; k* and j* from binom.cdf; the AUC from mannwhitneyu."""
    strategy, retriever = config.split("/")
    store = Store(store_path)
    queries = store.query("SELECT query_id, domain FROM queries WHERE run_id = ? AND valid", [run_id])
    hits = store.query(
        "SELECT query_id, rank, distance, correct FROM hits WHERE run_id = ? AND strategy = ? AND retriever = ?",
        [run_id, strategy, retriever],
    )
    m: dict[str, float] = {}
    c: dict[str, float] = {}
    for row in hits.itertuples():
        if row.rank <= 4:
            m[row.query_id] = min(m.get(row.query_id, math.inf), float(row.distance))
            if row.correct:
                c[row.query_id] = min(c.get(row.query_id, math.inf), float(row.distance))
    domain = dict(zip(queries["query_id"], queries["domain"], strict=True))
    ood = np.array([m.get(q, math.inf) for q, d in domain.items() if d == "out"])
    inside = np.array([m.get(q, math.inf) for q, d in domain.items() if d == "in"])
    ans = np.array([c[q] for q, d in domain.items() if d == "in" and q in c])
    delta = 1 - confidence
    ks = [k for k in range(len(ood) + 1) if binom.cdf(k, len(ood), alpha) <= delta]
    js = [j for j in range(len(ans) + 1) if binom.cdf(j, len(ans), beta) <= delta]
    out: dict = {
        "n_ood": len(ood),
        "n_in_domain": len(inside),
        "n_answerable": len(ans),
        "auc": mannwhitneyu(ood, inside).statistic / (len(ood) * len(inside)),
    }
    out["bluff_status"] = "too_few" if not ks else "bounded"
    out["bluff_ok_up_to"] = float(np.sort(ood)[ks[-1]]) if ks else None
    out["ood_needed"] = None if ks else math.ceil(math.log(delta) / math.log(1 - alpha))
    out["lost_ok_above"] = float(np.sort(ans)[::-1][js[-1]]) if js else None
    b, lo = out["bluff_ok_up_to"], out["lost_ok_above"]
    out["feasible"] = b is not None and lo is not None and lo < b
    if out["feasible"]:
        grid = _grid_at_or_below(b)  # the slider's grid, when it keeps both claims
        t = out["recommended"] = grid if grid > lo else b
        out["bluffs"] = int((ood < t).sum())
        out["lost"] = int((ans >= t).sum())
        out["refused"] = int((inside >= t).sum())
        out["answered_correct"] = len(ans) - out["lost"]
        out["answered_wrong"] = len(inside) - out["refused"] - out["answered_correct"]
    return out


def _same(got: dict, want: dict) -> None:
    for key, value in want.items():
        if isinstance(value, float):
            assert got[key] == pytest.approx(value, abs=1e-12), key
        else:
            assert got[key] == value, key


def test_threshold_json_equals_scipy_on_the_mini_run(engine_store, engine_run_id, capsys):
    found = _run_json(capsys, engine_store, engine_run_id)
    assert len(found) == 18 and {"configuration", "axis", "auc_low", "auc_high", "recommended"} <= set(found[0])
    for claim in found:
        _same(claim, _expected(engine_store, engine_run_id, claim["configuration"]))
        assert claim["bluff_status"] == "too_few" and claim["ood_needed"] == 59
    one = _run_json(capsys, engine_store, f"{engine_run_id}:C/dense", "--max-bluff-rate", "0.4")
    assert [c["configuration"] for c in one] == ["C/dense"]
    _same(one[0], _expected(engine_store, engine_run_id, "C/dense", alpha=0.4))


def test_threshold_json_equals_scipy_on_real_data_and_holds_out(claim_store, capsys):
    run = "xquad-faq"  # a run name: its newest complete run
    run_id = claim_store.with_suffix(".run_ids").read_text().split()[1]
    found = _run_json(capsys, claim_store, run, "--splits", "40")
    assert [c["configuration"] for c in found] == ["C/dense", "E/dense"]
    for claim in found:
        want = _expected(claim_store, run_id, claim["configuration"])
        _same(claim, want)
        assert claim["feasible"] and claim["bluff_status"] == "bounded" and claim["n_ood"] == 160
        assert claim["held_out_splits_used"] == 40 and 0 <= claim["held_out_share"] <= 1
    strict = _run_json(capsys, claim_store, f"{run}:E/dense", "--max-lost-rate", "0.01", "--confidence", "0.9")
    _same(strict[0], _expected(claim_store, run_id, "E/dense", beta=0.01, confidence=0.9))
    assert main(["--store", str(claim_store), "threshold", run]) == 0
    table = capsys.readouterr().out
    assert "keeps bluffs <= 5% with 95% confidence" in table and "C/dense" in table


@pytest.mark.parametrize(
    ("argv", "words"),
    [
        (["--max-bluff-rate", "0"], "--max-bluff-rate"),
        (["--max-lost-rate", "1.2"], "--max-lost-rate"),
        (["--confidence", "1"], "--confidence"),
    ],
)
def test_bad_options_exit_2_naming_the_option(engine_store, engine_run_id, capsys, argv, words):
    assert main(["--store", str(engine_store), "threshold", engine_run_id, *argv]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and words in err[0]


def test_a_run_without_off_topic_questions_exits_2_naming_it(tmp_path, mini_inputs, capsys):
    from conftest import KeywordEmbedder

    from evalcore.chunking import parse_strategies
    from evalcore.inputs.groundtruth import load_ground_truth
    from evalcore.run.runner import RunRequest, run_evaluation

    corpus, _ = mini_inputs
    from conftest import MINI

    gt = load_ground_truth(corpus, MINI / "questions.jsonl")
    store = Store(tmp_path / "s.duckdb")
    request = RunRequest(corpus, gt, parse_strategies("A"), ["bm25"], name="no-ood")
    run_id = run_evaluation(request, store, embedders=[KeywordEmbedder(["port", "server"])]).run_id
    assert main(["--store", str(tmp_path / "s.duckdb"), "threshold", "no-ood"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and run_id in err[0] and "off-topic" in err[0]
    assert main(["--store", str(tmp_path / "s.duckdb"), "threshold", "no-ood:Z/dense"]) == 2
    assert "no configuration Z/dense" in capsys.readouterr().err


def test_gate_fails_when_the_decided_threshold_no_longer_meets_the_bluff_claim(gate_store, tmp_path, capsys):
    """A decision saved (by the CLI's OS user) with its claim at alpha 0.2 on base:P/dense; the
    gate recomputes the claim on the candidate and fails exactly when t lies beyond its bluff
    boundary there (computed here from the raw hits with binom)."""
    import shutil

    from evalcore.authors import os_author
    from evalcore.read.claims import claim_of
    from evalcore.read.decisions import latest_decision, save_decision
    from evalcore.records import Configuration

    path = tmp_path / "copy.duckdb"
    shutil.copy(gate_store, path)
    store = Store(path)
    ids = dict(store.query("SELECT name, run_id FROM runs").itertuples(index=False, name=None))
    p_dense = Configuration("P", "dense")
    claim = claim_of(store, ids["base"], p_dense, alpha=0.2)
    assert claim.bluff_status == "bounded" and claim.n_ood == 30
    t = claim.bluff_ok_up_to
    save_decision(store, ids["base"], p_dense, t, "claim at 20%", author=os_author(), claim=claim)
    saved = latest_decision(store, ids["base"], p_dense)
    assert saved.author == os_author() and saved.claim["max_bluff_rate"] == 0.2
    assert saved.claim["bluff_status"] == "bounded" and "20%" in saved.claim_text()
    for candidate in ("base", "cand"):
        want = _expected(path, ids[candidate], "P/dense", alpha=0.2)
        broken = want["bluff_ok_up_to"] is None or t > want["bluff_ok_up_to"]
        assert main(
            ["--store", str(path), "gate", "--baseline", "base:P/dense", "--candidate", candidate]
            + ["--threshold-from-decision", "--format", "json"]
        ) in (0, 1)
        report = json.loads(capsys.readouterr().out)
        contract = report["configurations"][0]["refusal_contract"]
        assert contract["claim_failed"] == broken, candidate
        assert ("bluff claim not met" in report["configurations"][0]["verdicts"]) == broken
        assert "bluffs <= 20% with 95% confidence" in contract["claim_note"]
    assert broken  # on the damaged candidate the claim's boundary moved below t


def test_segments_and_coverage_equal_a_brute_force_count(engine_store, engine_run_id):
    """Per-segment figures at t (off-topic by kind, in-domain by variant) against a count over the
    raw hits with statsmodels' Wilson interval; the coverage view against the sweep's counts."""
    from statsmodels.stats.proportion import proportion_confint

    from evalcore.read.claims import claim_segments, coverage, coverage_at, gate_values, refuses_most
    from evalcore.read.sweeps import run_sweep
    from evalcore.records import Configuration

    store = Store(engine_store)
    config = Configuration("C", "dense")
    t = 0.55
    got = claim_segments(gate_values(store, engine_run_id, config), t)
    q = store.query("SELECT query_id, domain, kind, variant FROM queries WHERE run_id = ? AND valid", [engine_run_id])
    h = store.query(
        "SELECT query_id, distance, correct FROM hits WHERE run_id = ? AND strategy = 'C' AND retriever = 'dense' "
        "AND rank <= 4",
        [engine_run_id],
    )
    kept = h[h["distance"] < t]
    answered = set(kept["query_id"])
    right = set(kept[kept["correct"]]["query_id"])
    answerable = set(h[h["correct"]]["query_id"])
    expected = []
    for kind, part in sorted(q[q["domain"] == "out"].groupby("kind")):
        expected.append((f"off-topic: {kind}", "bluff rate", sum(x in answered for x in part["query_id"]), len(part)))
    for variant, part in sorted(q[q["domain"] == "in"].groupby("variant")):
        ids = list(part["query_id"])
        expected.append(
            (f"in-domain: {variant}", "answered from a right source", sum(x in right for x in ids), len(ids))
        )
        able = [x for x in ids if x in answerable]
        if able:
            expected.append(
                (f"in-domain: {variant}", "lost rate (answerable)", sum(x not in right for x in able), len(able))
            )
    assert [tuple(r) for r in got[["segment", "rate", "queries", "of"]].itertuples(index=False)] == expected
    low, high = proportion_confint(got["queries"], got["of"], alpha=0.05, method="wilson")
    assert np.allclose(got["wilson low"], low) and np.allclose(got["wilson high"], high)

    frame = run_sweep(store, engine_run_id, config)
    cov = coverage(frame)
    assert np.allclose(cov["coverage"], 1 - frame["refused"] / frame["in_domain"])
    n_in = int((q["domain"] == "in").sum())
    assert coverage_at(frame, t) == pytest.approx(len(answered & set(q[q["domain"] == "in"]["query_id"])) / n_in)
    assert refuses_most(frame, 0.0, None) is not None and "refuses 100%" in refuses_most(frame, 0.0, None)
    assert refuses_most(frame, 2.0, None) is None


def test_a_score_axis_mirrors_every_inequality(tmp_path, bm25_files, capsys):  # noqa: F811
    """An imported run (rank_bm25 scores, higher = closer): the claim read on the score axis
    equals binom and mannwhitneyu on the largest top-4 scores, with the mirrored boundaries."""
    from conftest import import_run

    store = tmp_path / "ext.duckdb"
    args = ("--chunker", "sent3", "--retriever", "rank_bm25", "--name", "ext")
    run_id = import_run(str(store), str(bm25_files["chunks"]), str(bm25_files["trec"]), capsys, *args)["run_id"]
    (claim,) = _run_json(capsys, store, run_id, "--max-bluff-rate", "0.4", "--max-lost-rate", "0.4")
    assert claim["axis"] == "score"
    s = Store(store)
    hits = s.query(
        "SELECT h.query_id, q.domain, h.score, h.correct FROM hits h JOIN queries q USING (run_id, query_id) "
        "WHERE h.run_id = ? AND h.rank <= 4 AND q.valid",
        [run_id],
    )
    domain = dict(
        s.query("SELECT query_id, domain FROM queries WHERE run_id = ? AND valid", [run_id]).itertuples(index=False)
    )
    best = hits.groupby("query_id")["score"].max()
    best_correct = hits[hits["correct"]].groupby("query_id")["score"].max()
    ood = np.array([best.get(q, -np.inf) for q, d in domain.items() if d == "out"])
    inside = np.array([best.get(q, -np.inf) for q, d in domain.items() if d == "in"])
    ans = np.array([v for q, v in best_correct.items() if domain.get(q) == "in"])
    k = max(k for k in range(len(ood) + 1) if binom.cdf(k, len(ood), 0.4) <= 0.05)
    j = max(j for j in range(len(ans) + 1) if binom.cdf(j, len(ans), 0.4) <= 0.05)
    assert claim["bluff_status"] == claim["lost_status"] == "bounded"
    assert claim["bluff_ok_up_to"] == pytest.approx(np.sort(ood)[::-1][k])  # (k*+1)-th largest
    assert claim["lost_ok_above"] == pytest.approx(np.sort(ans)[j])  # (j*+1)-th smallest
    assert claim["feasible"] == (claim["bluff_ok_up_to"] < claim["lost_ok_above"])
    if claim["feasible"]:
        t = claim["recommended"]
        assert t > claim["bluff_ok_up_to"] and int((ood >= t).sum()) == claim["bluffs"] <= k
        assert int((ans < t).sum()) == claim["lost"] <= j
    assert claim["auc"] == pytest.approx(mannwhitneyu(inside, ood).statistic / (len(ood) * len(inside)))
