"""evalcore.read.queries: hits quote content, the needle is highlighted, the gate's outcome is
worded right for in-domain, destroyed and out-of-domain queries."""

from __future__ import annotations

import math

import pandas as pd
import pytest

from evalcore.read import queries, runs
from evalcore.records import Configuration


def test_query_hits_quote_content_and_highlight_needle(store, engine_run_id):
    config = runs.configurations(store, engine_run_id)[0]
    query = store.query(
        "SELECT * FROM queries WHERE run_id = ? AND domain = 'in' AND valid ORDER BY query_id LIMIT 1", [engine_run_id]
    ).iloc[0]
    hits = queries.query_hits(store, engine_run_id, query["query_id"], config)
    docs = store.query("SELECT doc_id, text FROM documents WHERE run_id = ?", [engine_run_id]).set_index("doc_id")[
        "text"
    ]
    for hit in hits.itertuples():
        assert hit.content == docs[hit.doc_id][hit.start : hit.end]
        assert hit.locator == f"#char={hit.start},{hit.end}"
        if not math.isnan(hit.needle_start):
            parts = queries.highlight(hit.content, hit.needle_start, hit.needle_end)
            assert [p for p, mark in parts if mark] == [docs[query["doc_id"]][query["start"] : query["end"]]]
    answer = queries.query_answer(store, engine_run_id, query["query_id"], config, 2.1, count=False)
    assert answer.answered and list(answer.citations["quote"]) == list(hits["content"].head(4))
    refused = queries.query_answer(store, engine_run_id, query["query_id"], config, 0.0, count=False)
    assert not refused.answered and refused.prompt.startswith("NO ANSWER")


def test_highlight_takes_missing_needles_of_every_kind():
    # an out-of-domain query has no needle: pandas' NA reached int() and raised TypeError
    for missing in (None, math.nan, pd.NA):
        assert queries.highlight("some text", missing, missing) == [("some text", False)]


@pytest.mark.slow
def test_out_of_domain_query_in_every_configuration(store, engine_run_id):
    ood = store.query("SELECT query_id FROM queries WHERE run_id = ? AND domain = 'out'", [engine_run_id])["query_id"]
    for config in runs.configurations(store, engine_run_id):
        for qid in ood[:2]:
            for t in (0.0, 2.1):
                view = queries.query_view(store, engine_run_id, qid, config, t)
                assert view.domain == "out" and view.first_correct_rank is None and not view.lost
                for hit in view.hits.itertuples():
                    queries.highlight(hit.content, hit.needle_start, hit.needle_end)
                text = view.headline()
                assert "top 20" not in text and "rank" not in text
                # the value the gate decides on: the nearest of the top 4 stored hits, read here
                # from the hits table (for BM25 and hybrid rank 1 need not be the nearest)
                nearest = store.query(
                    "SELECT min(distance) AS d FROM hits WHERE run_id = ? AND strategy = ? AND retriever = ? "
                    "AND query_id = ? AND rank <= 4",
                    [engine_run_id, config.strategy, config.retriever, qid],
                )["d"].iloc[0]
                assert f"nearest in the top 4 d = {nearest:.3f}" in text, text
                if t == 0.0:
                    assert text.endswith("NO ANSWER, as it should")
                else:
                    assert view.bluff and f"bluffs: answers from {queries.plural(len(view.kept), 'source')}" in text


def test_wording_of_in_domain_outcomes(store, engine_run_id):
    results = store.query(
        "SELECT r.* FROM results r JOIN queries q USING (run_id, query_id) "
        "WHERE r.run_id = ? AND r.domain = 'in' AND q.valid",
        [engine_run_id],
    )
    destroyed = results[results["destroyed"]].iloc[0]
    view = queries.query_view(
        store, engine_run_id, destroyed["query_id"], Configuration(destroyed["strategy"], destroyed["retriever"]), 2.1
    )
    assert "destroyed: no chunk holds the answer" in view.headline()
    # a correct chunk in the top 4, but under a threshold that keeps nothing: a lost answer, said so
    found = results[results["first_correct_rank"] <= 4].iloc[0]
    config = Configuration(found["strategy"], found["retriever"])
    lost = queries.query_view(store, engine_run_id, found["query_id"], config, 0.0)
    assert lost.lost and "NO ANSWER · lost answer" in lost.headline()
    assert lost.headline().count("NO ANSWER") == 1
    kept = queries.query_view(store, engine_run_id, found["query_id"], config, 2.1)
    assert not kept.lost and f"first correct rank {int(found['first_correct_rank'])}" in kept.headline()
    hits = store.query(
        "SELECT correct FROM hits WHERE run_id = ? AND strategy = ? AND retriever = ? AND query_id = ? AND rank <= 4",
        [engine_run_id, config.strategy, config.retriever, found["query_id"]],
    )
    assert kept.headline().endswith(f"answers from {len(hits)} sources, {int(hits['correct'].sum())} right")
    assert queries.plural(1, "source") == "1 source" and queries.plural(3, "source") == "3 sources"


def test_prompt_pieces_match_the_model_tokenizer(store, engine_run_id, real_embedder):
    from evalcore.embedding.embedder import piece_counter

    config = runs.configurations(store, engine_run_id)[0]
    qid = store.query(
        "SELECT query_id FROM queries WHERE run_id = ? AND domain = 'in' AND valid LIMIT 1", [engine_run_id]
    ).iloc[0, 0]
    answer = queries.query_answer(store, engine_run_id, qid, config, 2.1)
    assert answer.pieces == real_embedder.count_pieces([answer.prompt])[0]
    texts = ["déjà vu — naïve café 東京", "x " * 600]
    assert [piece_counter()(t) for t in texts] == real_embedder.count_pieces(texts)


def test_unknown_query_is_a_message(store, engine_run_id):
    from evalcore.errors import StoreError

    with pytest.raises(StoreError, match="no query 'nope'"):
        queries.query_row(store, engine_run_id, "nope")
