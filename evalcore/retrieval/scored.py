"""A strategy's queries retrieved and scored on one machine: the result and hit rows of every
retriever (METHODS.md "The words"; METHODS.md "Correct hits"), a block of queries at a time.
The same rows on Ray shards: :func:`evalcore.retrieval.sharded.driver.score_sharded`."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from evalcore.retrieval.bm25 import BM25, Analyzer
from evalcore.retrieval.dense import max_norm, screener
from evalcore.retrieval.names import analyzers_of, split_retriever
from evalcore.retrieval.ranking import block_queries, rank_block

if TYPE_CHECKING:
    import numpy as np
    import pandas as pd

    from evalcore.retrieval.ranking import Ranked


def block_frames(
    run_id: str,
    strategy: str,
    ranked: dict[str, Ranked],
    qids: Sequence[str],
    in_domain: np.ndarray,
    correct: Sequence[np.ndarray],
) -> tuple[list[pd.DataFrame], list[pd.DataFrame]]:
    """Result and hit rows of one block of queries for every retriever (METHODS.md "Correct hits").

    ``ranked[retriever]`` is an :class:`evalcore.retrieval.ranking.Ranked`; ``correct[i]`` the chunk
    ids correct for query i. A hit is correct when its chunk is one of them.
    """
    import numpy as np
    import pandas as pd

    qid_array = np.asarray(qids, dtype=object)
    nb = len(qid_array)
    has_answer = np.array([len(c) > 0 for c in correct], dtype=bool)
    results, hits = [], []
    for retr, r in ranked.items():
        top = r.top_ids.shape[1]
        flags = np.array([np.isin(r.top_ids[i], correct[i]) for i in range(nb)], dtype=bool).reshape(nb, top)
        results.append(
            pd.DataFrame(
                {
                    "run_id": run_id,
                    "strategy": strategy,
                    "retriever": retr,
                    "query_id": qid_array,
                    "domain": np.where(in_domain, "in", "out"),
                    "first_correct_rank": pd.Series(r.first, dtype="Int64").mask(~has_answer),
                    "answer_distance": np.where(has_answer, r.answer_dist, np.nan),
                    "top_distance": r.top_dist[:, 0],
                    "destroyed": in_domain & ~has_answer,
                }
            )
        )
        hits.append(
            pd.DataFrame(
                {
                    "run_id": run_id,
                    "strategy": strategy,
                    "retriever": retr,
                    "query_id": np.repeat(qid_array, top),
                    "rank": np.tile(np.arange(1, top + 1), nb),
                    "chunk_id": r.top_ids.ravel(),
                    "distance": r.top_dist.ravel(),
                    "score": r.top_score.ravel(),
                    "correct": flags.ravel(),
                }
            )
        )
    return results, hits


@dataclass
class Scored:
    """Result and hit frames of one strategy, and seconds per stage (timings table names)."""

    results: list[pd.DataFrame] = field(default_factory=list)
    hits: list[pd.DataFrame] = field(default_factory=list)
    clock: dict[str, float] = field(default_factory=dict)


def score_queries(
    run_id: str,
    strategy: str,
    chunk_texts: Iterable[str],
    cvec: np.ndarray,
    qvec: np.ndarray,
    qids: Sequence[str],
    qtexts: Sequence[str],
    correct: Sequence[np.ndarray],
    n_in: int,
    retrievers: Sequence[str],
    top_n: int,
    rerank: Callable[[str, np.ndarray], Sequence[float]] | None = None,
    on_block: Callable[[int], None] | None = None,
    device: str = "cpu",
) -> Scored:
    """Retrieve for every query under every retriever and score it (METHODS.md "The words"; METHODS.md "Correct hits").

    Queries ``[0, n_in)`` are in-domain; ``correct[i]`` holds query i's correct chunk ids.
    Works a block of queries at a time, blocks sized by memory (:mod:`evalcore.retrieval.ranking`);
    ``on_block(n)`` is called after each block (it may raise to stop). ``chunk_texts`` is
    read once, to build the BM25 index, and only when a retriever needs it. ``device``:
    where the dense screening's matrix products run (``cuda``: on the GPU, see
    :func:`evalcore.retrieval.dense.screener`; every decision stays exact, on the CPU).
    """

    import numpy as np

    out = Scored()
    retrievers = [r for r in retrievers if split_retriever(r)[0] != "rerank" or rerank is not None]
    bm25: dict[str, BM25] = {}
    wanted = analyzers_of(retrievers)
    if wanted:
        # one pass over the chunk texts builds every analyzer's index
        texts = chunk_texts if len(wanted) == 1 or isinstance(chunk_texts, Sequence) else list(chunk_texts)
        for analyzer in wanted:
            t0 = time.perf_counter()
            bm25[analyzer] = BM25.build(texts, analyzer=Analyzer(analyzer))
            stage = "bm25_build" if not analyzer else f"bm25_build:{analyzer}"
            out.clock[stage] = time.perf_counter() - t0
    clock = {"vector_scan": 0.0}
    if bm25:
        clock.update(bm25=0.0, fusion=0.0)
    if any(split_retriever(r)[0] == "rerank" for r in retrievers):
        clock["rerank"] = 0.0
    cvec = np.asarray(cvec, dtype=np.float32)
    cmax = max_norm(cvec)
    screening = screener(cvec, device)
    nq = len(qids)
    block = block_queries(len(cvec))
    for b0 in range(0, nq, block):
        b1 = min(nq, b0 + block)
        scorer = None if rerank is None else (lambda i, ids, _b0=b0: rerank(qtexts[_b0 + i], ids))
        ranked = rank_block(
            qvec[b0:b1],
            cvec,
            correct[b0:b1],
            retrievers,
            top_n,
            bm25=bm25 or None,
            qtexts=qtexts[b0:b1],
            rerank=scorer,
            cmax=cmax,
            clock=clock,
            screening=screening,
        )
        results, hits = block_frames(run_id, strategy, ranked, qids[b0:b1], np.arange(b0, b1) < n_in, correct[b0:b1])
        out.results += results
        out.hits += hits
        if on_block is not None:
            on_block(b1 - b0)
    out.clock.update(clock)
    return out
