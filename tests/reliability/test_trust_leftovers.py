"""The reliability suite, issue 34's last open items: integer options read by one parser, files
evalcore writes (never through a link, never half), error lines escaped for the terminal, and
run names checked with their length cap. One table row per case, like the other
``test_trust_*.py`` files; each case runs the real CLI (its ``main``) on real files."""

from __future__ import annotations

import argparse
import time

import pytest
from conftest import MINI
from test_reliability import RUN, base_store, check, evalcore  # noqa: F401 - base_store: the shared one-run store

from evalcore.cli.parser import build_parser

CORPUS, QUESTIONS = MINI / "corpus", MINI / "questions.jsonl"


# --- numbers: one parser for every numeric option --------------------------------------------


def _actions(parser: argparse.ArgumentParser, path: str = "") -> list[tuple[str, argparse.Action]]:
    out = []
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                out += _actions(sub, f"{path} {name}".strip())
        else:
            out.append((path, action))
    return out


def test_no_option_is_read_by_int_or_float():
    """int() reads '1_0' as 10, ' 7 ' as 7 and Arabic-Indic digits; float() reads 'nan' and
    'inf'. Every numeric option goes through evalcore.boundary.numbers instead."""
    raw = sorted(
        f"{path or '(global)'} {max(a.option_strings or [a.dest], key=len)}"
        for path, a in _actions(build_parser())
        if a.type in (int, float)
    )
    check(
        "every numeric option is read by boundary.numbers",
        "none by int() or float()",
        ", ".join(raw) or "none by int() or float()",
    )


NUMBERS = [
    ("run-endpoint --retries 1_0", ["--retries", "1_0"], "error: --retries must be an integer in [0, 10]; got '1_0'"),
    (
        "run-endpoint --k with Arabic-Indic digits",
        ["--k", "\u0661\u0660"],
        "error: --k must be an integer in [1, 10000]; got '\u0661\u0660'",
    ),
    (
        "run-endpoint --concurrency 1e3",
        ["--concurrency", "1e3"],
        "error: --concurrency must be an integer in [1, 256]; got '1e3'",
    ),
    ("run-endpoint --timeout nan", ["--timeout", "nan"], "error: --timeout must be a number in (0, 3600]; got 'nan'"),
    (
        "run-endpoint --max-failures 1_0",
        ["--max-failures", "1_0"],
        "error: --max-failures must be a number in [0, 1]; got '1_0'",
    ),
]


@pytest.mark.parametrize("name, extra, message", NUMBERS, ids=[n for n, *_ in NUMBERS])
def test_a_numeric_option_takes_plain_decimal_digits_only(tmp_path, name, extra, message):
    """Refused before any request is sent (a closed port with ten retries and back-off took
    longer than the net's 30 s), with the option's range, and nothing stored."""
    store = tmp_path / "s.duckdb"
    argv = ["run-endpoint", "--corpus", str(CORPUS), "--questions", str(QUESTIONS), "--url", "http://127.0.0.1:9/"]
    t0 = time.monotonic()
    ran = evalcore(*argv, *extra, *([] if "--timeout" in extra else ["--timeout", "1"]), store=store)
    wall = time.monotonic() - t0
    expected = f"exit 2 · {message} · nothing stored · under 5 s"
    observed = f"exit {ran.code} · {ran.line()} · {'nothing stored' if not store.exists() else 'STORED'} · "
    observed += "under 5 s" if wall < 5 else f"{wall:.0f} s"
    check(name, expected, observed, ran.err)


@pytest.mark.parametrize(
    "argv, message",
    [
        (["dashboard", "--port", "7_0000"], "error: --port must be an integer in [1, 65535]; got '7_0000'"),
        (["compare", "x", "--width", "\u00b2"], "error: --width must be an integer in [20, 10000]; got '\u00b2'"),
        (
            ["dataset", "suggest", "--corpus", str(CORPUS), "-n", "5_0"],
            "error: -n must be an integer in [1, 100000]; got '5_0'",
        ),
        (
            ["import-squad", "x.json", "--out", "o", "--ood-limit", "0x10"],
            "error: --ood-limit must be an integer in [1, inf); got '0x10'",
        ),
        (
            ["traffic", "export", "o.csv", "--run", "x", "--threshold", "inf"],
            "error: --threshold must be a number in (-inf, inf); got 'inf'",
        ),
    ],
)
def test_other_numeric_options_say_their_range(tmp_path, argv, message):
    ran = evalcore(*argv, store=tmp_path / "s.duckdb")
    check(
        " ".join(argv[:2]) + " " + argv[-2] + " " + repr(argv[-1]),
        f"exit 2 · {message}",
        f"exit {ran.code} · {ran.line()}",
        ran.err,
    )
