"""Real queries for question sets: the triage list and its decisions kept in the store per
(question set, author) and read back page by page (a pasted list of 100,000 lines is one bulk
insert), and the hits view ranking a query with the configuration's own retriever: the hits of
a run's question text are the hits the run stored for that question."""

from __future__ import annotations

import shutil
import time

import pytest
from conftest import MINI

from evalcore.errors import ConfigError, InputError
from evalcore.read import triage as rt
from evalcore.read.traffic.hits import hit_configurations
from evalcore.store import Store
from evalcore.store import triage as wt
from evalcore.traffic import hits as traffic_hits


def test_a_triage_list_is_kept_per_set_and_author_and_paged(tmp_path):
    store = Store(tmp_path / "s.duckdb")
    assert rt.progress(store, "kettle", "ann") == rt.TriageProgress(0, 0)  # no store yet: nothing, nothing created
    assert not store.path.exists()
    pasted = ["how do I bake bread", " which port ", "", "how do I bake bread"]
    assert wt.add_queries(store, "kettle", "ann", pasted) == 2
    assert wt.add_queries(store, "kettle", "ann", ["which port", "is it free"]) == 1  # appended, duplicates dropped
    assert wt.add_queries(store, "kettle", "bob", ["which port"]) == 1  # another author: a list of their own
    wt.decide(store, "kettle", "ann", "which port", "answer")
    wt.decide(store, "kettle", "ann", "how do I bake bread", "far")
    assert rt.progress(store, "kettle", "ann").sentence() == "2 of 3 queries decided"
    assert rt.progress(store, "kettle", "bob").sentence() == "0 of 1 queries decided"
    assert rt.page(store, "kettle", "ann", 1, 2) == [
        rt.Entry(1, "how do I bake bread", "far"),
        rt.Entry(2, "which port", "answer"),
    ]
    assert rt.page(store, "kettle", "ann", 2, 2) == [rt.Entry(3, "is it free", None)]
    assert rt.off_topic(store, "kettle", "ann") == [("how do I bake bread", "far")]
    wt.decide(store, "kettle", "ann", "how do I bake bread", None)  # undecided again
    assert rt.off_topic(store, "kettle", "ann") == [] and rt.progress(store, "kettle", "ann").decided == 1
    with pytest.raises(InputError, match="must be one of near, far, answer, skip"):
        wt.decide(store, "kettle", "ann", "which port", "maybe")
    with pytest.raises(InputError, match="does not hold 'nowhere'"):
        wt.decide(store, "kettle", "ann", "nowhere", "skip")
    assert wt.clear(store, "kettle", "ann") == 3 and rt.progress(store, "kettle", "bob").total == 1


def test_a_pasted_list_of_100000_lines_is_one_bulk_insert_and_paged(tmp_path):
    store = Store(tmp_path / "s.duckdb")
    lines = [f"query number {i}" for i in range(100_000)]
    t0 = time.perf_counter()
    assert wt.add_queries(store, "big", "", lines) == 100_000
    added = time.perf_counter() - t0
    assert wt.add_queries(store, "big", "", [*lines[-10:], "one more"]) == 1
    wt.decide(store, "big", "", "query number 99999", "near")
    assert rt.progress(store, "big", "").sentence() == "1 of 100,001 queries decided"
    last = rt.page(store, "big", "", 5001, 20)
    assert [e.position for e in last] == [100_001] and last[0].query == "one more"
    assert rt.page(store, "big", "", 5000, 20)[-1] == rt.Entry(100_000, "query number 99999", "near")
    print(f"100,000 queries stored in {added:.2f} s")


def test_the_hits_of_a_question_text_are_the_hits_the_run_stored(engine_store, engine_run_id, real_embedder, tmp_path):
    path = tmp_path / "engine.duckdb"
    shutil.copy(engine_store, path)
    store = Store(path)
    usable, why = hit_configurations(store, engine_run_id)
    assert why is None and {"E/dense", "E/bm25", "E/hybrid", "A/dense"} <= set(usable)
    question = store.query(
        "SELECT query_id, text FROM queries WHERE run_id = ? AND domain = 'in' AND valid ORDER BY line LIMIT 1",
        [engine_run_id],
    ).iloc[0]
    stamp = (path.stat().st_mtime_ns, path.stat().st_size)
    for configuration in ("E/dense", "E/bm25", "E/hybrid", "A/dense"):
        strategy, retriever = configuration.split("/")
        stored = store.query(
            'SELECT c.doc_id, c.start, c."end", h.score FROM hits h JOIN chunks c ON c.run_id = h.run_id '
            "AND c.strategy = h.strategy AND c.chunk_id = h.chunk_id WHERE h.run_id = ? AND h.strategy = ? "
            "AND h.retriever = ? AND h.query_id = ? ORDER BY h.rank LIMIT 5",
            [engine_run_id, strategy, retriever, question["query_id"]],
        )
        hits = traffic_hits.config_hits(
            store, engine_run_id, configuration, question["text"], 5, embedder=real_embedder
        )
        assert len(hits) == 5
        assert [(h.doc_id, h.start, h.end) for h in hits] == list(
            zip(stored["doc_id"], stored["start"], stored["end"], strict=True)
        ), configuration
        assert [h.score for h in hits] == pytest.approx(list(stored["score"]), rel=1e-5, abs=1e-6)
        assert [h.rank for h in hits] == list(range(1, len(hits) + 1))
    assert (path.stat().st_mtime_ns, path.stat().st_size) == stamp  # a read writes nothing
    with pytest.raises(ConfigError, match="has no configuration Z/dense"):
        traffic_hits.config_hits(store, engine_run_id, "Z/dense", "anything", embedder=real_embedder)


def test_an_imported_run_has_no_retriever_to_show_hits_of(tmp_path, capsys):
    import json

    from conftest import import_run

    from evalcore.inputs.corpus import load_corpus

    chunks, ranks = tmp_path / "chunks.jsonl", tmp_path / "ranks.trec"
    docs = load_corpus(MINI / "corpus").documents
    chunks.write_text("".join(json.dumps({"id": d.doc_id, "document": d.doc_id, "text": d.text}) + "\n" for d in docs))
    ids = [json.loads(line)["id"] for f in ("questions.jsonl", "ood.jsonl") for line in (MINI / f).open()]
    ranks.write_text("".join(f"{q} Q0 {d.doc_id} {r} {9 - r}.0 t\n" for q in ids for r, d in enumerate(docs, 1)))
    run_id = import_run(tmp_path / "s.duckdb", chunks, ranks, capsys)["run_id"]
    usable, why = hit_configurations(Store(tmp_path / "s.duckdb"), run_id)
    assert usable == [] and why == (
        f"No hits for real queries: run {run_id} has no retriever here (its rankings were made elsewhere: "
        "imported, or by a Python function)."
    )
