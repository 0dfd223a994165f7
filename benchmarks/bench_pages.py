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
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

PAGES = ("runs", "compare", "distances", "threshold", "query", "index", "export")


def synthetic_tables(n_queries: int, seed: int = 7, docs: int = 40) -> tuple[dict, dict]:
    """(tables, run updates) of one synthetic run shaped like the engine's output."""
    import numpy as np
    import pandas as pd

    from evalcore import PIPELINE_VERSION

    rng = np.random.default_rng(seed)
    words = "alpha beta gamma delta epsilon zeta eta theta iota kappa lambda mu nu xi".split()
    doc_rows, chunk_rows = [], []
    strategies = {"A": (False, False, 0), "E": (True, True, 0)}
    for d in range(docs):
        sections = []
        for s in range(5):
            body = " ".join(rng.choice(words, 300)) + "."
            sections.append(f"## Section {s}\n\n{body}\n")
        text = f"# Document {d}\n\n" + "\n".join(sections)
        doc_rows.append(dict(
            doc_id=f"doc{d:03d}", title=f"Document {d}", source_type="markdown", path=f"doc{d:03d}.md",
            state="indexed", reason=None, extractor="markdown", extractor_version="1",
            model="all-MiniLM-L6-v2", model_dim=384, pipeline_version=PIPELINE_VERSION,
            characters=len(text), sections=5, text=text,
        ))
    doc_rows.append(dict(
        doc_id="broken", title=None, source_type="markdown", path="broken.md", state="failed",
        reason="broken.md: not valid UTF-8 (byte offset 3: invalid start byte)", extractor="markdown",
        extractor_version="1", model=None, model_dim=None, pipeline_version=None,
        characters=None, sections=None, text=None,
    ))
    strat_rows = []
    chunk_index: dict[str, list[dict]] = {}
    for name, (boundaries, header, overlap) in strategies.items():
        rows = []
        for doc in doc_rows[:-1]:
            text = doc["text"]
            for start in range(0, len(text), 512):
                end = min(start + 512, len(text))
                head = f"[{doc['title']}]\n" if header else ""
                rows.append(dict(
                    run_id=None, strategy=name, chunk_id=len(rows), doc_id=doc["doc_id"],
                    section=f"Section {min(start // 600, 4)}", start=start, end=end,
                    evidence_start=start, header=head, content=text[start:end],
                    text=head + text[start:end], pieces=int(rng.integers(90, 280)),
                    header_pieces=5 if header else 0,
                ))
        chunk_index[name] = rows
        chunk_rows += rows
        frame = pd.DataFrame(rows)
        strat_rows.append(dict(
            run_id=None, strategy=name, size=512, overlap=overlap, boundaries=boundaries, header=header,
            chunks=len(rows), pieces=int(frame["pieces"].sum()), header_pieces=int(frame["header_pieces"].sum()),
            over_window=int((frame["pieces"] > 256).sum()), destroyed=3, norm_max_diff=4.2e-7,
        ))
    n_in = int(n_queries * 0.8)
    query_rows = []
    for i in range(n_queries):
        if i < n_in:
            doc = doc_rows[i % docs]
            start = 40 + (i * 37) % 2000
            query_rows.append(dict(
                run_id=None, query_id=f"q{i:05d}", domain="in", text=f"question {i} about {doc['title']}",
                group_id=f"g{i // 2:05d}", variant="course" if i % 2 else "ticket", kind=None,
                needle=doc["text"][start:start + 40], doc_id=doc["doc_id"], start=start, end=start + 40,
                valid=True, invalid_reason=None, line=i + 1,
            ))
        else:
            query_rows.append(dict(
                run_id=None, query_id=f"o{i:05d}", domain="out", text=f"unrelated question {i}",
                group_id=None, variant=None, kind="near" if i % 2 else "far", needle=None, doc_id=None,
                start=None, end=None, valid=True, invalid_reason=None, line=i - n_in + 1,
            ))
    result_rows, hit_cols = [], {k: [] for k in
                                 ("strategy", "retriever", "query_id", "rank", "chunk_id", "distance", "score", "correct")}
    for name, chunks in chunk_index.items():
        for retriever, skill in (("dense", 0.55), ("bm25", 0.45)):
            for q in query_rows:
                inside = q["domain"] == "in"
                base = rng.uniform(0.25, 0.45) if inside else rng.uniform(0.4, 0.6)
                dist = np.sort(base + np.cumsum(rng.uniform(0.0, 0.02, 20)))
                ids = rng.choice(len(chunks), 20, replace=False)
                first = None
                if inside and rng.random() < skill + 0.3:
                    first = int(min(rng.geometric(skill), 20))
                for r in range(20):
                    hit_cols["strategy"].append(name)
                    hit_cols["retriever"].append(retriever)
                    hit_cols["query_id"].append(q["query_id"])
                    hit_cols["rank"].append(r + 1)
                    hit_cols["chunk_id"].append(int(ids[r]))
                    hit_cols["distance"].append(float(dist[r]))
                    hit_cols["score"].append(float(1 - dist[r]))
                    hit_cols["correct"].append(first == r + 1)
                result_rows.append(dict(
                    run_id=None, strategy=name, retriever=retriever, query_id=q["query_id"], domain=q["domain"],
                    first_correct_rank=first, answer_distance=float(dist[first - 1]) if first else None,
                    top_distance=float(dist[0]), destroyed=False,
                ))
    destroyed_rows = [
        dict(run_id=None, strategy=s, group_id=f"g{j:05d}", doc_id="doc000", start=500 + j, end=540 + j, cut=512)
        for s in strategies for j in range(3)
    ]
    timings = [dict(run_id=None, stage="index", strategy=s, seconds=1.0, items=len(chunk_index[s]),
                    per_item_ms=1000.0 / len(chunk_index[s])) for s in strategies]
    tables = {
        "documents": pd.DataFrame(doc_rows), "strategies": pd.DataFrame(strat_rows),
        "chunks": pd.DataFrame(chunk_rows), "queries": pd.DataFrame(query_rows),
        "results": pd.DataFrame(result_rows), "hits": pd.DataFrame(hit_cols),
        "destroyed": pd.DataFrame(destroyed_rows), "timings": pd.DataFrame(timings),
    }
    updates = {"new_embeddings": 0, "cached_embeddings": len(chunk_rows)}
    return tables, updates


def build_store(path: Path, n_queries: int) -> str:
    """Write one synthetic run of ``n_queries`` queries to ``path``; returns its run id."""
    import uuid

    from evalcore import PIPELINE_VERSION
    from evalcore.store import Store

    store = Store(path)
    run_id = "bench-" + uuid.uuid4().hex[:8]
    store.start_run(dict(
        run_id=run_id, name=f"synthetic-{n_queries}", corpus_root="(synthetic)", corpus_fingerprint="0" * 64,
        questions_path="(synthetic)", ood_path="(synthetic)", model="all-MiniLM-L6-v2", model_dim=384,
        pipeline_version=PIPELINE_VERSION, strategies="A,E", retrievers="dense,bm25",
        rerank_note="rerank not run: synthetic benchmark",
        settings=json.dumps({"size": 512, "overlap": 64, "k": [1, 4, 8, 20], "seed": 7}),
    ))
    tables, updates = synthetic_tables(n_queries)
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
    import scipy.optimize  # noqa: F401
    import scipy.stats  # noqa: F401
    import statsmodels.stats.multitest  # noqa: F401
    import statsmodels.stats.proportion  # noqa: F401
    import vl_convert  # noqa: F401

    from evalcore.embedding import piece_counter

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
            at.switch_page(f"screens/{page}.py")
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


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--queries", type=int, default=10_000, help="queries in the synthetic run")
    parser.add_argument("--store", type=Path, default=Path("/tmp/evalcore-bench.duckdb"),
                        help="store to build or reuse")
    args = parser.parse_args(argv)
    from evalcore.store import Store

    store = Store(args.store)
    found = store.query("SELECT run_id FROM runs WHERE name = ? AND status = 'complete'",
                        [f"synthetic-{args.queries}"]) if args.store.exists() else None
    if found is not None and len(found):
        run_id = str(found.iloc[0, 0])
        print(f"reusing run {run_id} in {args.store}")
    else:
        started = time.perf_counter()
        run_id = build_store(args.store, args.queries)
        print(f"built run {run_id} ({args.queries} queries) in {time.perf_counter() - started:.1f} s")
    print(f"one-off imports of a server process (statsmodels, scipy, altair, vl-convert, tokenizer): "
          f"{warm_imports():.2f} s")
    print(f"{'page':<10} {'no cache s':>10} {'cached s':>9}")
    for page, cold, warm in time_pages(args.store, run_id):
        print(f"{page:<10} {cold:>10.2f} {warm:>9.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
