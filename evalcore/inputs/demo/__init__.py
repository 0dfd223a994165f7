"""The built-in demo: the Python language reference (``pydoc_data.topics``) with ground truth.

``QUESTIONS_PATH`` holds in-domain questions (each ground truth asked twice: ``course``
in the reference's own words, ``ticket`` as a confused user writes a support ticket);
``OOD_PATH`` holds out-of-domain queries (``near``: a Python question the language
reference does not answer; ``far``: unrelated). Needles are verbatim clauses of the
canonical text made by :mod:`evalcore.inputs.demo.pydoc_topics` (extractor version ``1``).
"""

from __future__ import annotations

from pathlib import Path

from evalcore.inputs.demo.pydoc_topics import NAME, VERSION, load_pydoc_corpus
from evalcore.records import Corpus

_HERE = Path(__file__).resolve().parent
QUESTIONS_PATH: Path = _HERE / "questions.jsonl"
OOD_PATH: Path = _HERE / "ood.jsonl"
#: The demo's retrievers (``python -m evalcore demo`` and the dashboard's "Start the demo run");
#: rerank runs only where a local cross-encoder is given, and says so otherwise.
RETRIEVERS = "dense,bm25,hybrid,rerank"

__all__ = ["NAME", "OOD_PATH", "QUESTIONS_PATH", "RETRIEVERS", "VERSION", "load_demo_corpus"]


def load_demo_corpus() -> Corpus:
    """The demo corpus: one document per help topic. InputError when ``pydoc_data`` is missing."""
    return load_pydoc_corpus()
