"""Hooks for the reliability tests, inert unless their environment variable is set.

- ``EVALCORE_TEST_PAUSE="STAGE=MARKER"``: when a run reaches the stage named STAGE (a
  :class:`~evalcore.progress.Stage` name such as ``"E: embedding"``, or ``"writing
  results"``, which pauses inside the final write's transaction, ``"traffic: batch
  written"``, after each batch a traffic import has written, or ``"question set: versions
  read"``, after an import has read a set's versions and before it writes), it writes the file
  MARKER and waits there for up to 60 s, so that a test can signal the process at that
  exact moment, or watch the stage from outside and remove MARKER to let the run go on.
- ``EVALCORE_TEST_EMBEDDER="module:factory"``: the embedder is ``factory()`` from that
  module instead of the real model (for tests where the model is not what is tested).
"""

from __future__ import annotations

import importlib
import os
import time
from pathlib import Path
from typing import TYPE_CHECKING

from evalcore import signals

if TYPE_CHECKING:
    from collections.abc import Callable

    from evalcore.embedding.embedder import Embedder

PAUSE_ENV = "EVALCORE_TEST_PAUSE"
EMBEDDER_ENV = "EVALCORE_TEST_EMBEDDER"
PAUSE_SECONDS = 60.0


def pause(stage: str) -> None:
    """Wait at ``stage`` when ``$EVALCORE_TEST_PAUSE`` names it (see the module doc)."""
    spec = os.environ.get(PAUSE_ENV)
    if not spec or spec.split("=", 1)[0] != stage:
        return
    marker = Path(spec.split("=", 1)[1])
    marker.write_text(f"{os.getpid()}\n")
    deadline = time.monotonic() + PAUSE_SECONDS
    while time.monotonic() < deadline and signals.received() is None and marker.exists():
        time.sleep(0.02)


def embedder() -> Embedder | None:
    """``factory()`` named by ``$EVALCORE_TEST_EMBEDDER``, or None (the real model)."""
    spec = os.environ.get(EMBEDDER_ENV)
    if not spec:
        return None

    module, _, name = spec.partition(":")
    factory: Callable[[], Embedder] = getattr(importlib.import_module(module), name)
    return factory()
