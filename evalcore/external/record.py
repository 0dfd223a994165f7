"""Chunks and rankings made elsewhere -> one stored run, in the tables a built-in run fills.

The run is one configuration: strategy = the chunker's name, retriever = the retriever's
name (both ``external`` by default). Scoring follows METHODS.md "Correct hits" and "Runs made
elsewhere" over the hits the run gives: a hit is correct when its chunk is located in the
needle's document and its evidence range holds the needle's span; the first correct rank is
taken among the given hits (none when the correct chunk is not among them); a ground truth
is destroyed when no chunk of the (complete) chunk set holds it. Hits carry the retriever's
own score and no cosine distance; the gate reads the score (``configurations.gate_on = 'score'``).

A query the retriever could not answer (a failed endpoint call, an exception of a Python
retriever) is written to ``failures`` with its reason and has no results row, so it is never
scored as a miss. Past ``max_failures`` (a share of all queries) the run fails with the reason.
"""

from __future__ import annotations

import json
import logging
import platform
from array import array
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, overload

from evalcore import PIPELINE_VERSION, __version__
from evalcore.errors import EvalcoreError, InputError
from evalcore.measures.threshold import DEFAULT_TOP
from evalcore.store.rows import document_rows, ground_truth_settings, query_rows
from evalcore.store.runs import fail_run

if TYPE_CHECKING:
    import numpy as np
    import pandas as pd
    from numpy.typing import NDArray

    from evalcore.configurations import ConfigInfo
    from evalcore.external.chunks import ChunkSet
    from evalcore.external.rankings import RankingFile
    from evalcore.records import Corpus, GroundTruth
    from evalcore.store import Store

log = logging.getLogger(__name__)

DEFAULT_MAX_FAILURES = 0.05  # share of all queries that may fail before the run fails

#: query id -> [(chunk id in the chunk set, score), ...] in rank order
Hits = Mapping[str, Sequence[tuple[int, float]]]


class TooManyFailures(EvalcoreError):
    """More queries failed than the run allows (``--max-failures``)."""


@dataclass(frozen=True, slots=True)
class Failure:
    """Why a query has no answer, and how many requests were sent for it."""

    reason: str
    attempts: int | None = None


def query_order(gt: GroundTruth) -> list[tuple[str, str, str]]:
    """(query id, domain, text) of every query a run answers: the scored in-domain questions
    (valid needles), then the out-of-domain queries."""
    return [(q.query_id, "in", q.question) for q in gt.valid_questions] + [(q.query_id, "out", q.query) for q in gt.ood]


class Pairs(Sequence[tuple[int, float]]):
    """One query's resolved hits, ``(chunk-set id, score)`` in rank order, held as two arrays
    (16 bytes a hit) and made into pairs only while read: a million imported hits are not a
    million tuples."""

    __slots__ = ("ids", "scores")

    def __init__(self, ids: array[int], scores: array[float]) -> None:
        self.ids, self.scores = ids, scores

    def __len__(self) -> int:
        return len(self.ids)

    @overload
    def __getitem__(self, i: int) -> tuple[int, float]: ...
    @overload
    def __getitem__(self, i: slice) -> list[tuple[int, float]]: ...
    def __getitem__(self, i: int | slice) -> tuple[int, float] | list[tuple[int, float]]:
        if isinstance(i, slice):
            return list(zip(self.ids[i], self.scores[i], strict=True))
        return self.ids[i], self.scores[i]

    def __iter__(self) -> Iterator[tuple[int, float]]:
        return zip(self.ids, self.scores, strict=True)


def resolve_rankings(
    rankings: RankingFile, chunks: ChunkSet, gt: GroundTruth, chunks_name: str = "the chunk file"
) -> tuple[dict[str, Sequence[tuple[int, float]]], list[str]]:
    """The file's hits as chunk-set ids, and the ids of queries the file does not rank.

    InputError naming the line for a chunk that is not in the chunk set and for a query that
    is neither in the questions nor in the out-of-domain file. Rankings of questions whose
    needle is invalid are read but not scored (those questions are not scored at all).
    """
    known = {q.query_id for q in gt.questions} | {q.query_id for q in gt.ood}
    out: dict[str, Sequence[tuple[int, float]]] = {}
    for qid, hits in rankings.hits.items():
        if qid not in known:
            raise InputError(
                f"{rankings.where[qid]}: query {qid!r} is neither in the questions nor in the out-of-domain queries"
            )
        ids = array("q")
        for i, name in enumerate(hits.chunks):
            chunk = chunks.get(name)
            if chunk is None:
                raise InputError(f"{hits.where(i)}: chunk {name!r} is not in {chunks_name}")
            ids.append(chunk.chunk_id)
        out[qid] = Pairs(ids, hits.scores)
    missing = [qid for qid, _, _ in query_order(gt) if qid not in out]
    return out, missing


def check_failures(failures: Mapping[str, Failure], total: int, max_failures: float) -> None:
    """TooManyFailures (naming the count, the share and the first reasons) when more than
    ``max_failures`` of the ``total`` queries failed."""
    if not failures or total == 0 or len(failures) <= max_failures * total:
        return
    first = "; ".join(f"{q}: {f.reason}" for q, f in list(failures.items())[:3])
    raise TooManyFailures(
        f"{len(failures)} of {total} queries failed ({len(failures) / total:.0%}), more than the "
        f"allowed {max_failures:.0%} (--max-failures); e.g. {first}"
    )


def run_row(
    run_id: str, name: str, corpus: Corpus, gt: GroundTruth, config: ConfigInfo, settings: dict[str, Any]
) -> dict[str, Any]:
    """The ``runs`` row of an external run (inserted as running)."""

    full = {
        "evalcore": __version__,
        "pipeline_version": PIPELINE_VERSION,
        "python": platform.python_version(),
        "source": config.source,
        "chunker": config.strategy,
        "retriever": config.retriever,
        "score_kind": config.score_kind,
        "gate": config.axis.keep_rule,
        "gate_top": DEFAULT_TOP,
        **ground_truth_settings(corpus, gt),
        **settings,
    }
    return {
        "run_id": run_id,
        "name": name,
        "stage": "starting",
        "progress": 0.0,
        "corpus_root": corpus.root,
        "corpus_fingerprint": corpus.fingerprint,
        "questions_path": gt.source.get("questions"),
        "ood_path": gt.source.get("ood"),
        "model": None,
        "model_dim": None,
        "pipeline_version": PIPELINE_VERSION,
        "strategies": config.strategy,
        "retrievers": config.retriever,
        "rerank_note": None,
        "settings": json.dumps(full, default=str),
    }


def _category(codes: NDArray[np.int32], names: list[str]) -> pd.Categorical[Any]:
    """A text column of many rows and few values, as codes into ``names`` (4 bytes a row)."""
    import pandas as pd

    return pd.Categorical.from_codes(codes, dtype=pd.CategoricalDtype(names))


def tables(
    run_id: str,
    config: ConfigInfo,
    chunks: ChunkSet,
    corpus: Corpus,
    gt: GroundTruth,
    hits: Hits,
    failures: Mapping[str, Failure] | None = None,
    timings: Sequence[tuple[str, float, int]] = (),
) -> dict[str, pd.DataFrame]:
    """Every table of the run (documents, queries, strategies, chunks, results, hits,
    destroyed, failures, configurations, timings) as DataFrames. ``timings``:
    (stage, seconds, items)."""
    import numpy as np
    import pandas as pd

    failures = failures or {}
    strategy, retriever = config.strategy, config.retriever
    spans = gt.spans
    correct = chunks.correct(spans)
    destroyed = chunks.destroyed(spans, correct)
    gone = {g for g, _ in destroyed or ()}
    group_of = {q.query_id: q.group for q in gt.valid_questions}
    texts = corpus.by_id()

    results, failure_rows = [], []
    # the hits table column by column: a million hits are a few arrays, not a million dicts
    # each hit's query as a category code: a million hits name a few dozen queries
    hit_query_codes, query_names, query_code = array("i"), list[str](), dict[str, int]()
    hit_ranks, hit_chunks, hit_scores, hit_correct = array("q"), array("q"), array("d"), array("b")
    for qid, domain, _text in query_order(gt):
        key = {"run_id": run_id, "strategy": strategy, "retriever": retriever, "query_id": qid}
        if qid in failures:
            f = failures[qid]
            failure_rows.append({**key, "domain": domain, "reason": f.reason, "attempts": f.attempts})
            continue
        ranked = list(hits.get(qid, ()))
        good = correct[group_of[qid]] if domain == "in" else set()
        flags = [c in good for c, _ in ranked]
        first = flags.index(True) + 1 if any(flags) else None
        results.append(
            {
                **key,
                "domain": domain,
                "first_correct_rank": first,
                "answer_distance": None,
                "top_distance": None,
                "destroyed": domain == "in" and group_of[qid] in gone,
                "answer_score": ranked[first - 1][1] if first else None,
                "top_score": ranked[0][1] if ranked else None,
            }
        )
        for rank, ((chunk_id, score), flag) in enumerate(zip(ranked, flags, strict=True), start=1):
            if qid not in query_code:
                query_code[qid] = len(query_names)
                query_names.append(qid)
            hit_query_codes.append(query_code[qid])
            hit_ranks.append(rank)
            hit_chunks.append(chunk_id)
            hit_scores.append(float(score))
            hit_correct.append(flag)

    chunk_rows = []
    for c in chunks.chunks:
        content = texts[c.doc_id].text[c.start : c.end] if c.located else c.text
        chunk_rows.append(
            {
                "run_id": run_id,
                "strategy": strategy,
                "chunk_id": c.chunk_id,
                "doc_id": c.doc_id,
                "section": c.section,
                "start": c.start,
                "end": c.end,
                "evidence_start": c.start,
                "header": None,
                "content": content,
                "text": c.text,
                "pieces": None,
                "header_pieces": None,
                "external_id": c.external_id,
                "problem": c.problem,
            }
        )
    strategy_row = {
        "run_id": run_id,
        "strategy": strategy,
        "size": None,
        "overlap": None,
        "boundaries": None,
        "header": None,
        "chunks": len(chunks),
        "pieces": None,
        "header_pieces": None,
        "over_window": None,
        "destroyed": None if destroyed is None else len(destroyed),
        "norm_max_diff": None,
        "chunker": config.chunker or strategy,
        "model": None,
        "unlocated": len(chunks.unlocated),
    }
    destroyed_rows = [
        {
            "run_id": run_id,
            "strategy": strategy,
            "group_id": g,
            "doc_id": spans[g].doc_id,
            "start": spans[g].start,
            "end": spans[g].end,
            "cut": cut,
        }
        for g, cut in destroyed or ()
    ]
    typed = {
        "results": pd.DataFrame(results).astype(
            {
                "first_correct_rank": "Int64",
                "answer_distance": "float64",
                "top_distance": "float64",
                "answer_score": "float64",
                "top_score": "float64",
            }
        )
        if results
        else pd.DataFrame(),
        "hits": pd.DataFrame(
            {  # categorical: a million hits name a few dozen queries, one run and one configuration
                "run_id": _category(np.zeros(len(hit_ranks), dtype=np.int32), [run_id]),
                "strategy": _category(np.zeros(len(hit_ranks), dtype=np.int32), [strategy]),
                "retriever": _category(np.zeros(len(hit_ranks), dtype=np.int32), [retriever]),
                "query_id": _category(np.frombuffer(hit_query_codes, dtype=np.int32), query_names),
                "rank": np.frombuffer(hit_ranks, dtype=np.int64),
                "chunk_id": np.frombuffer(hit_chunks, dtype=np.int64),
                "distance": np.full(len(hit_ranks), np.nan),
                "score": np.frombuffer(hit_scores, dtype=np.float64),
                "correct": np.frombuffer(hit_correct, dtype=np.int8).astype(bool),
            }
        )
        if hit_ranks
        else pd.DataFrame(),
        "chunks": pd.DataFrame(chunk_rows).astype(
            {"start": "Int64", "end": "Int64", "evidence_start": "Int64", "pieces": "Int64", "header_pieces": "Int64"}
        )
        if chunk_rows
        else pd.DataFrame(),  # nothing found: a valid run with recall 0
        "strategies": pd.DataFrame([strategy_row]).astype(
            {
                "size": "Int64",
                "overlap": "Int64",
                "boundaries": "boolean",
                "header": "boolean",
                "pieces": "Int64",
                "header_pieces": "Int64",
                "over_window": "Int64",
                "destroyed": "Int64",
                "norm_max_diff": "float64",
            }
        ),
    }
    return {
        "documents": pd.DataFrame(document_rows(run_id, corpus, None, None)),
        "queries": pd.DataFrame(query_rows(run_id, gt)),
        **typed,
        "destroyed": pd.DataFrame(destroyed_rows),
        "failures": pd.DataFrame(failure_rows),
        "configurations": pd.DataFrame([config.row(run_id)]),
        "timings": pd.DataFrame(
            [
                {
                    "run_id": run_id,
                    "stage": stage,
                    "strategy": strategy,
                    "seconds": seconds,
                    "items": items,
                    "per_item_ms": seconds * 1000.0 / items if items else None,
                }
                for stage, seconds, items in timings
            ]
        ),
    }


def record(
    store: Store,
    run_id: str,
    name: str,
    config: ConfigInfo,
    chunks: ChunkSet,
    corpus: Corpus,
    gt: GroundTruth,
    hits: Hits,
    settings: dict[str, Any],
    failures: Mapping[str, Failure] | None = None,
    timings: Sequence[tuple[str, float, int]] = (),
) -> str:
    """Store a run whose every input is already checked: its row, then all its tables in one
    transaction (a failure in between marks it failed). Returns the run id."""
    store.start_run(run_row(run_id, name, corpus, gt, config, settings))
    try:
        store.complete_run(run_id, tables(run_id, config, chunks, corpus, gt, hits, failures, timings), {})
    except BaseException as exc:  # noqa: BLE001 - any end (signals too) marks the run; fail_run re-raises
        fail_run(store, run_id, "writing results", exc)
    return run_id
