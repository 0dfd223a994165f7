"""Traffic benchmark: import rate against the embedding stage's rate, and the Traffic screen's reads.

    HF_HUB_OFFLINE=1 python benchmarks/bench_traffic.py --queries 2000 --chunks 1000

Builds a dense configuration of ``--chunks`` real chunks (the mini corpus's documents repeated
with a numbered line each, strategy C, the real model), writes a log of ``--queries`` short
distinct queries (real questions with a number) over 60 days, and measures

- the embedding stage alone: ``embed_with_cache`` of the same number of fresh texts;
- ``traffic import`` of the log (embedding, retrieval, writes; a fresh store each time), and the
  ratio of the two rates (the issue asks >= 0.6 at 100,000 queries x 10,000 chunks);
- the Traffic screen's reads (stored, periods by week, borderline, labelled rates, the last
  period's distributions), cold and warm (the screen caches them; warm = a second call).

``--lines N`` adds N - queries duplicate lines (asked again) to measure the screen at N stored lines.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sys
import tempfile
import time
from datetime import datetime, timedelta
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--queries", type=int, default=2000)
    ap.add_argument("--chunks", type=int, default=1000)
    ap.add_argument("--lines", type=int, default=0, help="stored lines for the screen timings (default: queries)")
    args = ap.parse_args()

    from evalcore.inputs.corpus import load_corpus
    from evalcore.inputs.groundtruth import load_ground_truth
    from evalcore.pipeline.chunking import parse_strategies
    from evalcore.pipeline.embedding import embed_with_cache, load_embedder
    from evalcore.pipeline.runner import RunRequest, run_evaluation
    from evalcore.read import traffic as reads
    from evalcore.records import Configuration
    from evalcore.store import Store
    from evalcore.traffic.replay import import_log

    mini = ROOT / "tests" / "fixtures" / "mini"
    folder = Path(tempfile.mkdtemp(prefix="bench-traffic-"))
    corpus_dir = folder / "corpus"
    corpus_dir.mkdir()
    docs = sorted((mini / "corpus").glob("*.md"))
    copies = max(1, args.chunks // 11)  # strategy C makes about 11 chunks of the mini corpus
    for i in range(copies):
        for d in docs:
            text = d.read_text(encoding="utf-8")
            (corpus_dir / f"{d.stem}-{i}.md").write_text(text + f"\n\nCopy {i} of {d.stem}.\n", encoding="utf-8")
    embedder = load_embedder()
    store = Store(folder / "evalcore.duckdb")
    corpus = load_corpus(corpus_dir)
    gt = load_ground_truth(corpus, mini / "questions.jsonl", ROOT / "tests" / "fixtures" / "gate" / "ood.jsonl")
    t0 = time.perf_counter()
    request = RunRequest(corpus, gt, parse_strategies("C"), ["dense"], name="bench")
    run = run_evaluation(request, store, embedders=[embedder])
    run_s = time.perf_counter() - t0
    n_chunks = int(store.query("SELECT count(*) AS n FROM chunks")["n"].iloc[0])

    base = [json.loads(x)["question"] for x in (mini / "questions.jsonl").read_text().splitlines()]
    rng = random.Random(0)
    start = datetime(2026, 9, 1)
    texts = [f"{rng.choice(base)} (case {i})" for i in range(args.queries)]
    t0 = time.perf_counter()
    embed_with_cache(embedder, [f"warm-up {t}" for t in texts], None)
    embed_s = time.perf_counter() - t0

    total = max(args.lines, args.queries)
    log = folder / "log.jsonl"
    with open(log, "w", encoding="utf-8") as fh:
        for i in range(total):
            text = texts[i] if i < args.queries else texts[rng.randrange(args.queries)]
            at = start + timedelta(seconds=rng.randrange(60 * 86400))
            fh.write(json.dumps({"time": at.isoformat() + "Z", "query": text}) + "\n")
    t0 = time.perf_counter()
    result = import_log(store, f"{run.run_id}:C/dense", log, embedder=embedder)
    import_s = time.perf_counter() - t0

    config = Configuration("C", "dense")
    t = 0.5
    reads_ = {
        "stored": lambda: reads.stored(store, run.run_id, config),
        "periods (week)": lambda: reads.periods(store, run.run_id, config, timedelta(days=7), t),
        "borderline": lambda: reads.borderline(store, run.run_id, config, t, 0.05),
        "labelled rates": lambda: reads.labelled_rates(store, run.run_id, config, t),
        "distributions": lambda: reads.distributions(store, run.run_id, config, timedelta(days=7)),
    }
    cold, warm = {}, {}
    for timings in (cold, warm):  # cold: the first call in a process (imports included)
        for name, fn in reads_.items():
            t0 = time.perf_counter()
            fn()
            timings[name] = round(time.perf_counter() - t0, 3)
    screen = _screen(store.path, run.run_id)
    out = {
        "chunks": n_chunks,
        "queries (distinct)": args.queries,
        "log lines": total,
        "run seconds": round(run_s, 1),
        "embedding stage (queries/s)": round(args.queries / embed_s, 1),
        "import (lines/s)": round(total / import_s, 1),
        "import (distinct queries/s)": round(args.queries / import_s, 1),
        "import / embedding rate": round((args.queries / import_s) / (args.queries / embed_s), 3),
        "import seconds": round(import_s, 2),
        "import embedding seconds": round(result.embedding_seconds, 2),
        "import retrieval seconds": round(result.retrieval_seconds, 2),
        "reads, first call (s)": cold,
        "reads, second call, uncached (s)": warm,
        "reads, second call total (s)": round(sum(warm.values()), 3),
        "Traffic screen (AppTest), first run / warm rerun (s)": screen,
    }
    print(json.dumps(out, indent=2))


def _screen(path: Path, run_id: str) -> list[float]:
    """The Traffic screen run by Streamlit's AppTest: the first run, then a rerun (warm: its
    reads come from the cache until the traffic changes)."""
    from streamlit.testing.v1 import AppTest

    os.environ["EVALCORE_STORE"] = str(path)
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=600)
    at.session_state["run_id"] = run_id
    at.session_state["config"] = "C/dense"
    at.run()
    at.switch_page("evalcore_app/screens/traffic.py")
    out = []
    for _ in range(3):
        t0 = time.perf_counter()
        at.run()
        out.append(round(time.perf_counter() - t0, 3))
        if at.exception:
            raise RuntimeError(at.exception[0].value)
    return out


if __name__ == "__main__":
    main()
