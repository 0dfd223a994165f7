"""The reliability suite, issue 34 (trust by construction), question sets: hostile names,
notes and item texts, a planted link in an export folder, a round trip that must keep every
field, imports that race for one new name, and a large import that must not lock every other
reader out. One table row per case (tests/reliability/reliability_table.py): exit 0 or 2, one
line naming the file, line or field, and nothing half-stored."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import duckdb
import pytest
import zygote
from test_reliability import CORPUS, FAKE, QUESTIONS, check, evalcore

from evalcore.inputs import question_sets
from evalcore.store import Store

GOOD = QUESTIONS.read_text(encoding="utf-8")
HIDDEN = ("\x1b", "\u202e", "\u200b", "\x00")


def _folder(tmp: Path, name: str, extra_lines: list[dict] | None = None, text: str | None = None) -> Path:
    folder = tmp / name
    folder.mkdir()
    body = GOOD if text is None else text
    body += "".join(json.dumps(x, ensure_ascii=False) + "\n" for x in extra_lines or [])
    (folder / "questions.jsonl").write_text(body, encoding="utf-8")
    return folder


def _sets(store: Path) -> str:
    if not store.exists():
        return "no store"
    found = question_sets.versions(Store(store))
    return "no set stored" if not found else ", ".join(v.label for v in found)


def _raw(text: str) -> str:
    """Which hidden characters reach the terminal raw."""
    shown = [repr(c) for c in HIDDEN if c in text]
    return "raw " + " ".join(shown) if shown else "none raw"


def test_a_set_name_with_a_leading_dash_is_refused(tmp_path):
    store = tmp_path / "s.duckdb"
    ran = evalcore("dataset", "import", str(_folder(tmp_path, "d")), "--name=-rf", store=store)
    check(
        "dataset import --name=-rf",
        "exit 2 · error: question set name: -rf starts with '-' (it would read as an option) · no store",
        f"exit {ran.code} · {ran.line(tmp_path)} · {_sets(store)}",
    )


def test_items_with_nul_or_esc_are_refused_naming_file_line_and_field(tmp_path):
    line = len(GOOD.splitlines()) + 1
    for case, field, value, char in (
        ("NUL in a question", "question", "what\x00now", "character 5 is U+0000"),
        ("ESC in a needle", "needle", "\x1b[2Jport", "character 1 is U+001B"),
    ):
        item = {"id": "hostile", "question": "q", "needle": "n", field: value}
        folder = _folder(tmp_path, f"d-{field}", [item])
        store = tmp_path / f"{field}.duckdb"
        ran = evalcore("dataset", "import", str(folder), "--name", "hostile", store=store)
        check(
            f"set item: {case}",
            f"exit 2 · error: TMP/d-{field}/questions.jsonl:{line}: field {field!r}: {char} (control characters "
            "other than tab and newline are not allowed) · no store",
            f"exit {ran.code} · {ran.line(tmp_path)} · {_sets(store)}",
        )


def test_rlo_zero_width_html_and_formulas_are_kept_and_shown_escaped(tmp_path):
    hostile = [
        {"id": "rlo", "question": "which \u202eexe.txt", "needle": "absent \u202e needle", "group": "g\u202eevil"},
        {"id": "zw", "question": "zero\u200bwidth", "needle": "absent zero\u200bwidth", "group": "zw\u200bg"},
        {"id": "html", "question": "<script>alert(1)</script>", "needle": "<img src=x onerror=alert(1)>"},
        {"id": "formula", "question": '=HYPERLINK("http://x","y")', "needle": "=1+2", "group": "=cmd|' /C calc'!A0"},
    ]
    folder = _folder(tmp_path, "d", hostile)
    store = tmp_path / "s.duckdb"
    ran = evalcore("dataset", "import", str(folder), "--name", "hostile", store=store)
    stored = Store(store)
    items = {q.query_id: q for q in question_sets.load_question_set(stored, "hostile").questions}
    kept = all(items[h["id"]].question == h["question"] for h in hostile)
    check(
        "set items with RLO, zero-width, HTML, formulas: stored as given",
        "exit 0 · - · kept as given",
        f"exit {ran.code} · {ran.line(tmp_path)} · {'kept as given' if kept else 'CHANGED'}",
    )
    show = evalcore("dataset", "show", "hostile", "--corpus", str(CORPUS), store=store)
    check(
        "dataset show --corpus of those items",
        "exit 0 · none raw · g\\u202eevil and zw\\u200bg listed",
        f"exit {show.code} · {_raw(show.out + show.err)} · "
        + ("g\\u202eevil and zw\\u200bg listed" if "g\\u202eevil" in show.out and "zw\\u200bg" in show.out else "?"),
        show.out,
    )
    run = evalcore("run", "--corpus", str(CORPUS), "--dataset", "hostile", "--strategies", "A", "-q", store=store)
    check(
        "run --dataset on those items: the warnings",
        "exit 0 · none raw · warning names g\\u202eevil",
        f"exit {run.code} · {_raw(run.out + run.err)} · "
        + ("warning names g\\u202eevil" if "group g\\u202eevil (line" in run.err else "?"),
        run.err,
    )


def test_a_note_with_esc_or_100_kb_is_refused_and_a_newline_forges_no_row(tmp_path):
    store = tmp_path / "s.duckdb"
    folder = _folder(tmp_path, "d")
    for case, note, expected in (
        (
            "--note with an ESC sequence",
            "ok \x1b[31mred",
            "error: --note: character 4 is U+001B (control characters other than tab and newline are not allowed)",
        ),
        ("--note of 100 kB", "x" * 100_000, "error: --note: 100,000 characters, more than the 2,000 allowed"),
    ):
        ran = evalcore("dataset", "import", str(folder), "--name", "noted", "--note", note, store=store)
        check(case, f"exit 2 · {expected} · no store", f"exit {ran.code} · {ran.line(tmp_path)} · {_sets(store)}")
    forged = "fine\nevil@9            1         1         1  2026-01-01 00:00:00  admin  trusted"
    ran = evalcore("dataset", "import", str(folder), "--name", "noted", "--note", forged, store=store)
    listed = evalcore("dataset", "list", store=store)
    rows = listed.out.splitlines()
    check(
        "--note with a newline that forges a row of dataset list",
        "exit 0 · 2 lines (header and noted@1) · note shown with \\n",
        f"exit {ran.code} · {len(rows)} lines (header and {rows[-1].split()[0]}) · "
        + ("note shown with \\n" if rows[-1].endswith("fine\\nevil@9" + forged.split("evil@9", 1)[1]) else "note RAW"),
        listed.out,
    )


def test_export_into_a_folder_with_a_dangling_link_writes_nothing_outside(tmp_path):
    store = tmp_path / "s.duckdb"
    assert evalcore("dataset", "import", str(_folder(tmp_path, "d")), "--name", "mini", store=store).code == 0
    outside, out = tmp_path / "outside", tmp_path / "out"
    outside.mkdir()
    out.mkdir()
    (out / "questions.jsonl").symlink_to(outside / "planted.jsonl")
    ran = evalcore("dataset", "export", "mini", "-o", str(out), store=store)
    check(
        "dataset export: questions.jsonl a dangling symbolic link",
        "exit 2 · error: TMP/out/questions.jsonl: is a symbolic link; evalcore never writes through one · "
        "nothing outside, nothing in the folder but the link",
        f"exit {ran.code} · {ran.line(tmp_path)} · "
        + ("nothing outside" if not list(outside.iterdir()) else "WRITTEN OUTSIDE")
        + (", nothing in the folder but the link" if sorted(os.listdir(out)) == ["questions.jsonl"] else ", MORE"),
    )


def test_a_round_trip_keeps_every_field(tmp_path):
    lines = [
        {"id": "s1", "question": "Which port?", "document": "install", "start": 0, "end": 9, "group": "s1",
         "variant": "squad", "answer": "# Install", "tags": ["a", {"b": 1}]},
        {"id": "s2", "question": "Which port again?", "needle": "port", "group": "s2", "variant": "", "source": "x"},
    ]  # fmt: skip
    text = "".join(json.dumps(x, ensure_ascii=False) + "\n" for x in lines)
    folder = _folder(tmp_path, "d", text=text)
    (folder / "ood.jsonl").write_text('{"id": "o1", "query": "weather?", "kind": "far", "why": "off"}\n')
    store = tmp_path / "s.duckdb"
    ran = evalcore("dataset", "import", str(folder), "--name", "fields", store=store)
    out = evalcore("dataset", "export", "fields", "-o", str(tmp_path / "out"), store=store)
    same = all(
        (tmp_path / "out" / f).read_bytes() == (folder / f).read_bytes() for f in ("questions.jsonl", "ood.jsonl")
    )
    check(
        "round trip of a set with answer beside offsets and other fields",
        "exit 0, exit 0 · byte for byte",
        f"exit {ran.code}, exit {out.code} · {'byte for byte' if same else 'FIELDS LOST'}",
    )


@pytest.mark.slow
def test_four_imports_of_one_new_name_one_wins_the_others_name_its_version(tmp_path):
    store = tmp_path / "s.duckdb"
    folder = _folder(tmp_path, "d")
    assert evalcore("dataset", "list", store=store).code == 0
    Store(store).migrate()
    argv = ["--store", str(store), "dataset", "import", str(folder), "--name", "race"]
    # "at once": each process stops after it has read the set's versions (none yet) and before it
    # writes; all four are let go together once all four are there, so the race is real every time
    markers = [tmp_path / f"read-{i}" for i in range(4)]
    pause = "question set: versions read"
    procs = [zygote.start(argv, {**os.environ, **FAKE, "EVALCORE_TEST_PAUSE": f"{pause}={m}"}) for m in markers]
    deadline = time.monotonic() + 120
    while not all(m.exists() for m in markers) and time.monotonic() < deadline:
        time.sleep(0.02)
    assert all(m.exists() for m in markers), "not all four imports reached the point between read and write"
    for m in markers:
        m.unlink()
    done = [(p.wait(timeout=300), p.stdout.read(), p.stderr.read()) for p in procs]
    won = [d for d in done if d[0] == 0 and d[1].startswith("saved race@1 (a new set)")]
    refused = [d for d in done if d[0] == 2 and d[2].count("\n") == 1]
    named = all(
        "question set 'race' already exists: its newest version is race@1" in e and "nothing was saved" in e
        for _, _, e in refused
    )
    check(
        "four processes import one new set at once",
        "1 saved · 3 refused in one line naming race@1 · versions: race@1",
        f"{len(won)} saved · {len(refused)} refused in one line {'naming race@1' if named else 'GENERIC'} · "
        f"versions: {_sets(store)}",
        done,
    )


def _big(folder: Path, n: int) -> Path:
    folder.mkdir()
    with open(folder / "questions.jsonl", "w", encoding="utf-8") as fh:
        for i in range(n):
            item = {"id": f"q{i}", "question": f"What is item {i}?", "needle": f"needle {i}", "group": f"g{i}"}
            fh.write(json.dumps(item) + "\n")
    return folder


@pytest.mark.slow
def test_a_large_import_does_not_lock_other_readers_out(tmp_path):
    """A 30,000-question import in its own process while this process reads the store over and
    over, each read allowed 10 s for the lock (the store waits 60 s by default): before, the
    import held the lock for its whole insert, row by row, and such reads gave up."""
    n, patience = 30_000, 10.0
    store = tmp_path / "s.duckdb"
    assert evalcore("dataset", "import", str(_folder(tmp_path, "d")), "--name", "small", store=store).code == 0
    folder = _big(tmp_path / "big", n)
    proc = zygote.start(
        ["--store", str(store), "dataset", "import", str(folder), "--name", "big"], {**os.environ, **FAKE}
    )
    reads, failed = 0, []
    while proc.poll() is None:
        try:
            question_sets.versions(Store(store, lock_timeout=patience))
            reads += 1
        except Exception as exc:  # noqa: BLE001 - a failed read is what is counted
            failed.append(str(exc))
        time.sleep(0.05)
    out, err = proc.communicate()
    held = [line for line in err.splitlines() if "held for writing" in line]
    seconds = float(held[0].rsplit("writing ", 1)[1].split(" s")[0]) if held else float("inf")
    check(
        f"import of {n:,} questions while another process reads",
        f"exit 0 · every read answered within {patience:g} s · lock held under {patience:g} s",
        f"exit {proc.returncode} · "
        + (f"every read answered within {patience:g} s" if reads and not failed else f"{len(failed)} reads FAILED")
        + f" · lock held {'under' if seconds < patience else 'OVER'} {patience:g} s",
        (out, err, failed[:2]),
    )
    con = duckdb.connect(str(store), read_only=True)
    try:
        assert con.execute("SELECT count(*) FROM question_set_items WHERE name = 'big'").fetchone() == (n,)
    finally:
        con.close()


def test_a_run_name_with_a_leading_dash_is_refused(tmp_path):
    store = tmp_path / "s.duckdb"
    ran = evalcore("run", "--corpus", str(CORPUS), "--questions", str(QUESTIONS), "--name=-rf", "-q", store=store)
    runs = Store(store).runs() if store.exists() else None
    check(
        "run --name=-rf",
        "exit 2 · error: run name: -rf starts with '-' (it would read as an option) · no run stored",
        f"exit {ran.code} · {ran.line(tmp_path)} · "
        + ("no run stored" if runs is None or runs.empty else f"{len(runs)} run(s) stored"),
    )
