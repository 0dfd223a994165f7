"""The review sample of a deployment version read back (migration 0016; drawn by
:mod:`evalcore.traffic.sampling`, written by :mod:`evalcore.store.review`). Reads only.

The review periods, line ids and frames: :mod:`evalcore.read.traffic.review_periods`.

**A frame's strata and sample.** The frame's lines split by what the gate did at the deployed t
(a line is refused when no top-4 hit passes the gate, as :func:`evalcore.read.traffic.stored.refused`
says) into ``answered`` (N_A lines) and ``refused`` (N_R). Each stratum's sample is the first n
lines of its seeded order; a sampled line's inclusion probability is n/N, n the lines sampled
in its stratum so far.

**What counts.** Only the **labelled prefix** of each stratum's order counts (ranks 1..r, every
one of them with a first label): a line skipped blocks the lines after it from the counts until
it is labelled, so that skipping can never bias the sample. Second labels (a second person's, on
the share of lines offered to one) measure agreement and never count.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any

from evalcore.configurations import info
from evalcore.measures.agreement import cohens_kappa
from evalcore.read.citations import locator
from evalcore.read.traffic.review_periods import (
    ReviewFrame,
    VersionSpan,
    frames,
    line_id,
    review_periods,
    utc_now,
    version_span,
)
from evalcore.read.traffic.stored import refused

if TYPE_CHECKING:
    from evalcore.store import Store

_TOP = 4


# --- counts --------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class StratumCounts:
    """One stratum of a frame: its lines, those sampled, and what the labelled prefix holds."""

    lines: int  #: N: the stratum's lines in the frame
    sampled: int  #: lines drawn into the sample so far
    labelled: int  #: n: the labelled prefix of the seeded order (first labels only)
    off_topic: int  #: of the prefix: labelled off-topic
    answerable_held: int  #: of the prefix: answerable, hits hold the answer
    answerable_missed: int  #: of the prefix: answerable, hits miss the answer (a retrieval miss when refused)
    answerable_unknown: int  #: of the prefix: answerable, hits_hold_answer null
    labels: int = 0  #: first labels given in the stratum, inside the prefix or after a gap

    @property
    def blocked(self) -> int:
        """First labels after the prefix's gap: they count once the lines before them are labelled."""
        return self.labels - self.labelled


EMPTY = StratumCounts(0, 0, 0, 0, 0, 0, 0)


@dataclass(frozen=True, slots=True)
class PeriodSample:
    """A review period of a version and its sample (EMPTY strata while it has no frame)."""

    index: int  #: 1-based period of the version
    start: datetime  #: naive UTC
    end: datetime
    drawn: bool  #: False: the period has ended but no frame yet, or it has not ended
    answered: StratumCounts
    refused: StratumCounts
    reason: str | None  #: why its sizes were raised (drift), else None
    late_lines: int  #: lines of the period stored after the frame was drawn (outside it)
    ended: bool = True
    frame_id: str | None = None
    drawn_at: datetime | None = None


_COUNTS = """
WITH s AS (
    SELECT s.frame_id, s.stratum, s.rank, l.label, l.hits_hold_answer
    FROM review_sample s JOIN review_frames f ON f.frame_id = s.frame_id
    LEFT JOIN review_labels l ON l.frame_id = s.frame_id AND l.stratum = s.stratum AND l.rank = s.rank
                              AND l.role = 'first'
    WHERE f.deployment = ? AND f.version = ?
), prefix AS (
    SELECT frame_id, stratum, count(*) AS sampled, count(label) AS labels,
           coalesce(min(rank) FILTER (WHERE label IS NULL) - 1, max(rank)) AS upto
    FROM s GROUP BY frame_id, stratum
)
SELECT p.frame_id, p.stratum, p.sampled, p.labels,
       count(s.rank) FILTER (WHERE s.rank <= p.upto) AS labelled,
       count(s.rank) FILTER (WHERE s.rank <= p.upto AND s.label = 'off-topic') AS off_topic,
       count(s.rank) FILTER (WHERE s.rank <= p.upto AND s.label = 'answerable' AND s.hits_hold_answer) AS held,
       count(s.rank) FILTER (WHERE s.rank <= p.upto AND s.label = 'answerable' AND NOT s.hits_hold_answer) AS missed,
       count(s.rank) FILTER (WHERE s.rank <= p.upto AND s.label = 'answerable' AND s.hits_hold_answer IS NULL)
           AS unknown
FROM prefix p JOIN s ON s.frame_id = p.frame_id AND s.stratum = p.stratum
GROUP BY p.frame_id, p.stratum, p.sampled, p.labels
"""

_LATE = """
SELECT f.frame_id, count(q.line_key)
FROM review_frames f
JOIN traffic_queries q ON q.run_id = f.run_id AND q.strategy = f.strategy AND q.retriever = f.retriever
                      AND q.deployment = f.deployment AND q.asked_at >= f.lines_from AND q.asked_at < f.period_end
JOIN traffic_texts t ON t.run_id = q.run_id AND t.strategy = q.strategy AND t.retriever = q.retriever
                    AND t.text_hash = q.text_hash AND t.failure IS NULL
LEFT JOIN review_frame_imports fi ON fi.frame_id = f.frame_id AND fi.import_id = q.import_id
WHERE f.deployment = ? AND f.version = ? AND fi.import_id IS NULL
GROUP BY f.frame_id
"""


def _counts(
    store: Store, deployment: str, version: int
) -> tuple[dict[tuple[str, str], tuple[int, ...]], dict[str, int]]:
    with store.read() as con:
        counted = con.execute(_COUNTS, [deployment, int(version)]).fetchall()
        late = con.execute(_LATE, [deployment, int(version)]).fetchall()
    return {(str(r[0]), str(r[1])): tuple(int(x) for x in r[2:]) for r in counted}, {str(f): int(n) for f, n in late}


def _stratum(frame: ReviewFrame, stratum: str, counted: dict[tuple[str, str], tuple[int, ...]]) -> StratumCounts:
    sampled, labels, labelled, off, held, missed, unknown = counted.get((frame.frame_id, stratum), (0,) * 7)
    return StratumCounts(frame.lines_of(stratum), sampled, labelled, off, held, missed, unknown, labels)


def version_samples(store: Store, deployment: str, version: int, *, now: datetime | None = None) -> list[PeriodSample]:
    """Every review period of a deployment version that has begun by ``now`` (default: now),
    oldest first, with its frame's strata when it has one (see the module docstring). Reads only:
    a period that has ended without a frame is ``drawn`` False (``traffic sample`` or the review
    reads draw it)."""
    span = version_span(store, deployment, version)
    at = now if now is not None else utc_now()
    drawn = frames(store, deployment, span.version)
    counted, late = _counts(store, deployment, span.version) if drawn else ({}, {})
    out = []
    for p in review_periods(span, at):
        f = drawn.get(p.start)
        if f is None:
            out.append(PeriodSample(p.index, p.start, p.end, False, EMPTY, EMPTY, None, 0, p.ended(at)))
            continue
        out.append(
            PeriodSample(
                p.index,
                p.start,
                p.end,
                True,
                _stratum(f, "answered", counted),
                _stratum(f, "refused", counted),
                f.reason,
                late.get(f.frame_id, 0),
                True,
                f.frame_id,
                f.drawn_at,
            )
        )
    return out


# --- the next lines to label ------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ReviewHit:
    """One of a line's top 4 hits: its chunk, where it is (``locator``: ``#char=from,to``), its
    words, the value the gate reads and whether the gate kept it at the deployed t."""

    rank: int
    chunk_id: int
    doc_id: str | None
    section: str | None
    locator: str | None
    content: str | None
    value: float | None
    kept: bool

    def to_json(self) -> dict[str, Any]:
        return {
            "rank": self.rank,
            "chunk_id": self.chunk_id,
            "doc_id": self.doc_id,
            "section": self.section,
            "locator": self.locator,
            "content": self.content,
            "value": self.value,
            "kept": self.kept,
        }


@dataclass(frozen=True, slots=True)
class ReviewLine:
    """A sampled line waiting for a label: ``role`` ``first`` (no label yet) or ``second`` (an
    offer to a second person, after another author's first label)."""

    line_id: str
    frame_id: str
    stratum: str
    rank: int
    role: str
    period_start: datetime
    period_end: datetime
    inclusion_probability: float
    query: str
    asked_at: datetime
    gate_value: float | None
    threshold: float
    keep_rule: str
    hits: list[ReviewHit] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return {
            "line_id": self.line_id,
            "query": self.query,
            "stratum": self.stratum,
            "inclusion_probability": self.inclusion_probability,
            "period": f"{self.period_start:%Y-%m-%d}",
            "period_end": f"{self.period_end:%Y-%m-%dT%H:%M:%SZ}",
            "rank": self.rank,
            "role": self.role,
            "asked_at": f"{self.asked_at:%Y-%m-%dT%H:%M:%S.%fZ}",
            "gate_value": self.gate_value,
            "threshold": self.threshold,
            "keep_rule": self.keep_rule,
            "hits": [h.to_json() for h in self.hits],
        }


_NEXT = """
SELECT s.frame_id, s.stratum, s.rank, f.period_start, f.period_end, q.asked_at, t.text, t.gate_value, q.text_hash,
       (SELECT count(*) FROM review_sample n WHERE n.frame_id = s.frame_id AND n.stratum = s.stratum) AS sampled,
       CASE s.stratum WHEN 'answered' THEN f.answered_lines ELSE f.refused_lines END AS stratum_lines,
       f.threshold, f.run_id, f.strategy, f.retriever
FROM review_sample s
JOIN review_frames f ON f.frame_id = s.frame_id
JOIN traffic_queries q ON q.run_id = s.run_id AND q.strategy = s.strategy AND q.retriever = s.retriever
                      AND q.deployment = s.deployment AND q.line_key = s.line_key AND q.occurrence = s.occurrence
JOIN traffic_texts t ON t.run_id = q.run_id AND t.strategy = q.strategy AND t.retriever = q.retriever
                    AND t.text_hash = q.text_hash
LEFT JOIN review_labels a ON a.frame_id = s.frame_id AND a.stratum = s.stratum AND a.rank = s.rank AND a.role = 'first'
LEFT JOIN review_labels b ON b.frame_id = s.frame_id AND b.stratum = s.stratum AND b.rank = s.rank
                          AND b.role = 'second'
WHERE f.deployment = ? AND f.version = ? {period} AND {which}
  AND NOT list_contains(?::VARCHAR[], s.frame_id || '-' || left(s.stratum, 1) || s.rank::VARCHAR)
ORDER BY f.period_start, s.rank, s.stratum
LIMIT ?
"""
_FIRST = "a.label IS NULL"
_SECOND = "s.second AND a.label IS NOT NULL AND b.label IS NULL AND a.author <> ?"


def next_lines(
    store: Store,
    deployment: str,
    version: int,
    period_start: datetime | None,
    limit: int,
    author: str | None,
    *,
    exclude: tuple[str, ...] = (),
) -> list[ReviewLine]:
    """The next sampled lines of a deployment version to label (of the period starting at
    ``period_start`` only, when given), at most ``limit``: first the lines without a first label,
    by period and rank (the two strata in turn), so that each stratum's labelled prefix grows;
    then, for ``author``, the lines offered to a second person whose first label is another
    author's. ``exclude``: line ids to leave out (lines skipped on the screen). Reads only."""
    span = version_span(store, deployment, version)
    got: list[tuple[str, tuple[Any, ...]]] = []
    period = "AND f.period_start = ?" if period_start is not None else ""
    for role, which in (("first", _FIRST), ("second", _SECOND)):
        left = int(limit) - len(got)
        if left <= 0 or (role == "second" and author is None):
            break
        params: list[Any] = [deployment, span.version]
        params += [period_start] if period_start is not None else []
        params += [author] if role == "second" else []
        params += [list(exclude), left]
        with store.read() as con:
            found = con.execute(_NEXT.format(period=period, which=which), params).fetchall()
        got += [(role, r) for r in found]
    if not got:
        return []
    ax = info(store, span.run_id, span.configuration.strategy, span.configuration.retriever).axis
    hits = _hits(store, span, {str(r[8]) for _, r in got}, ax.column, ax.higher_is_closer)
    out = []
    for role, r in got:
        frame_id, stratum, rank = str(r[0]), str(r[1]), int(r[2])
        value = None if r[7] is None or r[7] != r[7] else float(r[7])
        out.append(
            ReviewLine(
                line_id(frame_id, stratum, rank),
                frame_id,
                stratum,
                rank,
                role,
                r[3],
                r[4],
                int(r[9]) / int(r[10]) if int(r[10]) else 1.0,
                str(r[6]),
                r[5],
                value,
                float(r[11]),
                ax.keep_rule,
                [
                    ReviewHit(h[0], h[1], h[2], h[3], h[4], h[5], h[6], _kept(h[6], float(r[11]), ax.higher_is_closer))
                    for h in hits.get(str(r[8]), [])
                ],
            )
        )
    return out


def _kept(value: float | None, threshold: float, higher_is_closer: bool) -> bool:
    import numpy as np

    return value is not None and not bool(refused(np.array([value]), threshold, higher_is_closer)[0])


def _hits(
    store: Store, span: VersionSpan, hashes: set[str], column: str, higher_is_closer: bool
) -> dict[str, list[tuple[Any, ...]]]:
    """The top 4 hits of each text of ``hashes`` (rank, chunk_id, doc_id, section, locator,
    content, value), by text hash."""
    value = "h.score" if column == "score" else "h.distance"
    with store.read() as con:
        found = con.execute(
            f"""
            SELECT h.text_hash, h.rank, h.chunk_id, c.doc_id, c.section, c.start, c."end", c.content, {value}
            FROM traffic_hits h
            LEFT JOIN chunks c ON c.run_id = h.run_id AND c.strategy = h.strategy AND c.chunk_id = h.chunk_id
            WHERE h.run_id = ? AND h.strategy = ? AND h.retriever = ? AND h.rank <= ?
              AND list_contains(?::VARCHAR[], h.text_hash)
            ORDER BY h.text_hash, h.rank
            """,
            [span.run_id, span.configuration.strategy, span.configuration.retriever, _TOP, sorted(hashes)],
        ).fetchall()
    out: dict[str, list[tuple[Any, ...]]] = {}
    for h, rank, chunk, doc, section, start, end, content, v in found:
        where = locator(int(start), int(end)) if start is not None and end is not None and end >= start else None
        number = None if v is None or v != v else float(v)
        out.setdefault(str(h), []).append((int(rank), int(chunk), doc, section, where, content, number))
    return out


# --- agreement ----------------------------------------------------------------------------------------------


def agreement(store: Store, deployment: str, version: int) -> tuple[int, float | None]:
    """The lines of a deployment version that hold a first and a second label: how many
    (``pairs``), and Cohen's kappa of their labels (``off-topic`` / ``answerable``;
    :func:`evalcore.measures.agreement.cohens_kappa`; None when it is not defined)."""
    with store.read() as con:
        got = con.execute(
            "SELECT a.label, b.label FROM review_labels a "
            "JOIN review_labels b ON b.frame_id = a.frame_id AND b.stratum = a.stratum AND b.rank = a.rank "
            "AND b.role = 'second' JOIN review_frames f ON f.frame_id = a.frame_id "
            "WHERE a.role = 'first' AND f.deployment = ? AND f.version = ?",
            [deployment, int(version)],
        ).fetchall()
    first = [str(r[0]) for r in got]
    second = [str(r[1]) for r in got]
    return len(got), cohens_kappa(first, second)
