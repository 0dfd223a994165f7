"""Stored traffic read back: what is stored, borderline queries, labelled rates, one query's hits,
the export (the Traffic screen and ``traffic export``); periods and drift are in
:mod:`evalcore.read.traffic.periods`.

A logged query is read like an off-topic query of its configuration (METHODS.md "Real traffic"): its gate value
is the smallest distance among its top 4 hits (for a configuration gating on its own
similarity score, the largest score), and at threshold t it is refused when no top-4 hit
passes the gate. Every log line counts, duplicates included.

Labelled traffic (a label in the log, else one given on the screen): the **bluff rate** is the
share of off-topic lines the gate answers (a hit kept), the **lost rate** the share of
answerable lines it refuses. The evaluation's rates beside them are its bluff rate (METHODS.md "The refusal
threshold") and its lost rate among answerable in-domain queries (a correct hit in the top 4 lost to the gate).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from datetime import datetime
from typing import TYPE_CHECKING, Any

from evalcore.configurations import info
from evalcore.measures.claim import ClaimError, threshold_claim
from evalcore.measures.rounding import rate_bound_text, rate_lower_text
from evalcore.measures.stats import wilson_interval
from evalcore.measures.threshold import DEFAULT_TOP, counts_at, gate, split_hits
from evalcore.read.claims import claim_of
from evalcore.read.claims import gate_values as evaluation_values
from evalcore.read.sweeps import top_hits
from evalcore.store.traffic.imported import LABELS

if TYPE_CHECKING:
    import numpy as np
    import pandas as pd

    from evalcore.measures.claim import Claim
    from evalcore.measures.threshold import Axis
    from evalcore.records import Configuration
    from evalcore.store import Store

_KEY = "run_id = ? AND strategy = ? AND retriever = ?"


def _key(run_id: str, configuration: Configuration) -> list[str]:
    return [run_id, configuration.strategy, configuration.retriever]


def axis(store: Store, run_id: str, configuration: Configuration) -> Axis:
    return info(store, run_id, configuration.strategy, configuration.retriever).axis


def refused(gate_values: np.ndarray, threshold: float, higher_is_closer: bool = False) -> np.ndarray:
    """True where the gate at ``threshold`` keeps no top-4 hit (a query without hits: NaN, refused)."""
    import numpy as np

    g = np.asarray(gate_values, dtype=np.float64)
    with np.errstate(invalid="ignore"):
        kept = g >= threshold if higher_is_closer else g < threshold
    return ~(kept & ~np.isnan(g))


@dataclass(frozen=True, slots=True)
class Stored:
    """How much traffic is stored for a configuration, and since when."""

    lines: int
    texts: int
    since: datetime | None
    until: datetime | None

    def sentence(self) -> str:
        if not self.lines:
            return "No traffic is stored for this configuration."
        day = "%Y-%m-%d %H:%M"
        return (
            f"{self.lines:,} logged queries ({self.texts:,} distinct texts) are stored, asked from "
            f"{self.since:{day}} to {self.until:{day}} UTC."
        )


def stored(store: Store, run_id: str, configuration: Configuration, deployment: str | None = None) -> Stored:
    """The lines stored for the configuration: all of them (``deployment`` None: imported logs
    and every deployment's posts), or only those ``deployment`` posted (``""``: only the
    imported logs'). Each deployment's lines are its own (migration 0014): two deployments on
    one configuration that post the same text at the same time both have theirs counted."""
    which = "" if deployment is None else " AND deployment = ?"
    df = store.query(
        "SELECT count(*) AS n, count(DISTINCT text_hash) AS texts, min(asked_at) AS since, max(asked_at) AS until "
        f"FROM traffic_queries WHERE {_KEY}{which}",
        _key(run_id, configuration) + ([] if deployment is None else [deployment]),
    )
    row = df.iloc[0]
    n = int(row["n"])
    return Stored(
        n, int(row["texts"]), row["since"].to_pydatetime() if n else None, row["until"].to_pydatetime() if n else None
    )


def lines_by_deployment(store: Store, run_id: str, configuration: Configuration) -> dict[str, int]:
    """The configuration's stored lines per deployment that posted them (``""``: the lines of
    imported logs), most lines first."""
    df = store.query(
        f"SELECT deployment, count(*) AS n FROM traffic_queries WHERE {_KEY} GROUP BY 1 ORDER BY n DESC, deployment",
        _key(run_id, configuration),
    )
    return {str(d): int(n) for d, n in zip(df["deployment"], df["n"], strict=True)}


def configurations_with_traffic(store: Store, run_id: str) -> list[str]:
    """Labels of the run's configurations that have stored traffic, most lines first."""
    df = store.query(
        "SELECT strategy || '/' || retriever AS label, count(*) AS n FROM traffic_queries WHERE run_id = ? "
        "GROUP BY 1 ORDER BY n DESC, label",
        [run_id],
    )
    return [str(x) for x in df["label"]]


def evaluation_gate_values(store: Store, run_id: str, configuration: Configuration) -> pd.DataFrame:
    """query_id, domain (in | out), gate_value of every scored query of the evaluation: the
    smallest distance (or best own score) among its stored top-4 hits."""
    ax = axis(store, run_id, configuration)
    closest = "max" if ax.higher_is_closer else "min"
    return store.query(
        f"""
        SELECT r.query_id, r.domain, {closest}(h.{ax.column}) AS gate_value
        FROM results r
        JOIN queries q ON q.run_id = r.run_id AND q.query_id = r.query_id
        LEFT JOIN hits h ON h.run_id = r.run_id AND h.strategy = r.strategy AND h.retriever = r.retriever
                        AND h.query_id = r.query_id AND h.rank <= ?
        WHERE r.run_id = ? AND r.strategy = ? AND r.retriever = ? AND q.valid
        GROUP BY r.query_id, r.domain ORDER BY r.domain, r.query_id
        """,
        [DEFAULT_TOP, *_key(run_id, configuration)],
    )


def reference_values(store: Store, run_id: str, configuration: Configuration) -> np.ndarray:
    """The evaluation's in-domain + off-topic gate values (the KS reference), finite ones."""
    import numpy as np

    g = evaluation_gate_values(store, run_id, configuration)["gate_value"].astype("float64").to_numpy()
    return g[np.isfinite(g)]


def lines(store: Store, run_id: str, configuration: Configuration, with_text: bool = False) -> pd.DataFrame:
    """Every stored log line: asked_at, text_hash, gate_value, label (the log's, else the
    screen's), line and source (the log's file name); ``text`` too when ``with_text``."""
    text = ", t.text" if with_text else ""
    return store.query(
        f"""
        SELECT q.asked_at, q.text_hash, t.gate_value, coalesce(q.label, l.label) AS label, q.line,
               i.source{text}
        FROM traffic_queries q
        JOIN traffic_texts t USING (run_id, strategy, retriever, text_hash)
        LEFT JOIN traffic_labels l USING (run_id, strategy, retriever, text_hash)
        LEFT JOIN traffic_imports i ON i.import_id = q.import_id
        WHERE q.run_id = ? AND q.strategy = ? AND q.retriever = ? AND t.failure IS NULL
        ORDER BY q.asked_at, i.source, q.line
        """,
        _key(run_id, configuration),
    )


def borderline(
    store: Store, run_id: str, configuration: Configuration, threshold: float, band: float, limit: int = 200
) -> pd.DataFrame:
    """Distinct texts whose gate value lies within ``band`` of ``threshold``, closest first:
    text_hash, text, gate_value, asked (lines), last_asked, label (the log's, else the
    screen's), log_unlabelled (lines without a label in the log: the lines a label given on the
    screen counts for, since the log's label wins), labelled_by (who gave the screen's label),
    refused (at ``threshold``)."""
    df = store.query(
        f"""
        SELECT t.text_hash, t.text, t.gate_value, count(*) AS asked, max(q.asked_at) AS last_asked,
               coalesce(max(q.label), max(l.label)) AS label,
               count(*) - count(q.label) AS log_unlabelled, max(l.author) AS labelled_by
        FROM traffic_texts t
        JOIN traffic_queries q USING (run_id, strategy, retriever, text_hash)
        LEFT JOIN traffic_labels l USING (run_id, strategy, retriever, text_hash)
        WHERE t.run_id = ? AND t.strategy = ? AND t.retriever = ? AND abs(t.gate_value - ?) <= ?
        GROUP BY t.text_hash, t.text, t.gate_value
        ORDER BY abs(t.gate_value - ?), t.text_hash
        LIMIT {int(limit)}
        """,
        [*_key(run_id, configuration), float(threshold), float(band), float(threshold)],
    )
    ax = axis(store, run_id, configuration)
    df["refused"] = refused(df["gate_value"].astype("float64").to_numpy(), threshold, ax.higher_is_closer)
    return df


@dataclass(frozen=True, slots=True)
class RateInterval:
    """k of n with its 95% Wilson interval."""

    k: int
    n: int
    low: float
    high: float

    @property
    def value(self) -> float:
        return self.k / self.n if self.n else math.nan

    def text(self) -> str:
        if not self.n:
            return "n/a (none)"
        # the interval's ends are bounds: rounded on their safe side (the low end down, the high end up)
        low, high = rate_lower_text(self.low), rate_bound_text(self.high)
        return f"{self.value:.1%} ({self.k} of {self.n}; 95% CI {low}-{high})"


def _rate(k: int, n: int) -> RateInterval:
    if not n:
        return RateInterval(0, 0, math.nan, math.nan)
    ci = wilson_interval(k, n)
    return RateInterval(k, n, ci.low, ci.high)


@dataclass(frozen=True, slots=True)
class LabelledRates:
    """Bluff and lost rates at a threshold on labelled traffic and in the evaluation."""

    traffic_bluff: RateInterval
    traffic_lost: RateInterval
    evaluation_bluff: RateInterval
    evaluation_lost: RateInterval
    unlabelled: int


def labelled_rates(store: Store, run_id: str, configuration: Configuration, threshold: float) -> LabelledRates:
    """See the module docstring. Every labelled log line counts."""
    ax = axis(store, run_id, configuration)
    kept = ">=" if ax.higher_is_closer else "<"
    counts = store.query(  # counted in DuckDB: no row of the (possibly millions of) lines leaves it
        f"""
        SELECT coalesce(q.label, l.label) AS label, count(*) AS n,
               count(*) FILTER (WHERE t.gate_value {kept} ? AND NOT isnan(t.gate_value)) AS answered
        FROM traffic_queries q
        JOIN traffic_texts t USING (run_id, strategy, retriever, text_hash)
        LEFT JOIN traffic_labels l USING (run_id, strategy, retriever, text_hash)
        WHERE q.run_id = ? AND q.strategy = ? AND q.retriever = ? AND t.failure IS NULL
        GROUP BY 1
        """,
        [float(threshold), *_key(run_id, configuration)],
    )
    by: dict[str | None, tuple[int, int]] = {
        (label if isinstance(label, str) else None): (int(n), int(k))
        for label, n, k in zip(counts["label"], counts["n"], counts["answered"], strict=True)
    }
    off_n, off_answered = by.get("off-topic", (0, 0))
    ans_n, ans_answered = by.get("answerable", (0, 0))
    hits = top_hits(store, run_id, configuration)
    in_domain, out_domain = split_hits(hits, column=ax.column)
    c = counts_at(in_domain, out_domain, threshold, DEFAULT_TOP, ax.higher_is_closer)
    return LabelledRates(
        _rate(off_answered, off_n),
        _rate(ans_n - ans_answered, ans_n),
        _rate(c.bluffs, c.out_domain),
        _rate(c.lost, c.answerable),
        sum(n for label, (n, _) in by.items() if label not in LABELS),
    )


def off_topic_minima(store: Store, run_id: str, configuration: Configuration) -> list[float]:
    """The gate value of every off-topic-labelled log line (for a threshold claim on real traffic)."""
    import numpy as np

    with store.read() as con:
        got = con.execute(
            """
            SELECT t.gate_value FROM traffic_queries q
            JOIN traffic_texts t USING (run_id, strategy, retriever, text_hash)
            LEFT JOIN traffic_labels l USING (run_id, strategy, retriever, text_hash)
            WHERE q.run_id = ? AND q.strategy = ? AND q.retriever = ? AND t.failure IS NULL
              AND coalesce(q.label, l.label) = 'off-topic' AND isfinite(t.gate_value)
            """,
            _key(run_id, configuration),
        ).fetchnumpy()
    return [float(v) for v in np.asarray(got["gate_value"], dtype=np.float64)]


def traffic_claim(store: Store, run_id: str, configuration: Configuration) -> Claim | None:
    """The threshold claim (METHODS.md "The threshold claim",
    :func:`evalcore.measures.claim.threshold_claim`) recomputed with the
    real off-topic queries: ``m_q`` = the gate value of every off-topic-labelled log line
    (duplicates included: each line is one draw of production traffic); the lost side keeps the
    evaluation's answerable queries (traffic has no needle to tell a correct hit). None when no
    log line is labelled off-topic."""
    ood = off_topic_minima(store, run_id, configuration)
    if not ood:
        return None
    values = evaluation_values(store, run_id, configuration)
    found = threshold_claim(ood, values.answerable_min, values.in_domain_min, axis=values.axis)
    return replace(found, configuration=configuration.label)


@dataclass(frozen=True, slots=True)
class Claims:
    """The claim on the real off-topic lines and the evaluation's (None: cannot be made), and why not."""

    traffic: Claim | None
    evaluation: Claim | None
    problem: str | None


def traffic_claims(store: Store, run_id: str, configuration: Configuration) -> Claims:
    """:func:`traffic_claim` and ``claim_of``, a ClaimError kept as its message (cacheable, unlike a raise)."""
    found: list[Claim | None] = []
    problem = None
    for make in (traffic_claim, claim_of):
        try:
            found.append(make(store, run_id, configuration))
        except ClaimError as exc:
            found.append(None)
            problem = problem or str(exc)
    return Claims(found[0], found[1], problem)


def traffic_query(
    store: Store, run_id: str, configuration: Configuration, text_hash: str, threshold: float
) -> dict[str, Any] | None:
    """One stored text: text, gate_value, failure, asked, first_asked, last_asked, label,
    ``kept`` (how many top-4 hits the gate keeps at ``threshold``), ``keep_rule``, and ``hits``
    (rank, distance, score, chunk_id, doc_id, section, start, end, content); None when unknown."""
    head = store.query(
        """
        SELECT t.text, t.gate_value, t.failure, count(q.line) AS asked, min(q.asked_at) AS first_asked,
               max(q.asked_at) AS last_asked, coalesce(max(q.label), max(l.label)) AS label
        FROM traffic_texts t
        LEFT JOIN traffic_queries q USING (run_id, strategy, retriever, text_hash)
        LEFT JOIN traffic_labels l USING (run_id, strategy, retriever, text_hash)
        WHERE t.run_id = ? AND t.strategy = ? AND t.retriever = ? AND t.text_hash = ?
        GROUP BY t.text, t.gate_value, t.failure
        """,
        [*_key(run_id, configuration), text_hash],
    )
    if head.empty:
        return None
    out = {str(k): v for k, v in head.iloc[0].to_dict().items()}
    out["hits"] = store.query(
        """
        SELECT h.rank, h.distance, h.score, h.chunk_id, c.doc_id, c.section, c.start, c."end", c.content
        FROM traffic_hits h
        LEFT JOIN chunks c ON c.run_id = h.run_id AND c.strategy = h.strategy AND c.chunk_id = h.chunk_id
        WHERE h.run_id = ? AND h.strategy = ? AND h.retriever = ? AND h.text_hash = ?
        ORDER BY h.rank
        """,
        [*_key(run_id, configuration), text_hash],
    )

    ax = axis(store, run_id, configuration)
    values = [float(v) for v in out["hits"][ax.column].head(DEFAULT_TOP) if v == v]
    out["kept"] = len(gate(values, threshold, DEFAULT_TOP, ax.higher_is_closer))
    out["keep_rule"] = ax.keep_rule
    return out


def export_frame(
    store: Store, run_id: str, configuration: Configuration, threshold: float, with_text: bool = False
) -> pd.DataFrame:
    """Every stored line for a download: asked_at, source, line, text_hash, gate_value,
    refused (at ``threshold``), label; the query text only when ``with_text``."""
    ax = axis(store, run_id, configuration)
    df = lines(store, run_id, configuration, with_text=with_text)
    df["refused"] = refused(df["gate_value"].astype("float64").to_numpy(), threshold, ax.higher_is_closer)
    cols = ["asked_at", "source", "line", "text_hash", "gate_value", "refused", "label"] + (
        ["text"] if with_text else []
    )
    return df[cols]
