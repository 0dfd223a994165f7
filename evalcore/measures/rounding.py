"""Bounds and thresholds in words, rounded only on their safe side.

A bound is a promise: "t <= 0.113 keeps bluffs <= 5%" must hold for t = 0.113 itself, so
a bound is never shown rounded to the nearest value. The side is set by the comparison the
words make:

- an upper bound (the claim holds for ``t <= x`` or ``t < x``, e.g. the bluff bound on a
  distance axis) is rounded **down**;
- a lower bound (the claim holds for ``t > x`` or ``t >= x``, e.g. the lost bound on a
  distance axis) is rounded **up**.

The shown number is the nearest one with that many decimals when it reads back as a float
on the safe side of the bound (0.3 stays 0.300), else the bound's exact decimal value
(:class:`decimal.Decimal`) rounded down or up, which reads back on the safe side too
(rounding to the nearest float keeps the order). A bound shown beside a threshold
(``against``) gets as many decimals as it takes for the shown numbers to compare as the
exact ones do; at worst it is shown as the bound's own shortest decimal, which reads back
as exactly the bound.

A threshold (a value the gate uses, not a promise) is shown as the number it is
(:func:`threshold_text`): three decimals when they are exact, else the shortest decimal that
reads back as it. Rates a claim promises (alpha, beta, the confidence) are shown without
rounding (:func:`rate_text`: 2.5%, not 2%).
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from decimal import ROUND_CEILING, ROUND_FLOOR, ROUND_HALF_EVEN, Context, Decimal, localcontext

DIGITS = 3  #: decimals of a bound or threshold in words (the Threshold slider's step is 0.001)
MAX_DIGITS = 17  #: beyond this, a bound is shown as its own shortest decimal
UPPER = ("<=", "<")  #: comparisons whose bound is an upper bound: rounded down
LOWER = (">", ">=")  #: comparisons whose bound is a lower bound: rounded up
_WIDE = Context(prec=1200)  # exact for every float's decimal expansion


def _holds(t: float | Decimal, op: str, bound: float | Decimal) -> bool:
    if op == "<=":
        return t <= bound
    if op == "<":
        return t < bound
    if op == ">":
        return t > bound
    if op == ">=":
        return t >= bound
    raise ValueError(f"a comparison is one of <=, <, >, >=; got {op!r}")


def _plain(value: Decimal) -> str:
    text = format(value, "f")
    return text[1:] if text.startswith("-") and not value else text  # no "-0.000"


def safe_decimal(value: float, op: str, digits: int = DIGITS) -> Decimal:
    """``value`` with ``digits`` decimals, read back as a float on the safe side of ``op`` (at
    or below ``value`` for ``<=`` and ``<``, at or above it for ``>`` and ``>=``): the nearest
    such decimal when it does, else rounded down (up). ValueError for NaN or an infinity."""
    if not math.isfinite(value):
        raise ValueError(f"a bound must be a finite number, got {value!r}")
    _holds(0.0, op, 0.0)  # checks op
    upper = op in UPPER
    with localcontext(_WIDE):
        step = Decimal(1).scaleb(-digits)
        exact = Decimal(value)
        nearest = exact.quantize(step, rounding=ROUND_HALF_EVEN)
        if (float(nearest) <= value) if upper else (float(nearest) >= value):
            return nearest
        return exact.quantize(step, rounding=ROUND_FLOOR if upper else ROUND_CEILING)


def threshold_text(t: float, digits: int = DIGITS) -> str:
    """A threshold as the number it is: ``0.113`` when ``digits`` decimals are exactly ``t``,
    else the shortest decimal that reads back as ``t`` (``0.11371``); ``inf`` / ``-inf`` as such."""
    if not math.isfinite(t):
        return str(t)
    short = f"{t:.{digits}f}"
    if float(short) == t:
        return short
    text = repr(float(t))
    return _plain(Decimal(text)) if "e" in text else text


def _consistent(t: float, op: str, value: float, shown: Decimal) -> bool:
    """Whether ``t`` compares with the shown bound as with the exact one: as floats, and as the
    decimals a reader sees (``threshold_text(t)`` against ``shown``)."""
    truth = _holds(t, op, value)
    with localcontext(_WIDE):
        return _holds(t, op, float(shown)) == truth and _holds(Decimal(threshold_text(t)), op, shown) == truth


def bound_text(value: float, op: str, *, against: Iterable[float] = (), digits: int = DIGITS) -> str:
    """The bound ``value`` of a claim that holds for ``t op value``, in words, rounded on its
    safe side (:func:`safe_decimal`) to ``digits`` decimals, or more where a threshold of
    ``against`` would otherwise compare with the shown bound differently than with the exact
    one; at worst the bound's own shortest decimal (:func:`threshold_text`)."""
    thresholds = [float(t) for t in against if t is not None and math.isfinite(float(t))]
    for d in range(digits, MAX_DIGITS + 1):
        shown = safe_decimal(value, op, d)
        if all(_consistent(t, op, value, shown) for t in thresholds):
            return _plain(shown)
    return threshold_text(value)


def region_text(op: str, value: float, *, against: Iterable[float] = ()) -> str:
    """``t <= 0.113``: where a claim holds, its bound rounded on the safe side."""
    return f"t {op} {bound_text(value, op, against=against)}"


def grid_at_or_below(value: float, digits: int = DIGITS) -> float:
    """The largest multiple of ``10**-digits`` at or below ``value``, as a float (also at or
    below ``value``: rounding to the nearest float keeps the order)."""
    return float(safe_decimal(value, "<=", digits))


def grid_above(value: float, digits: int = DIGITS) -> float:
    """The smallest multiple of ``10**-digits`` whose float lies strictly above ``value``."""
    with localcontext(_WIDE):
        step = Decimal(1).scaleb(-digits)
        d = safe_decimal(value, "<=", digits) + step
        while float(d) <= value:
            d += step
        return float(d)


def rate_bound_text(rate: float, digits: int = 1) -> str:
    """An upper bound on a rate as a percentage with ``digits`` decimals, rounded up: the
    smallest such percentage at or above the exact value (``1 - 0.05 ** (1 / 41)`` = 7.05...%
    reads ``7.1%``, never ``7.0%``), so that the shown bound read back still holds."""
    exact = Decimal(repr(float(rate))) * 100  # the float's shortest decimal: 0.05 is 5%, not 5.000...03%
    shown = exact.quantize(Decimal(1).scaleb(-digits), rounding=ROUND_CEILING)
    return f"{shown}%"


def rate_text(rate: float) -> str:
    """A rate a claim promises, as a percentage without rounding: ``5%``, ``2.5%``, ``97.5%``."""
    return f"{100 * rate:.6g}%"


def rate_lower_text(rate: float, digits: int = 1) -> str:
    """A lower bound on a rate as a percentage with ``digits`` decimals, rounded down: the
    largest such percentage at or below the exact value (0.1049 reads ``10.4%``), so that the
    shown bound read back still holds (:func:`rate_bound_text` is its upper-bound twin)."""
    exact = Decimal(repr(float(rate))) * 100
    shown = exact.quantize(Decimal(1).scaleb(-digits), rounding=ROUND_FLOOR)
    return f"{shown}%"
