"""evalcore: evaluate the retrieval half of RAG, end to end, with honest statistics.

The front door (each name is imported on first use, so ``import evalcore`` stays fast)::

    import evalcore

    result = evalcore.evaluate(corpus="docs/", questions="questions.jsonl", ood="ood.jsonl",
                               retriever=lambda query, k: my_search(query, k))
    print(result)                      # recall@1/4/8/20 with Wilson intervals, MRR
    # the run is stored: streamlit run app.py shows it on every page

- :func:`evaluate`: a retriever written in Python (``fn(query, k)`` -> hits with scores);
- :func:`import_run`: another system's chunk file and rankings file (TREC, JSONL, ranx JSON);
- :func:`run_endpoint` with :class:`Endpoint`: a live search service over HTTP;
- :func:`export_formats`: any stored run as TREC run + qrels, ranx JSON and a BEIR folder;
- :class:`Store`, :func:`load_corpus`, :func:`load_ground_truth`: the run store and the inputs.
"""

from __future__ import annotations

from importlib import import_module
from typing import Any

__version__ = "0.2.0"
# Stamped on every document a run indexes; bump when chunking/embedding changes.
PIPELINE_VERSION = "evalcore-pipeline/1"

_LAZY = {
    "evaluate": "evalcore.external.function",
    "Evaluation": "evalcore.external.function",
    "import_run": "evalcore.external.importer",
    "run_endpoint": "evalcore.external.endpoint_calls",
    "Endpoint": "evalcore.external.endpoint",
    "export_formats": "evalcore.files.ir_formats",
    "Store": "evalcore.store",
    "load_corpus": "evalcore.inputs.corpus",
    "load_ground_truth": "evalcore.inputs.groundtruth",
}

__all__ = ["__version__", "PIPELINE_VERSION", *_LAZY]


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        value = getattr(import_module(_LAZY[name]), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'evalcore' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
