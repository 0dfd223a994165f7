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

from evalcore.configurations import EXTERNAL
from evalcore.errors import ConfigError, InputError
from evalcore.external.record import DEFAULT_MAX_FAILURES
from evalcore.inputs import question_sets
from evalcore.inputs.groundtruth import validation_report
from evalcore.inputs.language import CorpusLanguage, detect_language
from evalcore.inputs.sources import server_path
from evalcore.inputs.uploads import DEFAULT_LIMITS, save_upload
from evalcore.run.execute import load_inputs, model_folders
from evalcore.run.spec import SIMILARITY, RunSpec, endpoint_from_json, endpoint_json
from evalcore.store.basics import new_run_id
from evalcore.store.jobs import job_exists, job_ids

if TYPE_CHECKING:
    from evalcore.external.endpoint import Endpoint
    from evalcore.inputs.uploads import Limits, UploadedFile
    from evalcore.records import ValidationReport
    from evalcore.store import Store

SOURCES = ("upload", "folder", "demo")  # what :func:`source` says


def job_source(spec: RunSpec) -> str:
    """Where a job's inputs are: ``demo`` (the built-in demo), ``folder`` (paths on the server,
    inside the operator's data roots) or ``upload`` (files saved under runs/uploads/JOB_ID)."""
    return "demo" if spec.demo else "folder" if spec.server_paths else "upload"


def _job_spec(where: str, corpus: str | None, questions: str | None, ood: str | None, **fields: Any) -> RunSpec:
    """The run a job makes (what the job's process executes): confined to what the operator
    allows (model folders and server folders inside the data roots, an endpoint under the
    allowed prefixes), checked again there."""
    if where == "demo":
        return RunSpec(demo=True, confined=True, **fields)
    inputs: dict[str, Any] = {"questions": questions, "ood": ood or None} if fields.get("dataset") is None else {}
    return RunSpec(corpus=corpus, confined=True, server_paths=where == "folder", **inputs, **fields)


def endpoint_setup(
    endpoint: Endpoint, chunker: str = EXTERNAL, retriever: str = EXTERNAL, score: str = SIMILARITY
) -> dict[str, Any]:
    """An endpoint run's setup as the dashboard keeps it (what :func:`with_options` takes): the
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
    spec: RunSpec
    report: ValidationReport
    skipped: tuple[str, ...]
    notes: tuple[str, ...] = ()  # what the upload did to paths (a zip's top folder left out)
    documents: tuple[str, ...] = ()  # the corpus's document ids (what a needle's "document" must name)
    language: CorpusLanguage | None = None  # the corpus's main language (built-in runs; not the demo's)


class NothingToScore(InputError):
    """Inputs that load but hold no valid in-domain question: ``report`` is the validation
    report (each invalid needle with its line and reason) and ``documents`` the document ids
    the corpus has, so a screen can show why no needle matched."""

    def __init__(self, message: str, report: ValidationReport, documents: Sequence[str]) -> None:
        super().__init__(message)
        self.report = report
        self.documents = list(documents)
        self.notes: tuple[str, ...] = ()  # an upload's notes (a zip's top folder left out)


def _server_paths(corpus: str | None, questions: str | None, ood: str | None) -> tuple[str, str, str | None]:
    return (
        str(server_path(corpus, "corpus folder")),
        str(server_path(questions, "questions file")),
        str(server_path(ood, "ood file")) if ood else None,
    )


def validate(spec: RunSpec, sets: Store | None = None) -> ValidationReport:
    """The ``evalcore validate`` report of a spec's inputs, after checking its model folders
    (its strategies and retrievers, or its endpoint, were checked when it was built).
    EvalcoreError when the inputs cannot be loaded, :class:`NothingToScore` when no question
    can be scored. ``sets``: the store a spec's question set is read from (never written)."""
    return _validated(spec, sets)[0]


def _validated(
    spec: RunSpec, sets: Store | None = None
) -> tuple[ValidationReport, tuple[str, ...], CorpusLanguage | None]:
    """:func:`validate`'s report, the corpus's document ids and, for a built-in run of the
    user's corpus, its main language (evalcore.inputs.language; it changes nothing run)."""
    if spec.endpoint is None:
        model_folders(spec)
    loaded = load_inputs(spec, sets, cache=False)
    corpus, gt = loaded.corpus, loaded.ground_truth
    report = validation_report(corpus, gt)
    documents = tuple(d.doc_id for d in corpus.documents)
    if not gt.valid_questions:
        raise NothingToScore("no valid in-domain question to score (every needle is invalid)", report, documents)
    language = detect_language(corpus) if spec.kind == "builtin" and not spec.demo else None
    return report, documents, language


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
    try:
        spec = _job_spec(
            "upload",
            str(saved.corpus.resolve()),
            str(saved.questions.resolve()) if saved.questions else None,
            str(saved.ood.resolve()) if saved.ood else None,
            strategies=strategies,
            retrievers=retrievers,
            dataset=pinned,
        )
        report, documents, language = _validated(spec, store)
    except NothingToScore as exc:
        shutil.rmtree(saved.folder, ignore_errors=True)
        exc.notes = saved.notes
        raise
    except BaseException:
        shutil.rmtree(saved.folder, ignore_errors=True)
        raise
    return Prepared(job_id, spec, report, saved.skipped, saved.notes, documents, language)


def _pinned(store: Store, dataset: str | None, *files: object) -> str | None:
    """``NAME@VERSION`` of a question set reference (``NAME``: its newest version), so the job
    runs the version that was validated; None without one."""
    if dataset is None:
        return None
    if any(f for f in files):
        raise ConfigError("a run takes a question set or question files, not both")

    if not store.path.exists():
        raise InputError("the store holds no question set yet (save one on the Questions page)")
    return question_sets.load_question_set(store, dataset).version.label


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
        root = str(server_path(corpus, "corpus folder"))
        spec = _job_spec("folder", root, None, None, strategies=strategies, retrievers=retrievers, dataset=pinned)
    else:
        paths = _server_paths(corpus, questions, ood)
        spec = _job_spec("folder", *paths, strategies=strategies, retrievers=retrievers)
    report, documents, language = _validated(spec, store)
    return Prepared(new_run_id(), spec, report, (), (), documents, language)


def prepare_demo(strategies: str, retrievers: str) -> Prepared:
    """Validate the built-in demo with these strategies and retrievers."""
    spec = _job_spec("demo", None, None, None, strategies=strategies, retrievers=retrievers)
    report, documents, _language = _validated(spec)
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
    pipeline: dict[str, Any] = {  # what an endpoint's setup sets
        "chunker": EXTERNAL,
        "retriever_name": EXTERNAL,
        "score": SIMILARITY,
        "max_failures": DEFAULT_MAX_FAILURES,
    }
    options = endpoint_options(endpoint) if endpoint is not None else {"endpoint": None}
    spec = dataclasses.replace(prepared.spec, models=tuple(models), **{**pipeline, **options})
    report, documents, language = _validated(spec, sets)
    return Prepared(prepared.job_id, spec, report, prepared.skipped, prepared.notes, documents, language)


def discard(store: Store, prepared: Prepared) -> None:
    """Forget prepared inputs that were never submitted (removes a saved upload folder)."""
    if job_source(prepared.spec) == "upload":
        folder = uploads_dir(store) / prepared.job_id
        if not job_exists(store, prepared.job_id):
            shutil.rmtree(folder, ignore_errors=True)


def clean_uploads(store: Store, max_age_hours: float = 24.0) -> list[str]:
    """Remove upload folders that no job refers to and that are older than ``max_age_hours``
    (inputs validated but never started); folders of submitted jobs stay, since their
    runs point at them. Returns the removed folder names."""
    root = uploads_dir(store)
    if not root.is_dir():
        return []
    known = job_ids(store)
    cutoff = time.time() - max_age_hours * 3600
    removed = []
    for folder in root.iterdir():
        if folder.is_dir() and folder.name not in known and folder.stat().st_mtime < cutoff:
            shutil.rmtree(folder, ignore_errors=True)
            removed.append(folder.name)
    return removed
