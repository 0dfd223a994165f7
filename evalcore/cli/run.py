"""``evalcore demo`` and ``evalcore run``: evaluate with the built-in pipeline and store the run."""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING

from evalcore.cli.common import open_store, report_invalid
from evalcore.cli.options import CORPUS_HELP, DEFAULT_STRATEGIES, DEMO_RETRIEVERS, RUN_RETRIEVERS, pipeline_options
from evalcore.cli.summary import BUILT_IN_LEGEND, print_summary
from evalcore.errors import EvalcoreError

if TYPE_CHECKING:
    from evalcore.cli.options import Subparsers
    from evalcore.records import Corpus, GroundTruth


def _execute(
    args: argparse.Namespace,
    corpus: Corpus,
    gt: GroundTruth,
    strategies: str,
    retrievers: str,
    name: str,
    reranker: str | None,
) -> int:
    from evalcore.pipeline.chunking import parse_strategies
    from evalcore.pipeline.retrieval import parse_retrievers
    from evalcore.pipeline.runner import RunRequest, run_evaluation
    from evalcore.progress import BarProgress

    request = RunRequest(
        corpus=corpus,
        ground_truth=gt,
        strategies=parse_strategies(strategies),
        retrievers=parse_retrievers(retrievers),
        name=name,
        reranker_path=reranker,
    )
    if not gt.valid_questions:
        raise EvalcoreError("no valid in-domain question to score (every needle is invalid); see validate")
    report_invalid(gt)
    store = open_store(args)
    from evalcore.pipeline.embedding import load_embedder

    paths = getattr(args, "model", None) or [None]  # --model is repeatable: one model per folder
    embedders = [load_embedder(path, device=getattr(args, "device", "cpu")) for path in paths]
    if getattr(args, "ray", None):
        from evalcore.pipeline.distributed import RayEmbedder

        embedders = [
            RayEmbedder.start(args.ray, e, device=args.device, model_path=path)
            for e, path in zip(embedders, paths, strict=True)
        ]
    t0 = time.perf_counter()
    result = run_evaluation(request, store, embedders=embedders, progress=BarProgress(enabled=not args.quiet))
    wall = time.perf_counter() - t0
    heading = [
        f"\nrun {result.run_id} ({name}) complete in {wall:.1f} s; store {store.path}",
        f"embeddings: {result.new_embeddings} new, {result.cached_embeddings} reused from the cache",
    ]
    if result.rerank_note:
        heading.append(result.rerank_note)
    print_summary(
        store, result.run_id, as_json=args.json, heading=heading, wall=wall, legend=BUILT_IN_LEGEND, hint=True
    )
    return 0


def cmd_demo(args: argparse.Namespace) -> int:
    from evalcore.inputs import sources as inputs

    corpus, gt = inputs.load_demo()
    return _execute(args, corpus, gt, args.strategies, args.retrievers, args.name, args.reranker)


def cmd_run(args: argparse.Namespace) -> int:
    from evalcore.inputs import sources as inputs

    if args.dataset is not None:
        if args.questions or args.ood:
            raise EvalcoreError("run takes --dataset or --questions/--ood, not both")
        from evalcore.inputs import qsets
        from evalcore.inputs.corpus import load_corpus

        store = open_store(args)
        qs = qsets.load(store, args.dataset)
        corpus = load_corpus(args.corpus, cache=store)
        gt = qs.ground_truth(corpus)
        counts = f"{len(qs.questions)} questions, {len(qs.ood)} off-topic"
        print(f"question set {qs.version.label}: {counts}", file=sys.stderr)
    elif not args.questions:
        raise EvalcoreError("run needs --questions FILE or --dataset NAME[@VERSION]")
    else:
        corpus, gt = inputs.load(args.corpus, args.questions, args.ood, cache=open_store(args))
    name = args.name or Path(args.corpus).resolve().name
    return _execute(args, corpus, gt, args.strategies, args.retrievers, name, args.reranker)


def add_demo(sub: Subparsers) -> None:
    sp = sub.add_parser(
        "demo",
        help="evaluate the built-in demo (Python language reference)",
        description="Build the built-in demo dataset, run it and store the run.",
    )
    pipeline_options(sp, DEFAULT_STRATEGIES, DEMO_RETRIEVERS)
    sp.add_argument("--name", default="demo", help="run name (default demo)")
    sp.set_defaults(func=cmd_demo)


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
    pipeline_options(sp, DEFAULT_STRATEGIES, RUN_RETRIEVERS)
    sp.set_defaults(func=cmd_run)
