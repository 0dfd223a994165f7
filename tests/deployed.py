"""A real store to deploy from: one run of the real engine and model on the mini corpus
(strategy E x dense, bm25; the gate's 30 off-topic queries) and two saved decisions with their
claims, as the Threshold screen saves them. Shared by the deployment, ingest and client tests."""

from __future__ import annotations

from pathlib import Path

from conftest import GATE_OOD, MINI


def make_store(path: Path, embedder) -> tuple[str, list[str]]:
    """The run at ``path``; returns its id and the ids of its two decisions (E/dense at its
    claim's suggested threshold, then E/bm25 at 0.5)."""
    from evalcore.chunking import parse_strategies
    from evalcore.inputs.corpus import load_corpus
    from evalcore.inputs.groundtruth import load_ground_truth
    from evalcore.read.claims import claim_of
    from evalcore.read.decisions import save_decision
    from evalcore.records import Configuration
    from evalcore.run.runner import RunRequest, run_evaluation
    from evalcore.store import Store

    corpus = load_corpus(MINI / "corpus")
    gt = load_ground_truth(corpus, MINI / "questions.jsonl", GATE_OOD)
    request = RunRequest(corpus, gt, parse_strategies("E"), ["dense", "bm25"], name="deployed")
    store = Store(path)
    run_id = run_evaluation(request, store, embedders=[embedder]).run_id
    ids = []
    for label, t in (("E/dense", 0.55), ("E/bm25", 0.5)):
        config = Configuration.parse(label)
        claim = claim_of(store, run_id, config)
        ids.append(save_decision(store, run_id, config, t, f"{label} for production", "ana@example.org", claim))
    return run_id, ids


_MADE: dict[str, tuple[Path, str, list[str]]] = {}


def deployed_copy(tmp_path_factory, embedder, folder: Path) -> tuple[Path, str, list[str]]:
    """A copy at ``folder / evalcore.duckdb`` of the store :func:`make_store` makes (made once
    per test process): the path, the run id, the decision ids."""
    import shutil

    if "store" not in _MADE:
        path = tmp_path_factory.mktemp("deployed") / "evalcore.duckdb"
        run_id, ids = make_store(path, embedder)
        _MADE["store"] = (path, run_id, ids)
    source, run_id, ids = _MADE["store"]
    folder.mkdir(parents=True, exist_ok=True)
    shutil.copy(source, folder / "evalcore.duckdb")
    return folder / "evalcore.duckdb", run_id, ids
