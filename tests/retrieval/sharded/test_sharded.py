"""Retrieval sharded on Ray actors (evalcore.retrieval.sharded.driver) against the one-machine path.

One local Ray runtime (2 CPUs, tests/conftest.py's ``ray_runtime``, shared with
tests/embedding/test_distributed.py); every sharded run uses 4 actors. The results
and hits must equal the one-machine run's row for row, every column, bit for bit: on the
demo (real model, its vectors cached by the session's demo run; a real tiny cross-encoder
for rerank, a stemming analyzer), on 200,000 synthetic chunks made as
benchmarks/bench_scale.py makes them, and on data made to be hard (exact ties, near ties,
few words, correct chunks deep in every order).

Both paths of a comparison rerank the same (query, chunks) pairs; the cross-encoder scores
each such pair once (:class:`ScoredOnce`), and the other path reads those scores: a pure
function of its input, so what is compared is the sharded merge, not the model twice.
"""

from __future__ import annotations

import importlib.util
import shutil
import sys
from dataclasses import dataclass, field

import numpy as np
import pandas as pd
import pytest
from conftest import DEMO_STRATEGIES, ROOT, cli_in_process

from evalcore.retrieval.rerank import Reranker
from evalcore.store import Store

ray = pytest.importorskip("ray")

SHARDS = 4


@dataclass
class ScoredOnce(Reranker):
    """The real cross-encoder, each (query, texts) it is given scored once."""

    scored: dict[tuple[str, tuple[str, ...]], list[float]] = field(default_factory=dict)

    def score(self, query: str, texts) -> list[float]:
        key = (query, tuple(texts))
        if key not in self.scored:
            self.scored[key] = super().score(query, texts)
        return self.scored[key]


def _frames(results: list[pd.DataFrame], hits: list[pd.DataFrame]) -> tuple[pd.DataFrame, pd.DataFrame]:
    r = pd.concat(results, ignore_index=True).sort_values(["strategy", "retriever", "query_id"])
    h = pd.concat(hits, ignore_index=True).sort_values(["strategy", "retriever", "query_id", "rank"])
    return r.reset_index(drop=True), h.reset_index(drop=True)


def _stored(store: Store, run_id: str, table: str, order: str) -> pd.DataFrame:
    df = store.query(f"SELECT * EXCLUDE (run_id) FROM {table} WHERE run_id = ? ORDER BY {order}", [run_id])
    return df.reset_index(drop=True)


def test_a_sharded_demo_run_equals_the_one_machine_run(
    ray_runtime, real_embedder, tiny_cross_encoder, demo_store, tmp_path
):
    from evalcore.chunking import parse_strategies
    from evalcore.inputs.sources import load_demo
    from evalcore.run.runner import RunRequest, run_evaluation

    corpus, gt = load_demo()
    shutil.copy(demo_store, tmp_path / "s.duckdb")  # both runs read the vectors its demo run cached
    store = Store(tmp_path / "s.duckdb")
    reranker = ScoredOnce.load(tiny_cross_encoder)
    retrievers = ["dense", "bm25", "hybrid", "rerank", "bm25:english", "hybrid:english"]
    strategies = parse_strategies(DEMO_STRATEGIES)
    runs = []
    for ray_address in (None, "local"):
        request = RunRequest(corpus, gt, strategies, retrievers, name="demo", ray=ray_address, shards=SHARDS)
        runs.append(run_evaluation(request, store, embedders=[real_embedder], reranker=reranker).run_id)
    one, sharded = runs
    stages = set(store.query("SELECT stage FROM timings WHERE run_id = ?", [sharded])["stage"])
    assert {"shard_scan", "shard_count", "bm25_build", "bm25_build:english"} <= stages  # it ran on the actors
    order = "strategy, retriever, query_id"
    a, b = _stored(store, one, "results", order), _stored(store, sharded, "results", order)
    assert set(a["retriever"]) == set(retrievers) and len(a) == len(retrievers) * 108
    assert a["first_correct_rank"].notna().sum() > 100  # answers are found, at many depths
    assert a["first_correct_rank"].max() > 50
    pd.testing.assert_frame_equal(a, b)
    order += ", rank"
    pd.testing.assert_frame_equal(_stored(store, one, "hits", order), _stored(store, sharded, "hits", order))


def _bench_scale():
    spec = importlib.util.spec_from_file_location("bench_scale", ROOT / "benchmarks" / "bench_scale.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["bench_scale"] = module
    spec.loader.exec_module(module)
    return module


def test_200000_synthetic_chunks_sharded_equal_one_machine(ray_runtime, tiny_cross_encoder):
    from evalcore.retrieval.scored import score_queries
    from evalcore.retrieval.sharded.driver import score_sharded

    bench = _bench_scale()
    n, nq = 200_000, 120
    cvec, qvec, qtexts, correct, n_in, texts = bench.make(n, nq)
    chunk_texts = list(texts())
    reranker = ScoredOnce.load(tiny_cross_encoder)

    def rerank(query: str, ids: np.ndarray) -> list[float]:
        return reranker.score(query, [chunk_texts[j] for j in ids])

    qids = [f"q{i:04d}" for i in range(nq)]
    retrievers = ["dense", "bm25", "hybrid", "rerank"]
    args = ("bench", "S", chunk_texts, cvec, qvec, qids, qtexts, correct, n_in, retrievers, 20)
    one = score_queries(*args, rerank=rerank)
    # the vectors go to the actors in blocks, as the benchmark streams them
    blocks = (cvec[b0 : b0 + 30_000] for b0 in range(0, n, 30_000))
    sharded = score_sharded("local", SHARDS, *args[:3], blocks, *args[4:], rerank=rerank, n_chunks=n)
    assert sharded.shard_sizes == [n // SHARDS] * SHARDS and len(sharded.peak_rss_mb) == SHARDS
    a, b = _frames(one.results, one.hits), _frames(sharded.results, sharded.hits)
    assert len(a[0]) == nq * len(retrievers) and len(a[1]) == nq * len(retrievers) * 20
    pd.testing.assert_frame_equal(a[0], b[0])
    pd.testing.assert_frame_equal(a[1], b[1])


def test_hard_data_sharded_equals_one_machine(ray_runtime):
    """Ties and near ties across shard boundaries, correct chunks deep in every order (the
    shards' counting and the exact deep hybrid rank), uneven shards."""
    from evalcore.retrieval.scored import score_queries
    from evalcore.retrieval.sharded.driver import score_sharded
    from retrieval.test_ranking import make_data

    for seed, n, nq, dim, distinct in ((3, 4001, 60, 8, None), (4, 3000, 60, 16, 40)):
        q, c, texts, qtexts, correct = make_data(seed, n, nq, dim, distinct)
        qids = [f"q{i:03d}" for i in range(nq)]
        retrievers = ["dense", "bm25", "hybrid", "hybrid:unicode"]
        args = ("r", "S", texts, c, q, qids, qtexts, correct, nq // 2, retrievers, 20)
        one = score_queries(*args)
        sharded = score_sharded("local", 3, *args)
        for x, y in zip(_frames(one.results, one.hits), _frames(sharded.results, sharded.hits), strict=True):
            pd.testing.assert_frame_equal(x, y)


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--shards", "2"], "give --ray ADDRESS (or local) too"),
        (["--ray", "local", "--shards", "0"], "--shards must be an integer in [1, inf); got '0'"),
    ],
)
def test_bad_shards_is_one_line_and_exit_2(tmp_path, extra, message):
    got = cli_in_process(["--store", str(tmp_path / "s.duckdb"), "demo", *extra])
    assert got.returncode == 2
    assert message in got.stderr and len(got.stderr.strip().splitlines()) == 1
    assert not (tmp_path / "s.duckdb").exists()
