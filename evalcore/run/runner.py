"""One evaluation, end to end: chunk, embed, retrieve, score, store.

The run is inserted as ``running`` first; all results are buffered and written with the
``complete`` status in one transaction at the end, so a reader never sees half a run.
Any exception, and SIGTERM or SIGINT at any moment (the final write included, see
evalcore.signals), marks it ``failed`` with the reason; a run whose process is killed
outright is marked failed by the store's reaper the next time the store is used.
"""

from __future__ import annotations

import json
import logging
import platform
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from importlib.metadata import PackageNotFoundError, version
from typing import TYPE_CHECKING, Any

from evalcore import PIPELINE_VERSION, __version__, signals, testhooks
from evalcore.embedding.embedder import load_embedder
from evalcore.embedding.models import plan as model_plan
from evalcore.errors import ConfigError, Interrupted
from evalcore.measures.threshold import DEFAULT_TOP
from evalcore.progress import Fanout, Progress, SilentProgress, StoreProgress
from evalcore.records import Corpus, GroundTruth, Strategy
from evalcore.retrieval.hybrid import RRF_K
from evalcore.retrieval.names import analyzer_settings, parse_retrievers, split_retriever
from evalcore.retrieval.rerank import RERANK_DEPTH
from evalcore.retrieval.rerank import Reranker as _Reranker
from evalcore.run.stages import Work
from evalcore.store.basics import new_run_id
from evalcore.store.rows import ground_truth_settings
from evalcore.store.runs import fail_run

if TYPE_CHECKING:
    from evalcore.embedding.embedder import Embedder
    from evalcore.retrieval.rerank import Reranker
    from evalcore.store import Store

log = logging.getLogger(__name__)

TOP_N = 20


@dataclass
class RunRequest:
    """What to evaluate: a corpus, its ground truth, strategies and retrievers."""

    corpus: Corpus
    ground_truth: GroundTruth
    strategies: Sequence[Strategy]
    retrievers: Sequence[str]
    name: str = "run"
    reranker_path: str | None = None
    top_n: int = TOP_N
    settings: dict[str, Any] = field(default_factory=dict)
    ray: str | None = None  # a Ray address: retrieval sharded on its actors (evalcore.retrieval.sharded.driver)
    shards: int | None = None
    device: str = "cpu"  # cuda: the dense screening's matrix products on the GPU too


@dataclass
class RunResult:
    run_id: str
    name: str
    seconds: float
    new_embeddings: int
    cached_embeddings: int
    retrievers: list[str]
    rerank_note: str | None


def run_evaluation(
    request: RunRequest,
    store: Store,
    embedders: Sequence[Embedder] | None = None,
    reranker: Reranker | None = None,
    progress: Progress | None = None,
    cancelled: Callable[[], bool] | None = None,
    run_id: str | None = None,
) -> RunResult:
    """Evaluate ``request`` and store it as one complete run; returns its id and counts.
    Callers build a RunSpec and :func:`evalcore.run.execute.execute` it, which loads the
    inputs and models and calls this.

    ``embedders``: the embedding models (default: the packaged one); with several, every
    strategy runs under each model, stored as ``STRATEGY@MODEL`` (:func:`evalcore.embedding.models.plan`).

    ``progress`` receives every stage on the run's one scale (evalcore.progress); the run's
    row in the store follows the same stages. ``cancelled`` is polled between stages,
    query blocks and embedding batches; when it returns True the run stops and is marked
    ``cancelled``. ``run_id`` lets a caller (a job) choose the id.

    However the run ends early, its row ends ``failed`` (or ``cancelled``) with the reason,
    where the store can still be written: an error, or SIGTERM/SIGINT at any moment, the
    final write included (evalcore.signals), which is then raised as
    :class:`~evalcore.errors.Interrupted` naming the signal, the stage and the run.
    """
    with signals.handled():
        return _evaluate(request, store, embedders, reranker, progress or SilentProgress(), cancelled, run_id)


def _evaluate(
    request: RunRequest,
    store: Store,
    embedders: Sequence[Embedder] | None,
    reranker: Reranker | None,
    progress: Progress,
    cancelled: Callable[[], bool] | None,
    run_id: str | None,
) -> RunResult:

    retrievers = parse_retrievers(request.retrievers)
    rerank_note = None
    reranks = [r for r in retrievers if split_retriever(r)[0] == "rerank"]
    if reranks and reranker is None:
        if request.reranker_path:
            reranker = _Reranker.load(request.reranker_path)
        else:
            rerank_note = (
                "rerank was not run: no cross-encoder model is available locally "
                "(give --reranker PATH to a sentence-transformers CrossEncoder folder)"
            )
            if reranks != ["rerank"]:
                rerank_note = rerank_note.replace(
                    "rerank was", f"{', '.join(reranks)} {'was' if len(reranks) == 1 else 'were'}", 1
                )
            retrievers = [r for r in retrievers if r not in reranks]
    if reranker is not None and reranks:
        rerank_note = f"rerank: cross-encoder {reranker.path}, hybrid top {RERANK_DEPTH}"
    if not retrievers:
        raise ConfigError("no retriever left to run (rerank alone needs --reranker PATH)")

    models = list(embedders or ()) or [load_embedder()]
    plan = model_plan(request.strategies, models)
    embedder = models[0]
    dims = {m.dim for m in models}
    settings = _settings(request, embedder, retrievers)
    if len(models) > 1:
        settings["models"] = {p.strategy.name: {"chunker": p.chunker, "model": p.embedder.name} for p in plan}
        settings["strategies"] = {p.strategy.name: settings["strategies"][p.chunker] for p in plan}

    run_id = run_id or new_run_id()
    t_start = time.perf_counter()
    row = {
        "run_id": run_id,
        "name": request.name,
        "stage": "starting",
        "progress": 0.0,
        "corpus_root": request.corpus.root,
        "corpus_fingerprint": request.corpus.fingerprint,
        "questions_path": request.ground_truth.source.get("questions"),
        "ood_path": request.ground_truth.source.get("ood"),
        "question_set": request.ground_truth.source.get("dataset"),
        "question_set_version": _int_or_none(request.ground_truth.source.get("dataset_version")),
        "model": ", ".join(m.name for m in models),
        "model_dim": dims.pop() if len(dims) == 1 else None,
        "pipeline_version": PIPELINE_VERSION,
        "strategies": ",".join(p.strategy.name for p in plan),
        "retrievers": ",".join(retrievers),
        "rerank_note": rerank_note,
        "settings": json.dumps(settings),
    }
    shown = progress  # the caller's receiver (the CLI's bars): it also counts the tables written
    progress = Fanout(StoreProgress(store, run_id), progress)
    job = Work(
        request.corpus,
        request.ground_truth,
        request.top_n,
        store,
        embedder,
        reranker,
        retrievers,
        run_id,
        progress,
        cancelled,
        plan,
        ray=(request.ray, request.shards) if request.ray else None,
        device=request.device,
    )
    try:
        store.start_run(row)
        job.started = True
        log.info("run %s started", run_id)
        tables = job.execute()
        # the store writes the tables that have rows, calling before_commit after each and
        # once more before the commit: the caller's bar counts the tables written (the run's
        # row is not touched inside that transaction; the commit marks it complete)
        left = [sum(1 for df in tables.values() if df is not None and not df.empty)]
        job._stage(job.scale.write(left[0]))

        def written() -> None:
            _before_commit()
            if left[0] > 0:
                left[0] -= 1
                shown.advance()

        seconds = time.perf_counter() - t_start
        with signals.hold():  # a signal here is raised by _before_commit: the write rolls back whole
            store.complete_run(
                run_id,
                tables,
                {
                    "new_embeddings": job.new_embeddings,
                    "cached_embeddings": job.cached_embeddings,
                },
                before_commit=written,
            )
    except BaseException as exc:
        if not job.started:  # no run row to mark: the error (or signal) as it is
            signals.raise_if_signalled()
            raise
        fail_run(store, run_id, job.stage_name, exc)
    finally:
        progress.close()
    signum = signals.received()
    if signum is not None:  # it came as the commit returned: the run is complete
        raise Interrupted(signum, f"after run {run_id} was stored complete")
    return RunResult(run_id, request.name, seconds, job.new_embeddings, job.cached_embeddings, retrievers, rerank_note)


def _before_commit() -> None:
    testhooks.pause("writing results")
    signals.raise_if_signalled()


def _version(package: str) -> str | None:
    """An installed package's version, read without importing it (torch takes seconds)."""

    try:
        return version(package)
    except PackageNotFoundError:
        return None


def _int_or_none(value: str | None) -> int | None:
    """A question-set version as stored in the run's row (None: the run read question files)."""
    return int(value) if value else None


def _settings(request: RunRequest, embedder: Embedder, retrievers: list[str]) -> dict[str, Any]:

    runtime = getattr(embedder, "runtime", None)
    return {
        "evalcore": __version__,
        "pipeline_version": PIPELINE_VERSION,
        "python": platform.python_version(),
        "torch": _version("torch"),
        "sentence_transformers": _version("sentence-transformers"),
        "embedding_runtime": f"{runtime} {_version(runtime) or ''}".strip() if runtime else None,
        "model": embedder.name,
        "dim": embedder.dim,
        "strategies": {
            s.name: {
                "size": s.size,
                "overlap": s.overlap,
                "boundaries": s.boundaries,
                "header": s.header,
                "intro": s.intro,
                "describe": s.describe(),
            }
            for s in request.strategies
        },
        "retrievers": retrievers,
        "top_n": request.top_n,
        "rrf_k": RRF_K,
        "rerank_depth": RERANK_DEPTH,
        "bm25": {"k1": 1.2, "b": 0.75},
        **analyzer_settings(retrievers),
        "gate_top": DEFAULT_TOP,
        **ground_truth_settings(request.corpus, request.ground_truth),
        **request.settings,
    }
