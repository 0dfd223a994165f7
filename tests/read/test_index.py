"""evalcore.read.index against the stored chunks and the chunker itself."""

from __future__ import annotations

import pandas as pd

from evalcore import PIPELINE_VERSION
from evalcore.read import compare, index, runs


def test_index_and_stale_documents(scratch, engine_run_id):
    health = index.index_health(scratch, engine_run_id)
    assert list(health["strategy"]) == runs.strategies_of(scratch, engine_run_id)
    chunks = scratch.query(
        "SELECT strategy, count(*) AS n, sum(pieces) AS p, count(*) FILTER (pieces > 256) AS over "
        "FROM chunks WHERE run_id = ? GROUP BY strategy",
        [engine_run_id],
    ).set_index("strategy")
    for row in health.itertuples():
        assert row.chunks == chunks.loc[row.strategy, "n"]
        assert row.pieces == chunks.loc[row.strategy, "p"]
        assert row.over_window == chunks.loc[row.strategy, "over"]
    assert len(index.over_window_chunks(scratch, engine_run_id)) == int(chunks["over"].sum())
    docs = index.documents(scratch, engine_run_id)
    assert not docs["stale"].any() and not docs[["title", "reason", "path"]].isna().any().any()
    # chunks per document, recounted from the chunker itself on the same corpus
    from conftest import MINI

    from evalcore.chunking import STANDARD_STRATEGIES, chunk_document
    from evalcore.inputs.corpus import load_corpus

    for doc in load_corpus(MINI / "corpus").documents:
        row = docs.set_index("doc_id").loc[doc.doc_id]
        for name in "ABCDEF":
            assert row[f"chunks {name}"] == len(chunk_document(doc, STANDARD_STRATEGIES[name]))
    victim = docs[docs["state"] == "indexed"]["doc_id"].iloc[0]
    with scratch.connect() as con:
        con.execute(
            "UPDATE documents SET pipeline_version = 'old/0' WHERE run_id = ? AND doc_id = ?", [engine_run_id, victim]
        )
    docs = index.documents(scratch, engine_run_id).set_index("doc_id")
    assert docs.loc[victim, "stale"] and PIPELINE_VERSION in docs.loc[victim, "stale_reason"]
    assert docs["stale"].sum() == 1


def test_destroyed_list_shows_the_cut(store, engine_run_id):
    destroyed = index.destroyed_list(store, engine_run_id)
    docs = store.query("SELECT doc_id, text FROM documents WHERE run_id = ?", [engine_run_id]).set_index("doc_id")[
        "text"
    ]
    for row in destroyed.itertuples():
        needle = docs[row.doc_id][row.start : row.end]
        assert row.before_cut + row.after_cut == needle
        assert ("split by the cut at offset" in row.why) == (not pd.isna(row.cut))
    counts = compare.destroyed_counts(store, engine_run_id).set_index("strategy")["destroyed"]
    assert counts.to_dict() == destroyed.groupby("strategy").size().reindex(counts.index, fill_value=0).to_dict()
