"""The one way a run is made: :func:`execute` a :class:`~evalcore.run.spec.RunSpec`.

It loads the spec's inputs, then runs the built-in pipeline
(:func:`evalcore.run.runner.run_evaluation`), a live endpoint
(:func:`evalcore.external.endpoint.run_endpoint`) or a Python retriever
(:func:`evalcore.external.live.run_live`), and stores the run. The CLI's run commands, the job
worker (the New run screen's jobs) and :func:`evalcore.evaluate` all come through here.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from evalcore import testhooks
from evalcore.configurations import external
from evalcore.embedding.distributed import RayEmbedder, check_address
from evalcore.embedding.embedder import load_embedder
from evalcore.errors import Cancelled, ConfigError
from evalcore.external.chunks import ChunkSet, read_chunks
from evalcore.external.endpoint_calls import run_endpoint
from evalcore.external.live import run_live
from evalcore.external.python_hits import function_answers
from evalcore.inputs import question_sets, sources
from evalcore.inputs.corpus import load_corpus
from evalcore.inputs.groundtruth import load_ground_truth
from evalcore.inputs.sources import server_path
from evalcore.records import Corpus as CorpusRecord
from evalcore.retrieval.engine.threads import retrieval_threads
from evalcore.run.runner import RunRequest, run_evaluation
from evalcore.run.spec import RunSpec

if TYPE_CHECKING:
    from threading import Thread

    from evalcore.embedding.embedder import Embedder
    from evalcore.external.live import LiveResult
    from evalcore.inputs.question_sets import QuestionSet
    from evalcore.progress import Progress
    from evalcore.records import Corpus, GroundTruth
    from evalcore.run.runner import RunResult
    from evalcore.store import Store

NO_QUESTION = "no valid in-domain question to score (every needle is invalid)"
SEE_VALIDATE = "; see validate"


@dataclass(frozen=True, slots=True)
class Inputs:
    """A spec's loaded inputs; ``question_set`` when they came from a question set of the store."""

    corpus: Corpus
    ground_truth: GroundTruth
    question_set: QuestionSet | None = None


def execute(
    spec: RunSpec,
    store: Store,
    progress: Progress | None = None,
    cancelled: Callable[[], bool] | None = None,
    *,
    run_id: str | None = None,
    on_step: Callable[[str], None] | None = None,
    on_inputs: Callable[[Inputs], None] | None = None,
) -> RunResult | LiveResult:
    """Make the run ``spec`` describes and store it; returns its result (RunResult for the
    built-in pipeline, LiveResult for an endpoint or a Python retriever).

    ``progress`` receives the run's stages; ``cancelled`` is polled (True stops the run, which
    ends ``cancelled``); ``run_id`` chooses the id (a job's). ``on_step`` hears the steps before
    the run's row exists (``loading inputs``, ``loading the model``, ``running``), ``on_inputs``
    the loaded inputs before anything is run (the CLI reports excluded needles there).
    Errors are EvalcoreError subclasses naming what to fix (exit code 2 in the CLI)."""

    def step(name: str) -> None:
        if cancelled is not None and cancelled():
            raise Cancelled("cancelled by the user")
        if on_step is not None:
            on_step(name)

    if spec.kind == "endpoint":
        return _endpoint(spec, store, progress, cancelled, run_id, step, on_inputs)
    if spec.kind == "python":
        return _python(spec, store, progress, step, on_inputs, run_id)
    return _builtin(spec, store, progress, cancelled, run_id, step, on_inputs)


def load_inputs(spec: RunSpec, store: Store | None = None, *, cache: bool = True) -> Inputs:
    """A spec's corpus and ground truth: the demo, a corpus with question files, or a corpus
    with a question set of ``store``; with ``server_paths``, only inside the data roots.
    With ``store``, PDF and HTML extractions are reused (``cache=False``: the store is only
    read, for a question set: what a job's inputs are checked with before it is queued).
    InputError / ConfigError otherwise."""
    extractions = store if cache else None

    if spec.demo:
        return Inputs(*sources.load_demo())
    if spec.corpus is None:
        raise ConfigError("a corpus folder is required (or the demo)")
    if isinstance(spec.corpus, CorpusRecord):
        if spec.questions is None:
            raise ConfigError("a questions.jsonl file is required")
        return Inputs(spec.corpus, load_ground_truth(spec.corpus, spec.questions, spec.ood))
    corpus = _path(spec, spec.corpus, "corpus folder")
    if spec.dataset is not None:
        if store is None:
            raise ConfigError("a question set is read from a store")
        qs = question_sets.load_question_set(store, spec.dataset)
        loaded = load_corpus(corpus, cache=extractions)
        return Inputs(loaded, qs.ground_truth(loaded), qs)
    if spec.questions is None:
        raise ConfigError("a questions.jsonl file is required (or a question set)")
    questions = _path(spec, spec.questions, "questions file")
    ood = _path(spec, spec.ood, "ood file") if spec.ood else None
    return Inputs(*sources.load_corpus_and_questions(corpus, questions, ood, cache=extractions))


def _path(spec: RunSpec, raw: Any, what: str, bounded: bool | None = None) -> str:
    if not (spec.server_paths if bounded is None else bounded):
        return str(raw)

    return str(server_path(str(raw), what))


def model_folders(spec: RunSpec) -> list[str]:
    """The spec's model folders (each inside the data roots when the spec is confined); empty:
    the packaged model."""
    return [_path(spec, p, "model folder", spec.confined) for p in spec.models]


def embedders(spec: RunSpec) -> list[Embedder]:
    """The spec's embedding models, loaded (on a Ray cluster when ``spec.ray``). Without model
    folders, the packaged model, or the test embedder of ``$EVALCORE_TEST_EMBEDDER``
    (evalcore.testhooks; the one place a run reads it)."""

    paths = model_folders(spec)
    loaded = [load_embedder(p, device=spec.device) for p in paths]
    if not loaded:
        loaded = [testhooks.embedder() or load_embedder(None, device=spec.device)]
    if spec.ray:
        where: list[str | None] = [*paths] or [None]
        loaded = [
            RayEmbedder.start(spec.ray, e, device=spec.device, model_path=path)
            for e, path in zip(loaded, where, strict=True)
        ]
    return loaded


def _warm_kernels() -> Thread:
    """:func:`evalcore.retrieval.engine.kernels.warm` in a thread, started now (a failure there only
    leaves the loading to the first query)."""

    def warm() -> None:
        try:
            from evalcore.retrieval.engine import kernels  # numba may fail to load: then the first query compiles

            kernels.warm()
        except Exception:
            logging.getLogger(__name__).debug("warming the kernels failed", exc_info=True)

    thread = threading.Thread(target=warm, name="evalcore-kernels", daemon=True)
    thread.start()
    return thread


class _Loading:
    """:func:`embedders` of a spec in a thread, started now: importing the runtime and
    compiling the model (about a second) overlap reading the corpus and the questions. Its
    error, if any, is raised by :meth:`result`, after any error of the inputs."""

    def __init__(self, spec: RunSpec) -> None:

        self._models: list[Embedder] = []
        self._error: BaseException | None = None

        def load() -> None:
            try:
                self._models = embedders(spec)
            except BaseException as exc:  # noqa: BLE001 - raised in the caller's thread by result()
                self._error = exc

        self._thread = threading.Thread(target=load, name="evalcore-model", daemon=True)
        self._thread.start()

    def wait(self) -> None:
        self._thread.join()

    def result(self) -> list[Embedder]:
        self.wait()
        if self._error is not None:
            raise self._error
        return self._models


def _builtin(
    spec: RunSpec,
    store: Store,
    progress: Progress | None,
    cancelled: Callable[[], bool] | None,
    run_id: str | None,
    step: Callable[[str], None],
    on_inputs: Callable[[Inputs], None] | None,
) -> RunResult:

    retrieval_threads()  # a bad $EVALCORE_THREADS stops the run here, not after embedding
    if spec.ray:
        check_address(spec.ray)  # an address nobody serves fails now, within seconds, not after the inputs
    step("loading inputs")
    loading = None if spec.ray else _Loading(spec)  # the model loads while the inputs do
    try:
        inputs = load_inputs(spec, store)
        request = RunRequest(
            corpus=inputs.corpus,
            ground_truth=inputs.ground_truth,
            strategies=spec.parsed_strategies,
            retrievers=spec.retrievers,
            name=spec.run_name,
            reranker_path=spec.reranker,
            ray=spec.ray,
            shards=spec.shards,
            device=spec.device,
        )
        if not inputs.ground_truth.valid_questions:
            raise ConfigError(NO_QUESTION + SEE_VALIDATE)
        if on_inputs is not None:
            on_inputs(inputs)
        step("loading the model")
    except BaseException:
        if loading is not None:  # never left running in native code while the process exits
            loading.wait()
        raise
    warming = _warm_kernels()  # retrieval's compiled kernels load while the model embeds
    try:
        models = embedders(spec) if loading is None else loading.result()
        step("running")
        return run_evaluation(request, store, models, progress=progress, cancelled=cancelled, run_id=run_id)
    finally:
        warming.join()  # never left compiling in native code while the process exits


def _endpoint(
    spec: RunSpec,
    store: Store,
    progress: Progress | None,
    cancelled: Callable[[], bool] | None,
    run_id: str | None,
    step: Callable[[str], None],
    on_inputs: Callable[[Inputs], None] | None,
) -> LiveResult:

    endpoint = spec.endpoint
    assert endpoint is not None  # checked, and allowed where confined, when the spec was built
    step("loading inputs")
    inputs = load_inputs(spec, store)
    if on_inputs is not None:
        on_inputs(inputs)
    step("running")
    return run_endpoint(
        store,
        inputs.corpus,
        inputs.ground_truth,
        endpoint,
        spec.run_name,
        chunker=spec.chunker,
        retriever=spec.retriever_name,
        score=spec.score,
        chunks_path=spec.chunks,
        max_failures=spec.max_failures,
        progress=progress,
        cancelled=cancelled,
        run_id=run_id,
    )


def _python(
    spec: RunSpec,
    store: Store,
    progress: Progress | None,
    step: Callable[[str], None],
    on_inputs: Callable[[Inputs], None] | None,
    run_id: str | None,
) -> LiveResult:

    fn, k = spec.function, spec.k  # checked (a function, k >= 1, the names) when the spec was built
    assert fn is not None
    step("loading inputs")
    inputs = load_inputs(spec)
    loaded, gt = inputs.corpus, inputs.ground_truth
    if not gt.valid_questions:
        raise ConfigError(NO_QUESTION)
    if on_inputs is not None:
        on_inputs(inputs)
    chunk_set = read_chunks(spec.chunks, loaded) if spec.chunks else ChunkSet(loaded, complete=False)
    function = getattr(fn, "__qualname__", type(fn).__name__)
    config = external(spec.chunker, spec.retriever_name, "python", spec.score, {"function": function, "k": k})
    step("running")
    return run_live(
        store,
        loaded,
        gt,
        config,
        chunk_set,
        lambda queries: function_answers(fn, k, loaded, queries, spec.concurrency),
        spec.run_name,
        {"function": function, "k": k, "chunks_path": str(spec.chunks) if spec.chunks else None},
        run_id=run_id,
        max_failures=spec.max_failures,
        progress=progress,
    )
