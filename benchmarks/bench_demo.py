"""Time the demo end to end: a cold run (empty embedding cache) and a warm one.

    python benchmarks/bench_demo.py [--strategies A,E] [--keep DIR]

Prints wall times, new/cached embeddings and the per-stage timings the runner stored
(index ms per chunk, query embedding, bm25 and vector scan per query). Not a test.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from evalcore.chunking import DEFAULT_STRATEGIES, parse_strategies
from evalcore.embedding.embedder import load_embedder
from evalcore.inputs.demo import OOD_PATH, QUESTIONS_PATH, load_demo_corpus
from evalcore.inputs.groundtruth import load_ground_truth
from evalcore.run.runner import RunRequest, run_evaluation
from evalcore.store import Store


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--strategies", default=DEFAULT_STRATEGIES)
    p.add_argument("--keep", default=None, help="folder for the store (default: a temporary one)")
    args = p.parse_args()
    folder = Path(args.keep or tempfile.mkdtemp(prefix="bench-demo-"))
    store = Store(folder / "store.duckdb")
    t = time.perf_counter()
    embedder = load_embedder()
    print(f"model load: {time.perf_counter() - t:.1f} s")
    corpus = load_demo_corpus()
    gt = load_ground_truth(corpus, QUESTIONS_PATH, OOD_PATH)
    request = RunRequest(corpus, gt, parse_strategies(args.strategies), ["dense", "bm25", "hybrid"], name="bench")
    for label in ("cold", "warm"):
        t = time.perf_counter()
        res = run_evaluation(request, store, embedders=[embedder])
        print(
            f"{label}: {time.perf_counter() - t:.1f} s, {res.new_embeddings} new embeddings, "
            f"{res.cached_embeddings} cached"
        )
    tm = store.query(
        "SELECT stage, sum(seconds) AS seconds, sum(items) AS items, "
        "1000 * sum(seconds) / nullif(sum(items), 0) AS per_item_ms "
        "FROM timings WHERE run_id = (SELECT run_id FROM runs ORDER BY created_at LIMIT 1) "
        "GROUP BY stage ORDER BY seconds DESC"
    )
    print("\ncold run, per stage (all strategies):")
    print(tm.to_string(index=False, float_format=lambda x: f"{x:.3f}"))


if __name__ == "__main__":
    main()
