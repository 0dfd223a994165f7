"""Per-page render times of the dashboard on a large run (issue 5: under 2 s per page).

Builds (or reuses) a store holding one synthetic run of ``--queries`` queries (default
10,000; 80 % in-domain, 20 % out-of-domain) over two strategies x two retrievers, written
through the store's own write API (``start_run`` + ``complete_run``) with tables shaped
exactly like the engine's: documents, strategies, chunks, queries, results, top-20 hits,
destroyed ground truths and timings. The figures are synthetic, the shapes are real; it
is a benchmark, not a test. Then it renders every page with
``streamlit.testing.v1.AppTest`` and prints each page's render time with empty data
caches and again with warm caches (after the process's one-off imports, printed apart).

    python benchmarks/bench_pages.py [--queries 10000] [--store /tmp/evalcore-bench.duckdb]
    python benchmarks/bench_pages.py --chunks 1000000 --strategies E --reads   # read functions at 1M chunks
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

PAGES = ("runs", "compare", "distances", "threshold", "query", "index", "export")


def synthetic_tables(
    n_queries: int, seed: int = 7, docs: int = 40, chunks: int | None = None, strategies: tuple[str, ...] = ("A", "E")
) -> tuple[dict, dict]:
    """(tables, run updates) of one synthetic run shaped like the engine's output.

    ``chunks`` (per strategy; default: what ``docs`` documents of 2,600 characters make)
    sets the index size; documents are then as many as needed for about 500 chunks each.
    Built with array operations, so a million chunks take about a minute.
    """
    import numpy as np
    import pandas as pd

    from evalcore import PIPELINE_VERSION

    rng = np.random.default_rng(seed)
    words = np.array("alpha beta gamma delta epsilon zeta eta theta iota kappa lambda mu nu xi".split())
    per_doc = 6 if chunks is None else 500
    docs = docs if chunks is None else max(1, -(-chunks // per_doc))
    paragraphs = [" ".join(rng.choice(words, 80)) + "." for _ in range(64)]
    doc_text = []
    for d in range(docs):
        parts = [f"# Document {d}\n"]
        for s in range(5):
            body = "\n\n".join(paragraphs[(d * 7 + s * 3 + j) % 64] for j in range(max(1, per_doc // 5 + 1)))
            parts.append(f"## Section {s}\n\n{body}\n")
        doc_text.append("\n".join(parts))
    doc_ids = [f"doc{d:06d}" for d in range(docs)]
    documents = pd.DataFrame(
        {
            "doc_id": doc_ids + ["broken"],
            "title": [f"Document {d}" for d in range(docs)] + [None],
            "source_type": "markdown",
            "path": [f"{x}.md" for x in doc_ids] + ["broken.md"],
            "state": ["indexed"] * docs + ["failed"],
            "reason": [None] * docs + ["broken.md: not valid UTF-8 (byte offset 3: invalid start byte)"],
            "extractor": "markdown",
            "extractor_version": "1",
            "model": ["all-MiniLM-L6-v2"] * docs + [None],
            "model_dim": [384] * docs + [None],
            "pipeline_version": [PIPELINE_VERSION] * docs + [None],
            "characters": [len(t) for t in doc_text] + [None],
            "sections": [5] * docs + [None],
            "text": doc_text + [None],
        }
    )
    lengths = np.array([len(t) for t in doc_text])
    chunk_frames, strat_rows, n_chunks = [], [], {}
    for name in strategies:
        header = name != "A"
        starts = [np.arange(0, n, 512) for n in lengths]
        doc_of = np.repeat(np.arange(docs), [len(x) for x in starts])
        start = np.concatenate(starts)
        if chunks is not None:
            doc_of, start = doc_of[:chunks], start[:chunks]
        end = np.minimum(start + 512, lengths[doc_of])
        content = [doc_text[d][a:b] for d, a, b in zip(doc_of, start, end, strict=True)]
        head = [f"[Document {d}]\n" if header else "" for d in doc_of]
        frame = pd.DataFrame(
            {
                "run_id": None,
                "strategy": name,
                "chunk_id": np.arange(len(start)),
                "doc_id": np.array(doc_ids, dtype=object)[doc_of],
                "section": [f"Section {min(a // 600, 4)}" for a in start],
                "start": start,
                "end": end,
                "evidence_start": start,
                "header": head,
                "content": content,
                "text": [h + c for h, c in zip(head, content, strict=True)],
                "pieces": rng.integers(90, 280, len(start)),
                "header_pieces": 5 if header else 0,
            }
        )
        n_chunks[name] = len(frame)
        chunk_frames.append(frame)
        strat_rows.append(
            {
                "run_id": None,
                "strategy": name,
                "size": 512,
                "overlap": 0,
                "boundaries": header,
                "header": header,
                "chunks": len(frame),
                "pieces": int(frame["pieces"].sum()),
                "header_pieces": int(frame["header_pieces"].sum()),
                "over_window": int((frame["pieces"] > 256).sum()),
                "destroyed": 3,
                "norm_max_diff": 4.2e-7,
            }
        )
    n_in = int(n_queries * 0.8)
    i = np.arange(n_queries)
    inside = i < n_in
    qdoc = i % docs
    qstart = 40 + (i * 37) % 2000
    needles = [doc_text[d][a : a + 40] if q else None for d, a, q in zip(qdoc, qstart, inside, strict=True)]
    queries = pd.DataFrame(
        {
            "run_id": None,
            "query_id": np.where(inside, [f"q{x:05d}" for x in i], [f"o{x:05d}" for x in i]),
            "domain": np.where(inside, "in", "out"),
            "text": [
                f"question {x} about Document {d}" if q else f"unrelated question {x}"
                for x, d, q in zip(i, qdoc, inside, strict=True)
            ],
            "group_id": [f"g{x // 2:05d}" if q else None for x, q in zip(i, inside, strict=True)],
            "variant": [("course" if x % 2 else "ticket") if q else None for x, q in zip(i, inside, strict=True)],
            "kind": [None if q else ("near" if x % 2 else "far") for x, q in zip(i, inside, strict=True)],
            "needle": needles,
            "doc_id": [doc_ids[d] if q else None for d, q in zip(qdoc, inside, strict=True)],
            "start": pd.Series(qstart, dtype="Int64").where(inside),
            "end": pd.Series(qstart + 40, dtype="Int64").where(inside),
            "valid": True,
            "invalid_reason": None,
            "line": np.where(inside, i + 1, i - n_in + 1),
        }
    )
    results, hits = [], []
    for name in strategies:
        for retriever, skill in (("dense", 0.55), ("bm25", 0.45)):
            base = np.where(inside, rng.uniform(0.25, 0.45, n_queries), rng.uniform(0.4, 0.6, n_queries))
            dist = np.sort(base[:, None] + np.cumsum(rng.uniform(0.0, 0.02, (n_queries, 20)), axis=1), axis=1)
            found = inside & (rng.random(n_queries) < skill + 0.3)
            first = np.where(found, np.minimum(rng.geometric(skill, n_queries), 20), 0)
            ids = rng.integers(0, n_chunks[name], (n_queries, 20))
            results.append(
                pd.DataFrame(
                    {
                        "run_id": None,
                        "strategy": name,
                        "retriever": retriever,
                        "query_id": queries["query_id"],
                        "domain": queries["domain"],
                        "first_correct_rank": pd.Series(first, dtype="Int64").where(found),
                        "answer_distance": np.where(found, dist[i, np.maximum(first, 1) - 1], np.nan),
                        "top_distance": dist[:, 0],
                        "destroyed": False,
                    }
                )
            )
            hits.append(
                pd.DataFrame(
                    {
                        "run_id": None,
                        "strategy": name,
                        "retriever": retriever,
                        "query_id": np.repeat(queries["query_id"].to_numpy(), 20),
                        "rank": np.tile(np.arange(1, 21), n_queries),
                        "chunk_id": ids.ravel(),
                        "distance": dist.ravel(),
                        "score": (1 - dist).ravel(),
                        "correct": (np.arange(1, 21)[None, :] == first[:, None]).ravel(),
                    }
                )
            )
    destroyed = pd.DataFrame(
        [
            {
                "run_id": None,
                "strategy": s,
                "group_id": f"g{j:05d}",
                "doc_id": doc_ids[0],
                "start": 500 + j,
                "end": 540 + j,
                "cut": 512,
            }
            for s in strategies
            for j in range(3)
        ]
    )
    timings = pd.DataFrame(
        [
            {
                "run_id": None,
                "stage": "index",
                "strategy": s,
                "seconds": 1.0,
                "items": n_chunks[s],
                "per_item_ms": 1000.0 / n_chunks[s],
            }
            for s in strategies
        ]
    )
    tables = {
        "documents": documents,
        "strategies": pd.DataFrame(strat_rows),
        "chunks": pd.concat(chunk_frames, ignore_index=True),
        "queries": queries,
        "results": pd.concat(results, ignore_index=True),
        "hits": pd.concat(hits, ignore_index=True),
        "destroyed": destroyed,
        "timings": timings,
    }
    updates = {"new_embeddings": 0, "cached_embeddings": int(sum(n_chunks.values()))}
    return tables, updates


def build_store(
    path: Path,
    n_queries: int,
    chunks: int | None = None,
    strategies: tuple[str, ...] = ("A", "E"),
    name: str | None = None,
) -> str:
    """Write one synthetic run of ``n_queries`` queries to ``path``; returns its run id."""
    import uuid

    from evalcore import PIPELINE_VERSION
    from evalcore.store import Store

    store = Store(path)
    run_id = "bench-" + uuid.uuid4().hex[:8]
    store.start_run(
        {
            "run_id": run_id,
            "name": name or f"synthetic-{n_queries}",
            "corpus_root": "(synthetic)",
            "corpus_fingerprint": "0" * 64,
            "questions_path": "(synthetic)",
            "ood_path": "(synthetic)",
            "model": "all-MiniLM-L6-v2",
            "model_dim": 384,
            "pipeline_version": PIPELINE_VERSION,
            "strategies": ",".join(strategies),
            "retrievers": "dense,bm25",
            "rerank_note": "rerank not run: synthetic benchmark",
            "settings": json.dumps({"size": 512, "overlap": 64, "k": [1, 4, 8, 20], "seed": 7}),
        }
    )
    tables, updates = synthetic_tables(n_queries, chunks=chunks, strategies=strategies)
    for frame in tables.values():
        if "run_id" in frame.columns:
            frame["run_id"] = run_id
        else:
            frame.insert(0, "run_id", run_id)
    store.complete_run(run_id, tables, updates)
    return run_id


def warm_imports() -> float:
    """Import the heavy modules a server process loads once (statsmodels' proportion and multitest, scipy, altair,
    vl-convert, tokenizers); returns the seconds spent."""
    started = time.perf_counter()
    import altair  # noqa: F401
    import scipy.optimize
    import scipy.stats  # noqa: F401
    import statsmodels.stats.multitest
    import statsmodels.stats.proportion  # noqa: F401
    import vl_convert  # noqa: F401

    from evalcore.embedding.embedder import piece_counter

    piece_counter()
    return time.perf_counter() - started


def time_pages(store_path: Path, run_id: str) -> list[tuple[str, float, float]]:
    """(page, seconds with empty data caches, seconds with warm caches) per page, by AppTest.

    Each page gets a fresh AppTest and empty caches (data and resources) first, so the first figure
    is what a user waits for on opening a page of a run nobody opened since the server
    started (the one-off module imports of the process excluded; see :func:`warm_imports`).
    """
    import os

    import streamlit as st
    from streamlit.testing.v1 import AppTest

    os.environ["EVALCORE_STORE"] = str(store_path)  # the dashboard shows the operator's store
    out = []
    for page in PAGES:
        st.cache_data.clear()
        st.cache_resource.clear()  # figures are cached as resources (shared, never copied)
        at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=120)
        at.session_state["run_id"] = run_id
        if page != "runs":
            at.switch_page(f"evalcore_app/screens/{page}.py")
        started = time.perf_counter()
        at.run()
        cold = time.perf_counter() - started
        if at.exception:
            raise SystemExit(f"{page}: {at.exception[0].value}")
        started = time.perf_counter()
        at.run()
        warm = time.perf_counter() - started
        out.append((page, cold, warm))
    return out


def time_reads(store_path: Path, run_id: str, repeat: int = 2) -> list[tuple[str, float, float]]:
    """(read function, first call s, best later call s) for the read side's functions
    (``evalcore.read``) on the big run: which are too slow at this size, without the pages."""
    from evalcore.read import compare, distances, index, queries, runs, sweeps
    from evalcore.records import RunConfiguration
    from evalcore.store import Store

    store = Store(store_path)
    config = runs.configurations(store, run_id)[0]
    sides = [RunConfiguration(run_id, c) for c in runs.configurations(store, run_id)]
    qid = store.query("SELECT query_id FROM queries WHERE run_id = ? LIMIT 1", [run_id]).iloc[0, 0]
    calls: list[tuple[str, Any, tuple[Any, ...]]] = [
        ("runs.runs_overview", runs.runs_overview, (store,)),
        ("runs.configurations", runs.configurations, (store, run_id)),
        ("runs.timings", runs.timings, (store, run_id)),
        ("compare.recall_table", compare.recall_table, (store, sides)),
        ("compare.destroyed_counts", compare.destroyed_counts, (store, run_id)),
        ("compare.compare@20", compare.compare, (store, sides, 20)),
        ("distances.distances", distances.distances, (store, run_id, config)),
        ("sweeps.run_sweep", sweeps.run_sweep, (store, run_id, config)),
        ("queries.search_queries", queries.search_queries, (store, run_id, "question 12")),
        ("queries.query_hits", queries.query_hits, (store, run_id, qid, config)),
        ("index.index_health", index.index_health, (store, run_id)),
        ("index.over_window_chunks", index.over_window_chunks, (store, run_id)),
        ("index.destroyed_list", index.destroyed_list, (store, run_id)),
        ("index.documents", index.documents, (store, run_id)),
    ]
    out = []
    for name, fn, call in calls:
        times = []
        for _ in range(1 + repeat):
            started = time.perf_counter()
            fn(*call)
            times.append(time.perf_counter() - started)
        out.append((name, times[0], min(times[1:])))
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--queries", type=int, default=10_000, help="queries in the synthetic run")
    parser.add_argument(
        "--chunks", type=int, default=None, help="chunks per strategy (default: a small index of 40 documents)"
    )
    parser.add_argument("--strategies", default="A,E", help="strategy names of the synthetic run")
    parser.add_argument(
        "--store", type=Path, default=Path("/tmp/evalcore-bench.duckdb"), help="store to build or reuse"
    )
    parser.add_argument(
        "--reads", action="store_true", help="time the read functions (evalcore.read) instead of rendering the pages"
    )
    args = parser.parse_args(argv)
    from evalcore.store import Store

    strategies = tuple(args.strategies.split(","))
    name = f"synthetic-{args.queries}" + (f"x{args.chunks}-{'-'.join(strategies)}" if args.chunks else "")
    store = Store(args.store)
    found = (
        store.query("SELECT run_id FROM runs WHERE name = ? AND status = 'complete'", [name])
        if args.store.exists()
        else None
    )
    if found is not None and len(found):
        run_id = str(found.iloc[0, 0])
        print(f"reusing run {run_id} in {args.store}")
    else:
        started = time.perf_counter()
        run_id = build_store(args.store, args.queries, args.chunks, strategies, name)
        print(
            f"built run {run_id} ({args.queries} queries, {args.chunks or 'default'} chunks per strategy) "
            f"in {time.perf_counter() - started:.1f} s"
        )
    if args.reads:
        print(f"{'read function':<26} {'first s':>8} {'again s':>8}")
        for fn, first, again in time_reads(args.store, run_id):
            print(f"{fn:<26} {first:>8.2f} {again:>8.2f}")
        return 0
    print(
        f"one-off imports of a server process (statsmodels, scipy, altair, vl-convert, tokenizer): "
        f"{warm_imports():.2f} s"
    )
    print(f"{'page':<10} {'no cache s':>10} {'cached s':>9}")
    for page, cold, warm in time_pages(args.store, run_id):
        print(f"{page:<10} {cold:>10.2f} {warm:>9.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
