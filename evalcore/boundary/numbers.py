"""Numeric options: one parser per kind, one way of saying the range.

A command-line option arrives as text. :func:`bounded_float` and :func:`bounded_int` read
only plain decimal notation (``0.05``, ``.5``, ``5e-2``, ``-3``): no ``nan``, ``inf`` or
``infinity``, no hexadecimal (``0x1p-3``), no ``1_000``, no digits of other scripts, and
no number too large for a float (``1e400``). Whatever is refused, or lies outside the range,
gets the same one-line message naming the option and its range::

    --max-bluff-rate must be a number in (0, 1); got 'nan'

A range is written in interval notation: ``(0, 1)`` leaves both ends out, ``[0, 1]`` keeps
them, ``[1, inf)`` has no upper end. A number that parses but underflows to zero
(``1e-400``) is read as zero, and judged by the range like any zero.
"""

from __future__ import annotations

import math
import re

from evalcore.errors import ConfigError

_DECIMAL = re.compile(r"[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?")
_INTEGER = re.compile(r"[+-]?[0-9]+")
_MAX_TEXT = 100  #: longer text is refused before it is parsed (a number needs far less)


def _end(value: float) -> str:
    if math.isinf(value):
        return "inf" if value > 0 else "-inf"
    return f"{value:g}" if float(f"{value:g}") == value else repr(value)


def range_text(low: float, high: float, *, low_open: bool = False, high_open: bool = False) -> str:
    """``(0, 1)``, ``[0, 1]``, ``[1, inf)``: an infinite end is always open."""
    left = "(" if low_open or math.isinf(low) else "["
    right = ")" if high_open or math.isinf(high) else "]"
    return f"{left}{_end(low)}, {_end(high)}{right}"


def _refuse(text: object, option: str, kind: str, low: float, high: float, low_open: bool, high_open: bool) -> None:
    shown = str(text) if len(str(text)) <= 40 else str(text)[:40] + "..."
    raise ConfigError(
        f"{option} must be {kind} in {range_text(low, high, low_open=low_open, high_open=high_open)}; got {shown!r}"
    )


def _inside(value: float, low: float, high: float, low_open: bool, high_open: bool) -> bool:
    above = value > low if low_open else value >= low
    below = value < high if high_open else value <= high
    return above and below


def bounded_float(
    text: str, *, option: str, low: float, high: float, low_open: bool = False, high_open: bool = False
) -> float:
    """``text`` as a finite float in the range, else ConfigError: ``OPTION must be a number in
    RANGE; got 'TEXT'`` (see the module docstring for what is read)."""
    raw = text if isinstance(text, str) else str(text)
    candidate = raw.strip()
    if isinstance(text, bool) or len(candidate) > _MAX_TEXT or not _DECIMAL.fullmatch(candidate):
        _refuse(raw, option, "a number", low, high, low_open, high_open)
    value = float(candidate)
    if not math.isfinite(value) or not _inside(value, low, high, low_open, high_open):
        _refuse(raw, option, "a number", low, high, low_open, high_open)
    return value


def bounded_int(
    text: str, *, option: str, low: float, high: float, low_open: bool = False, high_open: bool = False
) -> int:
    """``text`` as an integer in the range, else ConfigError: ``OPTION must be an integer in
    RANGE; got 'TEXT'`` (plain decimal digits with an optional sign)."""
    raw = text if isinstance(text, str) else str(text)
    candidate = raw.strip()
    if isinstance(text, bool) or len(candidate) > _MAX_TEXT or not _INTEGER.fullmatch(candidate):
        _refuse(raw, option, "an integer", low, high, low_open, high_open)
    value = int(candidate)
    if not _inside(value, low, high, low_open, high_open):
        _refuse(raw, option, "an integer", low, high, low_open, high_open)
    return value
