"""What a job evaluates, and its inputs checked before it is queued.

Uploads are checked in memory and saved under ``runs/uploads/JOB_ID/`` only when they
pass (evalcore.inputs.uploads); server folders are read only inside the operator's data roots
(evalcore.inputs.sources), checked here and again in the job's process; the demo needs nothing.
Nothing here writes the store.
"""

from __future__ import annotations

import dataclasses
import shutil
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from evalcore.chunking import parse_strategies
from evalcore.configurations import EXTERNAL, score_kind
from evalcore.errors import ConfigError, InputError
from evalcore.external.endpoint import allowed
from evalcore.inputs import qsets
from evalcore.inputs.corpus import load_corpus
from evalcore.inputs.groundtruth import validation_report
from evalcore.inputs.sources import server_path
from evalcore.inputs.uploads import DEFAULT_LIMITS, save_upload
from evalcore.retrieval.names import parse_retrievers
from evalcore.run.execute import load_inputs as load
from evalcore.run.execute import model_folders as folders
from evalcore.run.spec import SIMILARITY, RunSpec, endpoint_from_json, endpoint_json
from evalcore.store.basics import new_run_id

if TYPE_CHECKING:
    from evalcore.external.endpoint import Endpoint
    from evalcore.inputs.uploads import Limits, UploadedFile
    from evalcore.records import Corpus, GroundTruth
    from evalcore.store import Store

SOURCES = ("upload", "folder", "demo")


@dataclass(frozen=True, slots=True)
class JobSpec:
    """What a job evaluates. ``source``: ``upload`` (files saved under runs/uploads/JOB_ID),
    ``folder`` (paths on the server) or ``demo`` (the built-in demo; paths unused)."""

    source: str
    corpus: str | None
    questions: str | None
    ood: str | None
    strategies: str
    retrievers: str
    model: str | None = None
    models: tuple[str, ...] = ()  # several model folders (server paths inside the data roots)
    endpoint: dict[str, Any] | None = None  # a live search service instead of the built-in pipeline
    dataset: str | None = None  # NAME@VERSION: a question set of the store instead of question files

    def run_spec(self, name: str | None = None) -> RunSpec:
        """The run this job makes (what the job's process executes): confined to what the
        operator allows (model folders and server folders inside the data roots, an endpoint
        under the allowed prefixes), checked again there."""
        endpoint = self.endpoint
        common: dict[str, Any] = {
            "name": name,
            "confined": True,
            "server_paths": self.source == "folder",
            "strategies": self.strategies,
            "retrievers": self.retrievers,
            "models": self.models or ((self.model,) if self.model else ()),
        }
        if endpoint is not None:
            common.update(endpoint_options(endpoint))
        if self.source == "demo":
            return RunSpec(demo=True, **common)
        if self.dataset is not None:
            return RunSpec(corpus=self.corpus, dataset=self.dataset, **common)
        return RunSpec(corpus=self.corpus, questions=self.questions, ood=self.ood or None, **common)


def endpoint_setup(
    endpoint: Endpoint, chunker: str = EXTERNAL, retriever: str = EXTERNAL, score: str = SIMILARITY
) -> dict[str, Any]:
    """An endpoint run's setup as the dashboard keeps it (:attr:`JobSpec.endpoint`): the
    endpoint's fields as JSON values (never headers), ``score_kind``, ``chunker``, ``retriever``."""
    return {**endpoint_json(endpoint), "score_kind": score, "chunker": chunker, "retriever": retriever}


def endpoint_options(setup: dict[str, Any]) -> dict[str, Any]:
    """The RunSpec fields of an endpoint setup (:func:`endpoint_setup`)."""
    options: dict[str, Any] = {
        "endpoint": endpoint_from_json(setup),
        "chunker": setup.get("chunker", EXTERNAL),
        "retriever_name": setup.get("retriever", EXTERNAL),
        "score": setup.get("score_kind", SIMILARITY),
    }
    if setup.get("max_failures") is not None:
        options["max_failures"] = float(setup["max_failures"])
    return options


@dataclass(frozen=True, slots=True)
class Prepared:
    """Inputs that passed validation: the job id they are saved for, the spec, the
    validation report (as ``evalcore validate --json`` prints it) and skipped uploads."""

    job_id: str
    spec: JobSpec
    report: dict[str, Any]
    skipped: tuple[str, ...]
    notes: tuple[str, ...] = ()  # what the upload did to paths (a zip's top folder left out)
    documents: tuple[str, ...] = ()  # the corpus's document ids (what a needle's "document" must name)


class NothingToScore(InputError):
    """Inputs that load but hold no valid in-domain question: ``report`` is the validation
    report (each invalid needle with its line and reason) and ``documents`` the document ids
    the corpus has, so a screen can show why no needle matched."""

    def __init__(self, message: str, report: dict[str, Any], documents: Sequence[str]) -> None:
        super().__init__(message)
        self.report = report
        self.documents = list(documents)
        self.notes: tuple[str, ...] = ()  # an upload's notes (a zip's top folder left out)


def load_inputs(spec: JobSpec, cache: Store | None = None, sets: Store | None = None) -> tuple[Corpus, GroundTruth]:
    """``(corpus, ground truth)`` of a spec; InputError / ConfigError otherwise. Server
    folders are checked against the data roots (again in the job's process: the run's
    :func:`evalcore.run.execute.load_inputs`). With ``cache`` (the job's store), PDF and
    HTML extractions are reused. A spec with a question set reads it from ``sets`` (the
    store, read only) and resolves it against the corpus as the run will."""
    if spec.source not in SOURCES:
        raise ConfigError(f"unknown job source {spec.source!r}; known: {', '.join(SOURCES)}")
    if spec.source != "demo":
        if not spec.corpus:
            raise InputError("a corpus folder is required")
        if not spec.questions and spec.dataset is None:
            raise InputError("a questions.jsonl file (or a question set) is required")
    if spec.dataset is not None:
        if sets is None:
            raise ConfigError("a question set is read from a store")
        qs = qsets.load(sets, spec.dataset)
        root = server_path(spec.corpus, "corpus folder") if spec.source == "folder" else spec.corpus
        corpus = load_corpus(str(root), cache=cache)
        return corpus, qs.ground_truth(corpus)
    loaded = load(spec.run_spec(), cache)
    return loaded.corpus, loaded.ground_truth


def _server_paths(corpus: str | None, questions: str | None, ood: str | None) -> tuple[str, str, str | None]:
    return (
        str(server_path(corpus, "corpus folder")),
        str(server_path(questions, "questions file")),
        str(server_path(ood, "ood file")) if ood else None,
    )


def model_folders(spec: JobSpec) -> list[str]:
    """The spec's model folders, each inside the operator's data roots (checked again in the
    job's process); empty for the packaged model."""
    return folders(spec.run_spec())


def validate(spec: JobSpec, sets: Store | None = None) -> dict[str, Any]:
    """The ``evalcore validate`` report of a spec's inputs, after checking its strategies and
    retrievers (or its endpoint: options, and a URL the operator allows) and model folders.
    EvalcoreError when the inputs cannot be loaded, :class:`NothingToScore` when no question
    can be scored. ``sets``: the store a spec's question set is read from."""
    return _validated(spec, sets)[0]


def _validated(spec: JobSpec, sets: Store | None = None) -> tuple[dict[str, Any], tuple[str, ...]]:
    """:func:`validate`'s report and the corpus's document ids."""
    if spec.endpoint is not None:
        options = endpoint_options(spec.endpoint)
        options["endpoint"].check()
        allowed(options["endpoint"].url)
        score_kind(options["score"])
    else:
        if not parse_strategies(spec.strategies):
            raise ConfigError("choose at least one strategy")
        if not parse_retrievers(spec.retrievers):
            raise ConfigError("choose at least one retriever")
        model_folders(spec)
    corpus, gt = load_inputs(spec, sets=sets)
    report = validation_report(corpus, gt)
    documents = tuple(d.doc_id for d in corpus.documents)
    if not gt.valid_questions:
        raise NothingToScore("no valid in-domain question to score (every needle is invalid)", report, documents)
    return report, documents


def uploads_dir(store: Store) -> Path:
    return store.path.parent / "uploads"


def prepare_upload(
    store: Store,
    corpus: Sequence[UploadedFile],
    questions: UploadedFile | None,
    ood: UploadedFile | None,
    strategies: str,
    retrievers: str,
    limits: Limits | None = None,
    dataset: str | None = None,
) -> Prepared:
    """Check uploads, save them under ``runs/uploads/JOB_ID/`` and validate them; on any
    error the folder is removed and InputError/ConfigError raised. The store is not written.
    ``dataset`` (``NAME`` or ``NAME@VERSION``): the questions are that question set of the
    store (pinned to its version now), not uploaded files."""
    pinned = _pinned(store, dataset, questions, ood)
    job_id = new_run_id()
    saved = save_upload(
        uploads_dir(store) / job_id, corpus, questions, ood, limits or DEFAULT_LIMITS, questions_required=not pinned
    )
    spec = JobSpec(
        "upload",
        str(saved.corpus.resolve()),
        str(saved.questions.resolve()) if saved.questions else None,
        str(saved.ood.resolve()) if saved.ood else None,
        strategies,
        retrievers,
        dataset=pinned,
    )
    try:
        report, documents = _validated(spec, store)
    except NothingToScore as exc:
        shutil.rmtree(saved.folder, ignore_errors=True)
        exc.notes = saved.notes
        raise
    except BaseException:
        shutil.rmtree(saved.folder, ignore_errors=True)
        raise
    return Prepared(job_id, spec, report, saved.skipped, saved.notes, documents)


def _pinned(store: Store, dataset: str | None, *files: object) -> str | None:
    """``NAME@VERSION`` of a question set reference (``NAME``: its newest version), so the job
    runs the version that was validated; None without one."""
    if dataset is None:
        return None
    if any(f for f in files):
        raise ConfigError("a run takes a question set or question files, not both")

    if not store.path.exists():
        raise InputError("the store holds no question set yet (save one on the Questions page)")
    return qsets.load(store, dataset).version.label


def prepare_paths(
    corpus: str,
    questions: str,
    ood: str | None,
    strategies: str,
    retrievers: str,
    *,
    dataset: str | None = None,
    store: Store | None = None,
) -> Prepared:
    """Validate a corpus folder and jsonl files that are already on the server, inside the
    operator's data roots (evalcore.inputs.sources); InputError without reading them otherwise.
    ``dataset`` with ``store``: a question set of the store instead of the jsonl files."""
    if dataset is not None:
        if store is None:
            raise ConfigError("a question set is read from a store")
        pinned = _pinned(store, dataset, questions, ood)
        spec = JobSpec("folder", str(server_path(corpus, "corpus folder")), None, None, strategies, retrievers)
        spec = dataclasses.replace(spec, dataset=pinned)
    else:
        spec = JobSpec("folder", *_server_paths(corpus, questions, ood), strategies, retrievers)
    report, documents = _validated(spec, store)
    return Prepared(new_run_id(), spec, report, (), (), documents)


def prepare_demo(strategies: str, retrievers: str) -> Prepared:
    """Validate the built-in demo with these strategies and retrievers."""
    spec = JobSpec("demo", None, None, None, strategies, retrievers)
    report, documents = _validated(spec)
    return Prepared(new_run_id(), spec, report, (), (), documents)


def with_options(
    prepared: Prepared,
    models: Sequence[str] = (),
    endpoint: dict[str, Any] | None = None,
    sets: Store | None = None,
) -> Prepared:
    """The same inputs with model folders (each strategy then runs under each model) or a
    live endpoint (``Endpoint`` fields as JSON values, plus ``score_kind``, ``chunker``,
    ``retriever``, ``max_failures``) instead of the built-in pipeline; validated again."""
    spec = dataclasses.replace(prepared.spec, models=tuple(models), endpoint=endpoint)
    report, documents = _validated(spec, sets)
    return Prepared(prepared.job_id, spec, report, prepared.skipped, prepared.notes, documents)


def discard(store: Store, prepared: Prepared) -> None:
    """Forget prepared inputs that were never submitted (removes a saved upload folder)."""
    if prepared.spec.source == "upload":
        folder = uploads_dir(store) / prepared.job_id
        queued = store.query("SELECT count(*) AS n FROM jobs WHERE job_id = ?", [prepared.job_id])["n"][0]
        if not queued:
            shutil.rmtree(folder, ignore_errors=True)


def clean_uploads(store: Store, max_age_hours: float = 24.0) -> list[str]:
    """Remove upload folders that no job refers to and that are older than ``max_age_hours``
    (inputs validated but never started); folders of submitted jobs stay, since their
    runs point at them. Returns the removed folder names."""
    root = uploads_dir(store)
    if not root.is_dir():
        return []
    known = set(store.query("SELECT job_id FROM jobs")["job_id"])
    cutoff = time.time() - max_age_hours * 3600
    removed = []
    for folder in root.iterdir():
        if folder.is_dir() and folder.name not in known and folder.stat().st_mtime < cutoff:
            shutil.rmtree(folder, ignore_errors=True)
            removed.append(folder.name)
    return removed
