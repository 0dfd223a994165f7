"""Comparing configurations of one run, or of two runs on the same queries.

Recall@k and MRR with Wilson intervals, destroyed answers per strategy, and the paired
win/loss matrix (exact sign tests, optionally Holm-adjusted over the pairs of the chosen
configurations). What the comparison says in words (which configuration is best, how sure
we are, whether it beats the runner-up) is :mod:`evalcore.read.comparison.statements`.

A compared configuration is a :class:`~evalcore.records.RunConfiguration`. Within one run
its label is the configuration's (``"E/dense"``); across two runs it leads with the
configuration and names the run (``"E/dense · run demo 20261129-225237-0ff462"``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from evalcore.errors import StoreError
from evalcore.i18n import N_
from evalcore.measures.metrics import DEFAULT_KS, parse_metric, summarize, wide
from evalcore.measures.stats import ALPHA, SignTest, format_p, paired_test, wilson_interval, win_loss_matrix
from evalcore.read.results import scored_ranks
from evalcore.read.runs import by_strategy_order, configurations
from evalcore.read.summary import first_ranks
from evalcore.records import Configuration, RunConfiguration

if TYPE_CHECKING:
    import pandas as pd

    from evalcore.store import Store

#: Columns of :func:`recall_table`.
RECALL_COLUMNS = (
    "run_id",
    "label",
    "strategy",
    "retriever",
    "config",
    "metric",
    "k",
    "value",
    "low",
    "high",
    "successes",
    "queries",
    "description",
)


def labels_for(sides: Sequence[RunConfiguration]) -> list[str]:
    """The label of each side: the configuration alone within one run, with the run across two."""
    with_run = len({s.run_id for s in sides}) > 1
    return [s.label(with_run) for s in sides]


def recall_table(store: Store, sides: Sequence[RunConfiguration], ks: Sequence[int] = DEFAULT_KS) -> pd.DataFrame:
    """Recall@k for each k and MRR of each side, with 95% Wilson intervals for recall.

    The figures are :func:`evalcore.measures.metrics.summarize` over the first correct ranks of each
    run's scored in-domain queries. Columns :data:`RECALL_COLUMNS`: ``label`` as
    :func:`labels_for`, ``description`` the metric's definition (the chart's tooltip).
    Empty (same columns) when no side has a scored in-domain query.
    """
    import pandas as pd

    labels = dict(zip(sides, labels_for(sides), strict=True))
    frames = []
    for run_id in dict.fromkeys(s.run_id for s in sides):
        wanted = [s for s in sides if s.run_id == run_id]
        ranks = first_ranks(store, run_id)
        by_config = {
            (s.configuration.strategy, s.configuration.retriever): ranks[key]
            for s in wanted
            if (key := (s.configuration.strategy, s.configuration.retriever)) in ranks
        }
        if not by_config:
            continue
        part = summarize(by_config, ks)
        part.insert(0, "run_id", run_id)
        by_label = {(s.configuration.label): labels[s] for s in wanted}
        part.insert(1, "label", part["config"].map(by_label))
        frames.append(part)
    if not frames:
        return pd.DataFrame(columns=list(RECALL_COLUMNS))
    table = pd.concat(frames, ignore_index=True)
    order = {label: i for i, label in enumerate(labels.values())}
    table = table.sort_values("label", key=lambda col: col.map(order), kind="stable").reset_index(drop=True)
    table["description"] = [parse_metric(m).description for m in table["metric"]]
    return table


def recall_wide(table: pd.DataFrame) -> pd.DataFrame:
    """One row per side of :func:`recall_table`: label, run_id, strategy, retriever, queries,
    recall@k with its ``low``/``high`` for each k, then mrr (:func:`evalcore.measures.metrics.wide`)."""
    import pandas as pd

    if table.empty:
        return pd.DataFrame(columns=["label", "run_id", "strategy", "retriever", "queries", "mrr"])
    parts = []
    for run_id, part in table.groupby("run_id", sort=False):
        w = wide(part)
        w.insert(0, "label", w["config"].map(dict(zip(part["config"], part["label"], strict=True))))
        w.insert(1, "run_id", run_id)
        parts.append(w.drop(columns=["config"]))
    return pd.concat(parts, ignore_index=True)


def destroyed_counts(store: Store, run_id: str) -> pd.DataFrame:
    """strategy, destroyed (ground truths), queries (scored in-domain queries of those ground
    truths), in the run's strategy order."""
    df = store.query(
        """
        SELECT s.strategy, s.destroyed,
               (SELECT count(*) FROM queries q JOIN destroyed d
                  ON d.run_id = q.run_id AND d.group_id = q.group_id
                WHERE q.run_id = s.run_id AND d.strategy = s.strategy AND q.valid) AS queries
        FROM strategies s WHERE s.run_id = ?
        """,
        [run_id],
    )
    return by_strategy_order(df, store, run_id)


def hit_outcomes(store: Store, run_id: str, configuration: Configuration, k: int) -> dict[str, bool]:
    """{query id: hit@k} over the run's scored in-domain queries for one configuration."""
    return run_hit_outcomes(store, run_id, k, (configuration,)).get(configuration, {})


def run_hit_outcomes(
    store: Store, run_id: str, k: int, only: Sequence[Configuration] | None = None
) -> dict[Configuration, dict[str, bool]]:
    """{configuration: {query id: hit@k}} of the run's configurations (or ``only`` these), in one read."""
    if k < 1:
        raise ValueError(f"k must be at least 1, got {k}")
    df = scored_ranks(store, run_id, only)
    hit = df["first_correct_rank"].le(k).fillna(False).astype(bool)  # no correct hit: a miss
    out: dict[Configuration, dict[str, bool]] = {}
    for (strategy, retriever), part in df.assign(hit=hit).groupby(["strategy", "retriever"], sort=False):
        out[Configuration(str(strategy), str(retriever))] = dict(
            zip(part["query_id"].astype(str), part["hit"].astype(bool), strict=True)
        )
    return out


def ranked(store: Store, run_id: str, k: int) -> list[tuple[Configuration, int, int]]:
    """The run's configurations from the highest recall@k down: (configuration, hits, n);
    ties keep the run's order. One query: what a default choice needs, no tests."""
    df = scored_ranks(store, run_id)
    hit = df["first_correct_rank"].le(k).fillna(False).astype(bool)
    counts = {
        (str(strategy), str(retriever)): (int(part["hit"].sum()), len(part))
        for (strategy, retriever), part in df.assign(hit=hit).groupby(["strategy", "retriever"], sort=False)
    }
    order = [
        (c, *counts[(c.strategy, c.retriever)])
        for c in configurations(store, run_id)
        if (c.strategy, c.retriever) in counts
    ]
    return sorted(order, key=lambda item: -item[1])  # stable: ties keep the run's order


def comparable(store: Store, run_a: str, run_b: str) -> str | None:
    """None when both runs answered the same scored in-domain queries, else the reason."""
    df = store.query(
        "SELECT run_id, list(query_id ORDER BY query_id) AS ids FROM queries "
        "WHERE run_id IN (?, ?) AND domain = 'in' AND valid GROUP BY run_id",
        [run_a, run_b],
    )
    ids = {run_id: set(run_ids) for run_id, run_ids in zip(df["run_id"], df["ids"], strict=True)}
    a, b = ids.get(run_a, set()), ids.get(run_b, set())
    if a == b and a:
        return None
    return (
        f"the runs did not answer the same queries ({len(a - b)} only in the first, "
        f"{len(b - a)} only in the second); compare configurations within one run instead"
    )


P_NAMES = (N_("Holm-adjusted p"), N_("unadjusted p"))  #: translated where shown


@dataclass(frozen=True, slots=True)
class Comparison:
    """Configurations compared at hit@k on the same queries.

    ``matrix``: one row per ordered pair (:func:`evalcore.measures.stats.win_loss_matrix` columns
    row, column, wins, losses, ties, n, p_value, p_holm) plus ``p_shown`` (the Holm-adjusted
    p when ``adjusted``, else the unadjusted one), ``p_text`` (``p_shown`` as shown, e.g.
    ``"0.0318"``), ``significant`` (p_shown < :data:`~evalcore.measures.stats.ALPHA`) and ``verdict``
    (``"better"``, ``"worse"`` when significant, else ``"no clear difference"``).
    ``hits``: one row per side: label, run_id, config, successes, n, recall, low, high.
    """

    k: int
    adjusted: bool
    sides: tuple[RunConfiguration, ...]
    labels: tuple[str, ...]
    matrix: pd.DataFrame
    hits: pd.DataFrame

    def side(self, label: str) -> RunConfiguration:
        """The side a label names; ValueError for a label not in this comparison."""
        try:
            return self.sides[self.labels.index(label)]
        except ValueError:
            raise ValueError(f"{label!r} is not among the compared configurations") from None

    def cell(self, row: str, column: str) -> dict[str, Any]:
        """The matrix row of ``row`` against ``column`` (as a dict)."""
        found = self.matrix[(self.matrix["row"] == row) & (self.matrix["column"] == column)]
        if found.empty:
            raise ValueError(f"no cell {row!r} against {column!r}")
        return {str(k): v for k, v in found.iloc[0].to_dict().items()}

    @property
    def n(self) -> int:
        return int(self.hits["n"].iloc[0]) if len(self.hits) else 0

    @property
    def p_name(self) -> str:
        """``"Holm-adjusted p"`` or ``"unadjusted p"``: which p the matrix shows."""
        return "Holm-adjusted p" if self.adjusted else "unadjusted p"


def compare(store: Store, sides: Sequence[RunConfiguration], k: int, adjust: bool = True) -> Comparison:
    """The paired comparison of ``sides`` at hit@k (two or more; one run or two).

    Across runs, every pair of runs must have answered the same scored in-domain queries
    (StoreError naming the difference otherwise). With ``adjust`` the p-values are
    Holm-adjusted over the ``m(m-1)/2`` pairs of exactly these sides, so the family is
    what is on screen.
    """
    import pandas as pd

    sides = tuple(dict.fromkeys(sides))
    runs = list(dict.fromkeys(s.run_id for s in sides))
    for other in runs[1:]:
        reason = comparable(store, runs[0], other)
        if reason:
            raise StoreError(reason)
    labels = labels_for(sides)
    by_run = {
        run_id: run_hit_outcomes(store, run_id, k, [s.configuration for s in sides if s.run_id == run_id])
        for run_id in runs
    }
    outcomes = {label: by_run[s.run_id].get(s.configuration, {}) for s, label in zip(sides, labels, strict=True)}
    matrix = win_loss_matrix(outcomes, adjust=adjust, common=True)  # failed queries: left out pairwise
    matrix["p_shown"] = matrix["p_holm"] if adjust else matrix["p_value"]
    matrix["p_text"] = [format_p(p) for p in matrix["p_shown"]]
    matrix["p_value_text"] = [format_p(p) for p in matrix["p_value"]]
    matrix["significant"] = matrix["p_shown"] < ALPHA
    matrix["verdict"] = [
        ("better" if w > losses else "worse") if s else "no clear difference"
        for w, losses, s in zip(matrix["wins"], matrix["losses"], matrix["significant"], strict=True)
    ]
    rows = []
    for side, label in zip(sides, labels, strict=True):
        got = outcomes[label]
        n, successes = len(got), sum(got.values())
        low, high = wilson_interval(successes, n) if n else (float("nan"), float("nan"))
        rows.append(
            (
                label,
                side.run_id,
                side.configuration.label,
                successes,
                n,
                successes / n if n else float("nan"),
                low,
                high,
            )
        )
    hits = pd.DataFrame(rows, columns=["label", "run_id", "config", "successes", "n", "recall", "low", "high"])
    return Comparison(int(k), bool(adjust), sides, tuple(labels), matrix, hits)


def pair_queries(
    store: Store, first: RunConfiguration, second: RunConfiguration, k: int
) -> tuple[SignTest, pd.DataFrame]:
    """The sign test of ``first`` against ``second`` at hit@k (unadjusted), and the queries
    won and lost: outcome ("won"/"lost"), query_id, text, rank_first, rank_second."""
    import pandas as pd

    a = hit_outcomes(store, first.run_id, first.configuration, k)
    b = hit_outcomes(store, second.run_id, second.configuration, k)
    test = paired_test(a, b, common=True)  # a query a side could not answer (a failed call) is left out
    ids = list(test.won) + list(test.lost)
    columns = ["outcome", "query_id", "text", "rank_first", "rank_second"]
    if not ids:
        return test, pd.DataFrame(columns=columns)
    frame = pd.DataFrame({"query_id": ids, "outcome": ["won"] * test.wins + ["lost"] * test.losses})
    s1, s2 = first.configuration, second.configuration
    with store.read() as con:
        con.register("_ids", frame)
        df = con.execute(
            """
            SELECT i.outcome, i.query_id, q.text, a.first_correct_rank AS rank_first,
                   b.first_correct_rank AS rank_second
            FROM _ids i JOIN queries q ON q.run_id = ? AND q.query_id = i.query_id
            LEFT JOIN results a ON a.run_id = ? AND a.strategy = ? AND a.retriever = ? AND a.query_id = i.query_id
            LEFT JOIN results b ON b.run_id = ? AND b.strategy = ? AND b.retriever = ? AND b.query_id = i.query_id
            ORDER BY i.outcome DESC, i.query_id
            """,
            [first.run_id, first.run_id, s1.strategy, s1.retriever, second.run_id, s2.strategy, s2.retriever],
        ).df()
    return test, df[columns]
