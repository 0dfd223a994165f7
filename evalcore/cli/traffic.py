"""``evalcore traffic import|check|sample|forget|export``: the command-line side of evalcore.traffic.replay.

Registered by :func:`add_parser` from evalcore.cli; errors the user can fix are EvalcoreErrors
(one line, exit 2) as everywhere in the CLI.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from datetime import datetime
from pathlib import Path
from typing import Any

from evalcore.authors import os_author
from evalcore.boundary.csvcells import csv_text
from evalcore.boundary.files import write_path_atomic
from evalcore.boundary.numbers import bounded_float
from evalcore.boundary.text import for_terminal
from evalcore.boundary.times import parse_time
from evalcore.cli import remote
from evalcore.cli.shared.common import open_store
from evalcore.cli.shared.options import integer, number
from evalcore.embedding.embedder import load_embedder
from evalcore.errors import ConfigError, InputError
from evalcore.measures.stats import ALPHA
from evalcore.progress import BarProgress
from evalcore.read.decisions import latest_decision
from evalcore.read.refs import resolve_run
from evalcore.read.traffic.stored import export_frame
from evalcore.traffic.check import CheckReport, find_version, run_check, run_deployment_check
from evalcore.traffic.forgetting import forget
from evalcore.traffic.log import FORMATS, LogFields
from evalcore.traffic.replay import import_log
from evalcore.traffic.sampling import draw_samples
from evalcore.traffic.target import resolve_target


def cmd_import(args: argparse.Namespace) -> int:
    if args.server:
        return remote.cmd_traffic_import(args)

    if args.deployment is not None:
        raise ConfigError("--deployment names where a log goes on a service: give it with --server URL")
    if not args.run:
        raise ConfigError("traffic import needs --run RUN or RUN:STRATEGY/RETRIEVER (or --server and --deployment)")
    embedder = load_embedder(args.model) if args.model else None
    result = import_log(
        open_store(args),
        args.run,
        args.log,
        LogFields(args.query_field, args.time_field, args.label_field or None),
        args.format,
        embedder=embedder,
        reranker_path=args.reranker,
        headers=args.header,
        progress=BarProgress(enabled=not args.quiet),
    )
    for line in result.shown:
        print(for_terminal(f"warning: {args.log}: {line} (not imported)"), file=sys.stderr)
    if result.problems > len(result.shown):
        print(f"warning: ... and {result.problems - len(result.shown)} more lines not imported", file=sys.stderr)
    if args.json:
        print(json.dumps(result.as_dict(), indent=2, default=str))
        return 0
    rate = result.added / result.seconds if result.seconds else 0.0
    print(
        f"{result.source} -> run {result.run_id} {result.configuration}: {result.lines} lines read, "
        f"{result.added} stored ({result.new_texts} distinct texts scored), {result.already} already stored, "
        f"{result.problems} not usable; {result.seconds:.1f} s ({rate:.0f} lines/s)"
    )
    return 0


def cmd_check(args: argparse.Namespace) -> int:
    share = args.max_refused_share
    share = None if share is None else bounded_float(share, option="--max-refused-share", low=0.0, high=1.0)
    t = args.threshold
    t = None if t is None else bounded_float(t, option="--threshold", low=-math.inf, high=math.inf)
    report: CheckReport
    if args.deployment is not None:
        if t is not None:
            raise ConfigError(
                "--threshold and --deployment: a deployment is judged at its deployed t; drop --threshold "
                "(or judge another t with --run RUN:STRATEGY/RETRIEVER --threshold T)"
            )
        low = args.min_refused_share
        low = None if low is None else bounded_float(low, option="--min-refused-share", low=0.0, high=1.0)
        report = run_deployment_check(
            open_store(args),
            args.deployment,
            args.period,
            share,
            args.include_partial,
            min_refused_share=low,
            fail_on_drift=args.fail_on_drift,
        )
    else:
        for given, option in (
            (args.include_partial, "--include-partial"),
            (args.min_refused_share is not None, "--min-refused-share"),
            (args.fail_on_drift, "--fail-on-drift"),
        ):
            if given:
                raise ConfigError(
                    f"{option} goes with --deployment NAME (--run judges the last period, ended or not, and fails "
                    "on drift: it has no claim to watch)"
                )
        report = run_check(open_store(args), args.run, args.period, t, share)
    if args.json:
        print(json.dumps(report.as_json(), indent=2))
    else:
        print(report.text())
    return report.exit_code


def _day(text: str) -> datetime:
    """``--before`` as a naive UTC datetime (:func:`evalcore.boundary.times.parse_time`)."""
    return parse_time(text, field="--before").replace(tzinfo=None)


def cmd_sample(args: argparse.Namespace) -> int:
    """``traffic sample``: draw the frames of the periods that have ended (evalcore.traffic.sampling)."""
    store = open_store(args)
    found = find_version(store, args.deployment)
    report = draw_samples(
        store, found.name, answered=args.answered, refused=args.refused, version=args.version, period=args.period,
        author=os_author(),
    )  # fmt: skip
    print(json.dumps(report.to_json(), indent=2) if args.json else for_terminal(report.text()))
    return 0


def cmd_forget(args: argparse.Namespace) -> int:
    store = open_store(args)
    if not store.path.exists():
        raise InputError(f"{store.path}: no run store there")
    run_id = None
    if args.run:
        run_id = resolve_run(store, args.run).run_id
    before = _day(args.before)
    done = forget(store, before, run_id)
    print(
        f"forgot {done.lines} logged queries asked before {before:%Y-%m-%d %H:%M} UTC and {done.texts} query texts; "
        f"store rewritten ({done.bytes_before:,} -> {done.bytes_after:,} bytes), so no free page keeps them"
    )
    return 0


def cmd_export(args: argparse.Namespace) -> int:
    store = open_store(args)
    target = resolve_target(store, args.run)
    threshold = args.threshold
    if threshold is None:
        decision = latest_decision(store, target.run_id, target.configuration)
        if decision is None:
            raise ConfigError(f"{target.configuration.label} has no saved decision; give --threshold T")
        threshold = decision.threshold
    frame = export_frame(store, target.run_id, target.configuration, float(threshold), with_text=args.with_text)

    out = write_path_atomic(Path(args.output), csv_text(frame))
    what = (
        "with query text (a text a spreadsheet would run as a formula starts with ')"
        if args.with_text
        else "without query text (give --with-text to include it)"
    )
    print(f"wrote {len(frame)} logged queries of {target.configuration.label} to {out}, {what}")
    return 0


def add_parser(sub: Any) -> None:
    """The ``traffic`` command and its subcommands."""
    tp = sub.add_parser(
        "traffic",
        help="replay production queries against a configuration and watch its threshold",
        description="Import query logs (replayed against one configuration of a run), check the last period "
        "for a scheduled job, export or forget stored queries. See docs/TRAFFIC.md.",
    )
    tsub = tp.add_subparsers(
        dest="traffic_command", required=True, metavar="SUBCOMMAND", help="import, check, sample, forget or export"
    )

    sp = tsub.add_parser(
        "import",
        help="replay a query log against RUN[:STRATEGY/RETRIEVER] and store it",
        description="Embed each logged query with the run's model, retrieve it as the run did and store it with "
        "its time, top hits and gate value. A re-import of the same log adds nothing.",
    )
    sp.add_argument("log", help="the log file: .csv, .jsonl or .parquet")
    sp.add_argument(
        "--run",
        default=None,
        help="RUN or RUN:STRATEGY/RETRIEVER (RUN alone: the configuration of its latest saved decision); "
        "required without --server",
    )
    sp.add_argument(
        "--deployment",
        default=None,
        metavar="NAME",
        help="with --server: the deployment whose traffic the log is (its lines are posted to the service)",
    )
    sp.add_argument("--query-field", default="query", help="the field holding the query text (default query)")
    sp.add_argument("--time-field", default="time", help="the field holding the time, ISO 8601 or epoch seconds")
    sp.add_argument(
        "--label-field",
        default="label",
        help="the field with answerable / off-topic, read when a line has it (default label; '' reads no label)",
    )
    sp.add_argument("--format", choices=FORMATS, default=None, help="default: from the name")
    sp.add_argument("--model", default=None, help="the run's model folder (default: the packaged model)")
    sp.add_argument("--reranker", default=None, help="the cross-encoder folder of a rerank configuration")
    sp.add_argument(
        "--header",
        action="append",
        default=[],
        metavar="'NAME: VALUE'",
        help="a header an endpoint run sent (repeatable; values are never stored)",
    )
    sp.add_argument("--json", action="store_true", help="print the import's counts as JSON")
    sp.add_argument("-q", "--quiet", action="store_true", help="no progress bar")
    sp.set_defaults(func=cmd_import)

    sp = tsub.add_parser(
        "check",
        help="exit 1 when a deployment's claim is breached or its refused share leaves the range given",
        description="With --deployment NAME: the lines that deployment posted while its current version was "
        "deployed, at that version's decision (t and configuration), in periods from 00:00 UTC of the version's "
        "first day; only the last period that has ended is judged (--include-partial: the periods not ended "
        "too). It exits 1 when the monitor finds the bluff or lost claim breached on the labelled review sample "
        "(anytime-valid), or a judged period's refused share lies outside [--min-refused-share, "
        "--max-refused-share]; drift is described and fails it only with --fail-on-drift. With --run: every "
        "stored line of the configuration, in periods from 00:00 UTC of the earliest query's day; the last "
        f"period fails above --max-refused-share or when its gate values drifted (KS, alpha {ALPHA:g}, Holm "
        "over the tests run). Exit 0 otherwise, 2 on bad input. See docs/TRAFFIC.md.",
    )
    which = sp.add_mutually_exclusive_group(required=True)
    which.add_argument(
        "--deployment",
        default=None,
        metavar="NAME",
        help="judge this deployment's current version on the lines it posted (its decision's t and configuration)",
    )
    which.add_argument("--run", default=None, help="RUN or RUN:STRATEGY/RETRIEVER: every stored line of it")
    sp.add_argument("--period", default="7d", help="period length: 7d, 1d, 12h, 2w (default 7d)")
    sp.add_argument(
        "--threshold", default=None, help="with --run: a number (default: the configuration's latest decision)"
    )
    sp.add_argument("--max-refused-share", default=None, help="fail above this share, in [0, 1]")
    sp.add_argument("--min-refused-share", default=None, help="with --deployment: fail below this share, in [0, 1]")
    sp.add_argument(
        "--fail-on-drift",
        action="store_true",
        help="with --deployment: fail when a judged period's gate values drifted (KS, Holm); a change in the mix "
        "of in-domain and off-topic questions moves them too, so by default drift only describes",
    )
    sp.add_argument(
        "--include-partial",
        action="store_true",
        help="with --deployment: judge the periods that have not ended yet too (default: only the last ended one)",
    )
    sp.add_argument("--json", action="store_true", help="print the report as JSON")
    sp.set_defaults(func=cmd_check)

    add_sample(tsub)

    sp = tsub.add_parser(
        "forget",
        help="delete stored queries asked before a date, for real",
        description="Delete every stored logged query asked before DATE (00:00 UTC), the texts no remaining "
        "query uses and their hits and labels, then rewrite the store so no free page keeps them.",
    )
    sp.add_argument(
        "--before", required=True, help="a date (2026-11-01) or ISO 8601 time; without an offset read as UTC"
    )
    sp.add_argument("--run", default=None, help="only this run's traffic (default: all)")
    sp.set_defaults(func=cmd_forget)

    sp = tsub.add_parser(
        "export",
        help="write the stored queries of a configuration to CSV (no query text unless --with-text)",
        description="One row per logged query: time, log file and line, text hash, gate value, refused at T, "
        "label. Query texts may hold personal data: they are left out unless --with-text.",
    )
    sp.add_argument("output", help="the CSV file to write")
    sp.add_argument("--run", required=True, help="RUN or RUN:STRATEGY/RETRIEVER")
    sp.add_argument(
        "--threshold",
        type=number("--threshold", -math.inf, math.inf),
        default=None,
        help="default: the configuration's latest decision",
    )
    sp.add_argument("--with-text", action="store_true", help="include the query texts")
    sp.set_defaults(func=cmd_export)


def add_sample(tsub: Any) -> None:
    """``traffic sample``: the review sample of a deployment (docs/TRAFFIC.md "The review sample")."""
    sp = tsub.add_parser(
        "sample",
        help="draw the review sample of a deployment's periods that have ended (what to label)",
        description="For each version of the deployment, each 7-day review period that has ended gets its sampling "
        "frame once: its lines stored by then, split by what the gate did at the deployed t into answered and "
        "refused, each in a seeded random order; the sample is the first N lines of each order (inclusion N/lines). "
        "A period whose drift test moved gets twice the lines. Run again with larger sizes to take more lines: the "
        "same order goes on. See docs/TRAFFIC.md.",
    )
    sp.add_argument("--deployment", required=True, metavar="NAME", help="the deployment whose lines are sampled")
    sp.add_argument(
        "--answered",
        default=None,
        metavar="N",
        help="lines of the answered stratum (default $EVALCORE_REVIEW_ANSWERED or 30)",
    )
    sp.add_argument(
        "--refused",
        default=None,
        metavar="N",
        help="lines of the refused stratum (default $EVALCORE_REVIEW_REFUSED or 30)",
    )
    sp.add_argument(
        "--version",
        type=integer("--version", 1, 1_000_000),
        default=None,
        help="only this version (default: every one)",
    )
    sp.add_argument("--period", default=None, metavar="YYYY-MM-DD", help="only the review period holding this day")
    sp.add_argument("--json", action="store_true", help="print what was drawn as JSON")
    sp.set_defaults(func=cmd_sample)
