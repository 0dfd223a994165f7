"""The reliability suite, issue 34's last open items: integer options read by one parser, files
evalcore writes (never through a link, never half), error lines escaped for the terminal, and
run names checked with their length cap. One table row per case, like the other
``test_trust_*.py`` files; each case runs the real CLI (its ``main``) on real files."""

from __future__ import annotations

import argparse
import math
import os
import time
from pathlib import Path

import pytest
from conftest import MINI
from hypothesis import given, settings
from hypothesis import strategies as st
from measures.test_threshold import in_domain, out_domain
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
    "chunks --output": lambda out: ["chunks", "--corpus", str(CORPUS), "--strategy", "E", "--output", out],
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


# --- error lines are escaped for the terminal ----------------------------------------------------

ESC, RLO = "\x1b[2J\x1b[31m", "\u202e"
ESCAPED = [
    ("a run name", ["run", "--corpus", str(CORPUS), "--questions", str(QUESTIONS), "--name", f"a{ESC}b{RLO}c"]),
    (
        "a missing questions file's name",
        ["run", "--corpus", str(CORPUS), "--questions", f"/nonexistent/q{ESC}{RLO}.jsonl"],
    ),
    (
        "a missing corpus folder's name",
        ["validate", "--corpus", f"/nonexistent/c{ESC}{RLO}", "--questions", str(QUESTIONS)],
    ),
    ("an unknown run", ["show", f"r{ESC}{RLO}"]),
    ("an argument argparse does not know", ["list", f"x{ESC}{RLO}"]),
    (
        "a choice argparse refuses",
        ["import-run", "--demo", "--chunks", "c", "--rankings", "r", "--format", f"t{ESC}{RLO}"],
    ),
]


@pytest.mark.parametrize("name, argv", ESCAPED, ids=[n for n, _ in ESCAPED])
def test_an_error_line_never_carries_a_raw_escape_or_bidi_control(tmp_path, name, argv):
    """ESC would clear the screen and colour what follows; U+202E would print the rest of the
    line backwards. Both come back as visible escapes, on one line."""
    ran = evalcore(*argv, store=tmp_path / "s.duckdb")
    raw = [ch for ch in ("\x1b", RLO) if ch in ran.err]
    lines = [x for x in ran.err.splitlines() if "error:" in x]
    visible = bool(lines) and any(s in lines[-1] for s in ("\\x1b", "\\u202e", "U+001B", "U+202E"))
    observed = f"exit {ran.code} · {'raw ' + repr(raw) if raw else 'no raw control'} · "
    observed += "escaped in the error line" if visible else f"not shown escaped: {ran.err[-200:]!r}"
    check(f"error line naming {name}", "exit 2 · no raw control · escaped in the error line", observed, ran.err)


# --- run names: checked, with their length cap, on every path that names a run ------------------

LONG = "x" * 10_000
LONG_SAID = "run name: 10,000 characters, more than the 200 allowed"


def test_a_10000_character_run_name_is_refused_by_every_command(tmp_path, mini_inputs):
    import sys

    from conftest import ROOT

    sys.path.insert(0, str(ROOT / "examples"))
    import external_bm25  # a complete external retriever's files

    files = external_bm25.write_files(tmp_path / "ext", *mini_inputs)
    store = tmp_path / "s.duckdb"
    commands = {
        "run --name": [*RUN, "--name", LONG],
        "run-endpoint --name": [
            "run-endpoint",
            "--corpus",
            str(CORPUS),
            "--questions",
            str(QUESTIONS),
            "--url",
            "http://127.0.0.1:9/",
            "--retries",
            "0",
            "--timeout",
            "1",
            "--name",
            LONG,
        ],
        "import-run --name": [
            "import-run",
            "--corpus",
            str(CORPUS),
            "--questions",
            str(QUESTIONS),
            "--chunks",
            str(files["chunks"]),
            "--rankings",
            str(files["trec"]),
            "--name",
            LONG,
        ],
    }
    for what, argv in commands.items():
        ran = evalcore(*argv, store=store)
        said = f"exit {ran.code} · {ran.line()} · {'nothing stored' if not store.exists() else 'STORED'}"
        check(what + " of 10,000 characters", f"exit 2 · error: {LONG_SAID} · nothing stored", said, ran.err)


def test_a_run_file_whose_run_name_is_10000_characters_is_not_loaded(base_store, tmp_path):  # noqa: F811
    import shutil

    import duckdb

    source = tmp_path / "source.duckdb"
    shutil.copy(base_store, source)
    con = duckdb.connect(str(source))
    con.execute("UPDATE runs SET name = ?", [LONG])
    run_id = con.execute("SELECT run_id FROM runs").fetchone()[0]
    con.close()
    runfile = tmp_path / "long.evalcore.zip"
    assert evalcore("export-run", run_id, "-o", str(runfile), store=source).code == 0
    target = tmp_path / "target.duckdb"
    ran = evalcore("load-run", str(runfile), store=target)
    runs = (
        duckdb.connect(str(target), read_only=True).execute("SELECT count(*) FROM runs").fetchone()[0]
        if target.exists()
        else 0
    )
    expected = f"exit 2 · error: TMP/long.evalcore.zip: its {LONG_SAID}; not loaded · 0 runs"
    check(
        "load-run of a run named with 10,000 characters",
        expected,
        f"exit {ran.code} · {ran.line(tmp_path)} · {runs} runs",
        ran.err,
    )


def test_the_new_run_screen_refuses_a_10000_character_name(tmp_path, monkeypatch):
    """The New run screen hands its name to jobs.submit (through _ui.guarded, which shows the
    message): nothing is queued."""
    from evalcore import jobs
    from evalcore.errors import InputError
    from evalcore.store import Store

    monkeypatch.setenv("EVALCORE_DATA_ROOTS", str(MINI))
    store = Store(tmp_path / "s.duckdb")
    prepared = jobs.prepare_paths(str(CORPUS), str(QUESTIONS), None, "E", "bm25")
    try:
        jobs.submit(store, prepared, LONG, start=False)
        said = "queued"
    except InputError as exc:
        said = str(exc)
    queued = len(store.query("SELECT * FROM jobs")) if store.path.exists() else 0
    check("New run screen: a 10,000-character run name", f"{LONG_SAID} · 0 jobs", f"{said[:100]} · {queued} jobs")


# --- the Threshold screen's cost suggestion sits on the slider's grid, on its safe side ----------


def test_the_screens_suggestion_on_a_narrow_step_is_snapped_to_the_strict_side():
    """Two off-topic queries 0.00006 apart around three answers: the cheapest step (0.11364,
    0.11368] holds no multiple of 0.001, so the suggestion was 0.11366, which the slider moves
    to 0.114, past the second bluff. On the grid, on the strict side: 0.113, with its counts."""
    from evalcore.measures.threshold import counts_at, sweep
    from evalcore.read.sweeps import suggest_on_grid

    ind = {"q1": [(0.1, True)], "q3": [(0.95, True)], **{f"q2{x}": [(0.11364, True)] for x in "abc"}}
    ood = {"o1": [0.11362], "o2": [0.11368], "o3": [0.9]}
    frame = sweep(ind, ood)
    s = suggest_on_grid(frame, 1.0, None)
    at = counts_at(ind, ood, s.threshold)
    same = (at.bluffs, at.lost) == (s.bluffs, s.lost)
    observed = f"t = {s.threshold!r} · {at.bluffs} bluffs, {at.lost} lost · counts as said: {same}"
    expected = "t = 0.113 · 0 bluffs, 4 lost · counts as said: True"
    check("Threshold screen: cost suggestion on a step narrower than 0.001", expected, observed, s.rule)


@settings(max_examples=150, deadline=None)
@given(
    in_domain, out_domain, st.sampled_from([0.5, 1.0, 2.0, 5.0]), st.booleans(), st.sampled_from([None, 0.0, 0.1, 0.25])
)
def test_the_screens_suggestion_is_on_the_grid_and_never_bluffs_more(ind, ood, ratio, similarity, ceiling):
    from evalcore.measures.rounding import grid_at_or_below
    from evalcore.measures.suggestion import suggest_threshold
    from evalcore.measures.threshold import counts_at, sweep
    from evalcore.read.sweeps import suggest_on_grid

    if ceiling is not None and not ood:
        return
    frame = sweep(ind, ood, higher_is_closer=similarity)
    frame["higher_is_closer"] = similarity
    rule = (None, ceiling) if ceiling is not None else (ratio, None)
    exact = suggest_threshold(frame, *rule, higher_is_closer=similarity)
    s = suggest_on_grid(frame, *rule)
    at = counts_at(ind, ood, s.threshold, higher_is_closer=similarity)
    assert not math.isfinite(s.threshold) or grid_at_or_below(s.threshold) == s.threshold, s.threshold
    assert (at.bluffs, at.lost, at.refused, at.answered_correct) == (s.bluffs, s.lost, s.refused, s.answered_correct)
    assert s.bluffs <= exact.bluffs
    if ceiling is not None:
        assert at.bluffs / len(ood) <= ceiling


# --- import-run of a large TREC file: read in columns, every hit stored where it belongs --------


def test_a_large_trec_run_is_imported_hit_for_hit(tmp_path):
    """52,000 lines (26 queries x 2,000 chunks, shuffled per query): every line is one stored
    hit, in the file's rank order, and each question's first correct rank is the rank the file
    gives its needle's chunk (read from the file here, independently). Memory is measured by
    benchmarks/bench_import_run.py, not here."""
    import sys

    import duckdb
    from conftest import ROOT

    sys.path.insert(0, str(ROOT / "benchmarks"))
    from bench_import_run import write_inputs

    files = write_inputs(tmp_path / "in", docs=40, sentences=50)
    store = tmp_path / "s.duckdb"
    argv = ["import-run", "--corpus", str(files["corpus"]), "--questions", str(files["questions.jsonl"])]
    argv += ["--ood", str(files["ood.jsonl"]), "--chunks", str(files["chunks.jsonl"])]
    ran = evalcore(*argv, "--rankings", str(files["rankings.trec"]), store=store)
    assert ran.code == 0, ran.err
    by_line = {}
    for line in open(files["rankings.trec"], encoding="utf-8"):
        qid, _, chunk, rank, _, _ = line.split()
        by_line[(qid, chunk)] = int(rank)
    needle_chunk = {}
    chunk_text = {}
    import json

    for line in open(files["chunks.jsonl"], encoding="utf-8"):
        row = json.loads(line)
        chunk_text[row["text"]] = row["id"]
    for line in open(files["questions.jsonl"], encoding="utf-8"):
        q = json.loads(line)
        needle_chunk[q["id"]] = chunk_text[q["needle"]]
    con = duckdb.connect(str(store), read_only=True)
    try:
        stored = con.execute(
            "SELECT h.query_id, c.external_id, h.rank FROM hits h JOIN chunks c "
            "ON c.run_id = h.run_id AND c.strategy = h.strategy AND c.chunk_id = h.chunk_id"
        ).fetchall()
        first = dict(con.execute("SELECT query_id, first_correct_rank FROM results WHERE domain = 'in'").fetchall())
    finally:
        con.close()
    same_rank = sum(by_line.get((q, c)) == r for q, c, r in stored)
    expected_first = {q: by_line[(q, c)] for q, c in needle_chunk.items()}
    observed = f"{len(stored):,} hits stored, {same_rank:,} at the file's rank · first correct ranks as the file's: "
    observed += str(first == expected_first)
    check(
        "import-run of a 52,000-line TREC run",
        f"{len(by_line):,} hits stored, {len(by_line):,} at the file's rank · first correct ranks as the file's: True",
        observed,
        ran.err,
    )


# --- a question set imported by the CLI shows on the Questions screen at its next rerun ---------


def test_a_set_imported_by_the_cli_is_listed_at_the_questions_screens_next_rerun(base_store, tmp_path, monkeypatch):  # noqa: F811
    """The walk's claim: a set imported with the CLI appeared on Questions only after some
    other rerun. The screen reads the list of sets at every rerun (no cache), so the first
    rerun after the import (the next click, or a reload) lists it."""
    import shutil

    from dashboard.test_app import no_exception, open_page

    store = tmp_path / "s.duckdb"
    shutil.copy(base_store, store)
    at = open_page(store, "questions", monkeypatch, qs_source="run")  # the corpus of the newest run
    no_exception(at)
    before = list(at.selectbox(key="qs_set").options)
    assert evalcore("dataset", "import", str(MINI), "--name", "from-cli", store=store).code == 0
    at.run()
    no_exception(at)
    after = list(at.selectbox(key="qs_set").options)
    check(
        "Questions screen: a set the CLI imported, at the next rerun",
        "absent before · listed after one rerun",
        f"{'listed' if 'from-cli' in before else 'absent'} before · "
        + ("listed after one rerun" if "from-cli" in after else f"not listed after one rerun: {after}"),
    )
