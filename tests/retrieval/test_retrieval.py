"""Retrievers against independent oracles: a line-by-line port of the seed's BM25 and rrf,
scipy's cosine distance, and a real (tiny, random) cross-encoder on disk."""

from __future__ import annotations

import math
import random
import re

import numpy as np
import pytest
import ranx_oracle
from scipy.spatial.distance import cosine

from evalcore.errors import ConfigError, ModelError
from evalcore.retrieval.bm25 import BM25, tokens
from evalcore.retrieval.dense import cosine_distances
from evalcore.retrieval.hybrid import rrf_scores
from evalcore.retrieval.names import parse_retrievers
from evalcore.retrieval.ranking import order_by
from evalcore.retrieval.rerank import Reranker, rerank_order


# -- oracles: the seed's TypeScript, ported line by line --------------------------------
def seed_toks(s: str) -> list[str]:
    return re.findall(r"[a-z0-9]+", s.lower())


class SeedBM25:
    def __init__(self, docs, k1=1.2, b=0.75):
        self.k1, self.b = k1, b
        self.tf, self.len, self.idf = [], [], {}
        df = {}
        for d in docs:
            t = {}
            ws = seed_toks(d)
            for w in ws:
                t[w] = t.get(w, 0) + 1
            for w in t:
                df[w] = df.get(w, 0) + 1
            self.tf.append(t)
            self.len.append(len(ws))
        self.avg = sum(self.len) / len(self.len)
        n = len(docs)
        for w, c in df.items():
            self.idf[w] = math.log(1 + (n - c + 0.5) / (c + 0.5))

    def scores(self, query):
        q = seed_toks(query)
        out = []
        for i, tf in enumerate(self.tf):
            length, s = self.len[i], 0.0
            for w in q:
                f = tf.get(w)
                if not f:
                    continue
                s += (
                    self.idf.get(w, 0)
                    * (f * (self.k1 + 1))
                    / (f + self.k1 * (1 - self.b + (self.b * length) / self.avg))
                )
            out.append(s)
        return out


def seed_rrf(lists, k=60):
    acc = {}
    for lst in lists:
        for r, i in enumerate(lst):
            acc[i] = acc.get(i, 0.0) + 1 / (k + r + 1)
    return acc


WORDS = "cache prompt token model vector index chunk query answer the a of error 404 kv".split()


def random_texts(rng: random.Random, n: int) -> list[str]:
    return [
        " ".join(rng.choice(WORDS) for _ in range(rng.randint(0, 40))) + rng.choice(["", ".", "!"]) for _ in range(n)
    ]


def test_tokens_are_lowercase_alnum_runs():
    assert tokens("Error-404: KV_cache, naïve") == ["error", "404", "kv", "cache", "na", "ve"]


@pytest.mark.parametrize("seed", range(5))
def test_bm25_matches_the_seed_port(seed):
    rng = random.Random(seed)
    docs = random_texts(rng, 60)
    queries = random_texts(rng, 25) + ["cache cache prompt", "unknownword", ""]
    ours = BM25.build(docs).scores(queries)
    oracle = SeedBM25(docs)
    for qi, q in enumerate(queries):
        np.testing.assert_allclose(ours[qi], oracle.scores(q), rtol=1e-12, atol=1e-12)


def test_bm25_idf_formula_by_hand():
    docs = ["apple banana", "apple", "cherry"]
    s = BM25.build(docs).scores(["banana"])[0]
    idf = math.log(1 + (3 - 1 + 0.5) / (1 + 0.5))
    avg = (2 + 1 + 1) / 3
    expected = idf * (1 * 2.2) / (1 + 1.2 * (1 - 0.75 + 0.75 * 2 / avg))
    assert s[0] == pytest.approx(expected, abs=1e-12)
    assert s[1] == 0.0 and s[2] == 0.0


def test_rrf_matches_the_seed_port():
    rng = np.random.default_rng(3)
    n = 50
    a, b = rng.permutation(n), rng.permutation(n)
    fused = rrf_scores([a[None, :], b[None, :]])[0]
    oracle = seed_rrf([list(a), list(b)])
    for i in range(n):
        assert fused[i] == pytest.approx(oracle[i], abs=1e-15)


def test_rrf_by_hand_with_k60():
    fused = rrf_scores([np.array([[2, 0, 1]]), np.array([[0, 1, 2]])])[0]
    assert fused[0] == pytest.approx(1 / 62 + 1 / 61)
    assert fused[1] == pytest.approx(1 / 63 + 1 / 62)
    assert fused[2] == pytest.approx(1 / 61 + 1 / 63)


def test_ties_are_broken_by_chunk_order():
    values = np.array([[0.5, 0.2, 0.5, 0.2, 0.9]])
    assert order_by(values, descending=False).tolist() == [[1, 3, 0, 2, 4]]
    assert order_by(values, descending=True).tolist() == [[4, 0, 2, 1, 3]]


def test_cosine_distance_matches_scipy():
    rng = np.random.default_rng(0)
    q = rng.normal(size=(4, 16))
    c = rng.normal(size=(9, 16))
    q /= np.linalg.norm(q, axis=1, keepdims=True)
    c /= np.linalg.norm(c, axis=1, keepdims=True)
    d = cosine_distances(q.astype(np.float32), c.astype(np.float32))
    for i in range(4):
        for j in range(9):
            assert d[i, j] == pytest.approx(cosine(q[i], c[j]), abs=1e-6)


def test_vectors_of_two_sizes_are_never_compared():
    with pytest.raises(ModelError, match="never compared"):
        cosine_distances(np.ones((1, 384)), np.ones((2, 768)))


def test_parse_retrievers_lists_known_names():
    assert parse_retrievers("dense, bm25,dense") == ["dense", "bm25"]
    with pytest.raises(ConfigError, match="known: dense, bm25, hybrid, rerank"):
        parse_retrievers("dense,splade")


def test_rerank_order_resorts_the_head_only():
    hybrid = np.array([5, 3, 1, 0, 2, 4])
    order = rerank_order(hybrid, [0.1, 0.9, 0.9, 0.3], depth=4)
    # 3 and 1 tie at 0.9: chunk order puts 1 first; 2 and 4 keep their hybrid places.
    assert order.tolist() == [1, 3, 0, 5, 2, 4]


def test_reranker_scores_pairs_with_the_real_cross_encoder(tiny_cross_encoder):
    from sentence_transformers import CrossEncoder

    rr = Reranker.load(tiny_cross_encoder)
    texts = ["a prompt cache", "the kv cache", "paella"]
    ours = rr.score("what is a cache", texts)
    direct = CrossEncoder(str(tiny_cross_encoder), device="cpu").predict([("what is a cache", t) for t in texts])
    np.testing.assert_allclose(ours, np.asarray(direct, dtype=np.float64).reshape(-1), rtol=1e-6)


def test_reranker_missing_folder_is_a_clear_error(tmp_path):
    with pytest.raises(ModelError, match="no cross-encoder"):
        Reranker.load(tmp_path / "nope")


@pytest.mark.slow
def test_hybrid_matches_ranx_rrf_with_bm25_ranking_only_matching_chunks():
    """Independent oracle: ranx.fuse(method="rrf", k=60) over a dense run with every chunk and a
    BM25 run with the chunks that share a term with the query (as a BM25 engine returns)."""
    rng = random.Random(11)
    docs = random_texts(rng, 40)
    queries = ["cache prompt", "error 404", "vector index the"]
    bm = BM25.build(docs).scores(queries)
    dense_scores = np.random.default_rng(2).random((len(queries), len(docs)))
    dense_order = order_by(dense_scores, descending=True)
    bm_order = order_by(bm, descending=True)
    ours = rrf_scores([dense_order, bm_order], ranked=[None, bm > 0])
    run_dense = {f"q{i}": {f"c{j}": float(dense_scores[i, j]) for j in range(len(docs))} for i in range(len(queries))}
    # equal BM25 scores are common; we break ties by chunk order, so hand ranx the same order
    run_bm25 = {
        f"q{i}": {f"c{j}": float(bm[i, j]) - j * 1e-9 for j in range(len(docs)) if bm[i, j] > 0}
        for i in range(len(queries))
    }
    fused = ranx_oracle.fuse([run_dense, run_bm25], method="rrf", params={"k": 60})
    for i in range(len(queries)):
        assert 0 < int((bm[i] > 0).sum()) < len(docs)  # some chunks are not ranked by bm25
        for j in range(len(docs)):
            assert ours[i, j] == pytest.approx(fused[f"q{i}"][f"c{j}"], abs=1e-12)


def test_chunks_bm25_does_not_rank_add_nothing_to_hybrid():
    dense = np.array([[0, 1, 2, 3]])
    bm = np.array([[2, 0, 1, 3]])  # only chunk 2 matched; 0, 1, 3 are a tie in corpus order
    fused = rrf_scores([dense, bm], ranked=[None, np.array([[False, False, True, False]])])[0]
    assert fused.tolist() == pytest.approx([1 / 61, 1 / 62, 1 / 63 + 1 / 61, 1 / 64])
