"""Export the README's pictures from a stored run (the same charts the dashboard draws).

    python tools/export_figures.py [--run RUN_ID] [--config E/dense] [--k 20] [--out docs]

Writes compare-matrix.png (win/loss at hit@k between the strategies of one retriever, Holm-adjusted) and threshold.png (the sweep
with the suggested threshold at cost ratio 3), each with its caption in a .txt beside it.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from evalcore import charts, export, report  # noqa: E402
from evalcore.store import Store  # noqa: E402


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--store", default=None)
    p.add_argument("--run", default=None, help="run id (default: the newest complete demo run)")
    p.add_argument("--config", default="E/dense", help="configuration of the threshold chart")
    p.add_argument("--k", type=int, default=20, help="hit@k of the matrix")
    p.add_argument("--retriever", default="dense", help="matrix over the strategies of this retriever ('' for all)")
    p.add_argument("--cost", type=float, default=3.0, help="one bluff = N lost answers")
    p.add_argument("--out", default="docs")
    args = p.parse_args()
    store = Store(args.store)
    run_id = args.run or store.latest_complete("demo") or store.latest_complete()
    if run_id is None:
        print("no complete run in the store; run: python -m evalcore demo", file=sys.stderr)
        return 2
    run = store.run(run_id)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)

    only = [c for c in report.configurations(store, run_id) if c.endswith("/" + args.retriever)] \
        if args.retriever else None
    matrix = report.win_loss(store, run_id, args.k, adjust=True, only=only)
    n = int(matrix["n"].iloc[0])
    what = f"Win/loss matrix at hit@{args.k}" + (f", {args.retriever} retriever" if args.retriever else "")
    figures = [export.Figure("compare-matrix", what, charts.heatmap(matrix, args.k, True), matrix,
                             export.caption(run, what, "all pairs", n, report.PAIRED_TEST + ", Holm-adjusted"))]
    sweep = report.sweep(store, run_id, args.config)
    suggestion = report.suggest(sweep, cost_ratio=args.cost)
    t = suggestion.threshold
    total = int(sweep["in_domain"].iloc[0] + sweep["out_domain"].iloc[0])
    figures.append(export.Figure(
        "threshold", "Threshold sweep", charts.sweep_chart(report.sweep_long(sweep), t, False), sweep,
        export.caption(run, f"Threshold sweep (counts), t = {t:.4f} ({suggestion.rule})", args.config, total)))
    for f in figures:
        (out / f"{f.slug}.png").write_bytes(export.to_png(f.chart))
        (out / f"{f.slug}.txt").write_text(f.caption + "\n", encoding="utf-8")
        print(f"{out / (f.slug + '.png')}: {f.caption}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
