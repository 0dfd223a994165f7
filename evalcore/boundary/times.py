"""One parser for every time a user gives: a log line's time, ``--before``, a period's start.

:func:`parse_time` reads

- ISO 8601 text: ``2026-11-02``, ``2026-11-02T09:15:00Z``, ``2026-11-02 09:15:00+01:00``; a
  time without an offset is read as UTC;
- seconds since 1970-01-01 00:00 UTC, as a number or as text (``1793524500``, ``1.7935e9``);
- a ``datetime`` or ``date`` (a Parquet timestamp column): naive ones are read as UTC;

and returns an aware datetime in UTC. It refuses, with an :class:`~evalcore.errors.InputError`
that names the field and shows the value: an empty value, ``None``, ``true``/``false``, NaN,
infinities, lists and other objects, dates that do not exist (month 13, Feb 29 of a common
year, year 0) and any time outside the **allowed range**, checked after the offset is applied:

- from ``1970-01-01T00:00:00Z`` (second 0 of the epoch, included: a logger's default time is
  accepted here and dealt with where periods are built),
- to ``9999-12-31T23:59:59.999999Z`` (the last instant a datetime can hold, included).

So ``0001-01-01T00:30+01:00`` (the year 0 in UTC) and ``9999-12-31T23:30-01:00`` (the year
10000 in UTC) are refused with that reason instead of overflowing.
"""

from __future__ import annotations

import math
import numbers
import re
from datetime import UTC, date, datetime, timedelta

from evalcore.errors import InputError

EARLIEST = datetime(1970, 1, 1, tzinfo=UTC)
LATEST = datetime(9999, 12, 31, 23, 59, 59, 999999, tzinfo=UTC)
RANGE = "1970-01-01T00:00:00Z .. 9999-12-31T23:59:59.999999Z"
_END_SECONDS = 253_402_300_800  # 10000-01-01T00:00:00Z in seconds since 1970: the first second refused
_NUMBER = re.compile(r"[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?$")
_SHOWN = 40
_FORMS = "an ISO 8601 time like 2026-11-02T09:15:00Z or seconds since 1970"


def _shown(value: object) -> str:
    text = repr(value)
    return text if len(text) <= _SHOWN else text[: _SHOWN - 3] + "..."


def _refuse(field: str, why: str, value: object) -> InputError:
    return InputError(f"{field}: {why}, got {_shown(value)}")


def _seconds(number: float | int, field: str, value: object) -> datetime:
    """Seconds since 1970 as a UTC datetime, checked against the range before any arithmetic
    (an int is compared exactly, however large)."""
    if isinstance(number, float) and not math.isfinite(number):
        raise _refuse(field, f"not a time ({_FORMS})", value)
    if not 0 <= number < _END_SECONDS:
        raise _refuse(field, f"out of the allowed range {RANGE}", value)
    try:  # a float just below the end may round up to it in microseconds
        return EARLIEST + timedelta(seconds=float(number))
    except OverflowError:
        raise _refuse(field, f"out of the allowed range {RANGE}", value) from None


def _in_range(stamp: datetime, field: str, value: object) -> datetime:
    """An aware or naive (read as UTC) datetime normalised to UTC, range checked; the
    conversion of a time next to year 1 or 9999 cannot overflow (it is caught as out of range)."""
    if stamp.tzinfo is None or stamp.utcoffset() is None:
        stamp = stamp.replace(tzinfo=UTC)
    try:
        utc = stamp.astimezone(UTC)
    except (OverflowError, ValueError):
        raise _refuse(field, f"out of the allowed range {RANGE} once its offset is applied", value) from None
    if not EARLIEST <= utc <= LATEST:
        raise _refuse(field, f"out of the allowed range {RANGE}", value)
    return utc


def _from_text(text: str, field: str, value: object) -> datetime:
    if _NUMBER.match(text):
        return _seconds(float(text), field, value)
    try:
        stamp = datetime.fromisoformat(text)
    except ValueError as exc:
        try:
            number = float(text)  # what the pattern does not read: "1_000", other digits
        except ValueError:
            reason = str(exc)
            detail = f" ({reason})" if "range" in reason or "must be" in reason else ""
            raise _refuse(field, f"not {_FORMS}{detail}", value) from None
        return _seconds(number, field, value)
    return _in_range(stamp, field, value)


def parse_time(value: object, *, field: str) -> datetime:
    """``value`` as an aware UTC datetime in the allowed range (see the module docstring);
    InputError naming ``field`` otherwise."""
    if value is None:
        raise _refuse(field, "no time", value)
    if isinstance(value, bool) or type(value).__name__ == "bool_":
        raise _refuse(field, f"not a time ({_FORMS})", value)
    if isinstance(value, datetime):
        if value != value:  # pandas' NaT
            raise _refuse(field, "no time", value)
        return _in_range(value, field, value)
    if isinstance(value, date):
        return _in_range(datetime(value.year, value.month, value.day), field, value)
    if isinstance(value, numbers.Integral):
        return _seconds(int(value), field, value)
    if isinstance(value, numbers.Real):
        number = float(value)
        if math.isnan(number):
            raise _refuse(field, "no time", value)
        return _seconds(number, field, value)
    if isinstance(value, str):
        text = value.strip()
        if not text:
            raise _refuse(field, "empty time", value)
        return _from_text(text, field, value)
    raise _refuse(field, f"not a time ({_FORMS})", value)
