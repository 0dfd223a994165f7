"""The one results reader: the first correct rank of every scored in-domain query of a run.

Run summaries (:mod:`evalcore.read.summary`), comparisons (:mod:`evalcore.read.compare`) and
the regression gate (:mod:`evalcore.regression.gate`) all read their figures through
:func:`scored_ranks`, so they count the same queries.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import pandas as pd

    from evalcore.records import Configuration
    from evalcore.store import Store

#: Columns of :func:`scored_ranks`, in order.
COLUMNS = ("strategy", "retriever", "query_id", "first_correct_rank")


def scored_ranks(store: Store, run_id: str, only: Sequence[Configuration] | None = None) -> pd.DataFrame:
    """strategy, retriever, query_id, first_correct_rank (missing: no correct hit at any rank)
    of the run's scored in-domain queries (results joined with the valid queries), for every
    configuration or ``only`` these, ordered by strategy, retriever and query id."""
    wanted = (
        "" if only is None else " AND (r.strategy || '/' || r.retriever) IN ({})".format(", ".join("?" * len(only)))
    )
    return store.query(
        "SELECT r.strategy, r.retriever, r.query_id, r.first_correct_rank FROM results r "
        "JOIN queries q ON q.run_id = r.run_id AND q.query_id = r.query_id "
        "WHERE r.run_id = ? AND r.domain = 'in' AND q.valid" + wanted + " ORDER BY r.strategy, r.retriever, r.query_id",
        [run_id, *(c.label for c in only or ())],
    )
