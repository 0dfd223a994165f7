"""The long run of the Schemathesis net over every route of ``/api/v1`` (tests/api/schema_net.py),
for a nightly job: the net of tests/api/test_schemathesis.py with many more generated requests,
seeded anew each run unless ``--seed`` is given (the suite's run is derandomized), against a real
``evalcore dashboard`` over a store of two small runs made by the real CLI.

    python benchmarks/schemathesis_long.py [--examples 200] [--anchored 100] [--refused 50]
        [--runs 50] [--steps 20] [--seed N]

Prints, for each part, the requests it sent, the seconds it took and each distinct failure (the
operation, the check, the status, the first request that showed it as an httpx line, and the
answer), then the total of requests. Exit 1 when anything was found, 0 otherwise.
"""

from __future__ import annotations

import argparse
import random
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "tests"), str(ROOT / "tests" / "reliability")]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--examples", type=int, default=200, help="valid and invalid requests an operation (200)")
    parser.add_argument("--anchored", type=int, default=100, help="of them again on things that exist (100)")
    parser.add_argument("--refused", type=int, default=50, help="requests an operation with invalid keys (50)")
    parser.add_argument("--runs", type=int, default=50, help="state machine runs (50)")
    parser.add_argument("--steps", type=int, default=20, help="steps a state machine run (20)")
    parser.add_argument("--seed", type=int, default=None, help="Hypothesis's seed (default: a new one, printed)")
    args = parser.parse_args(argv)
    at = args.seed if args.seed is not None else random.randrange(2**32)

    from api.schema_net import PARTS, run_parts, served_net
    from api_serving import _two_runs

    began = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="evalcore-schemathesis-") as scratch:
        folder = Path(scratch)
        _two_runs(folder)
        print(f"schemathesis net, seed {at}: store made in {time.monotonic() - began:.0f} s", flush=True)
        with served_net(folder / "evalcore.duckdb", folder) as net:
            print(f"{len(net.operations())} operations: {', '.join(op.label for op in net.operations())}")
            parts = run_parts(net, args.examples, args.anchored, args.refused, args.runs, args.steps, at)
            writes = dict(net.writes)
            total = net.requests
        log = (folder / "server.log").read_text(errors="replace")
    found = 0
    for part in PARTS:
        done = parts[part]
        found += len(done.found)
        print(f"\n{part}: {done.requests} requests in {done.seconds:.0f} s, {len(done.found)} distinct failures")
        for line in done.report:
            print(line)
    print(f"\nstateful writes: {writes}")
    print(f"server log: {log.count('Traceback')} tracebacks, {log.count('unexpected ')} lines saying 'unexpected'")
    print(f"{total} requests in all, {found} distinct failures, seed {at}, {time.monotonic() - began:.0f} s")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
