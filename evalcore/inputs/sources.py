"""A run's inputs: a corpus folder with its question files, or the built-in demo (one way
of loading them for the CLI and the dashboard's jobs), and the data roots that bound what
the dashboard may read on the server.

Data roots. The dashboard serves people who are not the operator, so a path they type is
read only when it lies inside a folder the operator listed in ``$EVALCORE_DATA_ROOTS``
(separated by ``os.pathsep``); with none listed, server folders are off. The check is made
on the real path, after symbolic links and ``..`` are resolved, and a refusal reads the
same whether the path exists or not (``/etc/shadow`` and ``/nonexistent`` get one message),
so it tells nothing about the server outside the roots. The CLI is the operator's own
terminal and reads any path it is given.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

from evalcore.boundary.files import check_path_text
from evalcore.errors import InputError
from evalcore.inputs import demo
from evalcore.inputs.corpus import load_corpus
from evalcore.inputs.groundtruth import load_ground_truth

if TYPE_CHECKING:
    from evalcore.inputs.corpus import ExtractionCache
    from evalcore.records import Corpus, GroundTruth

DATA_ROOTS_ENV = "EVALCORE_DATA_ROOTS"


def load_corpus_and_questions(
    corpus: str | Path, questions: str | Path, ood: str | Path | None = None, cache: ExtractionCache | None = None
) -> tuple[Corpus, GroundTruth]:
    """The corpus under ``corpus`` and its ground truth; InputError naming the file otherwise.
    With ``cache`` (the run store), PDF and HTML extractions are reused (evalcore.inputs.corpus)."""
    loaded = load_corpus(corpus, cache=cache)
    return loaded, load_ground_truth(loaded, questions, ood)


def load_demo() -> tuple[Corpus, GroundTruth]:
    """The built-in demo corpus (Python language reference) and its ground truth."""
    corpus = demo.load_demo_corpus()
    return corpus, load_ground_truth(corpus, demo.QUESTIONS_PATH, demo.OOD_PATH)


def data_roots() -> tuple[Path, ...]:
    """The operator's data roots (``$EVALCORE_DATA_ROOTS``), as real paths of existing folders."""
    roots = []
    for entry in os.environ.get(DATA_ROOTS_ENV, "").split(os.pathsep):
        if entry.strip():
            real = Path(os.path.realpath(entry.strip()))
            if real.is_dir() and real not in roots:
                roots.append(real)
    return tuple(roots)


def server_path(raw: str | None, what: str) -> Path:
    """The real path of ``raw`` when it lies inside a data root, else InputError.

    A relative path is taken from the first root. The refusal names ``what`` and the
    roots, never anything about ``raw`` beyond them.
    """
    roots = data_roots()
    if not roots:
        raise InputError(
            f"{what}: folders on the server are off (the operator has not set {DATA_ROOTS_ENV}; "
            "see docs/DEPLOY.md); upload the files instead"
        )
    if not raw or not str(raw).strip():
        raise InputError(f"{what}: give a path inside {', '.join(map(str, roots))}")
    path = Path(check_path_text(str(raw).strip(), what))
    real = Path(os.path.realpath(path if path.is_absolute() else roots[0] / path))
    if not any(real == root or real.is_relative_to(root) for root in roots):
        raise InputError(f"{what}: not inside the folders this server allows ({', '.join(map(str, roots))})")
    return real
