"""The dashboard's read layer: every figure a page shows, read from the run store.

Pages call these functions (through a cache) and draw what they return; all SQL and all
statistics of the dashboard live here or in :mod:`evalcore.stats`,
:mod:`evalcore.threshold` and :mod:`evalcore.citations`. Nothing here imports streamlit.

Conventions:

- A *configuration* is a strategy x retriever pair, labelled ``"E/dense"``
  (:func:`config_label`, :func:`parse_config`). Across two runs it is labelled
  ``"<run name> <run id>: E/dense"``.
- Every function takes a :class:`~evalcore.store.Store` and a run id and returns a new
  DataFrame or a frozen record; callers may cache the results (completed runs are
  immutable) and must not mutate them.
- Recall and MRR are over the run's *scored* in-domain queries (valid needles); a
  destroyed ground truth counts as a miss (SPEC section 5).
"""
from __future__ import annotations

import logging
import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Sequence

from evalcore.embedding import piece_counter  # word pieces of a prompt (cached tokenizer)
from evalcore.errors import StoreError

if TYPE_CHECKING:
    import pandas as pd

    from evalcore.store import Store

log = logging.getLogger(__name__)

KS: tuple[int, ...] = (1, 4, 8, 20)
GATE_TOP = 4  # the refusal gate looks at a retriever's top 4 (SPEC section 7)
INTERVAL_METHOD = "95% Wilson interval (statsmodels proportion_confint, method='wilson')"
PAIRED_TEST = "two-sided exact sign test (scipy binomtest) on discordant queries"


# --- configurations ---------------------------------------------------------------------


def config_label(strategy: str, retriever: str) -> str:
    """``"E/dense"``."""
    return f"{strategy}/{retriever}"


def parse_config(label: str) -> tuple[str, str]:
    """``"E/dense"`` -> ``("E", "dense")``; ValueError naming the label otherwise."""
    strategy, sep, retriever = label.partition("/")
    if not sep or not strategy or not retriever or "/" in retriever:
        raise ValueError(f"configuration must look like 'STRATEGY/RETRIEVER', got {label!r}")
    return strategy, retriever


def axis(store: Store, run_id: str, configuration: str):
    """What the configuration's refusal gate reads (:class:`evalcore.threshold.Axis`): the
    cosine distance (built-in), or an external retriever's own score in its direction."""
    from evalcore.configurations import info

    return info(store, run_id, *parse_config(configuration)).axis


def configurations(store: Store, run_id: str) -> list[str]:
    """Labels of the configurations that have results in ``run_id``, in the run's own order
    (strategies as given, then retrievers as given: A/dense, A/bm25, ..., B/dense, ...)."""
    from evalcore.summary import config_order

    df = store.query("SELECT DISTINCT strategy, retriever FROM results WHERE run_id = ?", [run_id])
    have = set(zip(df["strategy"], df["retriever"]))
    return [config_label(s, r) for s, r in config_order(store, run_id) if (s, r) in have]


# --- runs -------------------------------------------------------------------------------


def runs_overview(store: Store) -> pd.DataFrame:
    """Every run, newest first, with corpus size, query counts and duration.

    Columns: run_id, name, created_at, status, reason, stage, progress, documents,
    failed_documents, characters, sections, in_domain, out_of_domain, invalid, strategies,
    retrievers, model, rerank_note, duration_s (NaN while running), activity (while running:
    ``"E: embedding 340/1120 chunks · 45%"``; a dashboard job's runs carry counts in the stage).
    """
    return store.query(
        """
        SELECT r.run_id, r.name, r.created_at, r.status, r.reason, r.stage, r.progress,
               coalesce(d.documents, 0) AS documents, coalesce(d.failed, 0) AS failed_documents,
               coalesce(d.characters, 0) AS characters, coalesce(d.sections, 0) AS sections,
               coalesce(q.in_domain, 0) AS in_domain, coalesce(q.out_of_domain, 0) AS out_of_domain,
               coalesce(q.invalid, 0) AS invalid,
               r.strategies, r.retrievers, r.model, r.rerank_note,
               date_diff('millisecond', r.created_at, r.finished_at) / 1000.0 AS duration_s,
               CASE WHEN r.status = 'running' THEN coalesce(r.stage, 'starting') || ' · '
                    || CAST(round(100 * coalesce(r.progress, 0)) AS INTEGER) || '%' END AS activity
        FROM runs r
        LEFT JOIN (SELECT run_id, count(*) FILTER (state = 'indexed') AS documents,
                          count(*) FILTER (state = 'failed') AS failed,
                          sum(characters) AS characters, sum(sections) AS sections
                   FROM documents GROUP BY run_id) d USING (run_id)
        LEFT JOIN (SELECT run_id, count(*) FILTER (domain = 'in' AND valid) AS in_domain,
                          count(*) FILTER (domain = 'out') AS out_of_domain,
                          count(*) FILTER (NOT valid) AS invalid
                   FROM queries GROUP BY run_id) q USING (run_id)
        ORDER BY r.created_at DESC
        """
    )


def complete_runs(store: Store) -> pd.DataFrame:
    """run_id, name, created_at of the complete runs, newest first."""
    return store.query(
        "SELECT run_id, name, created_at FROM runs WHERE status = 'complete' ORDER BY created_at DESC"
    )


def default_run(store: Store) -> str | None:
    """The run the app opens on: the newest complete run (the demo run on first start)."""
    return store.latest_complete()


def run_label(row: dict[str, Any]) -> str:
    """``"demo · 2024-05-01 12:00 · 1a2b3c4d (complete)"`` for pickers and captions."""
    created = row.get("created_at")
    when = created.strftime("%Y-%m-%d %H:%M") if hasattr(created, "strftime") else str(created)
    return f"{row.get('name')} · {when} · {str(row.get('run_id'))} ({row.get('status', 'complete')})"


def run_info(store: Store, run_id: str) -> dict[str, Any]:
    """The run's row (settings parsed); StoreError for an unknown id."""
    return store.run(run_id)


def require_complete(store: Store, run_id: str) -> dict[str, Any]:
    """The run's row when it is complete; StoreError saying its status (and reason) otherwise."""
    info = store.run(run_id)
    if info["status"] != "complete":
        reason = f": {info['reason']}" if info.get("reason") else ""
        raise StoreError(f"run {run_id} ({info['name']}) is {info['status']}{reason}")
    return info


def timings(store: Store, run_id: str) -> pd.DataFrame:
    """stage, strategy, seconds, items, per_item_ms of one run."""
    return store.query(
        "SELECT stage, strategy, seconds, items, per_item_ms FROM timings WHERE run_id = ? "
        "ORDER BY stage, strategy",
        [run_id],
    )


# --- compare ----------------------------------------------------------------------------


def recall_table(store: Store, run_id: str, ks: Sequence[int] = KS) -> pd.DataFrame:
    """Recall@k for each k and MRR per configuration, with 95% Wilson intervals for recall.

    The figures are :func:`evalcore.metrics.summarize` over the first correct ranks of the
    run's scored in-domain queries (columns strategy, retriever, config, metric, k, value,
    low, high, successes, queries) plus ``description`` (the metric's tooltip text).
    Empty (same columns) when the run has no scored in-domain query.
    """
    from evalcore.metrics import SUMMARY_COLUMNS, parse_metric, summarize
    from evalcore.summary import first_ranks

    by_config = first_ranks(store, run_id)
    if not by_config:
        import pandas as pd

        return pd.DataFrame(columns=[*SUMMARY_COLUMNS, "description"])
    summary = summarize(by_config, ks)
    summary["description"] = [parse_metric(m).description for m in summary["metric"]]
    return summary


def destroyed_counts(store: Store, run_id: str) -> pd.DataFrame:
    """strategy, destroyed (ground truths), queries (scored in-domain queries of those ground truths)."""
    return store.query(
        """
        SELECT s.strategy, s.destroyed,
               (SELECT count(*) FROM queries q JOIN destroyed d
                  ON d.run_id = q.run_id AND d.group_id = q.group_id
                WHERE q.run_id = s.run_id AND d.strategy = s.strategy AND q.valid) AS queries
        FROM strategies s WHERE s.run_id = ? ORDER BY s.strategy
        """,
        [run_id],
    )


def hit_outcomes(store: Store, run_id: str, configuration: str, k: int) -> dict[str, bool]:
    """{query id: hit@k} over the run's scored in-domain queries for one configuration."""
    if k < 1:
        raise ValueError(f"k must be at least 1, got {k}")
    strategy, retriever = parse_config(configuration)
    df = store.query(
        """
        SELECT r.query_id, coalesce(r.first_correct_rank <= ?, false) AS hit
        FROM results r JOIN queries q ON q.run_id = r.run_id AND q.query_id = r.query_id
        WHERE r.run_id = ? AND r.strategy = ? AND r.retriever = ? AND r.domain = 'in' AND q.valid
        """,
        [k, run_id, strategy, retriever],
    )
    return dict(zip(df["query_id"].astype(str), df["hit"].astype(bool)))


def cross_label(info: dict[str, Any], configuration: str) -> str:
    return f"{info['name']} {str(info['run_id'])}: {configuration}"


def comparable(store: Store, run_a: str, run_b: str) -> str | None:
    """None when both runs answered the same scored in-domain queries, else the reason."""
    df = store.query(
        "SELECT run_id, list(query_id ORDER BY query_id) AS ids FROM queries "
        "WHERE run_id IN (?, ?) AND domain = 'in' AND valid GROUP BY run_id",
        [run_a, run_b],
    )
    ids = {row.run_id: set(row.ids) for row in df.itertuples()}
    a, b = ids.get(run_a, set()), ids.get(run_b, set())
    if a == b and a:
        return None
    return (f"the runs did not answer the same queries ({len(a - b)} only in the first, "
            f"{len(b - a)} only in the second); compare configurations within one run instead")


def win_loss(store: Store, run_id: str, k: int, adjust: bool = True,
             other_run: str | None = None, only: Sequence[str] | None = None) -> pd.DataFrame:
    """The paired win/loss matrix at hit@k over every configuration (of one run, or of two).

    With ``other_run`` the configurations of both runs are paired on their common queries;
    StoreError when the runs did not answer the same queries. Columns: those of
    :func:`evalcore.stats.win_loss_matrix` (row, column, wins, losses, ties, n, p_value,
    p_holm) plus ``p_shown`` (p_holm when adjusted, else p_value), ``label``
    ("+w/-l" and p) and ``significant`` (p_shown < 0.05).
    With ``only``, just those configurations (e.g. ``["A/dense", "E/dense"]``) enter the
    matrix, and the Holm correction counts only their pairs.
    """
    from evalcore.stats import win_loss_matrix

    outcomes: dict[str, dict[str, bool]] = {}
    keep = (lambda c: True) if only is None else set(only).__contains__
    if other_run is None or other_run == run_id:
        for configuration in filter(keep, configurations(store, run_id)):
            outcomes[configuration] = hit_outcomes(store, run_id, configuration, k)
    else:
        reason = comparable(store, run_id, other_run)
        if reason:
            raise StoreError(reason)
        for rid in (run_id, other_run):
            info = store.run(rid)
            for configuration in filter(keep, configurations(store, rid)):
                outcomes[cross_label(info, configuration)] = hit_outcomes(store, rid, configuration, k)
    matrix = win_loss_matrix(outcomes, adjust=adjust, common=True)  # failed queries: left out pairwise
    matrix["p_shown"] = matrix["p_holm"] if adjust else matrix["p_value"]
    matrix["label"] = [f"+{w}/-{l}\np={p:.3g}" for w, l, p in
                       zip(matrix["wins"], matrix["losses"], matrix["p_shown"])]
    matrix["significant"] = matrix["p_shown"] < 0.05
    return matrix


def side_of(label: str, run_id: str, other_run: str | None = None) -> tuple[str, str]:
    """(run id, configuration) of a matrix label made by :func:`win_loss`."""
    if ": " not in label:
        return run_id, label
    prefix, configuration = label.rsplit(": ", 1)
    named = prefix.rsplit(" ", 1)[-1]
    for rid in (run_id, other_run):
        if rid == named:
            return rid, configuration
    raise ValueError(f"label {label!r} names neither run {run_id} nor {str(other_run)}")


def pair_queries(store: Store, first: tuple[str, str], second: tuple[str, str], k: int) -> tuple[Any, pd.DataFrame]:
    """The sign test of ``first`` against ``second`` (each ``(run_id, configuration)``) at hit@k,
    and the queries won and lost: outcome ("won"/"lost"), query_id, text, rank_first, rank_second.
    """
    import pandas as pd

    from evalcore.stats import paired_test

    a = hit_outcomes(store, first[0], first[1], k)
    b = hit_outcomes(store, second[0], second[1], k)
    test = paired_test(a, b, common=True)
    ids = list(test.won) + list(test.lost)
    if not ids:
        return test, pd.DataFrame(columns=["outcome", "query_id", "text", "rank_first", "rank_second"])
    s1, r1 = parse_config(first[1])
    s2, r2 = parse_config(second[1])
    frame = pd.DataFrame({"query_id": ids, "outcome": ["won"] * test.wins + ["lost"] * test.losses})
    with store.connect() as con:
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
            [first[0], first[0], s1, r1, second[0], s2, r2],
        ).df()
    return test, df


def significance_text(matrix: pd.DataFrame, k: int, adjust: bool) -> str:
    """A plain sentence: which pairs differ significantly at hit@k, and what n can detect."""
    from evalcore.stats import sample_statement

    if matrix.empty:
        return "Only one configuration: nothing to compare."
    n = int(matrix["n"].iloc[0])
    which = "Holm-adjusted p" if adjust else "unadjusted p"
    sig = matrix[(matrix["significant"]) & (matrix["wins"] > matrix["losses"])]
    if sig.empty:
        head = (f"At hit@{k}, no pair of configurations differs significantly ({which} < 0.05, "
                f"{PAIRED_TEST}).")
    else:
        parts = [f"{r} beats {c} (+{w}/-{l}, p={p:.3g})" for r, c, w, l, p in
                 zip(sig["row"], sig["column"], sig["wins"], sig["losses"], sig["p_shown"])]
        head = f"At hit@{k}, significant with {which} < 0.05: " + "; ".join(parts) + "."
    return f"{head} {sample_statement(n)}" if n >= 1 else head


# --- distances --------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class DistanceSummary:
    """worst_in: largest distance to an answer; best_out: smallest top-hit distance of an
    out-of-domain query; overlap_in / overlap_out: queries on the wrong side of the other
    group's extreme (in-domain answers at or beyond best_out, ood top hits at or below
    worst_in). NaN / 0 when a group is empty."""

    worst_in: float
    best_out: float
    overlap_in: int
    overlap_out: int
    n_in: int
    n_out: int
    axis: str = "cosine distance"

    @property
    def separated(self) -> bool:
        if math.isnan(self.worst_in) or math.isnan(self.best_out):
            return False
        return self.worst_in < self.best_out if self.lower_is_closer else self.worst_in > self.best_out

    @property
    def lower_is_closer(self) -> bool:
        return self.axis != "score (higher = closer)"


def distances(store: Store, run_id: str, configuration: str) -> pd.DataFrame:
    """Long frame: query_id, domain, kind, measure, distance.

    measure is ``"in: distance to answer"`` (cosine distance of the best-ranked correct
    chunk, at any rank; in-domain queries whose answer is not destroyed), ``"in: top hit"``
    (every scored in-domain query) or ``"out: top hit"``. For a configuration whose gate
    reads the retriever's own score (a run made elsewhere), ``distance`` holds that score;
    the column ``axis`` names what it is (:func:`axis`).
    """
    strategy, retriever = parse_config(configuration)
    gate = axis(store, run_id, configuration)
    answer, top = ("answer_score", "top_score") if gate.column == "score" else ("answer_distance", "top_distance")
    frame = store.query(
        f"""
        WITH base AS (
            SELECT r.query_id, r.domain, q.kind, r.{answer} AS answer_distance, r.{top} AS top_distance
            FROM results r JOIN queries q ON q.run_id = r.run_id AND q.query_id = r.query_id
            WHERE r.run_id = ? AND r.strategy = ? AND r.retriever = ? AND q.valid)
        SELECT query_id, domain, kind, 'in: distance to answer' AS measure, answer_distance AS distance
        FROM base WHERE domain = 'in' AND answer_distance IS NOT NULL
        UNION ALL
        SELECT query_id, domain, kind, 'in: top hit', top_distance FROM base
        WHERE domain = 'in' AND top_distance IS NOT NULL
        UNION ALL
        SELECT query_id, domain, kind, 'out: top hit', top_distance FROM base
        WHERE domain = 'out' AND top_distance IS NOT NULL
        ORDER BY measure, distance
        """,
        [run_id, strategy, retriever],
    )
    frame["axis"] = gate.label  # "distance" holds the value the gate reads
    return frame


def distance_summary(frame: pd.DataFrame) -> DistanceSummary:
    """Worst in-domain answer distance, best out-of-domain top distance, and their overlap."""
    answer = frame.loc[frame["measure"] == "in: distance to answer", "distance"]
    out = frame.loc[frame["measure"] == "out: top hit", "distance"]
    if len(frame) and "axis" in frame and str(frame["axis"].iloc[0]).startswith("score (higher"):
        answer, out = -answer, -out  # a similarity: closer is higher; count on the negated scale
        worst = -float(answer.max()) if len(answer) else math.nan
        best = -float(out.min()) if len(out) else math.nan
    else:
        worst = float(answer.max()) if len(answer) else math.nan
        best = float(out.min()) if len(out) else math.nan
    overlap_in = int((answer >= out.min()).sum()) if len(out) else 0
    overlap_out = int((out <= answer.max()).sum()) if len(answer) else 0
    worst_in, best_out = worst, best
    label = str(frame["axis"].iloc[0]) if len(frame) and "axis" in frame else "cosine distance"
    return DistanceSummary(worst_in, best_out, overlap_in, overlap_out, len(answer), len(out), label)


# --- threshold --------------------------------------------------------------------------


def gate_inputs(store: Store, run_id: str, configuration: str) -> pd.DataFrame:
    """Top-4 hits of every scored query: query_id, domain, rank, distance, score, correct."""
    strategy, retriever = parse_config(configuration)
    return store.query(
        """
        SELECT h.query_id, q.domain, h.rank, h.distance, h.score, h.correct
        FROM hits h JOIN queries q ON q.run_id = h.run_id AND q.query_id = h.query_id
        WHERE h.run_id = ? AND h.strategy = ? AND h.retriever = ? AND h.rank <= ? AND q.valid
        ORDER BY h.query_id, h.rank
        """,
        [run_id, strategy, retriever, GATE_TOP],
    )


def distance_histogram(frame: pd.DataFrame, bins: int = 40) -> pd.DataFrame:
    """Counts of :func:`distances` per measure on common equal-width bins (for the chart and
    its CSV): measure, bin_start, bin_end, count."""
    import numpy as np
    import pandas as pd

    if bins < 1:
        raise ValueError(f"bins must be at least 1, got {bins}")
    if frame.empty:
        return pd.DataFrame(columns=["measure", "bin_start", "bin_end", "count"])
    low, high = float(frame["distance"].min()), float(frame["distance"].max())
    if high <= low:
        high = low + 1e-6
    edges = np.linspace(low, high, bins + 1)
    rows = []
    for measure, group in frame.groupby("measure", sort=True):
        counts, _ = np.histogram(group["distance"].to_numpy(dtype=float), edges)
        rows += [(measure, edges[i], edges[i + 1], int(c)) for i, c in enumerate(counts)]
    return pd.DataFrame(rows, columns=["measure", "bin_start", "bin_end", "count"])


def sweep(store: Store, run_id: str, configuration: str) -> pd.DataFrame:
    """The exact threshold sweep (:func:`evalcore.threshold.sweep`) of one configuration,
    over its scored queries' stored top-4 hits (queries without hits count as refused)."""
    from evalcore.threshold import split_hits
    from evalcore.threshold import sweep as exact_sweep

    strategy, retriever = parse_config(configuration)
    domains = store.query(
        "SELECT r.query_id, r.domain FROM results r JOIN queries q ON q.run_id = r.run_id "
        "AND q.query_id = r.query_id WHERE r.run_id = ? AND r.strategy = ? AND r.retriever = ? AND q.valid",
        [run_id, strategy, retriever],
    )
    gate = axis(store, run_id, configuration)
    in_domain, out_domain = split_hits(gate_inputs(store, run_id, configuration),
                                       dict(zip(domains["query_id"], domains["domain"])), column=gate.column)
    frame = exact_sweep(in_domain, out_domain, top=GATE_TOP, higher_is_closer=gate.higher_is_closer)
    frame["higher_is_closer"] = gate.higher_is_closer  # the direction :func:`suggest` reads
    return frame


def sweep_long(sweep_df: pd.DataFrame) -> pd.DataFrame:
    """Bluffs and lost answers of a sweep as a long frame for a step-after line:
    threshold (each step's lower end, the infinite ends clipped to the observed range),
    series ("bluffs (out-of-domain)", "lost answers (in-domain)"), count, rate."""
    import numpy as np
    import pandas as pd

    finite = sweep_df["threshold"].replace([np.inf, -np.inf], np.nan).dropna()
    if finite.empty:
        return pd.DataFrame(columns=["threshold", "series", "count", "rate"])
    low, high = float(finite.min()), float(finite.max())
    pad = max((high - low) * 0.05, 0.01)
    x = sweep_df["t_from"].clip(lower=low - pad).to_numpy(dtype=float)
    frames = []
    for series, count, rate in (("bluffs (out-of-domain)", "bluffs", "bluff_rate"),
                                ("lost answers (in-domain)", "lost", "lost_rate")):
        frames.append(pd.DataFrame({"threshold": x, "series": series,
                                    "count": sweep_df[count].to_numpy(), "rate": sweep_df[rate].to_numpy()}))
        frames.append(pd.DataFrame({"threshold": [high + pad], "series": [series],
                                    "count": [int(sweep_df[count].iloc[-1])],
                                    "rate": [float(sweep_df[rate].iloc[-1])]}))
    return pd.concat(frames, ignore_index=True)


def gate_table(sweep_df: pd.DataFrame, threshold: float) -> pd.DataFrame:
    """The counts at ``threshold`` (:func:`evalcore.threshold.state_at`) as a table:
    outcome, queries, of (the group's size), share, wilson low / wilson high (95%)."""
    import pandas as pd

    from evalcore.threshold import state_at

    c = state_at(sweep_df, threshold)
    rows = [
        ("bluffs: out-of-domain queries answered", c.bluffs, c.out_domain),
        ("out-of-domain queries refused", c.ood_refused, c.out_domain),
        ("refused: in-domain queries with nothing kept", c.refused, c.in_domain),
        ("answered with a correct chunk", c.answered_correct, c.in_domain),
        ("answered from wrong chunks only", c.answered_wrong, c.in_domain),
        ("lost answers: correct hit in top 4 dropped by the gate", c.lost, c.answerable),
    ]
    from evalcore.stats import wilson_interval

    df = pd.DataFrame(rows, columns=["outcome", "queries", "of"])
    df["share"] = (df["queries"] / df["of"]).where(df["of"] > 0)
    bounds = [tuple(wilson_interval(int(k), int(n))) if n > 0 else (math.nan, math.nan)
              for k, n in zip(df["queries"], df["of"])]
    df["wilson low"] = [b[0] for b in bounds]
    df["wilson high"] = [b[1] for b in bounds]
    return df


def suggest(sweep_df: pd.DataFrame, cost_ratio: float | None = None, max_bluff_rate: float | None = None):
    """:func:`evalcore.threshold.suggest_threshold` (exactly one rule), in the direction the
    sweep was made in (its ``higher_is_closer`` column; distances without it)."""
    from evalcore.threshold import suggest_threshold

    higher = bool(sweep_df["higher_is_closer"].iloc[0]) if "higher_is_closer" in sweep_df and len(sweep_df) else False
    return suggest_threshold(sweep_df, cost_ratio=cost_ratio, max_bluff_rate=max_bluff_rate, higher_is_closer=higher)


def bluffs_at(store: Store, run_id: str, configuration: str, threshold: float) -> pd.DataFrame:
    """Out-of-domain queries that still bluff at ``threshold`` (a top-4 hit with distance < t),
    each with its nearest chunk: query_id, kind, text, distance, rank, doc_id, section, locator, content."""
    strategy, retriever = parse_config(configuration)
    gate = axis(store, run_id, configuration)
    value = "h.score" if gate.column == "score" else "h.distance"
    keep, closest = (">=", "DESC") if gate.higher_is_closer else ("<", "ASC")
    df = store.query(
        f"""
        SELECT q.query_id, q.kind, q.text, {value} AS distance, h.rank, c.doc_id, c.section, c.start, c."end", c.content
        FROM hits h
        JOIN queries q ON q.run_id = h.run_id AND q.query_id = h.query_id
        JOIN chunks c ON c.run_id = h.run_id AND c.strategy = h.strategy AND c.chunk_id = h.chunk_id
        WHERE h.run_id = ? AND h.strategy = ? AND h.retriever = ? AND q.domain = 'out' AND q.valid
          AND h.rank <= ? AND {value} {keep} ?
        QUALIFY row_number() OVER (PARTITION BY h.query_id ORDER BY {value} {closest}, h.rank) = 1
        ORDER BY {value} {closest}, q.query_id
        """,
        [run_id, strategy, retriever, GATE_TOP, float(threshold)],
    )
    df["locator"] = [locator(s, e) for s, e in zip(df["start"], df["end"])]
    return df.drop(columns=["start", "end"])


def decisions(store: Store, run_id: str | None = None) -> pd.DataFrame:
    """Saved threshold decisions, newest first (of one run, or all)."""
    sql = ("SELECT d.created_at, d.run_id, r.name AS run_name, d.strategy, d.retriever, d.threshold, "
           "d.note, d.decision_id FROM decisions d LEFT JOIN runs r USING (run_id)")
    params: list[Any] = []
    if run_id is not None:
        sql += " WHERE d.run_id = ?"
        params.append(run_id)
    return store.query(sql + " ORDER BY d.created_at DESC", params)


def save_decision(store: Store, run_id: str, configuration: str, threshold: float, note: str) -> str:
    """Store a chosen threshold for one configuration of a complete run; returns its id."""
    require_complete(store, run_id)
    strategy, retriever = parse_config(configuration)
    if not math.isfinite(float(threshold)):
        raise ValueError(f"threshold must be a finite number, got {threshold!r}")
    return store.save_decision(run_id, strategy, retriever, float(threshold), note)


# --- query ------------------------------------------------------------------------------


def search_queries(store: Store, run_id: str, text: str = "", limit: int = 200) -> pd.DataFrame:
    """query_id, domain, kind, variant, valid, text of queries whose id or text contains ``text``
    (case-insensitive), in id order, at most ``limit``."""
    like = f"%{text.strip().lower()}%"
    return store.query(
        "SELECT query_id, domain, coalesce(kind, variant) AS kind, valid, text FROM queries "
        "WHERE run_id = ? AND (lower(text) LIKE ? OR lower(query_id) LIKE ?) ORDER BY domain, query_id LIMIT ?",
        [run_id, like, like, limit],
    )


def query_row(store: Store, run_id: str, query_id: str) -> dict[str, Any]:
    df = store.query("SELECT * FROM queries WHERE run_id = ? AND query_id = ?", [run_id, query_id])
    if df.empty:
        raise StoreError(f"run {run_id} has no query {query_id!r}")
    return df.iloc[0].to_dict()


def locator(start: int, end: int) -> str:
    """RFC 5147 fragment ``#char=start,end`` for a text range ("" for a chunk made elsewhere
    that could not be located in its document)."""
    import pandas as pd

    if pd.isna(start) or pd.isna(end):
        return ""
    return f"#char={int(start)},{int(end)}"


def query_hits(store: Store, run_id: str, query_id: str, configuration: str, top: int = 20) -> pd.DataFrame:
    """Top hits of one query in one configuration with their chunk.

    Columns: rank, distance, score, correct, chunk_id, doc_id, title, section, start, end,
    locator, content, needle_start, needle_end (the needle's offsets inside ``content``,
    NaN when the needle is not wholly inside it).
    """
    strategy, retriever = parse_config(configuration)
    df = store.query(
        """
        SELECT h.rank, h.distance, h.score, h.correct, h.chunk_id, c.doc_id, d.title, c.section,
               c.start, c."end", c.content, q.doc_id AS needle_doc, q.start AS needle_from, q."end" AS needle_to
        FROM hits h
        JOIN chunks c ON c.run_id = h.run_id AND c.strategy = h.strategy AND c.chunk_id = h.chunk_id
        LEFT JOIN documents d ON d.run_id = c.run_id AND d.doc_id = c.doc_id
        JOIN queries q ON q.run_id = h.run_id AND q.query_id = h.query_id
        WHERE h.run_id = ? AND h.strategy = ? AND h.retriever = ? AND h.query_id = ? AND h.rank <= ?
        ORDER BY h.rank
        """,
        [run_id, strategy, retriever, query_id, top],
    )
    df["locator"] = [locator(s, e) for s, e in zip(df["start"], df["end"])]
    inside = (df["needle_doc"] == df["doc_id"]) & (df["needle_from"] >= df["start"]) & (df["needle_to"] <= df["end"])
    df["needle_start"] = (df["needle_from"] - df["start"]).where(inside)
    df["needle_end"] = (df["needle_to"] - df["start"]).where(inside)
    return df.drop(columns=["needle_doc", "needle_from", "needle_to"])


def highlight(content: str, start: float, end: float) -> list[tuple[str, bool]]:
    """``content`` split into (piece, is_needle) parts; one part when the needle is not inside."""
    if start is None or end is None or (isinstance(start, float) and math.isnan(start)):
        return [(content, False)]
    s, e = int(start), int(end)
    if not 0 <= s <= e <= len(content):
        raise ValueError(f"needle range [{s}, {e}) outside a content of {len(content)} characters")
    return [p for p in ((content[:s], False), (content[s:e], True), (content[e:], False)) if p[0]]


@dataclass(frozen=True, slots=True)
class QueryConfig:
    """One query in one configuration: the first correct rank and the answer at a threshold."""

    configuration: str
    first_correct_rank: int | None
    destroyed: bool
    hits: Any  # pd.DataFrame, see query_hits
    kept: Any  # pd.DataFrame, the top-4 hits with distance < threshold
    threshold: float

    @property
    def answered(self) -> bool:
        return len(self.kept) > 0


def query_config(store: Store, run_id: str, query_id: str, configuration: str, threshold: float) -> QueryConfig:
    """Rank of the first correct hit, the top hits, and the hits the gate at ``threshold`` keeps."""
    strategy, retriever = parse_config(configuration)
    res = store.query(
        "SELECT first_correct_rank, destroyed FROM results WHERE run_id = ? AND strategy = ? "
        "AND retriever = ? AND query_id = ?",
        [run_id, strategy, retriever, query_id],
    )
    hits = query_hits(store, run_id, query_id, configuration)
    gate = axis(store, run_id, configuration)
    if gate.column == "score":
        hits["distance"] = hits["score"]  # the value the gate reads (no cosine distance)
    close = hits["distance"] >= threshold if gate.higher_is_closer else hits["distance"] < threshold
    kept = hits[(hits["rank"] <= GATE_TOP) & close].reset_index(drop=True)
    rank = None if res.empty or res["first_correct_rank"].isna().iloc[0] else int(res["first_correct_rank"].iloc[0])
    destroyed = bool(res["destroyed"].iloc[0]) if not res.empty else False
    return QueryConfig(configuration, rank, destroyed, hits, kept, float(threshold))


@dataclass(frozen=True, slots=True)
class Answer:
    """What the pipeline would send at a threshold: the prompt with its word-piece count and
    the citation table (index, doc_id, doc_name, label, fragment, quote, distance), or
    ``answered`` False with the NO ANSWER line in ``prompt``."""

    answered: bool
    prompt: str
    citations: Any  # pd.DataFrame
    pieces: int | None


def answer(store: Store, run_id: str, query_id: str, configuration: str, threshold: float,
           count: bool = True) -> Answer:
    """Gate the query's top hits at ``threshold`` and build the citations and prompt
    (:func:`evalcore.citations.context_for_query`); quotes are chunk ``content``."""
    import pandas as pd

    from evalcore.citations import Source, context_for_query

    query = query_row(store, run_id, query_id)
    hits = query_hits(store, run_id, query_id, configuration, top=GATE_TOP)
    gate = axis(store, run_id, configuration)
    located = [not pd.isna(h.start) for h in hits.itertuples()]
    sources = [Source(str(h.doc_id), str(h.title or h.doc_id), h.section or None,
                      int(h.start) if ok else None, int(h.end) if ok else None,
                      h.content, float(h.score if gate.column == "score" else h.distance))
               for h, ok in zip(hits.itertuples(), located)]
    counter = piece_counter() if count else None
    result = context_for_query(query["text"], sources, threshold, top=GATE_TOP, count_pieces=counter, axis=gate)
    if not result.answered:
        return Answer(False, result.message, pd.DataFrame(), None)
    table = pd.DataFrame([{"index": c.index, "doc_id": c.doc_id, "doc_name": c.doc_name, "label": c.label,
                           "fragment": c.fragment, "quote": c.quote, "distance": c.distance}
                          for c in result.citations])
    return Answer(True, result.prompt, table, result.pieces)


# --- index ------------------------------------------------------------------------------


def index_health(store: Store, run_id: str) -> pd.DataFrame:
    """Per strategy: chunks, pieces, header share, over_window, destroyed, norm_max_diff."""
    df = store.query(
        "SELECT strategy, size, overlap, boundaries, header, chunks, pieces, header_pieces, "
        "over_window, destroyed, norm_max_diff FROM strategies WHERE run_id = ? ORDER BY strategy",
        [run_id],
    )
    df["header_share"] = (df["header_pieces"] / df["pieces"]).where(df["pieces"] > 0)
    return df


def over_window_chunks(store: Store, run_id: str) -> pd.DataFrame:
    """strategy, chunk_id, doc_id, section, pieces of chunks over the 256-piece window."""
    return store.query(
        "SELECT strategy, chunk_id, doc_id, section, pieces FROM over_window WHERE run_id = ? "
        "ORDER BY strategy, chunk_id",
        [run_id],
    )


def destroyed_list(store: Store, run_id: str, context: int = 40) -> pd.DataFrame:
    """Destroyed ground truths with the cut that split them.

    Columns: strategy, group_id, doc_id, start, end, cut, before_cut, after_cut (the
    needle's text on each side of the cut; the whole needle in before_cut when no cut is
    recorded), context_before, context_after (``context`` characters around the needle),
    why (a cut split it, or no chunk holds the text at all).
    """
    df = store.query(
        """
        SELECT x.strategy, x.group_id, x.doc_id, x.start, x."end", x.cut,
               substr(d.text, greatest(x.start - ?, 0) + 1, x.start - greatest(x.start - ?, 0)) AS context_before,
               substr(d.text, x.start + 1, coalesce(x.cut, x."end") - x.start) AS before_cut,
               CASE WHEN x.cut IS NULL THEN '' ELSE substr(d.text, x.cut + 1, x."end" - x.cut) END AS after_cut,
               substr(d.text, x."end" + 1, ?) AS context_after,
               CASE WHEN x.cut IS NULL
                    THEN 'no chunk holds this text (boundaries without intro leave out the text before the first ## heading)'
                    ELSE 'split by the cut at offset ' || x.cut::VARCHAR END AS why
        FROM destroyed x LEFT JOIN documents d ON d.run_id = x.run_id AND d.doc_id = x.doc_id
        WHERE x.run_id = ? ORDER BY x.strategy, x.group_id
        """,
        [context, context, context, run_id],
    )
    return df


def current_extractor_versions() -> dict[str, str]:
    """Extractor name -> its current version, for the stale check."""
    versions: dict[str, str] = {}
    try:
        from evalcore import extract

        versions[extract.NAME] = extract.VERSION
    except ImportError:  # pragma: no cover - part of the package
        pass
    try:
        from evalcore.demo import pydoc_topics

        versions[pydoc_topics.NAME] = pydoc_topics.VERSION
    except ImportError:  # pragma: no cover
        pass
    return versions


def documents(store: Store, run_id: str) -> pd.DataFrame:
    """Documents of a run with state, extractor, model stamp, ``stale`` and ``chunks X``
    (the document's chunk count under strategy X, one column a strategy).

    A document is stale when it was indexed under another pipeline version than
    :data:`evalcore.PIPELINE_VERSION` or another version of its extractor than the
    current one; ``stale_reason`` says which. Failed documents are never stale.
    """
    from evalcore import PIPELINE_VERSION

    df = store.query(
        "SELECT doc_id, title, state, reason, extractor, extractor_version, model, model_dim, "
        "pipeline_version, characters, sections, path FROM documents WHERE run_id = ? "
        "ORDER BY state DESC, doc_id",
        [run_id],
    )
    versions = current_extractor_versions()
    reasons = []
    for row in df.itertuples():
        why = []
        if row.state == "indexed":
            if row.pipeline_version != PIPELINE_VERSION:
                why.append(f"pipeline {row.pipeline_version} (now {PIPELINE_VERSION})")
            now = versions.get(row.extractor)
            if now is not None and str(row.extractor_version) != now:
                why.append(f"extractor {row.extractor} {row.extractor_version} (now {now})")
        reasons.append("; ".join(why))
    df["stale"] = [bool(r) for r in reasons]
    df["stale_reason"] = reasons
    # chunks per document, counted by the system after chunking (SPEC 1): one column a strategy
    counts = store.query(
        "SELECT doc_id, strategy, count(*) AS n FROM chunks WHERE run_id = ? GROUP BY ALL", [run_id])
    if not counts.empty:
        order = [s for s in (store.run(run_id)["strategies"] or "").split(",") if s]
        wide = counts.pivot(index="doc_id", columns="strategy", values="n")
        for strategy in [s for s in order if s in wide.columns]:
            df[f"chunks {strategy}"] = df["doc_id"].map(wide[strategy]).fillna(0).astype("int64")
    return df
