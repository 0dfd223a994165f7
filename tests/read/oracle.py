"""Independent expectations for the read side's tests: straight from the stored rows with pandas."""

from __future__ import annotations

import pandas as pd

from evalcore.store import Store


def first_ranks(store: Store, run_id: str, strategy: str, retriever: str) -> pd.Series:
    """First correct rank per scored in-domain query, from the stored top-20 hits (NaN: none)."""
    hits = store.query(
        "SELECT * FROM hits WHERE run_id = ? AND strategy = ? AND retriever = ?", [run_id, strategy, retriever]
    )
    queries = store.query("SELECT query_id FROM queries WHERE run_id = ? AND domain = 'in' AND valid", [run_id])
    first = hits[hits["correct"]].groupby("query_id")["rank"].min()
    return first.reindex(queries["query_id"])
