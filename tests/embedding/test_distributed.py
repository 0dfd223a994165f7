"""Embedding through Ray Data on a local Ray runtime (2 CPUs, tests/conftest.py's ``ray_runtime``):
the vectors equal the local path's and land in the store's cache as usual."""

from __future__ import annotations

import numpy as np
import pytest

from evalcore.store import Store

ray = pytest.importorskip("ray")


def test_ray_vectors_equal_the_local_ones(ray_runtime, real_embedder):
    from evalcore.embedding.distributed import RayEmbedder

    texts = [f"chunk {i}: the prompt cache keeps {i % 7} keys" for i in range(300)] + ["", "x " * 400]
    remote = RayEmbedder.start("local", real_embedder, workers=1)
    got = remote.encode(texts)
    want = real_embedder.encode(texts)
    assert got.shape == want.shape and remote.name == real_embedder.name
    assert np.sum(got.astype(np.float64) * want, axis=1).min() >= 0.9999


def test_a_run_through_ray_caches_vectors_under_the_model_name(ray_runtime, real_embedder, mini_inputs, tmp_path):
    from evalcore.chunking import parse_strategies
    from evalcore.embedding.distributed import RayEmbedder
    from evalcore.run.runner import RunRequest, run_evaluation

    corpus, gt = mini_inputs
    store = Store(tmp_path / "s.duckdb")
    request = RunRequest(corpus, gt, parse_strategies("C"), ["dense"], name="ray")
    first = run_evaluation(request, store, embedders=[RayEmbedder.start("local", real_embedder, workers=1)])
    assert first.new_embeddings > 0
    again = run_evaluation(request, store, embedders=[real_embedder])  # the local path finds them cached
    assert again.new_embeddings == 0
    a = store.query(
        "SELECT query_id, first_correct_rank FROM results WHERE run_id = ? ORDER BY query_id", [first.run_id]
    )
    b = store.query(
        "SELECT query_id, first_correct_rank FROM results WHERE run_id = ? ORDER BY query_id", [again.run_id]
    )
    assert a.equals(b)
