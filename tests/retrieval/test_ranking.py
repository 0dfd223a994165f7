"""Exact top-k and first-correct ranks (evalcore.retrieval.ranking) against full sorts.

The oracle sorts every chunk the way the engine did before (stable argsort of the float64
distances, of the BM25 scores, of the RRF scores from ``retrieval.rrf_scores``), with the
same float64 similarities, and reads the first correct rank and the top hits off the full
orders. Data is made to be hard: duplicated vectors (exact ties), vectors one float32 step
apart (near ties), few words (BM25 ties), and correct chunks deep in every order.
"""

from __future__ import annotations

import numpy as np
import pytest

from evalcore.retrieval.bm25 import BM25
from evalcore.retrieval.engine.rank_rows import exact_similarities
from evalcore.retrieval.hybrid import rrf_scores
from evalcore.retrieval.ranking import order_by, rank_block
from evalcore.retrieval.rerank import RERANK_DEPTH, rerank_order

WORDS = "cache prompt token model vector index chunk query answer the a of error kv".split()


def make_data(seed: int, n: int, nq: int, dim: int, distinct: int | None = None):
    rng = np.random.default_rng(seed)
    base = rng.standard_normal((distinct or n, dim))
    c = base[rng.integers(0, len(base), n)] if distinct else base
    c = (c / np.linalg.norm(c, axis=1, keepdims=True)).astype(np.float32)
    # near ties: some chunks are a neighbour's vector moved by one float32 step
    for i in rng.choice(n - 1, size=max(1, n // 20), replace=False):
        c[i + 1] = np.nextafter(c[i], np.float32(2.0))
    targets = rng.integers(0, n, nq)
    q = c[targets] + rng.normal(scale=rng.uniform(0.05, 1.5, (nq, 1)), size=(nq, dim)).astype(np.float32)
    q = (q / np.linalg.norm(q, axis=1, keepdims=True)).astype(np.float32)
    q[0] = c[3]  # a query equal to a chunk
    texts = [" ".join(rng.choice(WORDS[: rng.integers(3, len(WORDS))], rng.integers(0, 12))) for _ in range(n)]
    qtexts = [" ".join(rng.choice(WORDS, rng.integers(0, 4))) for _ in range(nq)]
    correct = [np.unique(rng.integers(0, n, rng.integers(0, 4))).astype(np.int64) for _ in range(nq)]
    correct[1] = np.array([int(targets[1])], dtype=np.int64)
    return q, c, texts, qtexts, correct


def reference(q, c, texts, qtexts, correct, top, rr_scores):
    n = len(c)
    q64 = q.astype(np.float64)
    dist = np.stack([1.0 - exact_similarities(q64[i], c, np.arange(n)) for i in range(len(q))])
    dense = order_by(dist, descending=False)
    s = BM25.build(texts).scores(qtexts)
    bm = order_by(s, descending=True)
    fused = rrf_scores([dense, bm], ranked=[None, s > 0])
    hybrid = order_by(fused, descending=True)
    rr = np.stack([rerank_order(hybrid[i], rr_scores(i, hybrid[i, :RERANK_DEPTH])) for i in range(len(q))])
    out = {}
    for name, order, score in (
        ("dense", dense, 1.0 - dist),
        ("bm25", bm, s),
        ("hybrid", hybrid, fused),
        ("rerank", rr, None),
    ):
        firsts = []
        for i in range(len(q)):
            hit = np.flatnonzero(np.isin(order[i], correct[i]))
            firsts.append(int(hit[0]) + 1 if len(hit) else 0)
        rows = np.arange(len(q))[:, None]
        head = order[:, :top]
        out[name] = (head, dist[rows, head], None if score is None else score[rows, head], np.array(firsts))
    return out


def fake_cross_encoder(i, head):
    """A deterministic stand-in score with many ties (the real one is tested in test_retrieval)."""
    return [float((int(x) * 7 + i) % 5) for x in head]


@pytest.mark.parametrize(
    "seed,n,nq,dim,distinct",
    [
        (0, 40, 30, 8, None),
        (1, 300, 40, 16, 12),
        (2, 3000, 25, 16, None),
        (3, 2500, 20, 32, 40),
    ],
)
def test_rank_block_equals_full_sorts(seed, n, nq, dim, distinct):
    q, c, texts, qtexts, correct = make_data(seed, n, nq, dim, distinct)
    top = 20
    ref = reference(q, c, texts, qtexts, correct, top, fake_cross_encoder)
    got = rank_block(
        q,
        c,
        correct,
        ["dense", "bm25", "hybrid", "rerank"],
        top,
        bm25=BM25.build(texts),
        qtexts=qtexts,
        rerank=fake_cross_encoder,
    )
    for name, (ids, dist, score, first) in ref.items():
        r = got[name]
        np.testing.assert_array_equal(r.top_ids, ids, err_msg=name)
        np.testing.assert_array_equal(r.top_dist, dist, err_msg=name)
        if score is not None:
            np.testing.assert_array_equal(r.top_score, score, err_msg=name)
        np.testing.assert_array_equal(r.first, first, err_msg=name)
        has = np.array([len(x) > 0 for x in correct])
        assert ((r.first > 0) == has).all()


@pytest.mark.slow
def test_large_rows_use_the_sampled_threshold_and_stay_exact():
    """200,000 chunks: the top-k threshold is guessed on a sample; deep hybrid ranks are
    counted from BM25 ranks and dense rank bounds."""
    q, c, texts, qtexts, correct = make_data(5, 200_000, 6, 8, distinct=5_000)
    top = 20
    ref = reference(q, c, texts, qtexts, correct, top, fake_cross_encoder)
    got = rank_block(q, c, correct, ["dense", "bm25", "hybrid"], top, bm25=BM25.build(texts), qtexts=qtexts)
    for name in ("dense", "bm25", "hybrid"):
        ids, dist, score, first = ref[name]
        np.testing.assert_array_equal(got[name].top_ids, ids, err_msg=name)
        np.testing.assert_array_equal(got[name].top_score, score, err_msg=name)
        np.testing.assert_array_equal(got[name].first, first, err_msg=name)
    assert (ref["hybrid"][3] > 1000).any()  # the deep path was taken


def test_exact_similarities_do_not_depend_on_the_batch():
    rng = np.random.default_rng(0)
    c = rng.standard_normal((500, 384)).astype(np.float32)
    q = rng.standard_normal(384)
    whole = exact_similarities(q, c, np.arange(500))
    parts = np.concatenate([exact_similarities(q, c, np.arange(i, min(i + 7, 500))) for i in range(0, 500, 7)])
    single = np.array([exact_similarities(q, c, np.array([i]))[0] for i in range(500)])
    assert np.array_equal(whole, parts) and np.array_equal(whole, single)


def brute_hybrid(q, c, texts, qtexts, correct, top):
    """Full RRF by counting, no sort of fused scores: rank(c*) = 1 + #{x: f(x) > f*, or
    f(x) == f* and x < c*}; the top hits by a lexsort of every chunk's fused score."""
    n = len(c)
    s = BM25.build(texts).scores(qtexts)
    firsts, heads = [], []
    ids = np.arange(n)
    for i in range(len(q)):
        d = 1.0 - exact_similarities(q[i].astype(np.float64), c, ids)
        rd = np.empty(n, dtype=np.int64)
        rd[np.lexsort((ids, d))] = ids + 1
        m = s[i] > 0
        rb = np.empty(n, dtype=np.int64)
        rb[np.lexsort((ids, -s[i]))] = ids + 1  # matched chunks come first, so their ranks hold
        f = 1.0 / (60 + rd.astype(np.float64)) + np.where(m, 1.0 / (60 + rb.astype(np.float64)), 0.0)
        heads.append(np.lexsort((ids, -f))[:top])
        best = None
        for x in correct[i]:
            if best is None or f[x] > f[best] or (f[x] == f[best] and x < best):
                best = x
        firsts.append(0 if best is None else int(np.count_nonzero((f > f[best]) | ((f == f[best]) & (ids < best)))) + 1)
    return np.array(firsts), np.stack(heads)


@pytest.mark.parametrize("seed,n,dim,distinct,nq", [(11, 60, 4, 6, 40), (12, 700, 8, 30, 40), (13, 3000, 16, None, 30)])
def test_fused_counting_equals_a_brute_force_rrf(seed, n, dim, distinct, nq):
    """Random data with ties in both orders and correct chunks at every depth (heads deepened
    past 1,024): the engine's counted hybrid ranks and top hits equal a brute-force RRF."""
    q, c, texts, qtexts, correct = make_data(seed, n, nq, dim, distinct)
    rng = np.random.default_rng(seed)
    for i in range(2, nq, 3):  # a correct chunk deep in the dense order
        far = np.argsort(-(c @ q[i]))[rng.integers(n // 2, n)]
        correct[i] = np.unique(np.append(correct[i], far)).astype(np.int64)
    first, head = brute_hybrid(q, c, texts, qtexts, correct, 20)
    got = rank_block(q, c, correct, ["hybrid"], 20, bm25=BM25.build(texts), qtexts=qtexts)["hybrid"]
    np.testing.assert_array_equal(got.first, first)
    np.testing.assert_array_equal(got.top_ids, head)
    assert first.max() > 0.3 * n  # deep ranks were counted
