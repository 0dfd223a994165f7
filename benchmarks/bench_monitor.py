"""Monitor benchmark: how long a broken claim takes to be shown ``breached``, and what the
production bounds cost for a version of a year.

    python benchmarks/bench_monitor.py [--versions 100] [--weeks 104] [--rate-factor 2]

- **Detection delay.** ``--versions`` simulated deployment versions (weekly periods of 300 to
  3,000 answered and 100 to 1,000 refused lines, 30 to 90% of the refused lines off-topic), whose
  true bluff rate is ``--rate-factor`` x alpha (alpha 0.05, delta 0.05), get 30 + 30 labels a
  week spread over its days and a look at the monitor every day for up to ``--weeks`` weeks: the
  median (and quartiles) of the labels and of the days until the first ``breached`` (a version
  never breached counts as later than the end), and the share breached by the end. The same
  simulation as the test suite's (tests/measures/test_monitor.py), which checks that a claim
  that holds is ever shown breached in at most a share delta of versions.
- **Cost.** ``monitor()`` and ``rate_bounds()`` for a version of 52 periods (30 + 30 labels each),
  the mean of repeated calls, and their ratio; ``monitor()`` both decided and undecided (the
  latter also estimates the labels that would decide it).

Prints one JSON object with every figure.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # pragma: no cover
    import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from evalcore.measures.monitor import monitor  # noqa: E402
from evalcore.measures.production import Stratum, rate_bounds  # noqa: E402
from tests.measures.test_monitor import _simulate  # noqa: E402


def timed(fn: Callable[[], Any], repeat: int) -> float:
    fn()  # warm: imports, caches
    t0 = time.perf_counter()
    for _ in range(repeat):
        fn()
    return (time.perf_counter() - t0) / repeat


def quartiles(values: np.ndarray, censored_at: float) -> dict[str, float | str]:
    """Quartiles over every version; a version never breached counts as later than
    ``censored_at`` (so a quartile past it reads "> censored_at")."""
    import numpy as np

    out: dict[str, float | str] = {}
    for name, q in (("p25", 25), ("median", 50), ("p75", 75)):
        v = float(np.percentile(values, q, method="inverted_cdf"))
        out[name] = v if np.isfinite(v) else f"> {censored_at:g}"
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--versions", type=int, default=100)
    ap.add_argument("--weeks", type=int, default=104, help="the longest a version is followed")
    ap.add_argument("--rate-factor", type=float, default=2.0, help="the true bluff rate, in multiples of alpha")
    ap.add_argument("--repeat", type=int, default=20)
    args = ap.parse_args()
    import numpy as np

    alpha = delta = 0.05

    t0 = time.perf_counter()
    sim = _simulate(args.versions, args.rate_factor * alpha, weeks=args.weeks, seed=1)
    sim_s = time.perf_counter() - t0
    hit = sim["first"] >= 0
    days = np.where(hit, sim["first"] + 1.0, np.inf)  # day 0 is the first day
    labels = np.where(hit, sim["labels"].astype(float), np.inf)
    by_year = float(np.mean(hit & (sim["first"] < 364)))

    rng = np.random.default_rng(0)
    answered = [Stratum(int(n), 30, int(rng.binomial(30, 0.05))) for n in rng.integers(300, 3001, 52)]
    refused = [Stratum(int(n), 30, int(rng.binomial(30, 0.6))) for n in rng.integers(100, 1001, 52)]
    few = [Stratum(s.lines, 10, i % 2) for i, s in enumerate(answered[:4])]  # 2 of 40 labels off-topic
    few_other = [Stratum(s.lines, 10, 6) for s in refused[:4]]
    decided = monitor(answered, refused, alpha, delta)
    undecided = monitor(few, few_other, alpha, delta)
    t_rate = timed(lambda: rate_bounds(answered, refused, delta), args.repeat)
    t_monitor = timed(lambda: monitor(answered, refused, alpha, delta), args.repeat)
    t_undecided = timed(lambda: monitor(few, few_other, alpha, delta), max(1, args.repeat // 4))
    out = {
        "detection": {
            "true_bluff_rate": args.rate_factor * alpha,
            "alpha": alpha,
            "delta": delta,
            "labels_per_week": "30 + 30",
            "versions": args.versions,
            "weeks_followed": args.weeks,
            "share_breached_within_a_year": by_year,
            "share_breached_by_the_end": float(np.mean(hit)),
            "days_until_breached": quartiles(days, 7 * args.weeks),
            "labels_until_breached": quartiles(labels, 60 * args.weeks),
            "simulation_s": round(sim_s, 2),
        },
        "cost_52_periods": {
            "rate_bounds_ms": round(t_rate * 1e3, 3),
            "monitor_ms": round(t_monitor * 1e3, 3),
            "monitor_over_rate_bounds": round(t_monitor / t_rate, 2),
            "monitor_state": decided.state,
            "monitor_undecided_4_periods_ms": round(t_undecided * 1e3, 3),
            "undecided_labels_to_decide": undecided.labels_to_decide,
        },
    }
    print(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
