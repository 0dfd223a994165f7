"""The refusal threshold read back: the exact sweep of a stored configuration, the gate's
counts at a threshold in a table and in one plain sentence, and the queries that still bluff.

The gate and the sweep are :mod:`evalcore.measures.threshold`'s; this module only reads a stored
configuration's top hits into them and words the result.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

from evalcore.configurations import info
from evalcore.i18n import ENGLISH, N_, Translator
from evalcore.measures.grid import on_grid
from evalcore.measures.rounding import threshold_text
from evalcore.measures.stats import wilson_interval
from evalcore.measures.suggestion import MAX_BLUFF_INTERVAL_WIDTH, suggest_threshold
from evalcore.measures.threshold import DEFAULT_TOP, state_at, sweep_from_minima
from evalcore.read.queries import chunk_locator

if TYPE_CHECKING:
    import numpy as np
    import pandas as pd
    from numpy.typing import NDArray

    from evalcore.measures.suggestion import Suggestion
    from evalcore.measures.threshold import Axis
    from evalcore.records import Configuration
    from evalcore.store import Store

#: The series of :func:`sweep_long`: name -> (count column, rate column, Wilson stem).
SERIES = {
    "bluffs (out-of-domain)": ("bluffs", "bluff_rate", "bluff"),
    "lost answers (in-domain)": ("lost", "lost_rate", "lost"),
    "refused (in-domain)": ("refused", "refused_rate", "refused"),
}


def run_sweep(store: Store, run_id: str, configuration: Configuration) -> pd.DataFrame:
    """The exact threshold sweep (:func:`evalcore.measures.threshold.sweep`) of one configuration over its
    scored queries' stored top-4 hits (queries without hits count as refused).

    The store gives each query's smallest top-4 distance and smallest correct one in one
    query; :func:`evalcore.measures.threshold.sweep_from_minima` does the rest. A configuration made
    elsewhere gates on its own score (:func:`evalcore.configurations.ConfigInfo.axis`): then
    the largest scores of a similarity, and the frame's ``higher_is_closer`` column says so."""
    import numpy as np

    gate = info(store, run_id, configuration.strategy, configuration.retriever).axis
    value = f"h.{gate.column}"
    closest = "max" if gate.higher_is_closer else "min"
    df = store.query(
        f"""
        SELECT r.query_id, r.domain,
               {closest}({value}) AS first, {closest}({value}) FILTER (WHERE h.correct) AS first_correct
        FROM results r
        JOIN queries q ON q.run_id = r.run_id AND q.query_id = r.query_id
        LEFT JOIN hits h ON h.run_id = r.run_id AND h.strategy = r.strategy AND h.retriever = r.retriever
                        AND h.query_id = r.query_id AND h.rank <= ?
        WHERE r.run_id = ? AND r.strategy = ? AND r.retriever = ? AND q.valid
        GROUP BY r.query_id, r.domain
        """,
        [DEFAULT_TOP, run_id, configuration.strategy, configuration.retriever],
    )
    inside = df["domain"] == "in"
    missing = -np.inf if gate.higher_is_closer else np.inf

    def column(name: str, rows: pd.Series[bool]) -> NDArray[np.floating[Any]]:
        return df.loc[rows, name].astype("float64").fillna(missing).to_numpy()

    frame = sweep_from_minima(
        column("first", inside), column("first_correct", inside), column("first", ~inside), gate.higher_is_closer
    )
    frame["higher_is_closer"] = gate.higher_is_closer  # the direction suggestions need (suggest)
    frame["axis"] = gate.label  # what the threshold is a value of (charts and captions)
    return frame


def gate_axis(store: Store, run_id: str, configuration: Configuration) -> Axis:
    """What the configuration's gate reads (:class:`evalcore.measures.threshold.Axis`): the cosine
    distance of a built-in configuration, or a run made elsewhere's own score."""
    return info(store, run_id, configuration.strategy, configuration.retriever).axis


def suggest_on_grid(
    sweep_df: pd.DataFrame, cost_ratio: float | None = None, max_bluff_rate: float | None = None
) -> Suggestion:
    """:func:`evalcore.measures.suggestion.suggest_threshold` in the direction the sweep was made in,
    on the Threshold slider's 0.001 grid on its safe side (:func:`evalcore.measures.grid.on_grid`):
    the value the screen offers is one the slider can hold, with no more bluffs than the rule's."""
    higher = bool(sweep_df["higher_is_closer"].iloc[0]) if "higher_is_closer" in sweep_df and len(sweep_df) else False
    found = suggest_threshold(sweep_df, cost_ratio=cost_ratio, max_bluff_rate=max_bluff_rate, higher_is_closer=higher)
    return on_grid(sweep_df, found, higher, cost_ratio)


def top_hits(store: Store, run_id: str, configuration: Configuration, top: int = DEFAULT_TOP) -> pd.DataFrame:
    """The top-``top`` hits of every scored query of one configuration, as
    :func:`evalcore.measures.threshold.split_hits` reads them: query_id, domain, rank, distance, score, correct."""
    return store.query(
        """
        SELECT h.query_id, q.domain, h.rank, h.distance, h.score, h.correct
        FROM hits h JOIN queries q ON q.run_id = h.run_id AND q.query_id = h.query_id
        WHERE h.run_id = ? AND h.strategy = ? AND h.retriever = ? AND h.rank <= ? AND q.valid
        ORDER BY h.query_id, h.rank
        """,
        [run_id, configuration.strategy, configuration.retriever, top],
    )


def threshold_range(sweep_df: pd.DataFrame) -> tuple[float, float]:
    """The slider's range: the observed distances of the sweep, padded by 5% (at least 0.01)."""
    finite = sweep_df["threshold"][sweep_df["threshold"].map(math.isfinite)]
    low, high = (float(finite.min()), float(finite.max())) if len(finite) else (0.0, 1.0)
    pad = max((high - low) * 0.05, 0.01)
    return round(low - pad if low < 0 else max(0.0, low - pad), 3), round(high + pad, 3)


def sweep_long(sweep_df: pd.DataFrame) -> pd.DataFrame:
    """The sweep as a long frame for step lines: threshold (each step's lower end, the
    infinite ends clipped to the observed range), series (:data:`SERIES`), count, rate and
    the rate's 95% Wilson ``low``/``high`` (computed by :func:`evalcore.measures.threshold.sweep`)."""
    import numpy as np
    import pandas as pd

    columns = ["threshold", "series", "count", "rate", "low", "high"]
    finite = sweep_df["threshold"].replace([np.inf, -np.inf], np.nan).dropna()
    if finite.empty:
        return pd.DataFrame(columns=columns)
    low, high = float(finite.min()), float(finite.max())
    pad = max((high - low) * 0.05, 0.01)
    x = np.append(sweep_df["t_from"].clip(lower=low - pad).to_numpy(dtype=float), high + pad)

    def last(values: pd.Series[Any]) -> NDArray[Any]:
        array = np.asarray(values)
        return np.append(array, array[-1])

    frames = []
    for series, (count, rate, stem) in SERIES.items():
        frames.append(
            pd.DataFrame(
                {
                    "threshold": x,
                    "series": series,
                    "count": last(sweep_df[count]),
                    "rate": last(sweep_df[rate]),
                    "low": last(sweep_df[f"{stem}_low"]),
                    "high": last(sweep_df[f"{stem}_high"]),
                }
            )
        )
    return pd.concat(frames, ignore_index=True)[columns]


def gate_table(sweep_df: pd.DataFrame, threshold: float) -> pd.DataFrame:
    """The counts at ``threshold`` (:func:`evalcore.measures.threshold.state_at`) as a table:
    outcome, queries, of (the group's size), share, wilson low / wilson high (95%)."""
    import pandas as pd

    c = state_at(sweep_df, threshold)
    rows = [
        (N_("bluffs: out-of-domain queries answered"), c.bluffs, c.out_domain),
        (N_("out-of-domain queries refused"), c.ood_refused, c.out_domain),
        (N_("refused: in-domain queries with nothing kept"), c.refused, c.in_domain),
        (N_("answered with a correct chunk"), c.answered_correct, c.in_domain),
        (N_("answered from wrong chunks only"), c.answered_wrong, c.in_domain),
        (N_("lost answers: correct hit in top 4 dropped by the gate"), c.lost, c.answerable),
    ]
    df = pd.DataFrame(rows, columns=["outcome", "queries", "of"])
    df["share"] = (df["queries"] / df["of"]).where(df["of"] > 0)
    bounds = [
        tuple(wilson_interval(int(k), int(n))) if n > 0 else (math.nan, math.nan)
        for k, n in zip(df["queries"], df["of"], strict=True)
    ]
    df["wilson low"] = [b[0] for b in bounds]
    df["wilson high"] = [b[1] for b in bounds]
    return df


def _share(k: int, n: int) -> str:
    return f"{100 * k / n:.0f}%" if n else "n/a"


def sentence_at(sweep_df: pd.DataFrame, threshold: float, tr: Translator = ENGLISH) -> str:
    """What the gate does at ``threshold``, in one plain sentence for a product manager.

    E.g. "At t = 0.506: 62% of real questions (45 of 72) are answered from a right source,
    35% (25) are refused, 3% (2) are answered from wrong sources only; 0% of off-topic
    questions (0 of 36) bluff."
    """
    _ = tr.gettext
    c = state_at(sweep_df, threshold)
    parts = [
        _("{share} of real questions ({n} of {real}) are answered from a right source").format(
            share=_share(c.answered_correct, c.in_domain), n=c.answered_correct, real=c.in_domain
        ),
        _("{share} ({n}) are refused").format(share=_share(c.refused, c.in_domain), n=c.refused),
    ]
    if c.answered_wrong:
        parts.append(
            _("{share} ({n}) are answered from wrong sources only").format(
                share=_share(c.answered_wrong, c.in_domain), n=c.answered_wrong
            )
        )
    text = _("At t = {t}: ").format(t=threshold_text(threshold)) + ", ".join(parts)
    if c.out_domain:
        text += _(
            "; {share} of off-topic questions ({n} of {off_topic}) bluff (get an answer where they should get none)."
        ).format(share=_share(c.bluffs, c.out_domain), n=c.bluffs, off_topic=c.out_domain)
    else:
        text += _("; no off-topic questions, so bluffs are not measured.")
    return tr.numbers_in(text)


def ood_support(sweep_df: pd.DataFrame, threshold: float, tr: Translator = ENGLISH) -> str | None:
    """A warning when the out-of-domain set is too small to support a threshold, else None.

    Too small: the 95% Wilson interval of the bluff rate at ``threshold`` is wider than
    :data:`~evalcore.measures.suggestion.MAX_BLUFF_INTERVAL_WIDTH`, or there is no out-of-domain query.
    """
    _ = tr.gettext
    c = state_at(sweep_df, threshold)
    if c.out_domain == 0:
        return _(
            "This run has no out-of-domain queries: bluffs cannot be measured, so no threshold "
            "can be justified by them. Add off-topic questions (ood.jsonl)."
        )
    interval = wilson_interval(c.bluffs, c.out_domain)
    if interval.high - interval.low <= MAX_BLUFF_INTERVAL_WIDTH:
        return None
    return tr.numbers_in(
        _(
            "Only {n} out-of-domain queries: at t = {t}, {bluffs} bluff ({share}), but the 95% Wilson interval "
            "of that rate runs from {low} to {high}. Too few off-topic questions to support this threshold; "
            "add more before deciding."
        ).format(
            n=c.out_domain,
            t=threshold_text(threshold),
            bluffs=c.bluffs,
            share=_share(c.bluffs, c.out_domain),
            low=f"{100 * interval.low:.0f}%",
            high=f"{100 * interval.high:.0f}%",
        )
    )


def bluffs_at(store: Store, run_id: str, configuration: Configuration, threshold: float) -> pd.DataFrame:
    """Out-of-domain queries that still bluff at ``threshold`` (a top-4 hit with distance < t),
    each with its nearest chunk: query_id, kind, text, distance, rank, doc_id, section, locator, content."""
    gate = info(store, run_id, configuration.strategy, configuration.retriever).axis
    value = f"h.{gate.column}"
    keep, closest = (">=", "DESC") if gate.higher_is_closer else ("<", "ASC")
    df = store.query(
        f"""
        SELECT q.query_id, q.kind, q.text, {value} AS distance, h.rank, c.doc_id, coalesce(c.section, '') AS section,
               c.start, c."end", c.content
        FROM hits h
        JOIN queries q ON q.run_id = h.run_id AND q.query_id = h.query_id
        JOIN chunks c ON c.run_id = h.run_id AND c.strategy = h.strategy AND c.chunk_id = h.chunk_id
        WHERE h.run_id = ? AND h.strategy = ? AND h.retriever = ? AND q.domain = 'out' AND q.valid
          AND h.rank <= ? AND {value} {keep} ?
        QUALIFY row_number() OVER (PARTITION BY h.query_id ORDER BY {value} {closest}, h.rank) = 1
        ORDER BY {value} {closest}, q.query_id
        """,
        [run_id, configuration.strategy, configuration.retriever, DEFAULT_TOP, float(threshold)],
    )
    df["locator"] = [chunk_locator(s, e) for s, e in zip(df["start"], df["end"], strict=True)]
    return df.drop(columns=["start", "end"])
