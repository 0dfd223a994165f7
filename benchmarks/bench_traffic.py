"""Traffic benchmark: import rate against the embedding stage's rate, bounded memory over a long
log, and the Traffic screen's reads.

    HF_HUB_OFFLINE=1 python benchmarks/bench_traffic.py --queries 2000 --chunks 1000 --lines 20000
    HF_HUB_OFFLINE=1 python benchmarks/bench_traffic.py --queries 100000 --chunks 10000 --lines 1000000

Builds a dense configuration of ``--chunks`` real chunks (the mini corpus's documents repeated
with a numbered line each, strategy C, the real model), writes a log of ``--queries`` short
distinct queries (real questions with a number) over 60 days, and measures, in one process:

- the embedding stage alone: ``embed_with_cache`` of as many fresh texts of the same length, before
  and after the import (their mean is the rate the import is compared with);
- ``traffic import`` of that log (embedding, retrieval, writes), and the ratio of the two rates
  (the issue asks >= 0.6 at 100,000 queries x 10,000 chunks);
- ``traffic import`` of a log of ``--lines`` lines (the first log again, then lines asking its
  queries again: nothing to embed, every line read, checked and written), with the peak resident
  memory while it runs (the issue asks bounded memory at 1,000,000 lines);
- the Traffic screen's reads at ``--lines`` stored lines (stored, periods by week, borderline,
  labelled rates, the claim on real off-topic lines, the last period's histogram): the first call
  and a second one (both uncached), and the screen itself run by Streamlit's AppTest, a first run
  then warm reruns (the screen's cache holds its reads until the store changes);
- the peak resident memory of each phase and of the whole process.

Prints one JSON object with every figure.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import sys
import tempfile
import threading
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
    ap.add_argument("--lines", type=int, default=20000, help="lines of the long log, stored for the screen timings")
    args = ap.parse_args()

    from evalcore.chunking import parse_strategies
    from evalcore.embedding.embedder import load_embedder
    from evalcore.embedding.vector_cache import embed_with_cache
    from evalcore.figures import traffic_charts
    from evalcore.inputs.corpus import load_corpus
    from evalcore.inputs.groundtruth import load_ground_truth
    from evalcore.read.traffic import periods as periods_read
    from evalcore.read.traffic import stored as reads
    from evalcore.records import Configuration
    from evalcore.run.runner import RunRequest, run_evaluation
    from evalcore.store import Store
    from evalcore.traffic.log import LogFields
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
            if i:  # only the first copy holds the needles, so every question has one correct place
                text = text.replace("o", "0")
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
    picked = [rng.choice(base) for _ in range(args.queries)]
    texts = [f"{q} (case {i})" for i, q in enumerate(picked)]

    def embedding_stage(word: str) -> float:
        """Seconds to embed texts as long as the log's, but not cached anywhere ("item" for "case")."""
        t0 = time.perf_counter()
        embed_with_cache(embedder, [f"{q} ({word} {i})" for i, q in enumerate(picked)], None)
        return time.perf_counter() - t0

    with Peak() as peak_embed:
        embed_before = embedding_stage("item")

    def write_log(path: Path, n: int) -> None:
        at = random.Random(1)  # the same times for the same line in both logs
        again = random.Random(2)
        with open(path, "w", encoding="utf-8") as fh:
            for i in range(n):
                text = texts[i] if i < args.queries else texts[again.randrange(args.queries)]
                when = start + timedelta(seconds=at.randrange(60 * 86400))
                label = ("off-topic" if i % 10 == 0 else "answerable") if i % 5 == 0 else ""
                fh.write(json.dumps({"time": when.isoformat() + "Z", "query": text, "label": label}) + "\n")

    fields = LogFields(label="label")
    log = folder / "queries.jsonl"
    write_log(log, args.queries)
    ref = f"{run.run_id}:C/dense"
    with Peak() as peak_import:
        t0 = time.perf_counter()
        first = import_log(store, ref, log, fields, embedder=embedder)
        import_s = time.perf_counter() - t0
    embed_after = embedding_stage("unit")  # again after the import: a machine whose load changed shows here
    embed_s = (embed_before + embed_after) / 2
    total = max(args.lines, args.queries)
    long_log = folder / "lines.jsonl"
    write_log(long_log, total)
    with Peak() as peak_lines:
        t0 = time.perf_counter()
        second = import_log(store, ref, long_log, fields, embedder=embedder)
        lines_s = time.perf_counter() - t0
    assert second.already == args.queries and second.added == total - args.queries, second.as_dict()

    config = Configuration("C", "dense")
    t = 0.5
    week = timedelta(days=7)
    reads_ = {
        "stored": lambda: reads.stored(store, run.run_id, config),
        "periods (week)": lambda: periods_read.periods(store, run.run_id, config, week, t),
        "histogram (chart spec)": lambda: traffic_charts.histogram_spec(store, run.run_id, config, week, None, t),
        "borderline": lambda: reads.borderline(store, run.run_id, config, t, 0.05),
        "labelled rates": lambda: reads.labelled_rates(store, run.run_id, config, t),
        "claims (real traffic, evaluation)": lambda: reads.traffic_claims(store, run.run_id, config),
    }
    cold, again = {}, {}
    with Peak() as peak_reads:
        for timings in (cold, again):  # cold: the first call in a process (imports included)
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
        "embedding stage seconds, before / after the import": [round(embed_before, 2), round(embed_after, 2)],
        "import (queries/s)": round(args.queries / import_s, 1),
        "import seconds": round(import_s, 2),
        "import embedding seconds": round(first.embedding_seconds, 2),
        "import retrieval seconds": round(first.retrieval_seconds, 2),
        "import / embedding rate": round(embed_s / import_s, 3),
        "import / embedding rate, against before / after": [
            round(embed_before / import_s, 3),
            round(embed_after / import_s, 3),
        ],
        f"import of {total:,} lines (lines/s)": round(total / lines_s, 1),
        f"import of {total:,} lines seconds": round(lines_s, 2),
        "reads at stored lines": int(reads.stored(store, run.run_id, config).lines),
        "reads, first call (s)": cold,
        "reads, first call total (s)": round(sum(cold.values()), 3),
        "reads, second call, uncached (s)": again,
        "reads, second call total (s)": round(sum(again.values()), 3),
        "Traffic screen (AppTest): first run, then warm reruns (s)": screen,
        "peak RSS MiB: embedding stage": peak_embed.mib,
        "peak RSS MiB: import": peak_import.mib,
        f"peak RSS MiB: import of {total:,} lines": peak_lines.mib,
        f"RSS MiB at the start of the import of {total:,} lines": peak_lines.start,
        "peak RSS MiB: reads and screen": peak_reads.mib,
        "peak RSS MiB: whole process": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
        "store MiB": round(store.path.stat().st_size / 2**20, 1),
    }
    print(json.dumps(out, indent=2))


class Peak:
    """The peak resident memory (MiB) while the ``with`` block runs, sampled every 20 ms from
    /proc/self/status (ru_maxrss only ever gives the whole process's peak)."""

    def __init__(self) -> None:
        self.mib = 0.0
        self.start = 0.0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)

    def _sample(self) -> None:
        while True:
            self.mib = max(self.mib, _rss_mib())
            if self._stop.wait(0.02):
                return

    def __enter__(self) -> Peak:
        self.start = round(_rss_mib(), 1)
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()
        self.mib = round(max(self.mib, _rss_mib()), 1)


def _rss_mib() -> float:
    try:
        with open("/proc/self/status", encoding="ascii") as fh:
            for line in fh:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    return 0.0


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
