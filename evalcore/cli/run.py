"""``evalcore demo`` and ``evalcore run``: evaluate with the built-in pipeline and store the run."""

from __future__ import annotations

import argparse
import sys
import time
from typing import TYPE_CHECKING, Any

from evalcore.boundary.text import for_terminal
from evalcore.cli.inputs import print_language_hint
from evalcore.cli.shared.common import open_store, report_invalid
from evalcore.cli.shared.options import CORPUS_HELP, DEFAULT_STRATEGIES, DEMO_RETRIEVERS, pipeline_options
from evalcore.cli.text.summary import BUILT_IN_LEGEND, print_summary
from evalcore.errors import EvalcoreError
from evalcore.external.endpoint import Endpoint, Fields, parse_header
from evalcore.progress import BarProgress
from evalcore.run.execute import execute
from evalcore.run.runner import RunResult
from evalcore.run.spec import DEFAULT_RETRIEVERS, RunSpec

if TYPE_CHECKING:
    from evalcore.cli.shared.options import Subparsers
    from evalcore.external.live import LiveResult
    from evalcore.run.execute import Inputs
    from evalcore.store import Store


def run_spec(args: argparse.Namespace) -> RunSpec:
    """The RunSpec of a run command's options (``demo``, ``run``, ``run-endpoint``): the one
    place the CLI's options become a run. EvalcoreError naming the option that is missing."""
    if args.command == "run-endpoint":
        fields = Fields(
            hits=args.hits,
            chunk_id=args.chunk_id,
            text=args.text,
            document=args.document,
            start=args.start,
            end=args.end,
            score=args.score,
        )
        endpoint = Endpoint(
            url=args.url,
            method=args.method,
            body=args.body,
            headers=tuple(parse_header(h) for h in args.header),
            fields=fields,
            k=args.k,
            concurrency=args.concurrency,
            timeout=args.timeout,
            retries=args.retries,
            refresh=args.refresh,
        )
        endpoint.check()
        if not args.demo and (not args.corpus or not args.questions):
            raise EvalcoreError(f"{args.command} needs --corpus DIR and --questions FILE (or --demo)")
        inputs: dict[str, Any] = (
            {"demo": True} if args.demo else {"corpus": args.corpus, "questions": args.questions, "ood": args.ood}
        )
        return RunSpec(
            **inputs,
            name=args.name,
            endpoint=endpoint,
            chunker=args.chunker,
            retriever_name=args.retriever,
            score=args.score_kind,
            chunks=args.chunks,
            max_failures=args.max_failures,
        )
    pipeline: dict[str, Any] = {
        "name": args.name,
        "strategies": args.strategies,
        "retrievers": args.retrievers,
        "models": tuple(args.model or ()),  # --model is repeatable: one model per folder
        "device": args.device,
        "ray": args.ray,
        "shards": args.shards,
        "reranker": args.reranker,
    }
    if args.command == "demo":
        return RunSpec(demo=True, **pipeline)
    if args.dataset is None and not args.questions:
        raise EvalcoreError("run needs --questions FILE or --dataset NAME[@VERSION]")
    return RunSpec(corpus=args.corpus, questions=args.questions, ood=args.ood, dataset=args.dataset, **pipeline)


def execute_run(args: argparse.Namespace, quiet: bool) -> tuple[Store, RunResult | LiveResult, float]:
    """Execute the run of a run command's options (progress bars unless ``quiet``), with the
    warnings a user reads before it starts (excluded needles, a corpus language the retrievers
    do not read); returns the store, the result and the run's wall
    time (from the moment the run starts, inputs and models loaded)."""
    spec = run_spec(args)
    store = open_store(args)
    started = [time.perf_counter()]

    def loaded(inputs: Inputs) -> None:
        if inputs.question_set is not None:
            qs = inputs.question_set
            counts = f"{len(qs.questions)} questions, {len(qs.ood)} off-topic"
            print(for_terminal(f"question set {qs.version.label}: {counts}"), file=sys.stderr)
        report_invalid(inputs.ground_truth)
        if spec.kind == "builtin" and not spec.demo:  # a line, never a change to the spec
            print_language_hint(inputs.corpus, spec.retrievers, spec.models)

    def step(stage: str) -> None:
        if stage == "running":
            started[0] = time.perf_counter()

    result = execute(spec, store, BarProgress(enabled=not quiet), on_step=step, on_inputs=loaded)
    return store, result, time.perf_counter() - started[0]


def cmd_run(args: argparse.Namespace) -> int:
    """``demo`` and ``run``: the built-in pipeline."""
    store, result, wall = execute_run(args, args.quiet)
    assert isinstance(result, RunResult)
    heading = [
        f"\nrun {result.run_id} ({result.name}) complete in {wall:.1f} s; store {store.path}",
        f"embeddings: {result.new_embeddings} new, {result.cached_embeddings} reused from the cache",
    ]
    if result.rerank_note:
        heading.append(result.rerank_note)
    print_summary(
        store, result.run_id, as_json=args.json, heading=heading, wall=wall, legend=BUILT_IN_LEGEND, hint=True
    )
    return 0


def add_demo(sub: Subparsers) -> None:
    sp = sub.add_parser(
        "demo",
        help="evaluate the built-in demo (Python language reference)",
        description="Build the built-in demo dataset, run it and store the run.",
    )
    pipeline_options(sp, DEFAULT_STRATEGIES, DEMO_RETRIEVERS)
    sp.add_argument("--name", default="demo", help="run name (default demo)")
    sp.set_defaults(func=cmd_run)


def add_run(sub: Subparsers) -> None:
    sp = sub.add_parser(
        "run",
        help="evaluate your corpus and questions",
        description="Evaluate a corpus folder against questions.jsonl and ood.jsonl.",
    )
    sp.add_argument("--corpus", required=True, metavar="DIR", help=CORPUS_HELP)
    sp.add_argument("--questions", default=None, metavar="FILE", help="questions.jsonl (or --dataset)")
    sp.add_argument("--ood", default=None, metavar="FILE", help="ood.jsonl (out-of-domain queries)")
    sp.add_argument(
        "--dataset",
        default=None,
        metavar="NAME[@VERSION]",
        help="a question set of the store instead of --questions/--ood (default: its newest version)",
    )
    sp.add_argument("--name", default=None, help="run name (default: the corpus folder name)")
    pipeline_options(sp, DEFAULT_STRATEGIES, DEFAULT_RETRIEVERS)
    sp.set_defaults(func=cmd_run)
