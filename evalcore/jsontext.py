"""JSON text from users (question files, rankings, run files, endpoint answers), read safely.

``json.loads`` raises RecursionError on deeply nested input (``[[[[...]]]]`` 50,000 levels);
:func:`loads` turns that into the same ``json.JSONDecodeError`` every reader already names
with its file and line, so nesting is a malformed input, never a crash.
"""

from __future__ import annotations

import json
from typing import Any

DEEP = "nested too deeply (over about 1,000 levels)"


def loads(text: str | bytes) -> Any:
    """``json.loads(text)``; JSONDecodeError (not RecursionError) for nesting too deep."""
    try:
        return json.loads(text)
    except RecursionError:
        raise json.JSONDecodeError(DEEP, text if isinstance(text, str) else "", 0) from None
