"""Progress of a run: one scale from 0 to 1 and one protocol, for the CLI's bars and the
dashboard's jobs alike.

The runner announces each stage as a :class:`Stage` made by :class:`Scale` (its name, its
unit, how many items, and where it starts and ends on the run's 0..1 scale), then
advances it item by item. Every :class:`Progress` reads the same Stage: the CLI draws a
bar per stage, :class:`StoreProgress` writes the stage text with counts and the overall
fraction to the run's row, so a job's bar and a terminal's bars never disagree and no
one parses stage names to guess a fraction.
"""

from __future__ import annotations

import logging
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Never, Protocol

from tqdm import tqdm

from evalcore.errors import EvalcoreError
from evalcore.store import Store as _Store

if TYPE_CHECKING:
    from evalcore.store import Store

log = logging.getLogger(__name__)

STORE_EVERY = 0.5  # seconds between two progress writes to the store within a stage
SPACING = 25  # a write within a stage waits at least this many times the last write's duration


@dataclass(frozen=True, slots=True)
class Stage:
    """One stage of a run: ``name`` (``"E: embedding"``), ``unit`` (``"chunks"``), ``total``
    items, and the run's overall progress when it starts and when it ends."""

    name: str
    unit: str
    total: int
    start: float
    end: float

    def fraction(self, done: int) -> float:
        """Overall progress of the run after ``done`` of ``total`` items."""
        within = min(max(done / self.total, 0.0), 1.0) if self.total else 1.0
        return self.start + (self.end - self.start) * within

    def text(self, done: int) -> str:
        """``"E: embedding 340/1120 chunks"``."""
        return f"{self.name} {done}/{self.total} {self.unit}".rstrip()


class Scale:
    """Where each stage of a run lies on 0..1: query embedding 0.02-0.05 (0 is the run's start);
    strategy i of n gets [0.05 + 0.9 i/n, 0.05 + 0.9 (i+1)/n], of which chunking takes the
    first 10 %, embedding the next 40 % and retrieval and scoring the last 50 %; writing the
    results 0.95-1."""

    QUERIES = (0.02, 0.05)
    STRATEGIES = (0.05, 0.95)
    WRITE = (0.95, 1.0)
    PARTS = {
        "chunking": (0.0, 0.1, "documents"),
        "embedding": (0.1, 0.5, "chunks"),
        "retrieval and scoring": (0.5, 1.0, "queries"),
    }

    def __init__(self, strategies: Sequence[str]) -> None:
        self.strategies = list(strategies)

    def query_embedding(self, total: int) -> Stage:
        return Stage("query embedding", "queries", total, *self.QUERIES)

    def strategy(self, strategy: str, part: str, total: int) -> Stage:
        """``part``: ``chunking``, ``embedding`` or ``retrieval and scoring``."""
        low, high = self.STRATEGIES
        span = (high - low) / len(self.strategies)
        base = low + span * self.strategies.index(strategy)
        a, b, unit = self.PARTS[part]
        return Stage(f"{strategy}: {part}", unit, total, base + a * span, base + b * span)

    def write(self, total: int) -> Stage:
        return Stage("writing results", "tables", total, *self.WRITE)


class Progress(Protocol):
    """Receives progress: one ``stage`` call per stage, then ``advance`` calls."""

    def stage(self, stage: Stage) -> None: ...

    def advance(self, n: int = 1) -> None: ...

    def close(self) -> None: ...


class SilentProgress:
    """Shows nothing."""

    def stage(self, stage: Stage) -> None:
        pass

    def advance(self, n: int = 1) -> None:
        pass

    def close(self) -> None:
        pass


class BarProgress:
    """One tqdm bar per stage on stderr (the CLI)."""

    def __init__(self, enabled: bool = True) -> None:
        self.enabled = enabled
        self.bar: tqdm[Never] | None = None  # a manual bar (no iterable), updated by count

    def stage(self, stage: Stage) -> None:
        self.close()
        if self.enabled:
            self.bar = tqdm(
                total=stage.total,
                desc=f"{stage.name:<34}",
                unit=f" {stage.unit}",
                file=sys.stderr,
                leave=True,
                dynamic_ncols=True,
                mininterval=0.2,
            )

    def advance(self, n: int = 1) -> None:
        if self.bar is not None:
            self.bar.update(n)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()
            self.bar = None


class StoreProgress:
    """Writes the stage text with counts and the overall fraction to the run's row: at each
    stage start, and at most every ``interval`` seconds while it runs. A stage's end is not
    written on its own: the next stage starts where it ended (the row shows that start at
    once), and the run's end sets the row complete. Best effort with a short lock timeout: a
    busy store delays a progress bar, never a run. A write opens the store file (tens of
    milliseconds), so writes within a stage are also kept at least :data:`SPACING` times the
    last write's duration apart: they take at most a few per cent of a run, however slow the
    disk. (Writing every stage's end too was close to half the writes of a small run, each
    followed within milliseconds by the next stage's start.)"""

    def __init__(self, store: Store, run_id: str, interval: float = STORE_EVERY) -> None:
        self.store = _Store(store.path, lock_timeout=2.0)
        self.run_id, self.interval = run_id, interval
        self.current: Stage | None = None
        self.done = 0
        self.writes = 0
        self._last = float("-inf")
        self._took = 0.0  # the last write's seconds

    def _write(self) -> None:
        if self.current is None:
            return
        self._last = time.monotonic()
        try:
            self.store.progress(self.run_id, self.current.text(self.done), self.current.fraction(self.done))
            self.writes += 1
        except EvalcoreError:
            log.debug("progress update failed", exc_info=True)
        self._took = time.monotonic() - self._last

    def stage(self, stage: Stage) -> None:
        self.current, self.done = stage, 0
        self._write()

    def advance(self, n: int = 1) -> None:
        self.done += n
        if time.monotonic() - self._last >= max(self.interval, SPACING * self._took):
            self._write()

    def close(self) -> None:
        pass


class Fanout:
    """Several Progress receivers as one."""

    def __init__(self, *receivers: Progress) -> None:
        self.receivers = receivers

    def stage(self, stage: Stage) -> None:
        for r in self.receivers:
            r.stage(stage)

    def advance(self, n: int = 1) -> None:
        for r in self.receivers:
            r.advance(n)

    def close(self) -> None:
        for r in self.receivers:
            r.close()
