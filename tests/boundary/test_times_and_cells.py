"""evalcore.boundary.times and evalcore.boundary.csvcells: the time parser against dateutil and
pandas (independent readers of ISO 8601 and epoch seconds), its refusals, and CSV cells."""

from __future__ import annotations

import csv
import io
import math
from datetime import UTC, date, datetime

import numpy as np
import pandas as pd
import pytest
from dateutil.parser import isoparse

from evalcore.boundary.csvcells import csv_cell, csv_text, neutralise_frame
from evalcore.boundary.times import EARLIEST, LATEST, parse_time
from evalcore.errors import InputError

ISO = [
    "2026-11-02",
    "2026-11-02T09:15:00Z",
    "2026-11-02T09:15:00.123456Z",
    "2026-11-02 09:15:00+01:00",
    "2026-11-02T23:30:00-05:30",
    "1970-01-01T00:00:00Z",
    "1970-01-01T01:00:00+01:00",
    "9999-12-31T23:59:59.999999Z",
    "2024-02-29T12:00:00Z",
]


@pytest.mark.parametrize("text", ISO)
def test_iso_times_read_as_dateutil_reads_them_in_utc(text):
    expected = isoparse(text)
    expected = (expected if expected.tzinfo else expected.replace(tzinfo=UTC)).astimezone(UTC)
    assert parse_time(text, field="time") == expected


@pytest.mark.parametrize("seconds", [0, 1, 1_793_524_500, 1_793_524_500.25, 253_402_300_799])
def test_epoch_seconds_read_as_pandas_reads_them(seconds):
    expected = pd.Timestamp(seconds, unit="s", tz="UTC").to_pydatetime()
    assert parse_time(seconds, field="time") == expected
    assert parse_time(str(seconds), field="time") == expected
    assert parse_time(np.float64(seconds), field="time") == expected


def test_naive_datetimes_and_dates_are_utc():
    assert parse_time(datetime(2026, 11, 2, 9), field="t") == datetime(2026, 11, 2, 9, tzinfo=UTC)
    assert parse_time(date(2026, 11, 2), field="t") == datetime(2026, 11, 2, tzinfo=UTC)
    assert parse_time(pd.Timestamp("2026-11-02T09:00Z"), field="t") == datetime(2026, 11, 2, 9, tzinfo=UTC)


REFUSED = [
    ("2026-13-01", "month must be in 1..12"),
    ("2026-02-29", "day is out of range"),
    ("0000-01-01", "year 0 is out of range"),
    ("0001-01-01T00:30+01:00", "out of the allowed range"),
    ("9999-12-31T23:30-01:00", "out of the allowed range"),
    ("1969-12-31T23:59:59.999999Z", "out of the allowed range"),
    (-1, "out of the allowed range"),
    (253_402_300_800, "out of the allowed range"),
    (253_402_300_799.9999999, "out of the allowed range"),
    (1e20, "out of the allowed range"),
    (10**400, "out of the allowed range"),
    ("yesterday", "not an ISO 8601 time"),
    ("", "empty time"),
    ("   ", "empty time"),
    (None, "no time"),
    (True, "not a time"),
    (np.bool_(False), "not a time"),
    (math.nan, "no time"),
    (pd.NaT, "no time"),
    (math.inf, "not a time"),
    ("nan", "not a time"),
    ("-inf", "not a time"),
    ([2026, 11, 2], "not a time"),
    ({"t": 1}, "not a time"),
]


@pytest.mark.parametrize("value, why", REFUSED, ids=[repr(v)[:30] for v, _ in REFUSED])
def test_refusals_name_the_field_and_say_why(value, why):
    with pytest.raises(InputError) as exc:
        parse_time(value, field="--before")
    assert str(exc.value).startswith("--before: ") and why in str(exc.value)


def test_the_range_ends_are_included():
    assert 253_402_300_800 == (datetime(10000 - 1, 12, 31, 23, 59, 59, tzinfo=UTC) - EARLIEST).total_seconds() + 1
    assert parse_time(0, field="t") == EARLIEST
    assert parse_time(253_402_300_799, field="t") == LATEST.replace(microsecond=0)
    assert parse_time("9999-12-31T23:59:59.999999+00:00", field="t") == LATEST


def test_long_values_are_shown_cut():
    with pytest.raises(InputError) as exc:
        parse_time("x" * 10_000, field="time")
    assert len(str(exc.value)) < 200


CELLS = ["=cmd|' /C calc'!A0", '=HYPERLINK("http://x","y")', "+1", "-1+2", "@SUM(A1)", "\tx", "\rx"]


def test_formula_cells_get_an_apostrophe_and_the_rest_is_unchanged():
    assert [csv_cell(c) for c in CELLS] == ["'" + c for c in CELLS]
    for value in ("plain", "", "a=b", "'=already", -1, -1.5, None, math.nan):
        assert csv_cell(value) is value or csv_cell(value) == value


def test_a_neutralised_frame_writes_no_cell_a_spreadsheet_would_run_and_no_row_is_split():
    frame = pd.DataFrame({"text": CELLS, "n": range(len(CELLS)), "=head": ["x"] * len(CELLS)})
    assert neutralise_frame(frame)["text"].tolist() == ["'" + c for c in CELLS]
    assert frame["text"].tolist() == CELLS  # the input is left as it was
    rows = list(csv.reader(io.StringIO(csv_text(frame), newline="")))
    cells = [c for row in rows for c in row]
    assert not [c for c in cells if c.startswith(("=", "+", "-", "@", "\t", "\r"))]
    assert rows[0] == ["text", "n", "'=head"] and [r[1] for r in rows[1:]] == [str(i) for i in range(len(CELLS))]
