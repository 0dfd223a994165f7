"""`evalcore threshold RUN[:CONFIG] --json` against an independent computation on the stored hits
(scipy's binom and mannwhitneyu), on the engine-made mini run and on a run of real data
(XQuAD + COVID-19 FAQ questions), and its bad input (exit 2, one line naming the option or run)."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from scipy.stats import binom, mannwhitneyu

from evalcore.cli import main
from evalcore.store import Store


def _run_json(capsys, store, *argv: str) -> list[dict]:
    assert main(["--store", str(store), "threshold", *argv, "--json"]) == 0
    return json.loads(capsys.readouterr().out)


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
        out["recommended"] = b
        out["bluffs"] = int((ood < b).sum())
        out["lost"] = int((ans >= b).sum())
        out["refused"] = int((inside >= b).sum())
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
    from evalcore.groundtruth import load_ground_truth
    from evalcore.runner import RunRequest, run_evaluation

    corpus, _ = mini_inputs
    from conftest import MINI

    gt = load_ground_truth(corpus, MINI / "questions.jsonl")
    store = Store(tmp_path / "s.duckdb")
    request = RunRequest(corpus, gt, parse_strategies("A"), ["bm25"], name="no-ood")
    run_id = run_evaluation(request, store, embedder=KeywordEmbedder(["port", "server"])).run_id
    assert main(["--store", str(tmp_path / "s.duckdb"), "threshold", "no-ood"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and run_id in err[0] and "off-topic" in err[0]
    assert main(["--store", str(tmp_path / "s.duckdb"), "threshold", "no-ood:Z/dense"]) == 2
    assert "no configuration Z/dense" in capsys.readouterr().err
