"""Cells of every CSV evalcore writes, neutralised for spreadsheets.

A spreadsheet opening a CSV runs a cell that starts with ``=``, ``+``, ``-`` or ``@`` as a
formula (``=HYPERLINK(...)``, ``=cmd|' /C calc'!A0``), and some read a cell that starts with a
tab or a carriage return the same way once the blank is stripped. Such a text cell gets a
leading apostrophe, which spreadsheets show as text and do not run; numbers (a negative number
included) and every other value are written unchanged. Reading the file back as data, strip one
leading apostrophe from a text cell that starts with ``'`` followed by one of those characters.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import pandas as pd

FORMULA_START = ("=", "+", "-", "@", "\t", "\r")


def csv_cell(value: object) -> object:
    """``value`` as a CSV cell a spreadsheet shows as text (see the module docstring)."""
    if isinstance(value, str) and value.startswith(FORMULA_START):
        return "'" + value
    return value


def neutralise_frame(df: pd.DataFrame) -> pd.DataFrame:
    """A copy of ``df`` with :func:`csv_cell` applied to every text (object or string) column
    and to the column names."""
    import pandas as pd

    safe = df.copy()
    for column in safe.columns:
        if safe[column].dtype == object or pd.api.types.is_string_dtype(safe[column]):
            safe[column] = safe[column].map(csv_cell)
    safe.columns = [csv_cell(str(c)) for c in safe.columns]
    return safe


def csv_text(df: pd.DataFrame) -> str:
    """``df`` as CSV text, neutralised (:func:`neutralise_frame`), without the index, with
    RFC 4180 line ends: a cell holding a carriage return or a line break is quoted, so it never
    splits a row."""
    text: str = neutralise_frame(df).to_csv(index=False, lineterminator="\r\n")
    return text
