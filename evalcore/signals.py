"""SIGTERM and SIGINT: whenever one comes, what is running ends with the signal named.

Inside :func:`handled`, the first SIGTERM or SIGINT raises :class:`~evalcore.errors.Interrupted`
where the program is (the runner then marks its run ``failed``, naming the signal); later
signals are only noted, so that this clean-up is not itself interrupted. Inside
:func:`hold` (the final write of a run, one transaction) a signal is only noted and
:func:`check` raises it at the next safe point, so the write is rolled back as a whole
rather than cut inside DuckDB. Handlers can only be installed in the main thread;
elsewhere :func:`handled` changes nothing.
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager

from evalcore.errors import Interrupted

SIGNALS = (signal.SIGTERM, signal.SIGINT)

_depth = 0
_holding = 0
_received: int | None = None


def _handler(signum: int, frame: object) -> None:
    global _received
    if _received is not None:
        return  # already stopping: let the clean-up finish
    _received = signum
    if not _holding:
        raise Interrupted(signum)


@contextmanager
def handled() -> Iterator[None]:
    """Turn SIGTERM and SIGINT into :class:`Interrupted` while inside (nestable)."""
    global _depth, _received
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    old = None
    if _depth == 0:
        old = {s: signal.signal(s, _handler) for s in SIGNALS}
        _received = None
    _depth += 1
    try:
        yield
    finally:
        _depth -= 1
        if old is not None:
            for s, handler in old.items():
                signal.signal(s, handler)
            _received = None


@contextmanager
def hold() -> Iterator[None]:
    """Only note a signal while inside; :func:`check` raises it."""
    global _holding
    _holding += 1
    try:
        yield
    finally:
        _holding -= 1


def received() -> int | None:
    """The signal received inside :func:`handled`, if any."""
    return _received


def raise_if_signalled() -> None:
    """Raise :class:`Interrupted` when a signal was received."""
    if _received is not None:
        raise Interrupted(_received)
