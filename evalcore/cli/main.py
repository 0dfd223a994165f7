"""Command line: ``evalcore COMMAND`` (installed) or ``python -m evalcore COMMAND``, one
:func:`main`. Every command has ``--help``.

Errors the user can fix end with one line on stderr and exit code 2, never a traceback.
"""

from __future__ import annotations

import argparse
import json
import logging
import shlex
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from evalcore import signals
from evalcore.cli.dataset import dataset_parser
from evalcore.errors import EvalcoreError, Interrupted
from evalcore.inputs.demo import RETRIEVERS as DEMO_RETRIEVERS
from evalcore.pipeline.chunking import DEFAULT_STRATEGIES

if TYPE_CHECKING:
    from evalcore.records import Corpus, GroundTruth
    from evalcore.store import Store

log = logging.getLogger("evalcore")


def _store(args: argparse.Namespace) -> Store:
    from evalcore.store import Store

    return Store(args.store)


def _print_json(obj: Any) -> None:
    print(json.dumps(obj, indent=2, default=str))


def _report_invalid(gt: GroundTruth) -> None:
    for inv in gt.invalid:
        print(f"warning: needle of group {inv.group} (line {inv.line}) excluded: {inv.reason}", file=sys.stderr)


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
    from evalcore.read.summary import format_table, summary_json, summary_table

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
    _report_invalid(gt)
    store = _store(args)
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
    if args.json:
        out = summary_json(store, result.run_id)
        out["wall_seconds"] = round(wall, 2)
        _print_json(out)
        return 0
    print(f"\nrun {result.run_id} ({name}) complete in {wall:.1f} s; store {store.path}")
    print(f"embeddings: {result.new_embeddings} new, {result.cached_embeddings} reused from the cache")
    if result.rerank_note:
        print(result.rerank_note)
    print()
    print(format_table(summary_table(store, result.run_id)))
    print(
        "\nrecall@k = share of in-domain queries with a correct chunk at rank <= k; "
        "destroyed = ground truths no chunk holds whole."
    )
    print(_dashboard_hint(store))
    return 0


def _dashboard_hint(store: Store) -> str:
    """The run's last line: the command that opens the dashboard on the store the run was
    written to (``--store`` named when it is not the one the dashboard opens by default)."""
    from evalcore.store.connection import default_store_path

    if Path(store.path).resolve() == default_store_path().resolve():
        return "Open the dashboard:  python -m evalcore dashboard   (in a clone also: streamlit run app.py)"
    return f"Open the dashboard:  python -m evalcore dashboard --store {shlex.quote(str(store.path))}"


# -- commands ------------------------------------------------------------------------
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

        store = _store(args)
        qs = qsets.load(store, args.dataset)
        corpus = load_corpus(args.corpus, cache=store)
        gt = qs.ground_truth(corpus)
        counts = f"{len(qs.questions)} questions, {len(qs.ood)} off-topic"
        print(f"question set {qs.version.label}: {counts}", file=sys.stderr)
    elif not args.questions:
        raise EvalcoreError("run needs --questions FILE or --dataset NAME[@VERSION]")
    else:
        corpus, gt = inputs.load(args.corpus, args.questions, args.ood, cache=_store(args))
    name = args.name or Path(args.corpus).resolve().name
    return _execute(args, corpus, gt, args.strategies, args.retrievers, name, args.reranker)


def cmd_validate(args: argparse.Namespace) -> int:
    from evalcore.inputs import sources as inputs
    from evalcore.inputs.groundtruth import validation_report

    if args.demo:
        corpus, gt = inputs.load_demo()
    else:
        if not args.corpus or not args.questions:
            raise EvalcoreError("validate needs --corpus DIR and --questions FILE (or --demo)")
        corpus, gt = inputs.load(args.corpus, args.questions, args.ood)
    report = validation_report(corpus, gt)
    if args.json:
        _print_json(report)
        return 0
    for key, value in report.items():
        if isinstance(value, list):
            print(f"{key}: {len(value)}")
            for item in value:
                print(f"  - {item}")
        elif isinstance(value, dict):
            print(f"{key}: " + ", ".join(f"{k}={v}" for k, v in value.items()))
        else:
            print(f"{key}: {value}")
    return 0


def cmd_chunks(args: argparse.Namespace) -> int:
    from evalcore.inputs import sources as inputs
    from evalcore.inputs.corpus import load_corpus
    from evalcore.pipeline.chunking import chunk_corpus, parse_strategies
    from evalcore.read.citations import locator, page_range

    corpus = inputs.load_demo()[0] if args.demo else load_corpus(args.corpus)
    strategies = parse_strategies(args.strategy)
    if len(strategies) != 1:
        raise EvalcoreError(f"--strategy takes one strategy, got {args.strategy!r}")
    out = open(args.output, "w", encoding="utf-8") if args.output else sys.stdout
    page_maps = {d.doc_id: d.page_starts for d in corpus.documents}
    try:
        for c in chunk_corpus(corpus, strategies[0]):
            pages = page_range(page_maps[c.doc_id], c.start, c.end)
            out.write(
                json.dumps(
                    {
                        "document": c.doc_id,
                        "text": c.text,
                        "content": c.content,
                        "section": c.section,
                        "from": c.start,
                        "to": c.end,
                        "evidence_from": c.evidence_start,
                        "locator": locator(c.start, c.end, page_maps[c.doc_id]),
                        "pages": list(pages) if pages else None,
                    },
                    ensure_ascii=False,
                )
                + "\n"
            )
    finally:
        if out is not sys.stdout:
            out.close()
    return 0


def _inputs_of(args: argparse.Namespace) -> tuple[Corpus, GroundTruth]:
    """Corpus and ground truth of an external run: --demo, or --corpus/--questions/--ood."""
    from evalcore.inputs import sources as inputs

    if args.demo:
        return inputs.load_demo()
    if not args.corpus or not args.questions:
        raise EvalcoreError(f"{args.command} needs --corpus DIR and --questions FILE (or --demo)")
    return inputs.load(args.corpus, args.questions, args.ood, cache=_store(args))


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
            print(f"  {where}: chunk {chunk_id}: {reason}", file=sys.stderr)
        if len(unlocated) > limit:
            print(f"  ... {len(unlocated) - limit} more (see the Index page)", file=sys.stderr)
    for chunk_id, where, note in notes[:limit]:
        print(f"warning: {where}: chunk {chunk_id}: {note}", file=sys.stderr)
    if unranked:
        shown = ", ".join(unranked[:5]) + (", ..." if len(unranked) > 5 else "")
        print(
            f"warning: {len(unranked)} query(ies) have no ranking and count as answered with nothing: {shown}",
            file=sys.stderr,
        )


def _external_summary(args: argparse.Namespace, store: Store, run_id: str, wall: float, extra: dict[str, Any]) -> None:
    from evalcore.read.summary import format_table, summary_json, summary_table

    if args.json:
        out = summary_json(store, run_id)
        out["wall_seconds"] = round(wall, 2)
        out.update(extra)
        _print_json(out)
        return
    run = store.run(run_id)
    print(f"\nrun {run_id} ({run['name']}) complete in {wall:.1f} s; store {store.path}")
    print()
    print(format_table(summary_table(store, run_id)))
    print("\nrecall@k and MRR over the hits the run gave; destroyed = ground truths no chunk holds whole.")
    print(_dashboard_hint(store))


def cmd_import_run(args: argparse.Namespace) -> int:
    from evalcore.external.importer import import_run

    corpus, gt = _inputs_of(args)
    _report_invalid(gt)
    store = _store(args)
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
    from evalcore.external.endpoint import Endpoint, Fields, parse_header, run_endpoint
    from evalcore.progress import BarProgress

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
    corpus, gt = _inputs_of(args)
    _report_invalid(gt)
    store = _store(args)
    t0 = time.perf_counter()
    done = run_endpoint(
        store,
        corpus,
        gt,
        endpoint,
        args.name,
        chunker=args.chunker,
        retriever=args.retriever,
        score=args.score_kind,
        chunks_path=args.chunks,
        max_failures=args.max_failures,
        progress=BarProgress(enabled=not args.quiet and not args.json),
    )
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
            print(f"  {qid}: {failure.reason}", file=sys.stderr)
    if not args.json:
        print(line)
    _external_summary(
        args,
        store,
        done.run_id,
        time.perf_counter() - t0,
        {
            "failures": [{"query": q, "reason": f.reason, "attempts": f.attempts} for q, f in done.failures.items()],
            "sent": sent,
        },
    )
    return 0


def cmd_export_formats(args: argparse.Namespace) -> int:
    from evalcore.files.ir_formats import export_formats

    done = export_formats(_store(args), args.run, args.output, args.config or None)
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


def cmd_job(args: argparse.Namespace) -> int:
    from evalcore.jobs import run_job

    status = run_job(_store(args), args.job_id)
    print(f"job {args.job_id}: {status}")
    return {"complete": 0, "cancelled": 1}.get(status, 2)


def cmd_import_squad(args: argparse.Namespace) -> int:
    from evalcore.inputs.public_sets import import_squad, questions_from_csv

    ood = questions_from_csv(args.ood_csv, args.ood_column, args.ood_kind, args.ood_limit) if args.ood_csv else []
    report = import_squad(args.input, args.out, ood)
    out = Path(args.out)
    print(
        f"wrote {report.documents} documents to {out / 'corpus'}, {report.questions} questions "
        f"(exact spans; {report.relocated} answer offsets corrected) and {report.ood} out-of-domain queries"
    )
    for line in report.skipped[:10]:
        print(f"  skipped {line}")
    if len(report.skipped) > 10:
        print(f"  ... {len(report.skipped) - 10} more skipped")
    ood_arg = f" --ood {out / 'ood.jsonl'}" if report.ood else ""
    print(f"next: python -m evalcore run --corpus {out / 'corpus'} --questions {out / 'questions.jsonl'}{ood_arg}")
    return 0


def cmd_list(args: argparse.Namespace) -> int:
    runs = _store(args).runs()
    if args.json:
        _print_json(runs.drop(columns=["settings"]).to_dict("records"))
        return 0
    if runs.empty:
        print("no runs yet; make one with: python -m evalcore demo")
        return 0
    for r in runs.to_dict("records"):
        took = ""
        if r["finished_at"] is not None and r["finished_at"] == r["finished_at"]:
            took = f"{(r['finished_at'] - r['created_at']).total_seconds():.0f} s"
        line = (
            f"{r['run_id']}  {r['status']:<9} {r['name']:<16} {r['strategies'] or '':<12} "
            f"{r['retrievers'] or '':<22} {took}"
        )
        if r["status"] in ("failed", "cancelled") and r["reason"]:
            line += f"  ({r['reason']})"
        print(line)
    return 0


def cmd_show(args: argparse.Namespace) -> int:
    from evalcore.read.summary import format_table, summary_json, summary_table

    store = _store(args)
    run = store.run(args.run)
    if args.json:
        _print_json(summary_json(store, run["run_id"]))
        return 0
    print(f"run {run['run_id']}  {run['name']}  status {run['status']}")
    if run["status"] != "complete":
        print(f"reason: {run.get('reason') or run.get('stage') or '-'}")
        return 0
    s = run["settings"]
    print(
        f"corpus: {s.get('documents')} documents ({s.get('failed_documents')} failed), "
        f"{s.get('characters')} characters, {s.get('sections')} sections"
    )
    print(
        f"queries: {s.get('queries_in')} in-domain, {s.get('queries_out')} out-of-domain; "
        f"{s.get('invalid_needles')} invalid needles"
    )
    print(
        f"model: {run['model']} ({run['model_dim']} dims); embeddings {run['new_embeddings']} new, "
        f"{run['cached_embeddings']} cached"
    )
    if run.get("rerank_note"):
        print(run["rerank_note"])
    print()
    print(format_table(summary_table(store, run["run_id"])))
    return 0


def cmd_gate(args: argparse.Namespace) -> int:
    from evalcore.regression.gate import run_gate
    from evalcore.regression.report import render, to_junit

    report = run_gate(
        _store(args),
        args.baseline,
        args.candidate,
        metric=args.metric,
        alpha=args.alpha,
        holm=args.holm,
        min_effect=args.min_effect,
        threshold_from_decision=args.threshold_from_decision,
    )
    if args.junit:
        _write_text(Path(args.junit), to_junit(report), "--junit")
    print(render(report, args.format))
    return report.exit_code


def _write_text(path: Path, text: str, option: str) -> None:
    """Write a report file the user named; one line naming it when that cannot be done."""
    if path.is_dir():
        raise EvalcoreError(f"{option} {path}: is a folder; give a file name")
    if not path.parent.is_dir():
        raise EvalcoreError(f"{option} {path}: folder {path.parent} does not exist")
    try:
        path.write_text(text, encoding="utf-8")
    except OSError as exc:
        raise EvalcoreError(f"{option} {path}: cannot write ({exc.strerror or exc})") from None


def cmd_threshold(args: argparse.Namespace) -> int:
    from evalcore.measures.claim import ClaimError
    from evalcore.read.claims import claims
    from evalcore.read.runs import configurations
    from evalcore.records import Configuration
    from evalcore.regression.gate import parse_ref, resolve_run

    for value, option in (
        (args.max_bluff_rate, "--max-bluff-rate"),
        (args.max_lost_rate, "--max-lost-rate"),
        (args.confidence, "--confidence"),
    ):
        if not 0.0 < value < 1.0:
            raise ClaimError(f"{option} must lie strictly between 0 and 1, got {value:g}")
    if args.splits is not None and args.splits < 1:
        raise ClaimError(f"--splits must be an integer >= 1, got {args.splits}")
    store = _store(args)
    ref = parse_ref(args.run)
    run = resolve_run(store, ref.run)
    known = configurations(store, run["run_id"])
    if ref.configuration is None:
        chosen = known
    else:
        wanted = Configuration.parse(ref.configuration)
        if wanted not in known:
            raise ClaimError(
                f"run {run['run_id']} has no configuration {wanted.label} (it has {', '.join(c.label for c in known)})"
            )
        chosen = [wanted]
    found = claims(store, run["run_id"], chosen, args.max_bluff_rate, args.max_lost_rate, args.confidence, args.splits)
    if args.json:
        _print_json([c.to_json() for c in found])
        return 0
    from evalcore.read.claims import claim_sentence, separability

    print(
        f"run {run['run_id']} ({run['name']}): bluffs <= {args.max_bluff_rate:g}, lost <= "
        f"{args.max_lost_rate:g}, confidence {args.confidence:g}"
    )
    header = f"{'configuration':<16} {'ood':>4} {'ans':>4} {'bluff':<9} {'ok up to':>8} {'lost':<9} "
    header += f"{'ok above':>8} {'feasible':<8} {'t':>6} {'bluffs':>6} {'lost':>5} {'AUC':>5}"
    if args.splits:
        header += f" {'held-out':>8}"
    print(header)

    def num(x: float | None) -> str:
        return "-" if x is None else f"{x:.3f}"

    for c in found:
        line = (
            f"{c.configuration or '':<16} {c.n_ood:>4} {c.n_answerable:>4} {c.bluff_status:<9} "
            f"{num(c.bluff_ok_up_to):>8} {c.lost_status:<9} {num(c.lost_ok_above):>8} "
            f"{'yes' if c.feasible else 'no':<8} {num(c.recommended):>6} "
            f"{'-' if c.bluffs is None else c.bluffs:>6} {'-' if c.lost is None else c.lost:>5} {c.auc:>5.2f}"
        )
        if args.splits:
            line += f" {'-' if c.held_out_share is None else f'{c.held_out_share:.0%}':>8}"
        print(line)
    for c in found:
        print(f"\n{c.configuration}: {claim_sentence(c)} {separability(c)}")
    if args.splits:
        print(
            f"\nheld-out: over {args.splits} seeded splits (ground truths kept together), the share of splits "
            "whose other half kept bluffs <= the max bluff rate at the first half's threshold. A report, "
            "not a second guarantee."
        )
    return 0


def cmd_export_run(args: argparse.Namespace) -> int:
    from evalcore.files.run_files import export_run

    done = export_run(_store(args), args.run, args.output)
    print(
        f"wrote run {done.run_id} ({done.run_name}) to {done.path}: "
        + ", ".join(f"{n} {t}" for t, n in done.rows.items() if n)
    )
    return 0


def cmd_load_run(args: argparse.Namespace) -> int:
    from evalcore.files.run_files import load_run

    store = _store(args)
    done = load_run(store, args.file)
    if not done.loaded:
        print(f"run {done.run_id} ({done.run_name}) is already in {store.path}, identical; nothing loaded")
    else:
        print(
            f"loaded run {done.run_id} ({done.run_name}) into {store.path}: {done.total_rows} rows in "
            f"{sum(1 for n in done.rows.values() if n)} tables"
        )
    return 0


def cmd_dashboard(args: argparse.Namespace) -> int:
    from evalcore.cli.dashboard import serve

    serve(args.port, args.address, args.store, browser=not args.headless)
    return 0  # not reached: serve replaces this process with Streamlit


def cmd_compare(args: argparse.Namespace) -> int:
    from evalcore.cli.compare_text import compare_text

    print(compare_text(_store(args), args.run, args.run2, metric=args.metric, holm=args.holm, width=args.width))
    return 0


# -- parser --------------------------------------------------------------------------
def _prog() -> str:
    """``evalcore`` when started by the console script, else ``python -m evalcore``."""
    return "evalcore" if Path(sys.argv[0]).stem == "evalcore" else "python -m evalcore"


def build_parser() -> argparse.ArgumentParser:
    from evalcore import __version__
    from evalcore.cli.dashboard import DEFAULT_ADDRESS, DEFAULT_PORT

    p = argparse.ArgumentParser(
        prog=_prog(),
        description="Evaluate the retrieval half of RAG: chunk, embed, retrieve, score, store.",
    )
    p.add_argument(
        "--version", action="version", version=f"evalcore {__version__}", help="print evalcore's version and exit"
    )
    p.add_argument(
        "--store", default=None, help="run store (DuckDB file); default $EVALCORE_STORE or runs/evalcore.duckdb"
    )
    p.add_argument("-v", "--verbose", action="store_true", help="log what happens")
    sub = p.add_subparsers(dest="command", required=True, metavar="COMMAND")

    def common_run(sp: argparse.ArgumentParser, strategies: str, retrievers: str) -> None:
        sp.add_argument(
            "--strategies", default=strategies, help=f"comma list of A-G or custom recipes (default {strategies})"
        )
        sp.add_argument(
            "--retrievers",
            default=retrievers,
            help=f"comma list of dense,bm25,hybrid,rerank; bm25:LANG, hybrid:LANG, rerank:LANG read "
            "the corpus with a language's analyzer (bm25:german; bm25:unicode: words not stemmed; "
            f"see docs/LANGUAGES.md) (default {retrievers})",
        )
        sp.add_argument(
            "--reranker",
            default=None,
            metavar="PATH",
            help="local sentence-transformers CrossEncoder folder; without it rerank is not run",
        )
        sp.add_argument(
            "--model",
            action="append",
            default=None,
            metavar="PATH",
            help="local sentence-transformers model folder (default: the packaged all-MiniLM-L6-v2); "
            "repeat it to compare models: each strategy is then stored as STRATEGY@FOLDER",
        )
        sp.add_argument("--device", default="cpu", help="cpu (default) or cuda (needs a CUDA GPU and torch with CUDA)")
        sp.add_argument(
            "--ray",
            default=None,
            metavar="ADDRESS",
            help="embed on a Ray cluster (ADDRESS, e.g. ray://head:10001 or auto) "
            "or on a local Ray runtime (local); see docs/SCALE.md",
        )
        sp.add_argument("--json", action="store_true", help="print a machine-readable summary")
        sp.add_argument("-q", "--quiet", action="store_true", help="no progress bars")

    sp = sub.add_parser(
        "demo",
        help="evaluate the built-in demo (Python language reference)",
        description="Build the built-in demo dataset, run it and store the run.",
    )
    common_run(sp, DEFAULT_STRATEGIES, DEMO_RETRIEVERS)
    sp.add_argument("--name", default="demo", help="run name (default demo)")
    sp.set_defaults(func=cmd_demo)

    sp = sub.add_parser(
        "run",
        help="evaluate your corpus and questions",
        description="Evaluate a corpus folder against questions.jsonl and ood.jsonl.",
    )
    sp.add_argument("--corpus", required=True, metavar="DIR", help="folder of .md / .txt / .pdf / .html documents")
    sp.add_argument("--questions", default=None, metavar="FILE", help="questions.jsonl (or --dataset)")
    sp.add_argument("--ood", default=None, metavar="FILE", help="ood.jsonl (out-of-domain queries)")
    sp.add_argument(
        "--dataset",
        default=None,
        metavar="NAME[@VERSION]",
        help="a question set of the store instead of --questions/--ood (default: its newest version)",
    )
    sp.add_argument("--name", default=None, help="run name (default: the corpus folder name)")
    common_run(sp, DEFAULT_STRATEGIES, "dense,bm25,hybrid")
    sp.set_defaults(func=cmd_run)

    dataset_parser(sub)

    sp = sub.add_parser(
        "validate",
        help="check inputs without running",
        description="Check corpus, questions and ood files; report needles and counts.",
    )
    sp.add_argument("--corpus", metavar="DIR", help="folder of .md / .txt / .pdf / .html documents")
    sp.add_argument("--questions", metavar="FILE", help="questions.jsonl")
    sp.add_argument("--ood", metavar="FILE", help="ood.jsonl")
    sp.add_argument("--demo", action="store_true", help="validate the built-in demo dataset")
    sp.add_argument("--json", action="store_true", help="print the report as JSON")
    sp.set_defaults(func=cmd_validate)

    sp = sub.add_parser(
        "chunks",
        help="write a strategy's chunks as JSON lines",
        description="Write chunks (document, text, content, section, from, to, "
        "evidence_from, locator, pages) as JSON lines. locator is #page=N "
        "(the page of the chunk's first character) for PDF documents and "
        "#char=from,to otherwise; pages is [first, last] for PDF, else null.",
    )
    sp.add_argument("--corpus", metavar="DIR", help="folder of .md / .txt / .pdf / .html documents")
    sp.add_argument("--demo", action="store_true", help="chunk the built-in demo corpus")
    sp.add_argument("--strategy", default="E", help="one strategy: A-F or a custom recipe (default E)")
    sp.add_argument("-o", "--output", default=None, metavar="FILE", help="write here instead of stdout")
    sp.set_defaults(func=cmd_chunks)

    def external_inputs(sp: argparse.ArgumentParser) -> None:
        sp.add_argument("--corpus", metavar="DIR", help="folder of .md / .txt / .pdf / .html documents")
        sp.add_argument("--questions", metavar="FILE", help="questions.jsonl")
        sp.add_argument("--ood", default=None, metavar="FILE", help="ood.jsonl (out-of-domain queries)")
        sp.add_argument("--demo", action="store_true", help="the built-in demo corpus and questions instead")
        sp.add_argument(
            "--chunker",
            default="external",
            help="name of the other system's chunker: the configuration's strategy (default external)",
        )
        sp.add_argument(
            "--retriever",
            default="external",
            help="name of the other system's retriever: the configuration's retriever (default external)",
        )
        sp.add_argument("--json", action="store_true", help="print a machine-readable summary (as run --json)")

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
    sp.add_argument(
        "--score",
        default="similarity",
        choices=["similarity", "distance"],
        help="similarity: higher is closer (default); distance: lower is closer",
    )
    sp.add_argument("--name", default="imported", help="run name (default imported)")
    sp.set_defaults(func=cmd_import_run)

    from dataclasses import fields

    from evalcore.external.endpoint import Endpoint, Fields
    from evalcore.external.record import DEFAULT_MAX_FAILURES

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
        "--k", type=int, default=endpoint["k"], help="hits asked for, the {k} of the templates (default %(default)s)"
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
    sp.add_argument(
        "--score-kind",
        default="similarity",
        choices=["similarity", "distance"],
        help="similarity: higher is closer (default); distance: lower is closer",
    )
    sp.add_argument(
        "--chunks",
        default=None,
        metavar="FILE",
        help="the service's whole chunk set (CHUNKS.jsonl): hits may then give ids only, and "
        "destroyed answers are counted",
    )
    sp.add_argument(
        "--concurrency", type=int, default=endpoint["concurrency"], help="requests at a time (default %(default)s)"
    )
    sp.add_argument(
        "--timeout",
        type=float,
        default=endpoint["timeout"],
        help="seconds to connect and between bytes (default %(default)s)",
    )
    sp.add_argument(
        "--retries",
        type=int,
        default=endpoint["retries"],
        help="retries after a timeout, a refused connection or HTTP 408/425/429/5xx, with "
        "exponential backoff and jitter (default %(default)s)",
    )
    sp.add_argument(
        "--max-failures",
        type=float,
        default=DEFAULT_MAX_FAILURES,
        metavar="SHARE",
        help="the run fails when more than this share of the queries failed (default %(default)s)",
    )
    sp.add_argument("--refresh", action="store_true", help="ask the service again instead of the cache")
    sp.add_argument("--name", default="endpoint", help="run name (default endpoint)")
    sp.add_argument("-q", "--quiet", action="store_true", help="no progress bar")
    sp.set_defaults(func=cmd_run_endpoint)

    sp = sub.add_parser(
        "export-formats",
        help="write a run as TREC run + qrels, ranx JSON and a BEIR folder",
        description="Write one complete run in standard IR formats, one folder per strategy: a BEIR dataset "
        "(corpus.jsonl, queries.jsonl, qrels/test.tsv), qrels as TREC and ranx JSON, and per "
        "retriever a TREC run and a ranx Run. A correct chunk is relevant; scores are 1/rank so any "
        "evaluator reproduces evalcore's ranks: recall@k and MRR from trec_eval -c, pytrec_eval or "
        "ranx (make_comparable=True) equal evalcore's. See docs/EXTERNAL.md.",
    )
    sp.add_argument("run", help="run id (a unique prefix is enough) or run name (its newest complete run)")
    sp.add_argument("-o", "--output", required=True, metavar="DIR", help="folder to write into (created)")
    sp.add_argument(
        "--config",
        action="append",
        default=[],
        metavar="STRATEGY/RETRIEVER",
        help="only this configuration (repeatable; default all)",
    )
    sp.set_defaults(func=cmd_export_formats)

    sp = sub.add_parser(
        "job",
        help="execute a queued dashboard job (started by the dashboard)",
        description="Wait for a free slot ($EVALCORE_MAX_JOBS, default 1), run the queued "
        "job JOB_ID and record its outcome. Exit 0 complete, 1 cancelled, 2 failed.",
    )
    sp.add_argument("job_id", metavar="JOB_ID", help="id of a queued job in the store")
    sp.set_defaults(func=cmd_job)

    sp = sub.add_parser(
        "import-squad",
        help="turn a SQuAD-format QA file into corpus and questions",
        description="Write corpus/*.md, questions.jsonl (exact spans) and, with --ood-csv, "
        "ood.jsonl from SQuAD-format JSON (SQuAD v1.1, XQuAD, COVID-QA).",
    )
    sp.add_argument("input", help="SQuAD-format JSON file")
    sp.add_argument("--out", required=True, metavar="DIR", help="empty folder to write into")
    sp.add_argument("--ood-csv", default=None, metavar="FILE", help="CSV whose questions become out-of-domain queries")
    sp.add_argument("--ood-column", default="question", help="the CSV column holding the questions")
    sp.add_argument("--ood-kind", default="far", choices=["near", "far"], help="kind of those queries")
    sp.add_argument("--ood-limit", type=int, default=None, help="at most this many out-of-domain queries")
    sp.set_defaults(func=cmd_import_squad)

    sp = sub.add_parser("list", help="list the runs in the store", description="List stored runs.")
    sp.add_argument("--json", action="store_true", help="print JSON")
    sp.set_defaults(func=cmd_list)

    sp = sub.add_parser("show", help="one run's summary", description="Show one run's summary table.")
    sp.add_argument("run", help="run id (a unique prefix is enough)")
    sp.add_argument("--json", action="store_true", help="print a machine-readable summary")
    sp.set_defaults(func=cmd_show)

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
    sp.add_argument("--metric", default="hit@4", help="hit@k or recall@k (default hit@4)")
    sp.add_argument("--alpha", type=float, default=0.05, help="significance level (default 0.05)")
    sp.add_argument(
        "--holm",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="Holm-adjust p over the configurations compared (default on; --no-holm for unadjusted p)",
    )
    sp.add_argument(
        "--min-effect",
        type=float,
        default=None,
        metavar="D",
        help="also fail when the candidate's metric is lower by D or more (e.g. 0.05), significant or not",
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
    sp.add_argument("--max-bluff-rate", type=float, default=0.05, metavar="A", help="alpha (default 0.05)")
    sp.add_argument("--max-lost-rate", type=float, default=0.20, metavar="B", help="beta (default 0.20)")
    sp.add_argument("--confidence", type=float, default=0.95, metavar="C", help="1 - delta (default 0.95)")
    sp.add_argument(
        "--splits", type=int, default=None, metavar="N", help="held-out check over N seeded random halvings"
    )
    sp.add_argument("--json", action="store_true", help="print a JSON list, one object per configuration")
    sp.set_defaults(func=cmd_threshold)

    sp = sub.add_parser(
        "export-run",
        help="write one complete run to a file (for CI artifacts or another machine)",
        description="Write every stored row of a complete run (runs, documents, strategies, chunks, queries, "
        "results, hits, destroyed, timings, decisions; not the embedding cache) to one run file: "
        "a zip of Parquet tables with a manifest (docs/RUN-FILE.md).",
    )
    sp.add_argument("run", help="run id (a unique prefix is enough) or run name (its newest complete run)")
    sp.add_argument(
        "-o",
        "--output",
        required=True,
        metavar="FILE",
        help="the run file to write, e.g. baseline.evalcore.zip (replaced if it exists)",
    )
    sp.set_defaults(func=cmd_export_run)

    sp = sub.add_parser(
        "load-run",
        help="store a run from a file written by export-run",
        description="Verify a run file (format, version, checksums, row counts) and store its run in one "
        "transaction. A bad, truncated or foreign file, or a run id already stored with other "
        "rows, ends with one line and exit 2, nothing stored; the same run again is a no-op.",
    )
    sp.add_argument("file", help="a run file written by export-run")
    sp.set_defaults(func=cmd_load_run)

    sp = sub.add_parser(
        "compare",
        help="per-configuration table and paired win/loss matrix in the terminal",
        description="Print recall@1/4/8/20 with 95%% Wilson intervals, MRR and destroyed answers per "
        "configuration, and the paired win/loss matrix (exact sign tests at hit@k) of one run "
        "or of two runs on the same queries.",
    )
    sp.add_argument("run", help="run id (a unique prefix is enough) or run name (its newest complete run)")
    sp.add_argument(
        "run2", nargs="?", default=None, help="a second run on the same queries: its configurations join the matrix"
    )
    sp.add_argument("--metric", default="hit@4", help="hit@k or recall@k for the matrix (default hit@4)")
    sp.add_argument("--holm", action="store_true", help="Holm-adjust the matrix's p-values over all its pairs")
    sp.add_argument(
        "--width",
        type=int,
        default=None,
        metavar="COLUMNS",
        help="fit the output to this many columns (default: the terminal's width)",
    )
    sp.set_defaults(func=cmd_compare)

    sp = sub.add_parser(
        "dashboard",
        help="open the dashboard (Streamlit) on this machine",
        description="Serve the dashboard on ADDRESS:PORT (default 127.0.0.1: this machine only; it has no "
        "login, see docs/DEPLOY.md before serving a team) over the store (--store, "
        "$EVALCORE_STORE, else runs/evalcore.duckdb of the current folder). Ctrl-C stops it.",
    )
    sp.add_argument("--port", type=int, default=DEFAULT_PORT, help=f"TCP port (default {DEFAULT_PORT})")
    sp.add_argument(
        "--address",
        default=DEFAULT_ADDRESS,
        help=f"address to listen on (default {DEFAULT_ADDRESS}, this machine only)",
    )
    sp.add_argument(
        "--store",
        default=argparse.SUPPRESS,
        help="run store (DuckDB file) the dashboard shows; same as the global --store",
    )
    sp.add_argument("--headless", action="store_true", help="do not open a browser (a server, a container)")
    sp.set_defaults(func=cmd_dashboard)

    from evalcore.cli.traffic import add_parser as add_traffic

    add_traffic(sub)
    return p


def unexpected(exc: BaseException) -> str:
    """The one line of an exception evalcore did not foresee: where it arose and what it says
    (the full traceback goes to the log with ``-v``)."""
    import traceback

    log.info("unexpected error", exc_info=exc)
    frames = traceback.extract_tb(exc.__traceback__)
    ours = [f for f in frames if "evalcore" in f.filename] or frames
    where = f" in {Path(ours[-1].filename).name}:{ours[-1].lineno}" if ours else ""
    text = " ".join(str(exc).split())[:300]
    return f"unexpected {type(exc).__name__}{where}: {text or '(no message)'}; please report this"


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    from evalcore.pipeline.embedding import NOTE

    logging.basicConfig(level=logging.INFO if args.verbose else NOTE, format="%(levelname)s %(name)s: %(message)s")
    if args.command == "chunks" and not args.demo and not args.corpus:
        parser.error("chunks needs --corpus DIR or --demo")
    try:
        with signals.handled():  # SIGTERM and SIGINT end any command with one line
            command: Callable[[argparse.Namespace], int] = args.func  # set by each subparser
            return command(args)
    except Interrupted as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 128 + exc.signum
    except EvalcoreError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:  # outside the main thread
        print("error: interrupted", file=sys.stderr)
        return 130
    except Exception as exc:  # noqa: BLE001 - one line and exit 2, never a traceback (exit 1 is a regression)
        print(f"error: {unexpected(exc)}", file=sys.stderr)
        return 2
