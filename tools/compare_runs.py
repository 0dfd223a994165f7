"""Compare the stored results and hits of two runs (e.g. the same run before and after an
engine change): ranks, correct flags and chunk ids must be equal bit for bit, distances
and scores within a tolerance.

    python tools/compare_runs.py STORE_A RUN_A STORE_B RUN_B [--tol 1e-12]

Prints one line per table and exits 1 when anything differs.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from evalcore.store import Store

KEYS = {"results": ["strategy", "retriever", "query_id"], "hits": ["strategy", "retriever", "query_id", "rank"]}
EXACT = {"results": ["domain", "first_correct_rank", "destroyed"], "hits": ["chunk_id", "correct"]}
CLOSE = {"results": ["answer_distance", "top_distance"], "hits": ["distance", "score"]}


def load(store: str, run_id: str, table: str):
    keys = KEYS[table]
    df = Store(store).query(f"SELECT * FROM {table} WHERE run_id = ?", [run_id])
    return df.drop(columns=["run_id"]).sort_values(keys).reset_index(drop=True)


def main(argv: list[str] | None = None) -> int:
    import numpy as np

    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("store_a")
    p.add_argument("run_a")
    p.add_argument("store_b")
    p.add_argument("run_b")
    p.add_argument("--tol", type=float, default=1e-12, help="largest allowed |a - b| of distances and scores")
    args = p.parse_args(argv)
    bad = 0
    for table in ("results", "hits"):
        a, b = load(args.store_a, args.run_a, table), load(args.store_b, args.run_b, table)
        if len(a) != len(b) or not a[KEYS[table]].equals(b[KEYS[table]]):
            print(f"{table}: different rows ({len(a)} against {len(b)})")
            bad += 1
            continue
        diffs = [c for c in EXACT[table] if not a[c].equals(b[c])]
        worst = 0.0
        for c in CLOSE[table]:
            x, y = a[c].to_numpy(dtype=float), b[c].to_numpy(dtype=float)
            if not np.array_equal(np.isnan(x), np.isnan(y)):
                diffs.append(c + " (missing values)")
                continue
            ok = ~np.isnan(x)
            worst = max(worst, float(np.max(np.abs(x[ok] - y[ok]), initial=0.0)))
        print(
            f"{table}: {len(a)} rows; exact columns {'differ: ' + ', '.join(diffs) if diffs else 'identical'} "
            f"({', '.join(EXACT[table])}); largest |difference| of {', '.join(CLOSE[table])}: {worst:.3g}"
        )
        bad += bool(diffs) or worst > args.tol
    return 1 if bad else 0


if __name__ == "__main__":
    raise SystemExit(main())
