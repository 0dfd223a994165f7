"""``evalcore threshold``: the refusal threshold claim of each configuration of a run."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from evalcore.boundary.numbers import bounded_float, bounded_int
from evalcore.cli import remote
from evalcore.cli.shared.common import open_store, print_json
from evalcore.cli.shared.options import json_option
from evalcore.cli.text.claims_text import print_claims
from evalcore.measures.claim import DEFAULT_ALPHA, DEFAULT_BETA, DEFAULT_CONFIDENCE, MIN_RATE
from evalcore.read.claims import claims_of_ref

if TYPE_CHECKING:
    from evalcore.cli.shared.options import Subparsers

#: The most held-out splits ``--splits`` takes. A split costs about a millisecond per
#: configuration (2,000 off-topic and 10,000 real questions), so this many take seconds per
#: configuration; beyond it the share's sampling error (under 0.5 points) no longer shrinks
#: enough to be worth the wait.
MAX_SPLITS = 10_000


def cmd_threshold(args: argparse.Namespace) -> int:
    alpha, beta = (
        bounded_float(text, option=option, low=MIN_RATE, high=1.0, high_open=True)
        for text, option in ((args.max_bluff_rate, "--max-bluff-rate"), (args.max_lost_rate, "--max-lost-rate"))
    )
    confidence = bounded_float(args.confidence, option="--confidence", low=0.0, high=1.0, low_open=True, high_open=True)
    if args.server:
        return remote.remote_threshold(args, alpha, beta, confidence)
    splits = None if args.splits is None else bounded_int(args.splits, option="--splits", low=1, high=MAX_SPLITS)
    run, found = claims_of_ref(open_store(args), args.run, alpha, beta, confidence, splits)
    if args.json:
        print_json([c.to_json() for c in found])
        return 0

    print_claims(run.run_id, run.name, found, alpha, beta, confidence, splits)
    return 0


def add_threshold(sub: Subparsers) -> None:
    sp = sub.add_parser(
        "threshold",
        help="the refusal threshold claim: bluffs <= alpha with confidence, lost answers <= beta",
        description="For each configuration of a run, the refusal threshold with a statistical guarantee "
        "(exact binomial bounds; see docs/METHODS.md): the largest threshold at which the bluff rate "
        "is at most --max-bluff-rate with --confidence, where the lost rate is at most "
        "--max-lost-rate, whether both can hold, and how well real and off-topic questions separate "
        "(AUC). Exit 2 for bad input.",
    )
    sp.add_argument("run", metavar="RUN[:CONFIG]", help="run id, id prefix or name; CONFIG like C/dense (default: all)")
    # numbers are read by evalcore.boundary.numbers in cmd_threshold (one message for a bad value)
    sp.add_argument(
        "--max-bluff-rate",
        default=repr(DEFAULT_ALPHA),
        metavar="A",
        help=f"alpha, in [{MIN_RATE:g}, 1) (default {DEFAULT_ALPHA})",
    )
    sp.add_argument(
        "--max-lost-rate",
        default=repr(DEFAULT_BETA),
        metavar="B",
        help=f"beta, in [{MIN_RATE:g}, 1) (default {DEFAULT_BETA})",
    )
    sp.add_argument(
        "--confidence",
        default=repr(DEFAULT_CONFIDENCE),
        metavar="C",
        help=f"1 - delta, in (0, 1) (default {DEFAULT_CONFIDENCE})",
    )
    sp.add_argument(
        "--splits",
        default=None,
        metavar="N",
        help=f"held-out check over N seeded random halvings, 1 to {MAX_SPLITS:,} (the screen uses 200)",
    )
    json_option(sp, "print a JSON list, one object per configuration")
    sp.set_defaults(func=cmd_threshold)
