"""How many threads work on a block's queries at once: ``$EVALCORE_THREADS`` (a leaf module,
read by the ranking engine and checked by a run before anything loads)."""

from __future__ import annotations

import os

from evalcore.errors import ConfigError


def retrieval_threads() -> int | None:
    """``$EVALCORE_THREADS``: threads that work on a block's queries at once (None when unset:
    the cores); ConfigError when set and not a positive whole number."""

    raw = os.environ.get("EVALCORE_THREADS", "").strip()
    if not raw:
        return None
    if not raw.isdecimal() or int(raw) < 1:
        raise ConfigError(f"EVALCORE_THREADS must be a positive whole number, got {raw!r}")
    return int(raw)
