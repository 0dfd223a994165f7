"""Round trips: evalcore -> TREC / ranx / BEIR -> pytrec_eval and ranx give evalcore's own
recall@k and MRR, for built-in runs (first correct ranks beyond the stored top 20 included)
and for imported ones; an exported BEIR folder + ranx run imports back to the same figures."""

from __future__ import annotations

import csv
import json
import sys
from pathlib import Path

import pytest
import ranx_oracle
from conftest import MINI_ARGS, ROOT, import_run

sys.path.insert(0, str(ROOT / "examples"))
import external_bm25

from evalcore.cli import main
from evalcore.read.summary import summary_table
from evalcore.store import Store

KS = (1, 4, 8, 20)
INPUTS = list(MINI_ARGS)


def beir_load(folder: Path):
    """Read a BEIR folder as BEIR's GenericDataLoader does (corpus/queries JSON lines by _id,
    qrels/test.tsv with a header line, integer scores)."""
    corpus = {}
    for line in open(folder / "corpus.jsonl", encoding="utf8"):
        row = json.loads(line)
        corpus[row.get("_id")] = {"text": row.get("text"), "title": row.get("title")}
    queries = {json.loads(line)["_id"]: json.loads(line)["text"] for line in open(folder / "queries.jsonl")}
    qrels: dict[str, dict[str, int]] = {}
    with open(folder / "qrels" / "test.tsv", encoding="utf-8") as fh:
        reader = csv.reader(fh, delimiter="\t", quoting=csv.QUOTE_MINIMAL)
        next(reader)
        for query_id, corpus_id, score in reader:
            qrels.setdefault(query_id, {})[corpus_id] = int(score)
    return corpus, {q: queries[q] for q in qrels}, qrels


def trec_run(path: Path) -> dict[str, dict[str, float]]:
    run: dict[str, dict[str, float]] = {}
    for line in open(path):
        q, _, doc, _, score, _ = line.split()
        run.setdefault(q, {})[doc] = float(score)
    return run


def evaluators(folder: Path, retriever: str) -> dict[str, dict[str, float]]:
    """recall@k and MRR of one exported run, by pytrec_eval and by ranx, from the files."""
    import pytrec_eval

    _, _, qrels = beir_load(folder)
    run = trec_run(folder / "runs" / f"{retriever}.trec")
    per_query = pytrec_eval.RelevanceEvaluator(qrels, {"success.1,4,8,20", "recip_rank"}).evaluate(run)
    # trec_eval -c: a query of the qrels that the run does not answer counts 0
    mean = {
        m: sum(per_query.get(q, {}).get(m, 0.0) for q in qrels) / len(qrels)
        for m in ("success_1", "success_4", "success_8", "success_20", "recip_rank")
    }
    trec = {**{f"recall@{k}": mean[f"success_{k}"] for k in KS}, "mrr": mean["recip_rank"]}
    ranx_run, ranx_qrels = folder / "runs" / f"{retriever}.json", folder / "qrels.json"
    # the TREC qrels and the ranx JSON run say the same as the BEIR qrels and the TREC run
    assert ranx_oracle.read_qrels(folder / "qrels.trec") == qrels
    assert ranx_oracle.read_run(ranx_run) == run
    metrics = [f"hit_rate@{k}" for k in KS] + ["mrr"]
    got = ranx_oracle.evaluate(ranx_qrels, ranx_run, metrics, make_comparable=True)
    ranx = {**{f"recall@{k}": float(got[f"hit_rate@{k}"]) for k in KS}, "mrr": float(got["mrr"])}
    return {"pytrec_eval": trec, "ranx": ranx}


def test_builtin_run_exports_exactly(tmp_path, mini_inputs, real_embedder, capsys):
    """A built-in run (real model) with E and a strategy T that cuts every 60 characters: many
    first correct ranks of T lie beyond the 20 stored hits, and placeholders keep MRR exact."""
    from evalcore.chunking import parse_strategies
    from evalcore.run.runner import RunRequest, run_evaluation

    corpus, gt = mini_inputs
    store = tmp_path / "s.duckdb"
    request = RunRequest(
        corpus=corpus,
        ground_truth=gt,
        strategies=parse_strategies("E,T:blind+overlap=50+size=60"),
        retrievers=["dense", "bm25", "hybrid"],
        name="fine",
    )
    run_id = run_evaluation(request, Store(store), embedders=[real_embedder]).run_id
    out = tmp_path / "export"
    assert main(["--store", str(store), "export-formats", "fine", "-o", str(out)]) == 0
    assert "placeholder hits (evalcore:unstored:RANK)" in capsys.readouterr().out
    s = Store(store)
    beyond = s.query(
        "SELECT count(*) AS n FROM results WHERE run_id = ? AND strategy = 'T' AND first_correct_rank > 20", [run_id]
    )["n"].iloc[0]
    assert beyond > 0  # the case the placeholders exist for is exercised
    table = summary_table(s, run_id).set_index("config")
    assert sorted(p.name for p in out.iterdir()) == ["E", "T"]
    for config in table.index:
        strategy, retriever = config.split("/")
        for evaluator, figures in evaluators(out / strategy, retriever).items():
            for metric, value in figures.items():
                assert value == pytest.approx(table.loc[config, metric], abs=1e-12), (config, evaluator, metric)


def test_imported_run_exports_and_imports_back(tmp_path, mini_inputs, capsys):
    corpus, gt = mini_inputs
    files = external_bm25.write_files(tmp_path / "bm25", corpus, gt)
    store = tmp_path / "s.duckdb"
    first = import_run(
        str(store), str(files["chunks"]), str(files["trec"]), capsys, "--chunker", "sent3", "--retriever", "rank_bm25"
    )
    out = tmp_path / "export"
    assert main(["--store", str(store), "export-formats", first["run_id"], "-o", str(out)]) == 0
    capsys.readouterr()
    config = first["configurations"][0]
    for evaluator, figures in evaluators(out / "sent3", "rank_bm25").items():
        for metric, value in figures.items():
            assert value == pytest.approx(config[metric], abs=1e-12), (evaluator, metric)
    # the BEIR folder's corpus (chunk ids kept, offsets in metadata) and the ranx run import back
    again = import_run(
        str(store),
        str(out / "sent3"),
        str(out / "sent3" / "runs" / "rank_bm25.json"),
        capsys,
        "--chunker",
        "sent3",
        "--retriever",
        "rank_bm25",
    )["configurations"][0]
    assert dict(again.items()) == config
