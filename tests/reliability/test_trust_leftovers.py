"""The reliability suite, issue 34's last open items: integer options read by one parser, files
evalcore writes (never through a link, never half), error lines escaped for the terminal, and
run names checked with their length cap. One table row per case, like the other
``test_trust_*.py`` files; each case runs the real CLI (its ``main``) on real files."""

from __future__ import annotations

import argparse
import os
import time
from pathlib import Path

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


# --- files evalcore writes: whole, never through a link, never where the user did not name -------

#: The four writers of a file a user names on the command line (store: the one-run store).
WRITERS = {
    "export-run": lambda out: ["export-run", "earlier", "-o", out],
    "gate --junit": lambda out: [
        "gate",
        "--baseline",
        "earlier:A/dense",
        "--candidate",
        "earlier:E/dense",
        "--junit",
        out,
    ],
    "traffic export": lambda out: ["traffic", "export", out, "--run", "earlier:E/dense", "--threshold", "0.5"],
    "dataset suggest -o": lambda out: ["dataset", "suggest", "--corpus", str(CORPUS), "-n", "3", "-o", out],
}
TARGETS = ("a link to a file outside", "a dangling link", "a folder", "a FIFO", "in a missing folder")


def _target(folder: Path, kind: str) -> tuple[Path, Path | None, str]:
    """(the path the user names, the file outside a link points to, the refusal's words)."""
    outside = folder / "outside" / "kept.txt"
    outside.parent.mkdir()
    outside.write_text("the neighbour's file\n")
    named = folder / "out" / "named"
    named.parent.mkdir()
    if kind == "a link to a file outside":
        named.symlink_to(outside)
        return named, outside, "is a symbolic link; evalcore never writes through one"
    if kind == "a dangling link":
        named.symlink_to(folder / "outside" / "new.txt")
        return named, folder / "outside" / "new.txt", "is a symbolic link; evalcore never writes through one"
    if kind == "a folder":
        named.mkdir()
        return named, None, "is a folder"
    if kind == "a FIFO":
        os.mkfifo(named)
        return named, None, "is a FIFO (named pipe), not a regular file"
    return folder / "out" / "missing" / "named", None, "folder not found"


@pytest.mark.parametrize("kind", TARGETS)
@pytest.mark.parametrize("writer", sorted(WRITERS))
def test_a_written_file_is_never_written_through_a_link_or_into_a_pipe(base_store, tmp_path, writer, kind):  # noqa: F811
    """A real process each (a FIFO opened for writing blocked the command for ever): exit 2, one
    line naming the path, the file outside untouched, nothing new in any folder."""
    named, outside, words = _target(tmp_path, kind)
    before = sorted(str(p.relative_to(tmp_path)) for p in tmp_path.rglob("*"))
    kept = outside.read_text() if outside is not None and outside.exists() else None
    ran = evalcore(*WRITERS[writer](str(named)), store=base_store, process=True, timeout=90)
    after = sorted(str(p.relative_to(tmp_path)) for p in tmp_path.rglob("*"))
    untouched = (outside is None or (outside.read_text() if outside.exists() else None) == kept) and after == before
    where = named.parent if kind == "in a missing folder" else named
    said = ran.line()
    expected = f"exit 2 · one line naming {where.name}: {words} · nothing written"
    observed = (
        f"exit {ran.code} · "
        + (f"one line naming {where.name}: {words}" if f"{where}: {words}" in said and " | " not in said else said)
        + f" · {'nothing written' if untouched else 'WRITTEN'}"
    )
    check(f"{writer} to {kind}", expected, observed, ran.err)


@pytest.mark.parametrize("writer", sorted(WRITERS))
def test_a_written_file_lands_whole(base_store, tmp_path, writer):  # noqa: F811
    """The plain case still works: the file is there, complete, and no temporary file is left."""
    named = tmp_path / "out.file"
    ran = evalcore(*WRITERS[writer](str(named)), store=base_store)
    left = sorted(p.name for p in tmp_path.iterdir())
    check(f"{writer} to a new file", "exit 0 · out.file alone", f"exit {ran.code} · {' '.join(left)} alone", ran.err)
    assert named.stat().st_size > 0
