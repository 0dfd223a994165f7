"""The runner end to end: exact figures with a keyword embedder (computed by hand here),
and the real model on the mini corpus (figures recomputed from the stored hits)."""

from __future__ import annotations

import json
import math

import numpy as np
import pandas as pd
import pytest
from conftest import KeywordEmbedder

from evalcore.chunking import parse_strategies
from evalcore.inputs.corpus import load_corpus
from evalcore.inputs.groundtruth import load_ground_truth
from evalcore.measures.metrics import mrr, recall_at_k
from evalcore.read.summary import summary_json, summary_table
from evalcore.run.runner import RunRequest, run_evaluation
from evalcore.store import Store

DOC1 = "# One\n\n## Alpha\n\nalpha alpha beta.\n\n## Gamma\n\ngamma words here.\n"
DOC2 = "# Two\n\n## Beta\n\nbeta beta beta.\n\n## Delta\n\ndelta gamma.\n"


@pytest.fixture()
def tiny(tmp_path):
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    (corpus / "one.md").write_text(DOC1)
    (corpus / "two.md").write_text(DOC2)
    q = tmp_path / "q.jsonl"
    q.write_text(
        "\n".join(
            json.dumps(x)
            for x in [
                {"id": "q1", "question": "beta", "needle": "alpha alpha beta", "group": "g1", "variant": "course"},
                {
                    "id": "q2",
                    "question": "gamma delta",
                    "needle": "gamma words here",
                    "group": "g2",
                    "variant": "course",
                },
                {"id": "q3", "question": "alpha", "needle": "alpha alpha beta", "group": "g1", "variant": "ticket"},
            ]
        )
        + "\n"
    )
    o = tmp_path / "ood.jsonl"
    o.write_text(json.dumps({"id": "o1", "query": "paella", "kind": "far"}) + "\n")
    c = load_corpus(corpus)
    return c, load_ground_truth(c, q, o), tmp_path


def run_tiny(tiny, strategies="C", retrievers=("dense", "bm25", "hybrid"), embedder=None):
    corpus, gt, tmp = tiny
    store = Store(tmp / "s.duckdb")
    embedder = embedder or KeywordEmbedder(["alpha", "beta", "gamma", "delta"])
    res = run_evaluation(
        RunRequest(corpus, gt, parse_strategies(strategies), list(retrievers), name="t"), store, embedders=[embedder]
    )
    return store, res, embedder


def test_exact_ranks_distances_and_metrics_by_hand(tiny):
    store, res, _ = run_tiny(tiny)
    chunks = store.query("SELECT chunk_id, content FROM chunks WHERE run_id = ? ORDER BY chunk_id", [res.run_id])
    assert chunks["content"].tolist() == ["alpha alpha beta.", "gamma words here.", "beta beta beta.", "delta gamma."]
    r = store.query(
        "SELECT retriever, query_id, first_correct_rank, answer_distance, top_distance "
        "FROM results WHERE run_id = ? ORDER BY retriever, query_id",
        [res.run_id],
    )
    dense = r[r.retriever == "dense"].set_index("query_id")
    # q1 "beta" -> (0,1,0,0): c2 at 0, c0 at 1 - 1/sqrt(5): the answer c0 is rank 2.
    assert dense.loc["q1", "first_correct_rank"] == 2
    assert dense.loc["q1", "answer_distance"] == pytest.approx(1 - 1 / math.sqrt(5), abs=1e-6)
    assert dense.loc["q1", "top_distance"] == pytest.approx(0.0, abs=1e-6)
    # q2 "gamma delta": c3 at 0, c1 at 1 - 1/sqrt(2)
    assert dense.loc["q2", "first_correct_rank"] == 2
    assert dense.loc["q2", "answer_distance"] == pytest.approx(1 - 1 / math.sqrt(2), abs=1e-6)
    # q3 "alpha": c0 at 1 - 2/sqrt(5), rank 1
    assert dense.loc["q3", "first_correct_rank"] == 1
    # ood "paella" has no keyword: orthogonal to every chunk
    assert dense.loc["o1", "top_distance"] == pytest.approx(1.0, abs=1e-6)
    assert pd.isna(dense.loc["o1", "first_correct_rank"])
    # bm25 q1 "beta": c2 (f=3) above c0 (f=1), so the answer is rank 2; hybrid fuses two equal lists
    bm = r[r.retriever == "bm25"].set_index("query_id")
    hy = r[r.retriever == "hybrid"].set_index("query_id")
    assert bm.loc["q1", "first_correct_rank"] == 2 and hy.loc["q1", "first_correct_rank"] == 2

    table = summary_table(store, res.run_id).set_index("config")
    assert table.loc["C/dense", "queries"] == 3
    assert table.loc["C/dense", "recall@1"] == pytest.approx(1 / 3)
    assert table.loc["C/dense", "recall@4"] == pytest.approx(1.0)
    assert table.loc["C/dense", "mrr"] == pytest.approx((1 / 2 + 1 / 2 + 1) / 3)
    assert table.loc["C/dense", "destroyed"] == 0

    hits = store.query(
        "SELECT query_id, rank, chunk_id, distance, correct FROM hits "
        "WHERE run_id = ? AND retriever = 'dense' AND query_id = 'q1' ORDER BY rank",
        [res.run_id],
    )
    # every chunk is ranked (4 < top 20); ties at distance 1 (c1, c3) broken by chunk order
    assert hits["chunk_id"].tolist() == [2, 0, 1, 3]
    assert hits["correct"].tolist() == [False, True, False, False]


def test_destroyed_answers_are_counted_listed_and_never_found(tiny):
    # blind cuts of 10 characters split "alpha alpha beta" in every chunk
    store, res, _ = run_tiny(tiny, strategies="tiny:blind+size=10")
    d = store.query('SELECT group_id, doc_id, start, "end", cut FROM destroyed WHERE run_id = ?', [res.run_id])
    assert sorted(d["group_id"]) == ["g1", "g2"]
    for row in d.itertuples():
        assert row.start < row.cut < row.end and row.cut % 10 == 0
    r = store.query(
        "SELECT first_correct_rank, destroyed FROM results WHERE run_id = ? AND domain = 'in'", [res.run_id]
    )
    assert r["destroyed"].all() and r["first_correct_rank"].isna().all()
    assert summary_table(store, res.run_id)["destroyed"].tolist() == [2, 2, 2]


@pytest.mark.slow
def test_second_identical_run_embeds_nothing_new_and_gives_identical_figures(tiny):
    store, first, emb = run_tiny(tiny, strategies="A,C,E")
    calls = emb.calls
    assert first.new_embeddings > 0
    _, second, _ = run_tiny(tiny, strategies="A,C,E", embedder=emb)
    assert second.new_embeddings == 0 and emb.calls == calls
    a = summary_json(store, first.run_id)["configurations"]
    b = summary_json(store, second.run_id)["configurations"]
    assert a == b


def test_a_failing_run_is_marked_failed_and_the_next_works(tiny):
    class Exploding(KeywordEmbedder):
        def encode(self, texts):
            if len(texts) > 3:
                raise RuntimeError("boom in the middle of indexing")
            return super().encode(texts)

    with pytest.raises(RuntimeError):
        run_tiny(tiny, embedder=Exploding(["alpha", "beta", "gamma", "delta"]))
    store, res, _ = run_tiny(tiny)
    runs = store.runs().set_index("name")
    statuses = sorted(store.runs()["status"])
    assert statuses == ["complete", "failed"]
    failed = store.runs().query("status == 'failed'").iloc[0]
    assert "boom in the middle of indexing" in failed["reason"]
    # nothing of the failed run was written besides its row
    n = store.query("SELECT count(*) AS n FROM results WHERE run_id = ?", [failed["run_id"]])["n"][0]
    assert n == 0 and len(runs) == 2


def test_rerank_without_a_model_says_so_plainly(tiny):
    store, res, _ = run_tiny(tiny, retrievers=("dense", "rerank"))
    assert res.retrievers == ["dense"]
    assert "rerank was not run" in res.rerank_note
    assert "rerank was not run" in store.run(res.run_id).rerank_note


def test_real_model_run_figures_match_a_recount_from_stored_hits(engine_store, engine_run_id):
    """recall@k and MRR from the summary equal a recount from the stored results and
    hits; distances are real cosine distances of unit vectors."""
    store = Store(engine_store)
    run = store.run(engine_run_id)
    assert run.status == "complete"
    assert run.retrievers == ("dense", "bm25", "hybrid") and "rerank was not run" in run.rerank_note
    table = summary_table(store, engine_run_id).set_index("config")
    assert len(table) == 18
    res = store.query("SELECT * FROM results WHERE run_id = ? AND domain = 'in'", [engine_run_id])
    hits = store.query("SELECT * FROM hits WHERE run_id = ?", [engine_run_id])
    for (s, r), part in res.groupby(["strategy", "retriever"]):
        ranks = [None if pd.isna(x) else int(x) for x in part["first_correct_rank"]]
        assert table.loc[f"{s}/{r}", "recall@4"] == pytest.approx(recall_at_k(ranks, 4))
        assert table.loc[f"{s}/{r}", "mrr"] == pytest.approx(mrr(ranks))
        h = hits[(hits.strategy == s) & (hits.retriever == r) & hits.correct]
        first_hit = h.groupby("query_id")["rank"].min()
        for row in part.itertuples():
            if not pd.isna(row.first_correct_rank) and row.first_correct_rank <= 20:
                assert first_hit[row.query_id] == row.first_correct_rank
    assert ((hits["distance"] >= -1e-6) & (hits["distance"] <= 2 + 1e-6)).all()
    st = store.query(
        "SELECT strategy, destroyed, norm_max_diff, chunks FROM strategies WHERE run_id = ?", [engine_run_id]
    ).set_index("strategy")
    assert st.loc["A", "destroyed"] == 2 and st.loc[["B", "C", "D", "E", "F"], "destroyed"].eq(0).all()
    assert (st["norm_max_diff"] < 1e-5).all()
    queries = store.query("SELECT * FROM queries WHERE run_id = ?", [engine_run_id])
    assert queries["valid"].sum() == 18 + 7
    bad = queries[~queries["valid"]].iloc[0]
    assert bad["query_id"] == "missing-course" and bad["invalid_reason"] == "not found"


def test_stored_locators_slice_the_stored_canonical_text(engine_store, engine_run_id):
    store = Store(engine_store)
    docs = store.query("SELECT doc_id, text FROM documents WHERE run_id = ?", [engine_run_id])
    text = dict(zip(docs["doc_id"], docs["text"], strict=True))
    ch = store.query("SELECT * FROM chunks WHERE run_id = ?", [engine_run_id])
    for c in ch.itertuples():
        assert text[c.doc_id][c.start : c.end] == c.content
        assert c.text == (c.header or "") + text[c.doc_id][c.evidence_start : c.end]
    q = store.query("SELECT * FROM queries WHERE run_id = ? AND valid AND domain = 'in'", [engine_run_id])
    for row in q.itertuples():
        assert " ".join(text[row.doc_id][row.start : row.end].split()) == " ".join(row.needle.split())


def test_word_pieces_and_normalisation_are_real(real_embedder):
    from evalcore.embedding.embedder import normalisation_check

    texts = ["short", "a " * 300]
    pieces = real_embedder.count_pieces(texts)
    assert pieces[0] == 3 and pieces[1] == 302  # [CLS] + 300 pieces + [SEP], uncut
    v = real_embedder.encode(["the kv cache", "a prompt cache", "paella"])
    assert np.allclose(np.linalg.norm(v, axis=1), 1.0, atol=1e-5)
    assert normalisation_check(v) < 1e-6
    raw = v * np.array([[1.0], [2.0], [3.0]], dtype=np.float32)
    assert normalisation_check(raw) > 0.1


def test_normalisation_check_against_scipy_distances():
    """max |L2^2/2 - (1 - a.b)| over the first n x n pairs, recomputed with scipy's cdist.

    On unit vectors both are float noise (< 1e-6); on vectors that are not normalised the
    difference is large and the two computations agree to 1e-9.
    """
    from scipy.spatial.distance import cdist

    from evalcore.embedding.embedder import normalisation_check

    rng = np.random.default_rng(5)
    v = rng.normal(size=(250, 24))
    unit = (v / np.linalg.norm(v, axis=1, keepdims=True)).astype(np.float32)
    assert normalisation_check(unit, 200) < 1e-6
    raw = v[:200] * rng.uniform(0.5, 2.0, size=(200, 1))
    oracle = np.max(np.abs(cdist(raw, raw, "sqeuclidean") / 2 - (1 - cdist(raw, raw, lambda a, b: a @ b))))
    assert oracle > 1.0
    assert normalisation_check(raw, 200) == pytest.approx(oracle, rel=1e-9)
    # only the first n vectors are looked at
    mixed = np.vstack([unit[:200], raw[:50]])
    assert normalisation_check(mixed, 200) < 1e-6 and normalisation_check(mixed, 250) > 1.0


@pytest.mark.slow
def test_rerank_reorders_the_hybrid_top_25_by_the_cross_encoder(
    tiny_cross_encoder, real_embedder, mini_inputs, tmp_path
):
    """The real CrossEncoder code path (a tiny random model on disk): rerank's ranking is the
    hybrid top 25 sorted by the cross-encoder's own scores (ties: chunk order), then the rest."""
    from sentence_transformers import CrossEncoder

    corpus, gt = mini_inputs
    store = Store(tmp_path / "s.duckdb")
    res = run_evaluation(
        RunRequest(
            corpus, gt, parse_strategies("C"), ["hybrid", "rerank"], name="rr", reranker_path=str(tiny_cross_encoder)
        ),
        store,
        embedders=[real_embedder],
    )
    assert res.retrievers == ["hybrid", "rerank"] and "cross-encoder" in res.rerank_note
    timing = store.query("SELECT items FROM timings WHERE run_id = ? AND stage = 'rerank'", [res.run_id])
    assert timing["items"].tolist() == [25]  # 18 in-domain + 7 out-of-domain queries
    chunks = store.query("SELECT chunk_id, text FROM chunks WHERE run_id = ? ORDER BY chunk_id", [res.run_id])
    texts = chunks["text"].tolist()
    hits = store.query(
        "SELECT retriever, query_id, rank, chunk_id, score FROM hits WHERE run_id = ? "
        "ORDER BY retriever, query_id, rank",
        [res.run_id],
    )
    queries = store.query("SELECT query_id, text FROM queries WHERE run_id = ? AND valid", [res.run_id])
    model = CrossEncoder(str(tiny_cross_encoder), device="cpu")
    n = len(texts)  # 11 chunks: the whole hybrid ranking is the head
    for qid, qtext in zip(queries["query_id"], queries["text"], strict=True):
        hybrid = hits[(hits.retriever == "hybrid") & (hits.query_id == qid)]["chunk_id"].tolist()
        rerank = hits[(hits.retriever == "rerank") & (hits.query_id == qid)]
        scores = np.asarray(model.predict([(qtext, texts[c]) for c in hybrid]), dtype=np.float64).reshape(-1)
        expected = [c for _, c in sorted(zip(-scores, hybrid, strict=True))]
        assert len(hybrid) == n and rerank["chunk_id"].tolist() == expected, qid
        np.testing.assert_allclose(rerank["score"].to_numpy(), sorted(scores, reverse=True), rtol=1e-5)


def test_stored_word_pieces_and_header_share_match_the_hf_tokenizer(engine_store, engine_run_id):
    """Index health figures recounted with transformers' AutoTokenizer on the stored texts."""
    from transformers import AutoTokenizer

    from evalcore.embedding.embedder import default_model_path

    tok = AutoTokenizer.from_pretrained(str(default_model_path()))
    store = Store(engine_store)
    ch = store.query(
        "SELECT strategy, text, header, pieces, header_pieces FROM chunks WHERE run_id = ?", [engine_run_id]
    )
    for c in ch.itertuples():
        assert c.pieces == len(tok(c.text, truncation=False)["input_ids"])
        assert c.header_pieces == (len(tok.tokenize(c.header.rstrip("\n"))) if c.header else 0)
    st = store.query(
        "SELECT strategy, pieces, header_pieces, over_window FROM strategies WHERE run_id = ?", [engine_run_id]
    ).set_index("strategy")
    per = ch.groupby("strategy").agg(
        p=("pieces", "sum"), h=("header_pieces", "sum"), over=("pieces", lambda x: int((x > 256).sum()))
    )
    assert (st["pieces"] == per["p"]).all() and (st["header_pieces"] == per["h"]).all()
    assert (st["over_window"] == per["over"]).all()
    assert per.loc[["A", "B", "C", "D"], "h"].eq(0).all() and per.loc[["E", "F"], "h"].gt(0).all()
