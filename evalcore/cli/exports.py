"""Commands that write a stored run to files or store one from a file: ``export-formats``
(TREC, ranx, BEIR), ``export-run`` and ``load-run`` (evalcore's own run file)."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from evalcore.cli import remote
from evalcore.cli.shared.common import open_store
from evalcore.cli.shared.options import run_ref
from evalcore.files.ir_formats import export_formats
from evalcore.files.run_files import export_run, load_run

if TYPE_CHECKING:
    from evalcore.cli.shared.options import Subparsers


def cmd_export_formats(args: argparse.Namespace) -> int:
    done = export_formats(open_store(args), args.run, args.output, args.config or None)
    print(
        f"wrote run {done.run_id} to {done.folder}: {len(done.strategies)} strategy folder(s) "
        f"({', '.join(done.strategies)}), {len(done.files)} files"
    )
    if done.placeholders:
        print(
            f"{done.placeholders} placeholder hits (evalcore:unstored:RANK) stand for unstored ranks before a "
            "first correct hit beyond the stored top 20, so MRR stays exact"
        )
    print("evaluate: trec_eval -c -m success.1,4,8,20 -m recip_rank QRELS RUN, or ranx with make_comparable=True")
    return 0


def cmd_export_run(args: argparse.Namespace) -> int:
    done = export_run(open_store(args), args.run, args.output)
    print(
        f"wrote run {done.run_id} ({done.run_name}) to {done.path}: "
        + ", ".join(f"{n} {t}" for t, n in done.rows.items() if n)
    )
    for note in done.notes:
        print(note)
    return 0


def cmd_load_run(args: argparse.Namespace) -> int:
    if args.server:
        return remote.remote_load_run(args)
    store = open_store(args)
    done = load_run(store, args.file)
    if not done.loaded:
        print(f"run {done.run_id} ({done.run_name}) is already in {store.path}, identical; nothing loaded")
    else:
        print(
            f"loaded run {done.run_id} ({done.run_name}) into {store.path}: {done.total_rows} rows in "
            f"{sum(1 for n in done.rows.values() if n)} tables"
        )
    for note in done.notes:
        print(note)
    return 0


def add_export_formats(sub: Subparsers) -> None:
    sp = sub.add_parser(
        "export-formats",
        help="write a run as TREC run + qrels, ranx JSON and a BEIR folder",
        description="Write one complete run in standard IR formats, one folder per strategy: a BEIR dataset "
        "(corpus.jsonl, queries.jsonl, qrels/test.tsv), qrels as TREC and ranx JSON, and per "
        "retriever a TREC run and a ranx Run. A correct chunk is relevant; scores are 1/rank so any "
        "evaluator reproduces evalcore's ranks: recall@k and MRR from trec_eval -c, pytrec_eval or "
        "ranx (make_comparable=True) equal evalcore's. See docs/EXTERNAL.md.",
    )
    run_ref(sp)
    sp.add_argument("-o", "--output", required=True, metavar="DIR", help="folder to write into (created)")
    sp.add_argument(
        "--config",
        action="append",
        default=[],
        metavar="STRATEGY/RETRIEVER",
        help="only this configuration (repeatable; default all)",
    )
    sp.set_defaults(func=cmd_export_formats)


def add_export_run(sub: Subparsers) -> None:
    sp = sub.add_parser(
        "export-run",
        help="write one complete run to a file (for CI artifacts or another machine)",
        description="Write every stored row of a complete run (runs, documents, strategies, chunks, queries, "
        "results, hits, destroyed, timings, configurations, failures, decisions with their authors, its "
        "traffic with its labels, and the question-set version it used) to one run file: a zip of Parquet "
        "tables with a manifest that also lists what did not travel (the embedding cache, always) "
        "(docs/RUN-FILE.md). Traffic holds real users' query texts: so does the file.",
    )
    run_ref(sp)
    sp.add_argument(
        "-o",
        "--output",
        required=True,
        metavar="FILE",
        help="the run file to write, e.g. baseline.evalcore.zip (replaced if it exists)",
    )
    sp.set_defaults(func=cmd_export_run)


def add_load_run(sub: Subparsers) -> None:
    sp = sub.add_parser(
        "load-run",
        help="store a run from a file written by export-run",
        description="Verify a run file (format, version, checksums, row counts) and store its run in one "
        "transaction, with the question-set version it used unless the store has it. A bad, truncated or "
        "foreign file, a run id already stored with other rows, or a question set of that name that is "
        "another set ends with one line and exit 2, nothing stored; the same run again is a no-op. What "
        "the file says did not travel is printed, one line each.",
    )
    sp.add_argument("file", help="a run file written by export-run")
    sp.set_defaults(func=cmd_load_run)
