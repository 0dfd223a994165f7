"""A run against a live retriever (an HTTP endpoint or a Python function), end to end.

Every scored in-domain question and every out-of-domain query is put to the retriever once
(``answer`` yields each query's hits, or its failure, as they come); the hits are resolved to
chunks (:mod:`evalcore.external.hits`), and the run is stored like an imported one
(:mod:`evalcore.external.record`). The run row exists from the start (status ``running``,
with progress), so a long run shows on the Runs page; past ``max_failures`` it ends
``failed`` with the reason, and an interrupt or cancellation ends it too, nothing half-written.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from evalcore import signals
from evalcore.errors import Cancelled
from evalcore.external.hits import BadHits, RawHit, resolve_hits
from evalcore.external.record import DEFAULT_MAX_FAILURES, Failure, check_failures, query_order, run_row, tables
from evalcore.progress import Fanout, SilentProgress, Stage, StoreProgress
from evalcore.store.basics import new_run_id
from evalcore.store.runs import fail_run

if TYPE_CHECKING:
    from evalcore.configurations import ConfigInfo
    from evalcore.external.chunks import ChunkSet
    from evalcore.progress import Progress
    from evalcore.records import Corpus, GroundTruth
    from evalcore.store import Store

log = logging.getLogger(__name__)

#: (query id, hits as returned, or why there are none)
Outcome = tuple[str, list[RawHit] | Failure]
#: answer((query id, text) pairs) -> outcomes, in any order, one per query
Answer = Callable[[list[tuple[str, str]]], Iterator[Outcome]]


@dataclass(frozen=True, slots=True)
class LiveResult:
    """The stored run: id, name, failures ({query id: Failure}), and counts of what was sent."""

    run_id: str
    name: str
    failures: dict[str, Failure]
    queries: int
    seconds: float
    stats: dict[str, Any]


def run_live(
    store: Store,
    corpus: Corpus,
    gt: GroundTruth,
    config: ConfigInfo,
    chunks: ChunkSet,
    answer: Answer,
    name: str,
    settings: dict[str, Any],
    *,
    run_id: str | None = None,
    max_failures: float = DEFAULT_MAX_FAILURES,
    progress: Progress | None = None,
    cancelled: Callable[[], bool] | None = None,
    stats: Callable[[], dict[str, Any]] | None = None,
) -> LiveResult:
    """Ask ``answer`` for every query, score and store the run (see the module docstring).
    TooManyFailures (the run marked failed) past ``max_failures``."""

    cancelled = cancelled or (lambda: False)
    run_id = run_id or new_run_id()
    queries = [(qid, text) for qid, _, text in query_order(gt)]
    row = run_row(run_id, name, corpus, gt, config, settings)
    progress = Fanout(StoreProgress(store, run_id), progress or SilentProgress())
    asking = Stage(f"{config.strategy}/{config.retriever}: asking", "queries", len(queries), 0.0, 0.95)
    stage = asking.name
    hits: dict[str, list[tuple[int, float]]] = {}
    failures: dict[str, Failure] = {}
    with signals.handled():
        store.start_run(row)
        t0 = time.perf_counter()
        try:
            progress.stage(asking)
            for qid, outcome in _each(answer(queries), cancelled):
                if isinstance(outcome, Failure):
                    failures[qid] = outcome
                else:
                    try:
                        hits[qid] = resolve_hits(chunks, outcome, qid)
                    except BadHits as exc:
                        failures[qid] = Failure(str(exc))
                progress.advance(1)
            seconds = time.perf_counter() - t0
            ordered = {q: failures[q] for q, _ in queries if q in failures}
            check_failures(ordered, len(queries), max_failures)
            extra = stats() if stats else {}
            full = {**json.loads(row["settings"]), "sent": extra, "failed_queries": len(ordered)}
            written = tables(
                run_id, config, chunks, corpus, gt, hits, ordered, [("live_queries", seconds, len(queries))]
            )
            stage = "writing results"
            progress.stage(Stage(stage, "tables", len(written), 0.95, 1.0))
            with signals.hold():
                store.complete_run(
                    run_id,
                    written,
                    {"settings": json.dumps(full, default=str)},
                    before_commit=signals.raise_if_signalled,
                )
        except BaseException as exc:  # noqa: BLE001 - any end (signals too) marks the run; fail_run re-raises
            fail_run(store, run_id, stage, exc)
        finally:
            progress.close()
    return LiveResult(run_id, name, ordered, len(queries), seconds, extra)


def _each(outcomes: Iterable[Outcome], cancelled: Callable[[], bool]) -> Iterator[Outcome]:
    for outcome in outcomes:
        if cancelled():
            close = getattr(outcomes, "close", None)
            if close is not None:
                close()  # a generator stops its workers in its finally
            raise Cancelled("cancelled by the user")
        yield outcome
