"""evalcore: evaluate the retrieval half of RAG, end to end, with honest statistics.

The front door (each name is imported on first use, so ``import evalcore`` stays fast)::

    import evalcore

    store = evalcore.Store("runs/evalcore.duckdb")
    run = evalcore.execute(
        evalcore.RunSpec(corpus="docs/", questions="questions.jsonl", ood="ood.jsonl"), store
    )                                  # the built-in pipeline: strategies x retrievers
    result = evalcore.evaluate(corpus="docs/", questions="questions.jsonl", ood="ood.jsonl",
                               retriever=lambda query, k: my_search(query, k))
    print(result)                      # recall@1/4/8/20 with Wilson intervals, MRR
    # every run is stored: streamlit run app.py shows it on every page

- :class:`RunSpec` and :func:`execute`: one run (built-in pipeline, an :class:`Endpoint`, or a
  Python ``function``) on a corpus and its questions, the demo or a question set; returns a
  :class:`RunResult` (built-in) or :class:`LiveResult` (endpoint, function);
- :func:`evaluate`: a retriever written in Python (``fn(query, k)`` -> hits with scores), as an
  :class:`Evaluation`;
- :func:`compare`: configurations of one run or two (:class:`RunConfiguration` of a
  :class:`Configuration`), paired at hit@k, as a :class:`Comparison`;
- :func:`gate`: the CI regression gate of a candidate run against a baseline (:class:`GateReport`);
- :func:`claim_of` (a stored configuration) and :func:`threshold_claim` (gate values): the
  refusal threshold's claim, a :class:`Claim`;
- :func:`import_run`: another system's chunk file and rankings file (TREC, JSONL, ranx JSON);
- :func:`run_endpoint` with :class:`Endpoint`: a live search service over HTTP;
- :func:`export_formats`: any stored run as TREC run + qrels, ranx JSON and a BEIR folder;
- :class:`Client`: the evaluation service over HTTP (runs, gate, deployments, traffic);
- :class:`Store`, :func:`load_corpus`, :func:`load_ground_truth`: the run store and the inputs.
"""

from __future__ import annotations

from importlib import import_module
from typing import Any

__version__ = "0.2.0"
# Stamped on every document a run indexes; bump when chunking/embedding changes.
PIPELINE_VERSION = "evalcore-pipeline/1"

#: public name -> (module, name there)
_LAZY = {
    "RunSpec": ("evalcore.run.spec", "RunSpec"),
    "execute": ("evalcore.run.execute", "execute"),
    "RunResult": ("evalcore.run.runner", "RunResult"),
    "LiveResult": ("evalcore.external.live", "LiveResult"),
    "evaluate": ("evalcore.run.evaluate", "evaluate"),
    "Evaluation": ("evalcore.run.evaluate", "Evaluation"),
    "compare": ("evalcore.read.compare", "compare"),
    "Comparison": ("evalcore.read.compare", "Comparison"),
    "Configuration": ("evalcore.records", "Configuration"),
    "RunConfiguration": ("evalcore.records", "RunConfiguration"),
    "gate": ("evalcore.regression.gate", "run_gate"),
    "GateReport": ("evalcore.regression.gate", "GateReport"),
    "threshold_claim": ("evalcore.measures.claim", "threshold_claim"),
    "claim_of": ("evalcore.read.claims", "claim_of"),
    "Claim": ("evalcore.measures.claim", "Claim"),
    "import_run": ("evalcore.external.importer", "import_run"),
    "run_endpoint": ("evalcore.external.endpoint_calls", "run_endpoint"),
    "Endpoint": ("evalcore.external.endpoint", "Endpoint"),
    "export_formats": ("evalcore.files.ir_formats", "export_formats"),
    "Store": ("evalcore.store", "Store"),
    "Client": ("evalcore.client", "Client"),
    "load_corpus": ("evalcore.inputs.corpus", "load_corpus"),
    "load_ground_truth": ("evalcore.inputs.groundtruth", "load_ground_truth"),
}

__all__ = ["__version__", "PIPELINE_VERSION", *_LAZY]


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        module, attr = _LAZY[name]
        value = getattr(import_module(module), attr)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'evalcore' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
