"""``evalcore import-run`` and ``evalcore run-endpoint``: score a run made by another system,
from its files or from its live search API."""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Sequence
from dataclasses import fields
from typing import TYPE_CHECKING, Any

from evalcore.boundary.text import for_terminal
from evalcore.cli.run import execute_run
from evalcore.cli.shared.common import open_store, report_invalid
from evalcore.cli.shared.options import add_score_kind, external_inputs, integer, number
from evalcore.cli.text.summary import EXTERNAL_LEGEND, print_summary
from evalcore.errors import EvalcoreError
from evalcore.external.endpoint import Endpoint, Fields
from evalcore.external.importer import import_run
from evalcore.external.live import LiveResult
from evalcore.external.record import DEFAULT_MAX_FAILURES
from evalcore.inputs import sources as inputs

if TYPE_CHECKING:
    from evalcore.cli.shared.options import Subparsers
    from evalcore.records import Corpus, GroundTruth
    from evalcore.store import Store


#: The ranges of run-endpoint's numbers (docs/EXTERNAL.md): checked before any request is sent.
MAX_K, MAX_CONCURRENCY, MAX_RETRIES, MAX_TIMEOUT = 10_000, 256, 10, 3600.0


def _inputs_of(args: argparse.Namespace) -> tuple[Corpus, GroundTruth]:
    """Corpus and ground truth of an external run: --demo, or --corpus/--questions/--ood."""
    if args.demo:
        return inputs.load_demo()
    if not args.corpus or not args.questions:
        raise EvalcoreError(f"{args.command} needs --corpus DIR and --questions FILE (or --demo)")
    return inputs.load_corpus_and_questions(args.corpus, args.questions, args.ood, cache=open_store(args))


def _report_chunks(
    unlocated: Sequence[tuple[str, str, str]],
    notes: Sequence[tuple[str, str, str]],
    unranked: Sequence[str],
    limit: int = 10,
) -> None:
    """Warnings about an external run's chunks and rankings, on stderr."""
    if unlocated:
        print(
            f"warning: {len(unlocated)} chunk(s) could not be located; they are stored and never correct:",
            file=sys.stderr,
        )
        for chunk_id, where, reason in unlocated[:limit]:
            print(for_terminal(f"  {where}: chunk {chunk_id}: {reason}"), file=sys.stderr)
        if len(unlocated) > limit:
            print(f"  ... {len(unlocated) - limit} more (see the Index page)", file=sys.stderr)
    for chunk_id, where, note in notes[:limit]:
        print(for_terminal(f"warning: {where}: chunk {chunk_id}: {note}"), file=sys.stderr)
    if unranked:
        shown = ", ".join(unranked[:5]) + (", ..." if len(unranked) > 5 else "")
        print(
            for_terminal(
                f"warning: {len(unranked)} query(ies) have no ranking and count as answered with nothing: {shown}"
            ),
            file=sys.stderr,
        )


def _external_summary(args: argparse.Namespace, store: Store, run_id: str, wall: float, extra: dict[str, Any]) -> None:
    heading = []
    if not args.json:
        run = store.run(run_id)
        heading.append(f"\nrun {run_id} ({run.name}) complete in {wall:.1f} s; store {store.path}")
    print_summary(
        store, run_id, as_json=args.json, heading=heading, wall=wall, extra=extra, legend=EXTERNAL_LEGEND, hint=True
    )


def cmd_import_run(args: argparse.Namespace) -> int:
    corpus, gt = _inputs_of(args)
    report_invalid(gt)
    store = open_store(args)
    t0 = time.perf_counter()
    done = import_run(
        store,
        corpus,
        gt,
        args.chunks,
        args.rankings,
        args.name,
        chunker=args.chunker,
        retriever=args.retriever,
        score=args.score,
        fmt=args.format,
    )
    _report_chunks(done.unlocated, done.notes, done.unranked)
    _external_summary(
        args,
        store,
        done.run_id,
        time.perf_counter() - t0,
        {
            "unlocated_chunks": [{"chunk": c, "where": w, "reason": r} for c, w, r in done.unlocated],
            "unranked_queries": list(done.unranked),
        },
    )
    return 0


def cmd_run_endpoint(args: argparse.Namespace) -> int:
    store, done, wall = execute_run(args, args.quiet or args.json)
    assert isinstance(done, LiveResult)
    sent = done.stats
    line = (
        f"sent {sent.get('requests', 0)} request(s) ({sent.get('retries', 0)} retries), "
        f"{sent.get('cached', 0)} answer(s) from the cache"
    )
    if done.failures:
        print(
            f"warning: {len(done.failures)} of {done.queries} queries failed; they are left out of every "
            f"figure (not scored as misses):",
            file=sys.stderr,
        )
        for qid, failure in list(done.failures.items())[:10]:
            print(for_terminal(f"  {qid}: {failure.reason}"), file=sys.stderr)
    if not args.json:
        print(line)
    _external_summary(
        args,
        store,
        done.run_id,
        wall,
        {
            "failures": [{"query": q, "reason": f.reason, "attempts": f.attempts} for q, f in done.failures.items()],
            "sent": sent,
        },
    )
    return 0


def add_import_run(sub: Subparsers) -> None:
    sp = sub.add_parser(
        "import-run",
        help="score a run made elsewhere (its chunks and rankings files)",
        description="Score another system's chunks and rankings against your questions, like a built-in run: "
        "chunks are located in the corpus (by offsets, else by their text), recall@k and "
        "MRR are taken over the hits given, the refusal gate reads the retriever's own score. "
        "A bad chunk or rankings file ends with one line naming the file and line, exit 2, "
        "nothing stored. See docs/EXTERNAL.md.",
    )
    external_inputs(sp)
    sp.add_argument(
        "--chunks",
        required=True,
        metavar="FILE",
        help="CHUNKS.jsonl: id, document, text[, start, end] a line (or a BEIR folder / corpus.jsonl)",
    )
    sp.add_argument(
        "--rankings",
        required=True,
        metavar="FILE",
        help="TREC run file (qid Q0 chunk_id rank score tag), JSONL ({query, hits: [{chunk, score}]}) "
        "or ranx / BEIR JSON ({qid: {chunk_id: score}})",
    )
    sp.add_argument(
        "--format",
        default=None,
        choices=["trec", "jsonl", "json"],
        help="the rankings file's format (default: detected from its content)",
    )
    add_score_kind(sp, "--score")
    sp.add_argument("--name", default="imported", help="run name (default imported)")
    sp.set_defaults(func=cmd_import_run)


def add_run_endpoint(sub: Subparsers) -> None:

    endpoint = {f.name: f.default for f in fields(Endpoint)}
    field = {f.name: f.default for f in fields(Fields)}
    sp = sub.add_parser(
        "run-endpoint",
        help="measure a live search service over HTTP",
        description="Send every in-domain and out-of-domain query to a search API and score its answers "
        "like an imported run. Answers are cached in the store: a second run sends nothing "
        "unless --refresh. A query whose request fails (after retries) or whose answer is "
        "malformed is recorded as failed, never scored as a miss; past --max-failures the run "
        "fails. Requests go only to --url (redirects are not followed). See docs/EXTERNAL.md.",
    )
    external_inputs(sp)
    sp.add_argument(
        "--url", required=True, help="the service's URL; with GET it holds {query} (URL-encoded), also {query_id}, {k}"
    )
    sp.add_argument(
        "--method", default=endpoint["method"], choices=["POST", "GET"], help="HTTP method (default %(default)s)"
    )

    sp.add_argument(
        "--body",
        default=endpoint["body"],
        metavar="TEMPLATE",
        help='JSON body template; strings may hold {query}, {query_id}, {k} ("{k}" alone becomes '
        "a number). Default: %(default)s",
    )
    sp.add_argument(
        "--header",
        action="append",
        default=[],
        metavar="'NAME: VALUE'",
        help="a request header (repeatable); header values are never stored",
    )
    sp.add_argument(
        "--k",
        type=integer("--k", 1, MAX_K),
        default=endpoint["k"],
        help=f"hits asked for, the {{k}} of the templates, 1 to {MAX_K:,} (default %(default)s)",
    )
    sp.add_argument(
        "--hits",
        default=field["hits"],
        metavar="PATH",
        help="dotted path of the hit list in the answer (default hits; '' = the answer itself)",
    )
    sp.add_argument(
        "--chunk-id", default=field["chunk_id"], metavar="PATH", help="path of a hit's chunk id (default id)"
    )
    sp.add_argument("--text", default=field["text"], metavar="PATH", help="path of a hit's text (default text)")
    sp.add_argument(
        "--document",
        default=field["document"],
        metavar="PATH",
        help="path of a hit's corpus document id (default document)",
    )
    sp.add_argument(
        "--start", default=field["start"], metavar="PATH", help="path of a hit's start offset (default start)"
    )
    sp.add_argument("--end", default=field["end"], metavar="PATH", help="path of a hit's end offset (default end)")
    sp.add_argument("--score", default=field["score"], metavar="PATH", help="path of a hit's score (default score)")
    add_score_kind(sp, "--score-kind")
    sp.add_argument(
        "--chunks",
        default=None,
        metavar="FILE",
        help="the service's whole chunk set (CHUNKS.jsonl): hits may then give ids only, and "
        "destroyed answers are counted",
    )
    sp.add_argument(
        "--concurrency",
        type=integer("--concurrency", 1, MAX_CONCURRENCY),
        default=endpoint["concurrency"],
        help=f"requests at a time, 1 to {MAX_CONCURRENCY} (default %(default)s)",
    )
    sp.add_argument(
        "--timeout",
        type=number("--timeout", 0.0, MAX_TIMEOUT, low_open=True),
        default=endpoint["timeout"],
        help=f"seconds to connect and between bytes, in (0, {MAX_TIMEOUT:g}] (default %(default)s)",
    )
    sp.add_argument(
        "--retries",
        type=integer("--retries", 0, MAX_RETRIES),
        default=endpoint["retries"],
        help=f"retries after a timeout, a refused connection or HTTP 408/425/429/5xx, with "
        f"exponential backoff and jitter, 0 to {MAX_RETRIES} (default %(default)s)",
    )
    sp.add_argument(
        "--max-failures",
        type=number("--max-failures", 0.0, 1.0),
        default=DEFAULT_MAX_FAILURES,
        metavar="SHARE",
        help="the run fails when more than this share of the queries failed, in [0, 1] (default %(default)s)",
    )
    sp.add_argument("--refresh", action="store_true", help="ask the service again instead of the cache")
    sp.add_argument("--name", default="endpoint", help="run name (default endpoint)")
    sp.add_argument("-q", "--quiet", action="store_true", help="no progress bar")
    sp.set_defaults(func=cmd_run_endpoint)
