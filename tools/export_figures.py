"""Export the README's pictures from a stored run: the same figures the dashboard draws
(evalcore.figures.build), with their caption drawn in, as its Export screen writes them.

    python tools/export_figures.py [--store PATH] [--run RUN_ID] [--config G/dense] [--k 20] [--out docs]

Writes compare-matrix.png (the win/loss matrix at hit@k between the strategies of one
retriever, Holm-adjusted over those pairs) and threshold.png (the threshold sweep as rates
with Wilson bands, at the latest saved decision for --config, else the suggestion at cost
ratio 3), each with its caption in a .txt beside it.
"""

from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from evalcore.figures import build as figures
from evalcore.files import figure_files as export
from evalcore.measures.suggestion import DEFAULT_COST_RATIO, suggest_threshold
from evalcore.read import decisions, runs, sweeps
from evalcore.records import Configuration
from evalcore.store import Store


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--store", default=None, help="run store (default $EVALCORE_STORE or runs/evalcore.duckdb)")
    p.add_argument("--run", default=None, help="run id (default: the newest complete demo run)")
    p.add_argument("--config", default="G/dense", help="configuration of the threshold chart")
    p.add_argument("--k", type=int, default=20, help="hit@k of the matrix")
    p.add_argument("--retriever", default="dense", help="matrix over the strategies of this retriever")
    p.add_argument("--out", default="docs")
    args = p.parse_args()
    store = Store(args.store)
    run_id = args.run or store.latest_complete("demo") or store.latest_complete()
    if run_id is None:
        print("no complete run in the store; run: python -m evalcore demo", file=sys.stderr)
        return 2
    try:
        config = Configuration.parse(args.config)
    except ValueError as exc:
        print(f"--config: {exc}", file=sys.stderr)
        return 2
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)

    sides = tuple(s for s in runs.run_configurations(store, run_id) if s.configuration.retriever == args.retriever)
    if len(sides) < 2:
        print(f"run {run_id} has fewer than two configurations with retriever {args.retriever!r}", file=sys.stderr)
        return 2
    matrix = figures.matrix_figure(store, sides, args.k, True)
    decision = decisions.latest_decision(store, run_id, config)
    if decision is not None:
        t = decision.threshold
    else:
        t = suggest_threshold(sweeps.run_sweep(store, run_id, config), cost_ratio=DEFAULT_COST_RATIO).threshold
        t = t if math.isfinite(t) else 0.5
    sweep = figures.sweep_figure(store, run_id, config, t, rates=True)
    for name, figure in (("compare-matrix", matrix), ("threshold", sweep)):
        (out / f"{name}.png").write_bytes(export.to_png(figure))
        (out / f"{name}.txt").write_text(figure.caption + "\n", encoding="utf-8")
        print(f"{out / (name + '.png')}: {figure.caption}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
