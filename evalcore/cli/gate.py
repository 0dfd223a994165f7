"""``evalcore gate``: the CI regression gate (exit 1 when a candidate run is significantly worse
than a baseline)."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING

from evalcore.boundary.numbers import bounded_float
from evalcore.cli import remote
from evalcore.cli.shared.common import open_store, write_text
from evalcore.regression.gate import DEFAULT_ALPHA, DEFAULT_METRIC, run_gate
from evalcore.regression.report import render, to_junit

if TYPE_CHECKING:
    from evalcore.cli.shared.options import Subparsers


def cmd_gate(args: argparse.Namespace) -> int:
    alpha = bounded_float(args.alpha, option="--alpha", low=0.0, high=1.0, low_open=True, high_open=True)
    min_effect = (
        None if args.min_effect is None else bounded_float(args.min_effect, option="--min-effect", low=0.0, high=1.0)
    )
    if args.server:
        return remote.remote_gate(args, alpha, min_effect)
    report = run_gate(
        open_store(args),
        args.baseline,
        args.candidate,
        metric=args.metric,
        alpha=alpha,
        holm=args.holm,
        min_effect=min_effect,
        threshold_from_decision=args.threshold_from_decision,
    )
    if args.junit:
        write_text(Path(args.junit), to_junit(report), "--junit")
    print(render(report, args.format))
    return report.exit_code


def add_gate(sub: Subparsers) -> None:
    sp = sub.add_parser(
        "gate",
        help="fail (exit 1) when a candidate run is significantly worse than a baseline",
        description="Compare a candidate run with a baseline on the same queries, configuration by "
        "configuration: paired exact sign test on hit@k (wins = queries only the candidate "
        "finds), Holm-adjusted over several configurations. Exit 0: none significantly worse; "
        "1: at least one is; 2: bad input (unknown run or configuration, different queries, "
        "incomplete run).",
    )
    sp.add_argument(
        "--baseline",
        required=True,
        metavar="REF",
        help="RUN or RUN:CONFIG; RUN is a run id (a unique prefix is enough) or a run name "
        "(its newest complete run), CONFIG like G/hybrid",
    )
    sp.add_argument(
        "--candidate",
        required=True,
        metavar="REF",
        help="RUN or RUN:CONFIG, as for --baseline; without CONFIG on either side every "
        "configuration both runs have is compared",
    )
    sp.add_argument("--metric", default=DEFAULT_METRIC, help=f"hit@k or recall@k (default {DEFAULT_METRIC})")
    # numbers are read by evalcore.boundary.numbers in cmd_gate (one message for a bad value)
    sp.add_argument(
        "--alpha", default=repr(DEFAULT_ALPHA), help=f"significance level in (0, 1) (default {DEFAULT_ALPHA:g})"
    )
    sp.add_argument(
        "--holm",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="Holm-adjust p over the configurations compared (default on; --no-holm for unadjusted p)",
    )
    sp.add_argument(
        "--min-effect",
        default=None,
        metavar="D",
        help="also fail when the candidate's metric is lower by D or more (D in [0, 1], e.g. 0.05), significant or not",
    )
    sp.add_argument(
        "--threshold-from-decision",
        action="store_true",
        help="also fail when, at the baseline's latest saved threshold for a configuration, "
        "the candidate bluffs on significantly more out-of-domain queries (paired)",
    )
    sp.add_argument(
        "--format",
        choices=["text", "markdown", "json"],
        default="text",
        help="report format on stdout (default text; markdown fits a pull-request comment)",
    )
    sp.add_argument(
        "--junit",
        default=None,
        metavar="FILE",
        help="also write the verdicts as JUnit XML to FILE (one test case per configuration)",
    )
    sp.set_defaults(func=cmd_gate)
