"""``evalcore compare``: one run's (or two runs') configurations and paired win/loss matrix in
the terminal (the text itself is :mod:`evalcore.cli.text.compare_text`)."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from evalcore.cli.shared.common import open_store
from evalcore.cli.shared.options import integer, run_ref
from evalcore.cli.text.compare_text import compare_text
from evalcore.regression.gate import DEFAULT_METRIC

if TYPE_CHECKING:
    from evalcore.cli.shared.options import Subparsers

MIN_WIDTH, MAX_WIDTH = 20, 10_000


def cmd_compare(args: argparse.Namespace) -> int:
    print(compare_text(open_store(args), args.run, args.run2, metric=args.metric, holm=args.holm, width=args.width))
    return 0


def add_compare(sub: Subparsers) -> None:
    sp = sub.add_parser(
        "compare",
        help="per-configuration table and paired win/loss matrix in the terminal",
        description="Print recall@1/4/8/20 with 95%% Wilson intervals, MRR and destroyed answers per "
        "configuration, and the paired win/loss matrix (exact sign tests at hit@k) of one run "
        "or of two runs on the same queries.",
    )
    run_ref(sp)
    sp.add_argument(
        "run2", nargs="?", default=None, help="a second run on the same queries: its configurations join the matrix"
    )
    sp.add_argument(
        "--metric", default=DEFAULT_METRIC, help=f"hit@k or recall@k for the matrix (default {DEFAULT_METRIC})"
    )
    sp.add_argument("--holm", action="store_true", help="Holm-adjust the matrix's p-values over all its pairs")
    sp.add_argument(
        "--width",
        type=integer("--width", MIN_WIDTH, MAX_WIDTH),
        default=None,
        metavar="COLUMNS",
        help=f"fit the output to this many columns, {MIN_WIDTH} to {MAX_WIDTH} (default: the terminal's width)",
    )
    sp.set_defaults(func=cmd_compare)
