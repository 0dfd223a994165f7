"""Benchmark: the exact threshold sweep on 10,000 in-domain and 10,000 out-of-domain queries.

Prints figures; not a test. Target: well under a second for sweep().

    python benchmarks/bench_sweep.py [--queries 10000] [--top 4] [--seed 7]
"""

from __future__ import annotations

import argparse
import random
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from evalcore.measures.suggestion import suggest_threshold
from evalcore.measures.threshold import state_at, sweep


def generate(queries: int, top: int, seed: int) -> tuple[dict, dict]:
    """In-domain hits: a correct chunk somewhere in the top `top` for ~70% of queries, with
    distances around 0.55; out-of-domain top hits around 0.7 (overlapping, as in the seed)."""
    rng = random.Random(seed)
    in_domain = {}
    for q in range(queries):
        distances = sorted(rng.gauss(0.55, 0.08) for _ in range(top))
        correct_at = rng.randrange(top) if rng.random() < 0.7 else None
        in_domain[f"in{q}"] = [(d, i == correct_at) for i, d in enumerate(distances)]
    out_domain = {f"out{q}": sorted(rng.gauss(0.7, 0.08) for _ in range(top)) for q in range(queries)}
    return in_domain, out_domain


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--queries", type=int, default=10_000, help="queries per domain")
    parser.add_argument("--top", type=int, default=4, help="hits per query")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()

    in_domain, out_domain = generate(args.queries, args.top, args.seed)
    sweep(in_domain, out_domain, top=args.top)  # warm-up: lazy imports
    times = []
    for _ in range(args.repeat):
        start = time.perf_counter()
        frame = sweep(in_domain, out_domain, top=args.top)
        times.append(time.perf_counter() - start)
    start = time.perf_counter()
    for t in (0.45, 0.525, 0.6, 0.675):
        state_at(frame, t)
    lookup = (time.perf_counter() - start) / 4
    start = time.perf_counter()
    suggestion = suggest_threshold(frame, cost_ratio=3.0)
    suggest = time.perf_counter() - start

    print(f"queries: {len(in_domain)} in-domain + {len(out_domain)} out-of-domain, {args.top} hits each")
    print(f"sweep rows (steps): {len(frame)}")
    print(
        f"sweep(): best {min(times) * 1000:.1f} ms, median {sorted(times)[len(times) // 2] * 1000:.1f} ms "
        f"over {args.repeat} runs"
    )
    print(f"state_at(): {lookup * 1e6:.0f} us per lookup")
    print(
        f"suggest_threshold(cost_ratio=3): {suggest * 1000:.1f} ms -> t = {suggestion.threshold} "
        f"({suggestion.bluffs} bluffs, {suggestion.lost} lost)"
    )


if __name__ == "__main__":
    main()
