"""JSON text from users (question files, rankings, run files, endpoint answers), read safely.

``json.loads`` raises RecursionError on deeply nested input (``[[[[...]]]]`` 50,000 levels);
:func:`loads` turns that into the same ``json.JSONDecodeError`` every reader already names
with its file and line, so nesting is a malformed input, never a crash.
"""

from __future__ import annotations

import json
from typing import Any

DEEP = "nested too deeply (over about 1,000 levels)"


class DuplicateKey(ValueError):
    """One JSON object names ``key`` twice (json.loads would keep the last value silently)."""

    def __init__(self, key: str) -> None:
        super().__init__(key)
        self.key = key


def _unique(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise DuplicateKey(key)
        out[key] = value
    return out


def loads(text: str | bytes, *, unique_keys: bool = False) -> Any:
    """``json.loads(text)``; JSONDecodeError (not RecursionError) for nesting too deep;
    with ``unique_keys``, DuplicateKey for an object that names a key twice."""
    try:
        return json.loads(text, object_pairs_hook=_unique) if unique_keys else json.loads(text)
    except RecursionError:
        raise json.JSONDecodeError(DEEP, text if isinstance(text, str) else "", 0) from None
