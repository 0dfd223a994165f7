"""``evalcore.evaluate(..., retriever=fn)``: evaluate a retriever written in Python.

``fn(query: str, k: int)`` returns the query's hits, best first, each with a score (the forms it
may take: evalcore.external.python_hits). The result is a stored run like any other, made by
:func:`evalcore.run.execute.execute`; a call that raises fails that query with the
exception as the reason.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from evalcore.configurations import EXTERNAL
from evalcore.external.live import LiveResult
from evalcore.external.record import DEFAULT_MAX_FAILURES
from evalcore.progress import BarProgress
from evalcore.read.summary import format_table, summary_table
from evalcore.run.execute import execute
from evalcore.run.spec import DEFAULT_K, PYTHON, SIMILARITY, RunSpec
from evalcore.store import Store

if TYPE_CHECKING:
    import pandas as pd

    from evalcore.records import Corpus


@dataclass(frozen=True, slots=True)
class Evaluation:
    """A stored evaluation: its run id and name, the store it is in, the summary table (one row,
    as ``python -m evalcore show`` prints it), and the queries that failed ({id: reason})."""

    run_id: str
    name: str
    store: str
    summary: pd.DataFrame
    failures: dict[str, str]

    def __str__(self) -> str:

        failed = f"; {len(self.failures)} queries failed" if self.failures else ""
        return f"run {self.run_id} ({self.name}) in {self.store}{failed}\n{format_table(self.summary)}"


def evaluate(
    corpus: str | Path | Corpus,
    questions: str | Path,
    ood: str | Path | None = None,
    *,
    retriever: Callable[[str, int], Any],
    k: int = DEFAULT_K,
    name: str = PYTHON,
    chunker: str = EXTERNAL,
    retriever_name: str = EXTERNAL,
    score: str = SIMILARITY,
    chunks: str | Path | None = None,
    store: Any = None,
    max_failures: float = DEFAULT_MAX_FAILURES,
    concurrency: int = 1,
    progress: bool = False,
) -> Evaluation:
    """Evaluate ``retriever`` on a corpus folder and its questions; store it as a run.

    ``retriever(query, k)`` returns hits best first (see the module docstring). ``score``
    says how its scores read (``similarity``: higher = closer; ``distance``). ``chunks``
    (optional) is the retriever's whole chunk set as a chunk file, so destroyed answers can
    be counted. ``store`` is a path or a :class:`~evalcore.store.Store` (default
    ``$EVALCORE_STORE`` or ``runs/evalcore.duckdb``). ``concurrency`` > 1 calls the retriever
    from that many threads (only for thread-safe retrievers). Returns an :class:`Evaluation`;
    the run shows on every page of the dashboard.
    """

    spec = RunSpec(
        corpus=corpus,
        questions=questions,
        ood=ood,
        name=name,
        function=retriever,
        k=k,
        chunker=chunker,
        retriever_name=retriever_name,
        score=score,
        chunks=chunks,
        max_failures=max_failures,
        concurrency=concurrency,
    )
    the_store = store if isinstance(store, Store) else Store(store)
    bar = None
    if progress:
        bar = BarProgress()
    done = execute(spec, the_store, bar)
    assert isinstance(done, LiveResult)
    return Evaluation(
        done.run_id,
        name,
        str(the_store.path),
        summary_table(the_store, done.run_id),
        {q: f.reason for q, f in done.failures.items()},
    )
