"""A stored run's summary: per configuration recall@k (with Wilson intervals), MRR, destroyed.

Used by the CLI (``show``, ``--json``) and the dashboard, so both print the same figures.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from evalcore.configurations import read
from evalcore.measures.metrics import DEFAULT_KS, summarize, wide
from evalcore.read.results import scored_ranks
from evalcore.read.runs import configuration_order
from evalcore.records import Configuration

if TYPE_CHECKING:
    import pandas as pd

    from evalcore.store import Store


def first_ranks(store: Store, run_id: str) -> dict[tuple[str, str], list[int | None]]:
    """(strategy, retriever) -> first correct ranks of the scored in-domain queries, in query order."""
    import pandas as pd

    df = scored_ranks(store, run_id)

    out: dict[tuple[str, str], list[int | None]] = {}
    for c in configuration_order(store, run_id):
        part = df[(df["strategy"] == c.strategy) & (df["retriever"] == c.retriever)]
        if len(part):
            out[(c.strategy, c.retriever)] = [None if pd.isna(v) else int(v) for v in part["first_correct_rank"]]
    return out


def summary_table(store: Store, run_id: str, ks: tuple[int, ...] = DEFAULT_KS) -> pd.DataFrame:
    """One row per configuration: strategy, retriever, config, queries, recall@k (+ low/high),
    mrr, destroyed (ground truths no chunk of the strategy holds; NA when the run did not give
    its whole chunk set, e.g. a live endpoint) and failed (in-domain queries the configuration
    could not answer: left out of queries and of every figure)."""
    import pandas as pd

    ranks = first_ranks(store, run_id)
    if not ranks:
        return pd.DataFrame(columns=["strategy", "retriever", "config", "queries", "mrr", "destroyed", "failed"])
    table = wide(summarize(ranks, ks))
    destroyed = store.query("SELECT strategy, destroyed FROM strategies WHERE run_id = ?", [run_id]).set_index(
        "strategy"
    )["destroyed"]
    table["destroyed"] = pd.array(
        [None if pd.isna(destroyed.get(s, 0)) else int(destroyed.get(s, 0)) for s in table["strategy"]], dtype="Int64"
    )
    failed = store.query(
        "SELECT strategy, retriever, count(*) AS n FROM failures WHERE run_id = ? AND domain = 'in' GROUP BY ALL",
        [run_id],
    )
    counts = {(a, b): int(n) for a, b, n in failed.itertuples(index=False)}
    table["failed"] = [counts.get((a, b), 0) for a, b in zip(table["strategy"], table["retriever"], strict=True)]
    return table


def summary_json(store: Store, run_id: str) -> dict[str, Any]:
    """Machine-readable summary: the run id and, per configuration, the figures of the table."""
    import pandas as pd

    run = store.run(run_id)
    table = summary_table(store, run_id)
    kinds = read(store, run.run_id)
    configs = []
    for row in table.to_dict("records"):
        item = {"strategy": row["strategy"], "retriever": row["retriever"], "queries": int(row["queries"])}
        for k in DEFAULT_KS:
            item[f"recall@{k}"] = row[f"recall@{k}"]
            item[f"recall@{k}_wilson95"] = [row[f"recall@{k} low"], row[f"recall@{k} high"]]
        item["mrr"] = row["mrr"]
        item["destroyed"] = None if pd.isna(row["destroyed"]) else int(row["destroyed"])
        item["failed"] = int(row["failed"])
        kind = kinds.get(Configuration(row["strategy"], row["retriever"]))
        if kind is not None:
            item.update(source=kind.source, model=kind.model, gate=kind.axis.keep_rule)
        configs.append(item)
    return {
        "run_id": run.run_id,
        "name": run.name,
        "status": run.status,
        "reason": run.reason,
        "rerank_note": run.rerank_note,
        "new_embeddings": run.new_embeddings,
        "cached_embeddings": run.cached_embeddings,
        "queries_in": run.settings.get("queries_in"),
        "queries_out": run.settings.get("queries_out"),
        "configurations": configs,
    }


def format_table(table: pd.DataFrame) -> str:
    """The summary as a fixed-width text table for the terminal."""
    import pandas as pd

    width = max([14, *(len(str(c)) + 2 for c in table.get("config", []))])
    failed = "failed" in table and bool((table["failed"] > 0).any())
    head = (
        f"{'config':<{width}}{'n':>5}"
        + "".join(f"{'R@' + str(k):>8}" for k in DEFAULT_KS)
        + f"{'MRR':>8}{'destroyed':>11}"
        + (f"{'failed':>8}" if failed else "")
    )
    lines = [head, "-" * len(head)]
    for row in table.to_dict("records"):
        destroyed = "n/a" if pd.isna(row["destroyed"]) else str(int(row["destroyed"]))
        lines.append(
            f"{row['config']:<{width}}{int(row['queries']):>5}"
            + "".join(f"{row[f'recall@{k}']:>8.3f}" for k in DEFAULT_KS)
            + f"{row['mrr']:>8.3f}{destroyed:>11}"
            + (f"{int(row['failed']):>8}" if failed else "")
        )
    return "\n".join(lines)
