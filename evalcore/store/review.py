"""The review sample's tables (migration 0016): ``review_frames``, ``review_frame_imports``,
``review_sample`` and ``review_labels``. This module is their one writer;
:mod:`evalcore.read.traffic.review` reads them.

A frame is drawn in one transaction (:func:`draw_frame`): the time it is drawn, the traffic
imports no longer running then, the frame's lines (those of the period's window stored by those
imports), the sample chosen from them (by a function of :mod:`evalcore.traffic.sampling`, which
orders each stratum) and the frame's row land together or not at all. Because the store lets one
writer in at a time, an import that finishes while a frame is drawn finishes either before the
frame reads the imports (its lines are in the frame) or after the frame is written (they are
not): the list of imports recorded is what fixes the frame's membership for good.
"""

from __future__ import annotations

import secrets
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any

from evalcore.store.basics import first_row, now

if TYPE_CHECKING:
    import duckdb
    import numpy as np
    import pandas as pd

    from evalcore.store.connection import Connection

STRATA = ("answered", "refused")
ROLES = ("first", "second")

#: the lines of a frame's window (``WINDOW_FROM``, joins, ``WINDOW_WHERE``): this deployment's
#: lines of the frame's configuration asked in ``[lines_from, period_end)`` whose text was scored
#: (an endpoint that could not answer is no line of any period, as in
#: :mod:`evalcore.read.traffic.periods`); parameters run_id, strategy, retriever, deployment,
#: lines_from, period_end
WINDOW_FROM = "FROM traffic_queries q JOIN traffic_texts t USING (run_id, strategy, retriever, text_hash) "
WINDOW_WHERE = (
    "WHERE q.run_id = ? AND q.strategy = ? AND q.retriever = ? AND q.deployment = ? "
    "AND q.asked_at >= ? AND q.asked_at < ? AND t.failure IS NULL"
)


@dataclass(frozen=True, slots=True)
class FrameSpec:
    """What a frame is drawn for: a deployment version's review period (``period_index``
    1-based, ``[period_start, period_end)`` naive UTC, its lines asked from ``lines_from``) and
    the decision deployed then."""

    deployment: str
    version: int
    period_index: int
    period_start: datetime
    period_end: datetime
    lines_from: datetime
    decision_id: str
    run_id: str
    strategy: str
    retriever: str
    threshold: float

    def window(self) -> list[Any]:
        """The parameters of :data:`WINDOW_WHERE`."""
        return [
            self.run_id,
            self.strategy,
            self.retriever,
            self.deployment,
            self.lines_from,
            self.period_end,
        ]


@dataclass(frozen=True, slots=True)
class FrameLines:
    """A frame's lines as numpy arrays, one entry a line: ``line_key`` (int64), ``occurrence``
    (int64) and ``gate_value`` (float64, NaN for a text without hits)."""

    line_key: np.ndarray
    occurrence: np.ndarray
    gate_value: np.ndarray


@dataclass(frozen=True, slots=True)
class FrameDraw:
    """What a draw writes: the seed, the strata's sizes, why a size was raised, and the sampled
    lines (``rows``: stratum, rank, line_key, occurrence, second)."""

    seed: int
    second_share: float
    lines: tuple[int, int]  #: (N_A, N_R)
    asked: tuple[int, int]  #: the sizes asked for, before any raise
    size: tuple[int, int]  #: the sizes taken
    reason: str | None
    rows: pd.DataFrame


def new_seed() -> int:
    """A random 64-bit seed (from the operating system's generator)."""
    return secrets.randbits(64)


def _lines(con: duckdb.DuckDBPyConnection, spec: FrameSpec, frame_id: str | None) -> FrameLines:
    """The frame's lines: with ``frame_id``, those its recorded imports stored; without, those of
    every import no longer running (a frame being drawn)."""
    import numpy as np

    if frame_id is None:
        member = "JOIN traffic_imports i ON i.import_id = q.import_id AND i.status <> 'running' "
        extra: list[Any] = []
    else:
        member = "JOIN review_frame_imports fi ON fi.frame_id = ? AND fi.import_id = q.import_id "
        extra = [frame_id]
    got = con.execute(
        "SELECT q.line_key, q.occurrence, coalesce(t.gate_value, 'NaN'::DOUBLE) AS gate_value "
        + WINDOW_FROM
        + member
        + WINDOW_WHERE,
        [*extra, *spec.window()],
    ).fetchnumpy()
    return FrameLines(
        np.asarray(got["line_key"], dtype=np.int64),
        np.asarray(got["occurrence"], dtype=np.int64),
        np.asarray(got["gate_value"], dtype=np.float64),
    )


def _insert(con: duckdb.DuckDBPyConnection, table: str, frame: pd.DataFrame) -> None:
    if frame.empty:
        return
    con.register("_review_rows", frame)
    cols = ", ".join(f'"{c}"' for c in frame.columns)
    con.execute(f"INSERT INTO {table} ({cols}) SELECT {cols} FROM _review_rows")
    con.unregister("_review_rows")


def _sample_rows(frame_id: str, spec: FrameSpec, rows: pd.DataFrame) -> pd.DataFrame:
    out = rows[["stratum", "rank", "line_key", "occurrence", "second"]].copy()
    out.insert(0, "frame_id", frame_id)
    for name, value in (
        ("run_id", spec.run_id),
        ("strategy", spec.strategy),
        ("retriever", spec.retriever),
        ("deployment", spec.deployment),
    ):
        out[name] = value
    return out


def draw_frame(
    store: Connection, spec: FrameSpec, choose: Callable[[FrameLines], FrameDraw], drawn_by: str | None
) -> str | None:
    """Draw the frame of ``spec`` in one transaction (see the module docstring): ``choose`` gets
    its lines and returns the sample. Returns the new frame's id; None when the period's frame
    was drawn already (nothing written)."""
    import pandas as pd

    with store.transaction() as con:
        there = first_row(
            con,
            "SELECT frame_id FROM review_frames WHERE deployment = ? AND version = ? AND period_start = ?",
            [spec.deployment, spec.version, spec.period_start],
        )
        if there is not None:
            return None
        drawn_at = now()
        imports = con.execute(
            "SELECT DISTINCT q.import_id FROM traffic_queries q "
            "JOIN traffic_imports i ON i.import_id = q.import_id AND i.status <> 'running' "
            "WHERE q.run_id = ? AND q.strategy = ? AND q.retriever = ? AND q.deployment = ? "
            "AND q.asked_at >= ? AND q.asked_at < ? ORDER BY 1",
            spec.window(),
        ).fetchall()
        drawn = choose(_lines(con, spec, None))
        frame_id = secrets.token_hex(6)
        con.execute(
            "INSERT INTO review_frames (frame_id, deployment, version, period_index, period_start, period_end, "
            "lines_from, decision_id, run_id, strategy, retriever, threshold, seed, second_share, drawn_at, drawn_by, "
            "answered_lines, refused_lines, answered_asked, refused_asked, answered_size, refused_size, reason) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            [
                frame_id,
                spec.deployment,
                spec.version,
                spec.period_index,
                spec.period_start,
                spec.period_end,
                spec.lines_from,
                spec.decision_id,
                spec.run_id,
                spec.strategy,
                spec.retriever,
                float(spec.threshold),
                int(drawn.seed),
                float(drawn.second_share),
                drawn_at,
                drawn_by,
                *drawn.lines,
                *drawn.asked,
                *drawn.size,
                drawn.reason,
            ],
        )
        _insert(con, "review_frame_imports", pd.DataFrame({"frame_id": frame_id, "import_id": [r[0] for r in imports]}))
        _insert(con, "review_sample", _sample_rows(frame_id, spec, drawn.rows))
    return frame_id


def extend_frame(
    store: Connection,
    frame_id: str,
    spec: FrameSpec,
    sizes: tuple[int, int],
    asked: tuple[int, int],
    more: Callable[[FrameLines, pd.DataFrame], pd.DataFrame],
) -> int:
    """Take more lines into frame ``frame_id``'s sample, in one transaction: ``more`` gets the
    frame's lines (its recorded imports') and its sampled rows (stratum, rank, line_key,
    occurrence) and returns the rows to add (the next ranks of each stratum's order). The
    frame's sizes become ``sizes`` (asked: ``asked``). Returns how many lines were added."""
    with store.transaction() as con:
        held = con.execute(
            "SELECT stratum, rank, line_key, occurrence FROM review_sample WHERE frame_id = ? ORDER BY stratum, rank",
            [frame_id],
        ).df()
        added = more(_lines(con, spec, frame_id), held)
        _insert(con, "review_sample", _sample_rows(frame_id, spec, added))
        con.execute(
            "UPDATE review_frames SET answered_size = ?, refused_size = ?, answered_asked = ?, refused_asked = ? "
            "WHERE frame_id = ?",
            [*sizes, *asked, frame_id],
        )
    return len(added)


# --- labels --------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class LineRef:
    """A sampled line: its frame, stratum and rank."""

    frame_id: str
    stratum: str
    rank: int


@dataclass(frozen=True, slots=True)
class Held:
    """A label as stored: its value, whether the hits hold the answer, its author."""

    label: str
    hits_hold_answer: bool | None
    author: str


@dataclass(frozen=True, slots=True)
class LineState:
    """What the store holds of a sampled line: its deployment, whether it is offered to a second
    person, and its first and second labels (None: none yet)."""

    deployment: str
    second: bool
    first: Held | None
    second_label: Held | None


@dataclass(frozen=True, slots=True)
class LabelWrite:
    """One label to store: ``insert`` a new one, or replace the value of the one there."""

    ref: LineRef
    role: str
    label: str
    hits_hold_answer: bool | None
    author: str
    insert: bool


def write_labels(
    store: Connection,
    refs: Sequence[LineRef],
    decide: Callable[[dict[LineRef, LineState]], list[LabelWrite]],
) -> None:
    """Store labels in one transaction: the state of each line of ``refs`` that the sample holds
    is read, ``decide`` returns the writes (its checks run on what the transaction sees, so two
    labels at once cannot both be first), and they land together. A line ``refs`` names that is
    not sampled is absent from what ``decide`` gets."""
    import pandas as pd

    wanted = pd.DataFrame(
        {"frame_id": [r.frame_id for r in refs], "stratum": [r.stratum for r in refs], "rank": [r.rank for r in refs]}
    ).astype({"frame_id": "object", "stratum": "object", "rank": "int64"})
    with store.transaction() as con:
        con.register("_wanted", wanted)
        rows = con.execute(
            "SELECT s.frame_id, s.stratum, s.rank, f.deployment, s.second, "
            "a.label, a.hits_hold_answer, a.author, b.label, b.hits_hold_answer, b.author "
            "FROM (SELECT DISTINCT * FROM _wanted) w "
            "JOIN review_sample s ON s.frame_id = w.frame_id AND s.stratum = w.stratum AND s.rank = w.rank "
            "JOIN review_frames f ON f.frame_id = s.frame_id "
            "LEFT JOIN review_labels a ON a.frame_id = s.frame_id AND a.stratum = s.stratum AND a.rank = s.rank "
            "AND a.role = 'first' "
            "LEFT JOIN review_labels b ON b.frame_id = s.frame_id AND b.stratum = s.stratum AND b.rank = s.rank "
            "AND b.role = 'second'"
        ).fetchall()
        con.unregister("_wanted")
        state = {
            LineRef(str(r[0]), str(r[1]), int(r[2])): LineState(
                str(r[3]),
                bool(r[4]),
                None if r[5] is None else Held(str(r[5]), r[6], str(r[7])),
                None if r[8] is None else Held(str(r[8]), r[9], str(r[10])),
            )
            for r in rows
        }
        writes = decide(state)
        at = now()
        frame = pd.DataFrame(
            {
                "frame_id": [w.ref.frame_id for w in writes],
                "stratum": [w.ref.stratum for w in writes],
                "rank": [w.ref.rank for w in writes],
                "role": [w.role for w in writes],
                "label": [w.label for w in writes],
                "hits_hold_answer": pd.array([w.hits_hold_answer for w in writes], dtype="boolean"),
                "author": [w.author for w in writes],
                "labelled_at": [at] * len(writes),
            }
        ).astype({"frame_id": "object", "stratum": "object", "rank": "int64", "role": "object", "label": "object"})
        inserts = frame[[w.insert for w in writes]] if writes else frame
        updates = frame[[not w.insert for w in writes]] if writes else frame
        _insert(con, "review_labels", inserts)
        if not updates.empty:
            con.register("_review_updates", updates)
            con.execute(
                "UPDATE review_labels SET label = u.label, hits_hold_answer = u.hits_hold_answer, "
                "labelled_at = u.labelled_at FROM _review_updates u WHERE review_labels.frame_id = u.frame_id "
                "AND review_labels.stratum = u.stratum AND review_labels.rank = u.rank AND review_labels.role = u.role"
            )
            con.unregister("_review_updates")
