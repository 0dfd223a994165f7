"""evalcore.boundary.text: names refused for what would make them read differently, free text
kept as written but for control characters, and every hidden character shown as an escape."""

from __future__ import annotations

import unicodedata

import pytest
from hypothesis import given
from hypothesis import strategies as st

from evalcore.boundary.text import check_name, clean_text, for_terminal
from evalcore.errors import InputError


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("  plain-name_1.0 ", "plain-name_1.0"),
        ("cafe\u0301", "caf\u00e9"),  # NFC
        ("Grüße 日本", "Grüße 日本"),
        ("a-b", "a-b"),
    ],
)
def test_check_name_keeps_a_good_name_normalised(value, expected):
    assert check_name(value, field="--name") == expected


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("", "--name: is empty"),
        ("   ", "--name: is empty"),
        ("-rf", "--name: -rf starts with '-' (it would read as an option)"),
        ("a\x1b[31mb", "--name: character 2 is U+001B (control"),
        ("a\nb", "--name: character 2 is U+000A (control"),
        ("a\x00b", "--name: character 2 is U+0000 (control"),
        ("abc\u202eexe.txt", "--name: character 4 is U+202E RIGHT-TO-LEFT OVERRIDE"),
        ("ab\u2066c", "--name: character 3 is U+2066 LEFT-TO-RIGHT ISOLATE"),
        ("a\u200bb", "--name: character 2 is U+200B ZERO WIDTH SPACE"),
        ("a\u200db", "--name: character 2 is U+200D ZERO WIDTH JOINER"),
        ("a\x85b", "--name: character 2 is U+0085 (control"),
        ("x" * 201, "--name: 201 characters, more than the 200 allowed"),
    ],
)
def test_check_name_refuses_with_the_field_and_the_character(value, message):
    with pytest.raises(InputError) as err:
        check_name(value, field="--name")
    assert str(err.value).startswith(message), str(err.value)


def test_check_name_cap_is_the_callers():
    assert check_name("x" * 10, field="f", max_len=10) == "x" * 10
    with pytest.raises(InputError, match="11 characters, more than the 10 allowed"):
        check_name("x" * 11, field="f", max_len=10)


def test_check_name_refuses_what_is_not_text():
    with pytest.raises(InputError, match="f: expected text, got int"):
        check_name(3, field="f")  # type: ignore[arg-type]


@pytest.mark.parametrize(
    "value",
    ["<script>alert(1)</script>", '=HYPERLINK("http://x")', "tab\there\nand newline", "rtl \u202e mark", "a\u200bb"],
)
def test_clean_text_keeps_html_formulas_tabs_newlines_and_marks(value):
    assert clean_text(value, field="note", max_len=1000) == value


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("a\x00b", "note: character 2 is U+0000 (control characters other than tab and newline"),
        ("\x1b[2J", "note: character 1 is U+001B (control"),
        ("a\rb", "note: character 2 is U+000D (control"),
        ("a\x7fb", "note: character 2 is U+007F (control"),
        ("x" * 1001, "note: 1,001 characters, more than the 1,000 allowed"),
    ],
)
def test_clean_text_refuses_control_characters_and_length(value, message):
    with pytest.raises(InputError) as err:
        clean_text(value, field="note", max_len=1000)
    assert str(err.value).startswith(message), str(err.value)


def test_clean_text_normalises_to_nfc():
    assert clean_text("e\u0301", field="f", max_len=5) == "\u00e9"


@pytest.mark.parametrize(
    ("value", "shown"),
    [
        ("plain text, with a \\ backslash", "plain text, with a \\ backslash"),
        ("\x1b[31mred\x1b[0m", "\\x1b[31mred\\x1b[0m"),
        ("row\nforged\trow", "row\\nforged\\trow"),
        ("a\r\nb", "a\\r\\nb"),
        ("abc\u202eexe", "abc\\u202eexe"),
        ("a\u200bb", "a\\u200bb"),
        ("nul\x00", "nul\\x00"),
        ("c1\x9b", "c1\\x9b"),
        ("sep\u2028x", "sep\\u2028x"),
        ("back\\n and \x1b", "back\\\\n and \\x1b"),  # a literal backslash-n stays distinguishable
        (42, "42"),
        (None, "None"),
    ],
)
def test_for_terminal_shows_hidden_characters_as_escapes(value, shown):
    assert for_terminal(value) == shown


@given(st.text())
def test_for_terminal_is_one_line_without_hidden_characters(text):
    shown = for_terminal(text)
    assert "\n" not in shown and "\r" not in shown and "\x1b" not in shown
    assert not any(unicodedata.category(ch) in ("Cc", "Cf", "Zl", "Zp") for ch in shown)


@given(st.text())
def test_clean_text_either_keeps_the_nfc_text_or_names_the_field(text):
    try:
        kept = clean_text(text, field="f", max_len=50)
    except InputError as exc:
        assert str(exc).startswith("f: ")
    else:
        assert kept == unicodedata.normalize("NFC", text)
