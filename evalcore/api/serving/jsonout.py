"""Answers as JSON: the same values the CLI prints with ``--json`` (its ``json.dumps(...,
default=str)``), with what JSON cannot hold (NaN, infinity, a missing time) as ``null``."""

from __future__ import annotations

import json
import math
from typing import Any

from starlette.responses import JSONResponse


def _default(value: Any) -> Any:
    try:
        import pandas as pd

        if value is pd.NaT:
            return None
    except ImportError:  # pragma: no cover - pandas is a dependency
        pass
    if hasattr(value, "item") and callable(value.item):  # a numpy scalar
        return value.item()
    return str(value)


def _finite(value: Any) -> Any:
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_finite(v) for v in value]
    return value


def jsonable(value: Any) -> Any:
    """``value`` as plain JSON values, as the CLI's ``--json`` prints it."""
    return _finite(json.loads(json.dumps(value, default=_default)))


def answer(value: Any, status: int = 200, headers: dict[str, str] | None = None) -> JSONResponse:
    return JSONResponse(jsonable(value), status_code=status, headers=headers)
