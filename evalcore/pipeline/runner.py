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
import signal
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, NoReturn

from evalcore import PIPELINE_VERSION, __version__, signals, testhooks
from evalcore.errors import Interrupted, RunInterrupted
from evalcore.measures.threshold import DEFAULT_TOP
from evalcore.pipeline.retrieval import RERANK_DEPTH, RRF_K, analyzer_settings, parse_retrievers, split_retriever
from evalcore.progress import Fanout, Progress, Scale, SilentProgress, Stage, StoreProgress
from evalcore.records import Chunk, Corpus, GroundTruth, Strategy
from evalcore.store.basics import new_run_id

if TYPE_CHECKING:
    import numpy as np
    import pandas as pd

    from evalcore.pipeline.embedding import Embedder
    from evalcore.pipeline.models import Planned
    from evalcore.pipeline.retrieval import Reranker
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
    embedder: Embedder | None = None,
    reranker: Reranker | None = None,
    progress: Progress | None = None,
    cancelled: Callable[[], bool] | None = None,
    run_id: str | None = None,
    embedders: Sequence[Embedder] | None = None,
) -> RunResult:
    """Evaluate ``request`` and store it as one complete run; returns its id and counts.

    ``embedders`` (several embedding models) runs every strategy under each model, stored
    as ``STRATEGY@MODEL`` (:func:`evalcore.pipeline.models.plan`); ``embedder`` is the one model otherwise.

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
        return _evaluate(request, store, embedder, reranker, progress or SilentProgress(), cancelled, run_id, embedders)


def _evaluate(
    request: RunRequest,
    store: Store,
    embedder: Embedder | None,
    reranker: Reranker | None,
    progress: Progress,
    cancelled: Callable[[], bool] | None,
    run_id: str | None,
    embedders: Sequence[Embedder] | None,
) -> RunResult:
    from evalcore.pipeline.embedding import load_embedder

    retrievers = parse_retrievers(request.retrievers)
    rerank_note = None
    reranks = [r for r in retrievers if split_retriever(r)[0] == "rerank"]
    if reranks and reranker is None:
        if request.reranker_path:
            from evalcore.pipeline.retrieval import Reranker as _Reranker

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
        from evalcore.errors import ConfigError

        raise ConfigError("no retriever left to run (rerank alone needs --reranker PATH)")
    from evalcore.pipeline.models import plan as model_plan

    models = list(embedders or ()) or [embedder or testhooks.embedder() or load_embedder()]
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
    job = _Job(request, store, embedder, reranker, retrievers, run_id, progress, cancelled, plan)
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
            signals.check()
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
    signals.check()


def fail_run(store: Store, run_id: str, stage: str, exc: BaseException) -> NoReturn:
    """Mark the run failed (or cancelled) with its reason where the store can be written,
    then raise: a signal as Interrupted naming it, the stage and the run; anything else as it was.
    Every kind of run ends this way (built-in ones here, runs made elsewhere in evalcore.external)."""
    from evalcore.errors import EvalcoreError
    from evalcore.store import Store as _Store

    signum = signals.received()
    if signum is not None:
        reason = f"interrupted by {signal.Signals(signum).name} during {stage}"
    elif isinstance(exc, KeyboardInterrupt):
        reason = "interrupted (Ctrl-C)"
    elif isinstance(exc, EvalcoreError):
        reason = str(exc)
    else:
        reason = f"{type(exc).__name__}: {exc}"
    status = "cancelled" if signum is None and isinstance(exc, RunInterrupted) and "cancel" in reason else "failed"
    try:  # a short lock wait: a run that cannot be marked now is marked by the reaper later
        _Store(store.path, lock_timeout=10.0).finish_run(run_id, status, reason)
        marked = f"run {run_id} marked {status}"
    except Exception as err:  # noqa: BLE001 - the original error matters more
        log.info("could not mark run %s %s: %s", run_id, status, err)
        marked = f"run {run_id} could not be marked {status} now (it will be once the store can be written)"
        if isinstance(exc, EvalcoreError) and not isinstance(exc, Interrupted):
            raise type(exc)(f"{exc}; {marked}") from exc
    if signum is not None:
        raise Interrupted(signum, f"during {stage}", marked) from None
    raise exc


def _version(package: str) -> str | None:
    """An installed package's version, read without importing it (torch takes seconds)."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version(package)
    except PackageNotFoundError:
        return None


def _int_or_none(value: str | None) -> int | None:
    """A question-set version as stored in the run's row (None: the run read question files)."""
    return int(value) if value else None


def _settings(request: RunRequest, embedder: Embedder, retrievers: list[str]) -> dict[str, Any]:
    from evalcore.store.rows import ground_truth_settings

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


class _Checked:
    """A Progress that also checks for a cancel after every advance (embedding batches)."""

    def __init__(self, progress: Progress, check: Callable[[], None]) -> None:
        self.inner, self.check = progress, check

    def stage(self, stage: Stage) -> None:
        self.inner.stage(stage)

    def advance(self, n: int = 1) -> None:
        self.inner.advance(n)
        self.check()

    def close(self) -> None:
        self.inner.close()


class _Job:
    """The work of one run; collects result tables in memory."""

    def __init__(
        self,
        request: RunRequest,
        store: Store,
        embedder: Embedder,
        reranker: Reranker | None,
        retrievers: list[str],
        run_id: str,
        progress: Progress,
        cancelled: Callable[[], bool] | None,
        plan: list[Planned],
    ) -> None:
        self.r: RunRequest = request
        self.store = store
        self.embedder = embedder  # the first model (documents are stamped with all of them)
        self.plan = plan
        self.reranker = reranker
        self.retrievers = retrievers
        self.run_id = run_id
        self.progress = _Checked(progress, self._check)
        self.stage_name = "starting"
        self.started = False  # the run's row is in the store
        self.scale = Scale([p.strategy.name for p in plan])
        self.cancelled = cancelled or (lambda: False)
        self.new_embeddings = 0
        self.cached_embeddings = 0
        self.rows: dict[str, list[dict[str, Any]]] = {
            k: [] for k in ("documents", "strategies", "chunks", "queries", "destroyed", "timings")
        }
        self._pieces_cache: dict[str, int] = {}
        self.frames: dict[str, list[pd.DataFrame]] = {"results": [], "hits": []}

    # -- helpers -----------------------------------------------------------------
    def _check(self) -> None:
        if self.cancelled():
            raise RunInterrupted("cancelled by the user")

    def _stage(self, stage: Stage) -> None:
        self._check()
        self.stage_name = stage.name
        self.progress.stage(stage)
        testhooks.pause(stage.name)

    def _timing(self, stage: str, strategy: str | None, seconds: float, items: int) -> None:
        self.rows["timings"].append(
            {
                "run_id": self.run_id,
                "stage": stage,
                "strategy": strategy,
                "seconds": seconds,
                "items": items,
                "per_item_ms": (seconds * 1000.0 / items) if items else None,
            }
        )

    def _embed(self, texts: Sequence[str], embedder: Embedder) -> tuple[np.ndarray, Any]:
        from evalcore.pipeline.embedding import embed_with_cache

        vecs, st = embed_with_cache(embedder, texts, self.store, on_progress=self.progress.advance)
        self.new_embeddings += st.new
        self.cached_embeddings += st.cached
        return vecs, st

    def _header_pieces(self, header: str, embedder: Embedder) -> int:
        if not header:
            return 0
        key = f"{embedder.name}\0{header}"
        if key not in self._pieces_cache:
            # pieces the header adds: its own pieces without [CLS]/[SEP]
            self._pieces_cache[key] = embedder.count_pieces([header.rstrip("\n")])[0] - 2
        return self._pieces_cache[key]

    # -- the run -----------------------------------------------------------------
    def execute(self) -> dict[str, pd.DataFrame]:
        import pandas as pd

        r = self.r
        gt = r.ground_truth
        self._record_documents()
        self._record_queries()
        in_q = list(gt.valid_questions)
        texts = [q.question for q in in_q] + [q.query for q in gt.ood]
        qids = [q.query_id for q in in_q] + [q.query_id for q in gt.ood]
        n_in = len(in_q)
        groups = [q.group for q in in_q]

        qvecs = {}
        for embedder in {p.embedder.name: p.embedder for p in self.plan}.values():
            self._stage(self.scale.query_embedding(len(texts)))
            qvecs[embedder.name], st = self._embed(texts, embedder)
            self._timing("query_embedding", None, st.seconds, st.new)

        for item in self.plan:
            self._run_strategy(
                item.strategy, qvecs[item.embedder.name], qids, texts, n_in, groups, item.embedder, item.chunker
            )

        from evalcore.pipeline.configurations import builtin_rows

        self.rows["configurations"] = builtin_rows(
            self.run_id, [(p.strategy.name, p.chunker, p.embedder.name) for p in self.plan], self.retrievers
        )
        frames = {k: pd.DataFrame(v) for k, v in self.rows.items() if k not in self.frames}
        for name, parts in self.frames.items():
            frames[name] = pd.concat(parts, ignore_index=True) if parts else pd.DataFrame()
        return frames

    def _record_documents(self) -> None:
        from evalcore.store.rows import document_rows

        names = list(dict.fromkeys(p.embedder.name for p in self.plan))
        dims = {p.embedder.dim for p in self.plan}
        self.rows["documents"] += document_rows(
            self.run_id, self.r.corpus, ", ".join(names), dims.pop() if len(dims) == 1 else None
        )

    def _record_queries(self) -> None:
        from evalcore.store.rows import query_rows

        self.rows["queries"] += query_rows(self.run_id, self.r.ground_truth)

    def _run_strategy(
        self,
        strategy: Strategy,
        qvec: np.ndarray,
        qids: list[str],
        qtexts: list[str],
        n_in: int,
        groups: list[str],
        embedder: Embedder,
        chunker: str,
    ) -> None:
        from evalcore.pipeline.chunking import chunk_corpus
        from evalcore.pipeline.embedding import WINDOW, normalisation_check
        from evalcore.pipeline.scoring import correct_sets, destroyed_cut

        r, name = self.r, strategy.name
        self._stage(self.scale.strategy(name, "chunking", len(r.corpus.documents)))
        t0 = time.perf_counter()
        chunks: list[Chunk] = chunk_corpus(r.corpus, strategy)
        self._timing("chunking", name, time.perf_counter() - t0, len(chunks))
        self.progress.advance(len(r.corpus.documents))
        ctexts = [c.text for c in chunks]

        pieces = embedder.count_pieces(ctexts)
        header_pieces = [self._header_pieces(c.header, embedder) for c in chunks]

        self._stage(self.scale.strategy(name, "embedding", len(chunks)))
        cvec, st = self._embed(ctexts, embedder)
        self._timing("index", name, st.seconds, st.new)

        spans = self.r.ground_truth.spans
        correct = correct_sets(chunks, spans)
        destroyed = sorted(g for g, ids in correct.items() if len(ids) == 0)
        for g in destroyed:
            s = spans[g]
            self.rows["destroyed"].append(
                {
                    "run_id": self.run_id,
                    "strategy": name,
                    "group_id": g,
                    "doc_id": s.doc_id,
                    "start": s.start,
                    "end": s.end,
                    "cut": destroyed_cut(chunks, s),
                }
            )
        self.rows["strategies"].append(
            {
                "run_id": self.run_id,
                "strategy": name,
                "size": strategy.size,
                "overlap": strategy.overlap,
                "boundaries": strategy.boundaries,
                "header": strategy.header,
                "chunks": len(chunks),
                "pieces": int(sum(pieces)),
                "header_pieces": int(sum(header_pieces)),
                "over_window": int(sum(p > getattr(embedder, "window", WINDOW) for p in pieces)),
                "destroyed": len(destroyed),
                "norm_max_diff": normalisation_check(cvec, 200),
                "chunker": chunker,
                "model": embedder.name,
            }
        )
        for i, c in enumerate(chunks):
            self.rows["chunks"].append(
                {
                    "run_id": self.run_id,
                    "strategy": name,
                    "chunk_id": i,
                    "doc_id": c.doc_id,
                    "section": c.section,
                    "start": c.start,
                    "end": c.end,
                    "evidence_start": c.evidence_start,
                    "header": c.header,
                    "content": c.content,
                    "text": c.text,
                    "pieces": pieces[i],
                    "header_pieces": header_pieces[i],
                }
            )
        if not chunks:
            return

        self._stage(self.scale.strategy(name, "retrieval and scoring", len(qids)))
        self._retrieve(name, chunks, cvec, qvec, qids, qtexts, n_in, groups, correct)

    def _retrieve(
        self,
        name: str,
        chunks: list[Chunk],
        cvec: np.ndarray,
        qvec: np.ndarray,
        qids: list[str],
        qtexts: list[str],
        n_in: int,
        groups: list[str],
        correct: dict[str, np.ndarray],
    ) -> None:
        import numpy as np

        from evalcore.pipeline.scoring import score_queries

        empty = np.zeros(0, dtype=np.int64)
        per_query = [correct[groups[qi]] if qi < len(groups) else empty for qi in range(len(qids))]
        rerank: Callable[[str, np.ndarray], list[float]] | None = None
        reranker = self.reranker
        if reranker is not None and any(split_retriever(r)[0] == "rerank" for r in self.retrievers):

            def rerank(query: str, ids: np.ndarray) -> list[float]:
                return reranker.score(query, [chunks[j].text for j in ids])

        def on_block(done: int) -> None:
            self._check()
            self.progress.advance(done)

        scored = score_queries(
            self.run_id,
            name,
            [c.text for c in chunks],
            cvec,
            qvec,
            qids,
            qtexts,
            per_query,
            n_in,
            self.retrievers,
            self.r.top_n,
            rerank=rerank,
            on_block=on_block,
        )
        self.frames["results"] += scored.results
        self.frames["hits"] += scored.hits
        for stage, seconds in scored.clock.items():
            items = len(chunks) if stage.startswith("bm25_build") else len(qids)
            self._timing(stage, name, seconds, items)
