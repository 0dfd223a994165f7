"""What the entry hands to the page it runs: the sidebar it drew (:class:`Frame`).

The entry (``evalcore_app/app.py``) draws the sidebar once per page view, before the page
script runs, and hands it over with :func:`hand`; a page takes it with :func:`context`
(``ctx = frame.context()``). Both run in the same script run (Streamlit runs the page inside
the entry's run, on the same thread), so the hand-over is a context variable, never session
state: nothing of it outlives the run.
"""

from __future__ import annotations

from contextvars import ContextVar
from dataclasses import dataclass

from evalcore.service.deployments import Deployment
from evalcore_app.ui.sidebar import Context, sidebar


@dataclass(frozen=True, slots=True)
class Frame:
    """The sidebar's selection, and the deployment the address named (``?deployment=`` on the
    Traffic screen; None elsewhere)."""

    context: Context
    deployment: Deployment | None = None


_FRAME: ContextVar[Frame | None] = ContextVar("evalcore_frame", default=None)


def hand(frame: Frame) -> None:
    """Give ``frame`` to the page about to run (the entry calls it)."""
    _FRAME.set(frame)


def current_frame() -> Frame:
    """The frame the entry handed over; a page run without the entry draws the sidebar itself."""
    frame = _FRAME.get()
    if frame is None:
        frame = Frame(sidebar())
        hand(frame)
    return frame


def context() -> Context:
    """The sidebar's selection for this page (see :func:`current`)."""
    return current_frame().context
