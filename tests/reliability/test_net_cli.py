"""The standing net of the command line: every command and option of ``python -m evalcore``,
each with hostile values of its kind, and a test that fails when the parser has a command or
option the table does not list.

:data:`TABLE` maps each command path ("traffic import") to the kind of each option and
positional: ``file`` (read), ``out`` (a file to write), ``folder`` (read), ``outdir`` (a
folder to write into), ``name``, ``text``, ``time``, ``period``, ``number``, ``ref`` (a run,
a set or a job), ``choice``, ``url``, ``header``, ``flag`` (no value). :data:`HOSTILE` holds
the values of each kind. A new command or option is covered by adding it to the table.

Every invocation runs ``evalcore.cli.main.main(argv)`` inside one real ``python`` process per
sweep (a process per invocation would take an hour), in a scratch folder (relative outputs
land there), against a copy of a store holding a real run, its traffic, a decision and a
question set. Each must end with exit 0 or 2 (``gate`` and ``job`` may say 1), print no
traceback and no "unexpected" line, say exactly one ``error:`` line when it refuses (warnings
and argparse's usage lines before it are allowed), end within :data:`WALL` seconds, and, on exit 2, leave the
store's row counts as they were. The process's peak memory is bounded by :data:`PEAK_MB`.

``dashboard`` replaces its process with Streamlit (``os.execve``); in the sweep that call is
recorded instead of made, so an accepted value reads as exit 0 and a refused one as exit 2.

:data:`KNOWN_OPEN` lists invocations that fail today because of a bug another change fixes,
each with its reason; one that starts passing fails the net until it is taken off the list.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import time
from datetime import datetime
from pathlib import Path

import duckdb
import pytest
from built_once import built_once
from conftest import MINI, ROOT
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from reliability_table import record

from evalcore.cli.parser import build_parser

WALL = 30.0  # seconds one invocation may take
PEAK_MB = 2500.0  # the sweep process's peak resident memory
PYTHONPATH = os.pathsep.join([str(ROOT), str(ROOT / "tests"), str(ROOT / "tests" / "reliability")])
ENV = {
    "EVALCORE_TEST_EMBEDDER": "files.test_run_file_carry:embedder",
    "PYTHONPATH": PYTHONPATH,
    "HF_HUB_OFFLINE": "1",
    "TRANSFORMERS_OFFLINE": "1",
    "EVALCORE_MAX_JOBS": "1",
}
CORPUS, QUESTIONS, OOD = MINI / "corpus", MINI / "questions.jsonl", MINI / "ood.jsonl"
FAST = ["--strategies", "E", "--retrievers", "bm25"]

#: command path -> {option or positional: kind}
TABLE: dict[str, dict[str, str]] = {
    "": {"--store": "file", "--verbose": "flag", "--version": "flag", "--server": "url", "--insecure": "flag"},
    "demo": {
        "--strategies": "same:run",
        "--retrievers": "same:run",
        "--reranker": "same:run",
        "--model": "same:run",
        "--device": "same:run",
        "--ray": "same:run",
        "--shards": "same:run",
        "--json": "same:run",
        "--quiet": "same:run",
        "--name": "same:run",
    },
    "run": {
        "--corpus": "folder",
        "--questions": "file",
        "--ood": "file",
        "--dataset": "ref",
        "--name": "name",
        "--strategies": "name",
        "--retrievers": "name",
        "--reranker": "folder",
        "--model": "folder",
        "--device": "name",
        "--ray": "url",
        "--shards": "number",
        "--json": "flag",
        "--quiet": "flag",
    },
    "dataset import": {"folder": "folder", "--name": "name", "--note": "text"},
    "dataset export": {"ref": "ref", "--output": "outdir"},
    "dataset list": {"--json": "flag"},
    "dataset show": {"ref": "ref", "--corpus": "folder", "--json": "flag"},
    "dataset suggest": {
        "--corpus": "folder",
        "-n": "number",
        "--seed": "number",
        "--output": "out",
        "--save-as": "name",
    },
    # question-set: the new name of dataset, the same subcommands (swept under dataset above)
    "question-set import": {
        "folder": "same:dataset import",
        "--name": "same:dataset import",
        "--note": "same:dataset import",
    },
    "question-set export": {"ref": "same:dataset export", "--output": "same:dataset export"},
    "question-set list": {"--json": "same:dataset list"},
    "question-set show": {"ref": "same:dataset show", "--corpus": "same:dataset show", "--json": "same:dataset show"},
    "question-set suggest": {
        "--corpus": "same:dataset suggest",
        "-n": "same:dataset suggest",
        "--seed": "same:dataset suggest",
        "--output": "same:dataset suggest",
        "--save-as": "same:dataset suggest",
    },
    "validate": {
        "--corpus": "folder",
        "--questions": "file",
        "--ood": "file",
        "--demo": "flag",
        "--retrievers": "name",
        "--model": "folder",
        "--json": "flag",
    },
    "chunks": {"--corpus": "folder", "--demo": "flag", "--strategy": "name", "--output": "out"},
    "import-run": {
        "--corpus": "folder",
        "--questions": "file",
        "--ood": "file",
        "--demo": "flag",
        "--chunker": "name",
        "--retriever": "name",
        "--json": "flag",
        "--chunks": "file",
        "--rankings": "file",
        "--format": "choice",
        "--score": "choice",
        "--name": "name",
    },
    "run-endpoint": {
        "--corpus": "same:import-run",
        "--questions": "same:import-run",
        "--ood": "same:import-run",
        "--demo": "same:import-run",
        "--chunker": "same:import-run",
        "--retriever": "same:import-run",
        "--json": "same:import-run",
        "--url": "url",
        "--method": "choice",
        "--body": "text",
        "--header": "header",
        "--k": "number",
        "--hits": "name",
        "--chunk-id": "name",
        "--text": "name",
        "--document": "name",
        "--start": "name",
        "--end": "name",
        "--score": "name",
        "--score-kind": "choice",
        "--chunks": "file",
        "--concurrency": "number",
        "--timeout": "number",
        "--retries": "number",
        "--max-failures": "number",
        "--refresh": "flag",
        "--name": "name",
        "--quiet": "flag",
    },
    "export-formats": {"run": "ref", "--output": "outdir", "--config": "name"},
    "job": {"job_id": "ref"},
    "import-squad": {
        "input": "file",
        "--out": "outdir",
        "--ood-csv": "file",
        "--ood-column": "name",
        "--ood-kind": "choice",
        "--ood-limit": "number",
    },
    "list": {"--json": "flag"},
    "show": {"run": "ref", "--json": "flag"},
    "gate": {
        "--baseline": "ref",
        "--candidate": "ref",
        "--metric": "name",
        "--alpha": "number",
        "--no-holm": "flag",
        "--min-effect": "number",
        "--threshold-from-decision": "flag",
        "--format": "choice",
        "--junit": "out",
    },
    "threshold": {
        "run": "ref",
        "--max-bluff-rate": "number",
        "--max-lost-rate": "number",
        "--confidence": "number",
        "--splits": "number",
        "--json": "flag",
    },
    "export-run": {"run": "ref", "--output": "out"},
    "load-run": {"file": "file"},
    "compare": {"run": "ref", "run2": "ref", "--metric": "name", "--holm": "flag", "--width": "number"},
    "dashboard": {"--port": "number", "--address": "name", "--store": "file", "--headless": "flag"},
    "keys create": {"name": "name", "--scope": "name"},
    "keys list": {"--json": "flag"},
    "keys revoke": {"name": "name"},
    "traffic import": {
        "log": "file",
        "--run": "ref",
        "--deployment": "name",
        "--query-field": "name",
        "--time-field": "name",
        "--label-field": "name",
        "--format": "choice",
        "--model": "folder",
        "--reranker": "folder",
        "--header": "header",
        "--json": "flag",
        "--quiet": "flag",
    },
    "traffic check": {
        "--run": "ref",
        "--deployment": "name",
        "--period": "period",
        "--threshold": "number",
        "--max-refused-share": "number",
        "--min-refused-share": "number",
        "--fail-on-drift": "flag",
        "--include-partial": "flag",
        "--json": "flag",
    },
    "traffic sample": {
        "--deployment": "name",
        "--answered": "number",
        "--refused": "number",
        "--version": "number",
        "--period": "time",
        "--json": "flag",
    },
    "traffic forget": {"--before": "time", "--run": "ref"},
    "traffic export": {"output": "out", "--run": "ref", "--threshold": "number", "--with-text": "flag"},
}


def parser_inventory() -> dict[str, set[str]]:
    """{command path: its options (longest spelling) and positionals} from the real parser."""
    out: dict[str, set[str]] = {}

    def walk(parser: argparse.ArgumentParser, path: list[str]) -> None:
        subs = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
        own = {
            max(a.option_strings, key=len) if a.option_strings else a.dest
            for a in parser._actions
            if not isinstance(a, argparse._SubParsersAction | argparse._HelpAction)
        }
        if own or not subs:
            out[" ".join(path)] = own
        for action in subs:
            for name, sub in action.choices.items():
                walk(sub, [*path, name])

    walk(build_parser(), [])
    return out


def test_the_table_lists_every_command_and_option_of_the_parser():
    parser = parser_inventory()
    missing = sorted(
        f"{cmd or '(global)'} {opt}" for cmd, opts in parser.items() for opt in opts - set(TABLE.get(cmd, {}))
    )
    stale = sorted(
        f"{cmd or '(global)'} {opt}" for cmd, opts in TABLE.items() for opt in set(opts) - parser.get(cmd, set())
    )
    assert not missing, f"commands or options the net does not list (add them to TABLE): {missing}"
    assert not stale, f"TABLE lists what the parser no longer has: {stale}"
    assert set(TABLE) == set(parser)


def test_the_completeness_check_finds_a_new_option(monkeypatch):
    """The check above is not vacuous: an option added to a command shows up in the inventory."""
    from evalcore.cli import exports, parser

    def with_extra(sub):
        exports.add_load_run(sub)
        sub.choices["load-run"].add_argument("--brand-new", help="an option no table lists yet")

    commands = tuple(with_extra if f is exports.add_load_run else f for f in parser.COMMANDS)
    monkeypatch.setattr(parser, "COMMANDS", commands)
    inventory = parser_inventory()
    assert "--brand-new" in inventory["load-run"] and "--brand-new" not in TABLE["load-run"]
    assert set(inventory) == set(TABLE)  # the same commands: only the new option is missing


# --- hostile values -----------------------------------------------------------------------------

#: Values of each kind; a file or folder value is a name in the scratch folder made by :func:`scratch`.
HOSTILE: dict[str, list[str]] = {
    "name": ["-rf", "a\x1b[31mb", "a\u202eb", "", "x" * 10_000, "a/../b", "a\u200bb", "\u00a0"],
    "text": ["a\x00b", "a\x1b[31mb", "line one\nline two", '=HYPERLINK("http://x.test","y")', "x" * 100_000],
    "time": ["2026-13-01", "0", "9999-12-31T23:30-01:00", "nan", "", "1e400", "-62135596800"],
    "period": ["0d", "-1d", "nan", "1e400d", "99999999999w", ""],
    "number": ["nan", "inf", "1e400", "0x1p-3", "-1", "1e-300", "", "1_0"],
    "ref": ["", "-rf", "a\x1b[31mb", "x" * 10_000, "%", "net:E/dense/x", "net:../..", "'; DROP TABLE runs; --"],
    "choice": ["a\x1b[31mb", ""],
    "url": ["file:///etc/passwd", "http://[::1", "", "a\x1b[31mb", "http://169.254.169.254/latest"],
    "header": ["NoColon", "X-A: b\r\nX-B: c", ": empty", "X-A: \x1b[31m"],
    "file": ["@fifo", "@folder", "@dangling", "@empty", "@binary", "@missing"],
    "folder": ["@file", "@missing", "@fifo", "@dangling", "@emptydir", "@baddir"],
    "out": ["@wfolder", "@wdangling", "@wfifo", "a\x1b[31mb.out", "@wfile/below"],
    "outdir": ["@wfile", "@wdangling", "@wfifo", "a\x1b[31mb"],
}
#: Commands whose accepted values start real work (a run, an import): a sample of their values.
HEAVY = {"demo", "run", "import-run", "run-endpoint", "traffic import", "dataset suggest"}
SAMPLE, SAMPLE_HEAVY = 4, 2

#: (command, option, value as repr) -> why it fails today; strict: a listed row that passes fails.
KNOWN_OPEN: dict[tuple[str, str, str], str] = {}


def scratch(folder: Path) -> None:
    """The hostile files and folders the values name (``@fifo`` and so on)."""
    folder.mkdir(parents=True, exist_ok=True)
    os.mkfifo(folder / "fifo")
    (folder / "folder").mkdir()
    (folder / "dangling").symlink_to(folder / "nowhere")
    (folder / "empty").write_bytes(b"")
    (folder / "binary").write_bytes(b"\xff\xfe\x00{not utf-8 \x80\x81}\n")
    (folder / "file").write_text("a plain file\n")
    (folder / "emptydir").mkdir()
    bad = folder / "baddir"
    bad.mkdir()
    (bad / "x.md").write_bytes(b"# \xff\xfe bytes that are not UTF-8\n")
    os.mkfifo(bad / "pipe.md")
    (bad / "loop.md").symlink_to(bad / "loop.md")
    # what is written to: apart, so that a write through a link leaves the read ones as they are
    os.mkfifo(folder / "wfifo")
    (folder / "wfolder").mkdir()
    (folder / "wdangling").symlink_to(folder / "wnowhere")
    (folder / "wfile").write_text("a plain file\n")


def resolve(value: str, folder: Path) -> str:
    if value.startswith("@"):
        return str(folder / value[1:])
    return value


def base(files: dict[str, Path]) -> dict[str, tuple[list[str], dict[str, str]]]:
    """Each command's valid arguments: (options, {positional: value}); the net replaces one."""
    c, q, o = str(CORPUS), str(QUESTIONS), str(OOD)
    return {
        "": (["list"], {}),
        "demo": (["demo", *FAST, "--quiet"], {}),
        "run": (["run", "--corpus", c, "--questions", q, "--ood", o, *FAST, "--quiet", "--name", "again"], {}),
        "dataset import": (["dataset", "import", "--name", "hostile-set"], {"folder": str(MINI)}),
        "dataset export": (["dataset", "export", "--output", "exported-set"], {"ref": "faq"}),
        "dataset list": (["dataset", "list"], {}),
        "dataset show": (["dataset", "show"], {"ref": "faq"}),
        "dataset suggest": (["dataset", "suggest", "--corpus", c, "-n", "3", "--output", "cand.jsonl"], {}),
        "validate": (["validate", "--corpus", c, "--questions", q], {}),
        "chunks": (["chunks", "--corpus", c, "--strategy", "E"], {}),
        "import-run": (
            [
                "import-run",
                "--corpus",
                c,
                "--questions",
                q,
                "--chunks",
                str(files["chunks"]),
                "--rankings",
                str(files["rankings"]),
            ],
            {},
        ),
        "run-endpoint": (
            [
                "run-endpoint",
                "--corpus",
                c,
                "--questions",
                q,
                "--url",
                "http://127.0.0.1:9/search",
                "--retries",
                "0",
                "--timeout",
                "1",
                "--quiet",
            ],
            {},
        ),
        "export-formats": (["export-formats", "--output", "formats"], {"run": "net"}),
        "job": (["job"], {"job_id": "no-such-job"}),
        "import-squad": (["import-squad", "--out", "squad-out"], {"input": str(files["squad"])}),
        "list": (["list"], {}),
        "show": (["show"], {"run": "net"}),
        "gate": (["gate", "--baseline", "net", "--candidate", "net2"], {}),
        "threshold": (["threshold"], {"run": "net:E/dense"}),
        "export-run": (["export-run", "--output", "net.evalcore.zip"], {"run": "net"}),
        "load-run": (["load-run"], {"file": str(files["runfile"])}),
        "compare": (["compare"], {"run": "net", "run2": "net2"}),
        "dashboard": (["dashboard", "--headless"], {}),
        "keys create": (["keys", "create", "--scope", "read"], {"name": "net-key"}),
        "keys list": (["keys", "list"], {}),
        "keys revoke": (["keys", "revoke"], {"name": "net-key"}),
        "traffic import": (["traffic", "import", "--run", "net:E/dense", "--quiet"], {"log": str(files["log"])}),
        "traffic check": (["traffic", "check", "--run", "net:E/dense"], {}),
        "traffic sample": (["traffic", "sample", "--deployment", "production"], {}),
        "traffic forget": (["traffic", "forget", "--before", "1971-01-01", "--run", "net2"], {}),
        "traffic export": (["traffic", "export", "--run", "net:E/dense"], {"output": "traffic.csv"}),
    }


def invocation(command: str, option: str, value: str | None, bases: dict) -> list[str]:
    """The argv of ``command`` with ``option`` set to ``value`` (None: a flag, added)."""
    opts, positionals = bases[command]
    opts, positionals = list(opts), dict(positionals)
    if option.startswith("-"):
        spelled = [option] + ([] if option != "--output" else ["-o"])
        for s in spelled:
            if s in opts and value is not None:
                i = opts.index(s)
                del opts[i : i + 2]
        if command == "run" and option == "--dataset":
            for s in ("--questions", "--ood"):
                i = opts.index(s)
                del opts[i : i + 2]
        extra = [option] if value is None else [f"{option}={value}"]
        if command == "":
            return extra + opts + list(positionals.values())
        return (
            opts
            + extra
            + (["--"] if any(v.startswith("-") for v in positionals.values()) else [])
            + list(positionals.values())
        )
    positionals[option] = value or ""
    dash = ["--"] if any(v.startswith("-") for v in positionals.values()) else []
    return opts + dash + list(positionals.values())


def cases(bases: dict, folder: Path) -> list[dict]:
    """Every (command, option, value) the sweep runs; heavy commands a rotating sample."""
    out = []
    for command, options in TABLE.items():
        for n, (option, kind) in enumerate(options.items()):
            if kind.startswith("same:"):
                continue
            if kind == "flag":
                if option != "--version":
                    out.append({"command": command, "option": option, "value": None})
                continue
            values = HOSTILE[kind]
            size = SAMPLE_HEAVY if command in HEAVY else SAMPLE
            values = [values[(n + i) % len(values)] for i in range(min(size, len(values)))]
            for value in values:
                out.append({"command": command, "option": option, "value": resolve(value, folder), "shown": value})
    for case in out:
        case["argv"] = invocation(case["command"], case["option"], case["value"], bases)
    return out


# --- the sweep ----------------------------------------------------------------------------------

#: Runs the cases of the JSON file argv[1] against the store argv[2] in the folder argv[3],
#: one JSON line per case to argv[4]; argv[5]: the seconds one case may take.
DRIVER = r"""
import contextlib, io, json, logging, os, signal, sys, time, traceback, warnings
import duckdb
cases, store, folder, out_path = json.load(open(sys.argv[1])), sys.argv[2], sys.argv[3], sys.argv[4]
wall = float(sys.argv[5])
class Overtime(BaseException):
    pass
def alarm(signum, frame):
    raise Overtime()
signal.signal(signal.SIGALRM, alarm)
def no_exec(path, argv, env):  # dashboard: Streamlit would replace this process; record the call instead
    print("would start: " + " ".join(argv[2:5]))
    raise SystemExit(0)
os.execve = no_exec
from evalcore.cli.main import main
NOT_COUNTED = {"schema_migrations", "evalcore_store", "jobs", "embeddings", "responses", "extractions"}
# Every base table (but NOT_COUNTED) and whether it has a run_id column, read each time; then
# all their counts in one query (made once per set of tables), those with a run_id counted
# over complete runs only.
LISTED = (
    "SELECT t.table_name, bool_or(c.column_name = 'run_id') FROM information_schema.tables t "
    "JOIN information_schema.columns c ON c.table_schema = t.table_schema AND c.table_name = t.table_name "
    "WHERE t.table_type = 'BASE TABLE' GROUP BY t.table_name"
)
COMPLETE = "SELECT run_id FROM runs WHERE status = 'complete'"
queries = {}
def counts():
    con = duckdb.connect(store, read_only=True)
    try:
        tables = tuple(sorted((t, run) for t, run in con.execute(LISTED).fetchall() if t not in NOT_COUNTED))
        if tables not in queries:
            queries[tables] = " UNION ALL ".join(
                f"SELECT '{t}', count(*) FROM \"{t}\"" + (f" WHERE run_id IN ({COMPLETE})" if run else "")
                for t, run in tables
            )
        return dict(con.execute(queries[tables]).fetchall()) if tables else {}
    finally:
        con.close()
# The store's and its log's (inode, size, mtime, ctime), or None when one was written in the
# last half second (a write within the file clock's tick would not move its time): equal marks
# before and after a case mean that nothing was written, so the counts are the same.
def written():
    now, marks = time.time(), []
    for path in (store, store + ".wal"):
        try:
            st = os.stat(path)
        except FileNotFoundError:
            marks.append(None)
            continue
        if now - max(st.st_mtime, st.st_ctime) < 0.5:
            return None
        marks.append((st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns))
    return tuple(marks)
os.chdir(folder)
mark = written()
before = counts()
with open(out_path, "w") as sink:
    for case in cases:
        out, err = io.StringIO(), io.StringIO()
        root = logging.getLogger()
        root.handlers = []
        t0 = time.monotonic()
        signal.alarm(int(wall))
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err), warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)
            try:
                code = main(["--store", store, *case["argv"]])
            except SystemExit as exc:
                code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 2)
            except Overtime:
                code = "overtime"
            except BaseException:
                traceback.print_exc()
                code = "escaped"
            finally:
                signal.alarm(0)
        seconds = time.monotonic() - t0
        for h in root.handlers:
            h.flush()
        now = written()
        after = before if now is not None and now == mark else counts()  # not written: not read again
        mark = now
        changed = sorted(t for t in after if after[t] != before.get(t))
        before = after
        said, printed = err.getvalue(), out.getvalue()
        lines = [x for x in said.splitlines() if x.strip()]
        errors = [x for x in lines if "error:" in x]
        row = {"id": case["id"], "code": code, "out": printed[-1000:], "err": said[:300] + " ... " + said[-700:]}
        row.update(lines=len(lines), errors=len(errors), error_last=bool(lines) and lines[-1] in errors)
        row.update(traceback="Traceback (most recent call last)" in said, unexpected="unexpected" in said)
        sink.write(json.dumps({**row, "seconds": seconds, "changed": changed}) + "\n")
        sink.flush()
hwm = [x for x in open("/proc/self/status") if x.startswith("VmHWM")][0].split()[1]
with open(out_path + ".peak", "w") as fh:
    fh.write(hwm)
"""


def _ok(store: Path, *args: str) -> str:
    from conftest import cli_in_process

    done = cli_in_process(["--store", str(store), *args], ENV)
    assert done.returncode == 0, done.stderr
    return done.stdout


@pytest.fixture(scope="session")
def two_runs_net(tmp_path_factory, mini_inputs) -> dict[str, Path]:
    """A store (question set ``faq``; runs ``net`` and ``net2`` on it, strategy E x dense, bm25;
    a query log replayed into net's E/dense; a decision) and the valid files the commands read:
    chunks and rankings of the example retriever, a SQuAD file, net's run file, the log."""
    sys.path.insert(0, str(ROOT / "examples"))
    import external_bm25

    def build(folder: Path) -> None:
        store = folder / "evalcore.duckdb"
        _ok(store, "dataset", "import", str(MINI), "--name", "faq")
        for name in ("net", "net2"):
            _ok(
                store,
                "run",
                "--corpus",
                str(CORPUS),
                "--dataset",
                "faq",
                "--strategies",
                "E",
                "--retrievers",
                "dense,bm25",
                "-q",
                "--name",
                name,
            )
        questions = [json.loads(x)["question"] for x in QUESTIONS.read_text().splitlines()][:5]
        log = folder / "log.jsonl"
        log.write_text(
            "".join(
                json.dumps({"time": f"2026-11-0{i + 1}T08:00:00Z", "query": q}) + "\n" for i, q in enumerate(questions)
            )
        )
        _ok(store, "traffic", "import", str(log), "--run", "net:E/dense", "-q")
        _ok(store, "threshold", "net:E/dense")
        external_bm25.write_files(folder / "external", *mini_inputs)
        squad = folder / "squad.json"
        context = (CORPUS / sorted(p.name for p in CORPUS.iterdir())[0]).read_text()[:400]
        squad.write_text(
            json.dumps(
                {
                    "data": [
                        {
                            "title": "t",
                            "paragraphs": [
                                {
                                    "context": context,
                                    "qas": [
                                        {
                                            "id": "q1",
                                            "question": "what is it?",
                                            "answers": [{"text": context[:20], "answer_start": 0}],
                                        }
                                    ],
                                }
                            ],
                        }
                    ]
                }
            )
        )
        runfile = folder / "net.evalcore.zip"
        _ok(store, "export-run", "net", "-o", str(runfile))

    folder = built_once(tmp_path_factory, "net-store", build)  # once per session, not per worker
    store = folder / "evalcore.duckdb"
    return {
        "store": store,
        "chunks": folder / "external" / "chunks.jsonl",  # external_bm25.write_files's names
        "rankings": folder / "external" / "rankings.trec",
        "squad": folder / "squad.json",
        "runfile": folder / "net.evalcore.zip",
        "log": folder / "log.jsonl",
    }


def verdict(case: dict, result: dict) -> str:
    """``held`` or what went wrong with one invocation."""
    code = result["code"]
    allowed = {0, 2} | ({1} if case["command"] in ("gate", "job") else set())
    problems = []
    if code not in allowed:
        problems.append(f"exit {code}")
    if result["traceback"]:
        problems.append("traceback")
    if result["unexpected"]:
        problems.append("'unexpected' line")
    if code == 2 and (result["errors"] != 1 or not result["error_last"]):
        last = "last" if result["error_last"] else "not last"
        problems.append(f"{result['errors']} error lines of {result['lines']}, the error {last}")
    if result["seconds"] > WALL:
        problems.append(f"{result['seconds']:.0f} s")
    if code == 2 and result["changed"]:
        problems.append(f"refused yet stored: {', '.join(result['changed'])}")
    return "; ".join(problems) or "held"


def key(case: dict) -> tuple[str, str, str]:
    return (case["command"], case["option"], repr(case.get("shown"))[:60])


def _start(folder: Path, todo: list[dict], store: Path) -> tuple[subprocess.Popen, Path]:
    """A sweep process over ``todo`` in ``folder``, on its own copy of ``store``, in its own
    working folder: (the process, the file of its results)."""
    work = folder / "cwd"
    work.mkdir()
    shutil.copy(store, folder / "store.duckdb")
    spec, out = folder / "cases.json", folder / "results.jsonl"
    spec.write_text(json.dumps(todo))
    with open(folder / "driver.log", "wb") as log:  # a file, not a pipe: nobody reads it while both run
        proc = subprocess.Popen(
            [sys.executable, "-c", DRIVER, str(spec), str(folder / "store.duckdb"), str(work), str(out), str(WALL)],
            cwd=work,
            env={**os.environ, **ENV},
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
        )
    return proc, out


@pytest.fixture(scope="module")
def sweep(tmp_path_factory, two_runs_net) -> tuple[list[dict], dict[str, dict], float]:
    """Every case of :func:`cases`, run in one sweep process; (cases, results by id, peak MB).

    The rows of :data:`KNOWN_OPEN` (today they wait out :data:`WALL`) run in a second process
    beside it, with hostile files, a store and a folder of their own, so that their waits
    overlap the sweep instead of adding to it; the peak is the larger process's."""
    folder = tmp_path_factory.mktemp("net")
    made = {}
    for part in ("sweep", "known-open"):
        scratch(folder / part / "h")
        made[part] = cases(base(two_runs_net), folder / part / "h")
    todo = [known if key(known) in KNOWN_OPEN else case for case, known in zip(*made.values(), strict=True)]
    for i, case in enumerate(todo):
        case["id"] = i
    running = []
    for part, wanted in (("sweep", False), ("known-open", True)):
        mine = [case for case in todo if (key(case) in KNOWN_OPEN) == wanted]
        if mine:
            running.append((*_start(folder / part, mine, two_runs_net["store"]), len(mine)))
    results, peak = {}, 0.0
    for proc, out, count in running:
        try:
            proc.wait(timeout=1500)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        said = (out.parent / "driver.log").read_text(errors="replace")
        got = {r["id"]: r for r in map(json.loads, out.read_text().splitlines())} if out.exists() else {}
        assert len(got) == count, f"the sweep stopped after {len(got)} of {count}: {said[-3000:]}"
        results.update(got)
        peak = max(peak, int(Path(str(out) + ".peak").read_text()) / 1024)
    return todo, results, peak


@pytest.mark.parametrize("command", sorted(TABLE), ids=lambda c: c or "(global)")
def test_every_command_takes_hostile_values_in_its_stride(sweep, command):
    todo, results, _ = sweep
    failed, fixed = [], []
    for case in (c for c in todo if c["command"] == command):
        got = verdict(case, results[case["id"]])
        record(f"net: {command or '(global)'} {case['option']}={key(case)[2]}", "held", got if got == "held" else got)
        if key(case) in KNOWN_OPEN:
            if got == "held":
                fixed.append(key(case))
        elif got != "held":
            r = results[case["id"]]
            failed.append(f"{key(case)}: {got}: {(r['err'] or r['out']).strip()[-300:]!r}")
    assert not failed, "\n".join(failed)
    assert not fixed, f"KNOWN_OPEN rows that now hold (take them off the list): {fixed}"


def test_the_sweep_stays_within_its_memory(sweep):
    _, _, peak = sweep
    record(
        "net: peak memory of the CLI sweep",
        f"under {PEAK_MB:.0f} MB",
        f"under {PEAK_MB:.0f} MB" if peak < PEAK_MB else f"{peak:.0f} MB",
    )
    assert peak < PEAK_MB


# --- texts and times drawn by Hypothesis ---------------------------------------------------------

TIMES = st.one_of(
    st.datetimes(min_value=datetime(1, 1, 1), max_value=datetime(9999, 12, 31), timezones=st.timezones()).map(
        datetime.isoformat
    ),
    st.floats(allow_nan=True, allow_infinity=True).map(repr),
    st.integers(min_value=-(10**30), max_value=10**30).map(str),
    st.text(max_size=40),
)


def _counts(store: Path) -> dict[str, int]:
    con = duckdb.connect(str(store), read_only=True)
    try:
        tables = [r[0] for r in con.execute("SELECT table_name FROM information_schema.tables").fetchall()]
        return {t: con.execute(f'SELECT count(*) FROM "{t}"').fetchone()[0] for t in tables if t != "embeddings"}
    finally:
        con.close()


def _drawn(store: Path, argv: list[str], command: str) -> None:
    from conftest import cli_in_process

    before = _counts(store)
    t0 = time.monotonic()
    done = cli_in_process(["--store", str(store), *argv], ENV)
    lines = [x for x in done.stderr.splitlines() if x.strip()]
    errors = [x for x in lines if "error:" in x]
    result = {
        "code": done.returncode,
        "lines": len(lines),
        "errors": len(errors),
        "error_last": bool(lines) and lines[-1] in errors,
        "traceback": "Traceback (most recent call last)" in done.stderr,
        "unexpected": "unexpected" in done.stderr,
        "seconds": time.monotonic() - t0,
        "changed": [] if done.returncode != 2 or _counts(store) == before else ["some table"],
    }
    got = verdict({"command": command}, result)
    assert got == "held", f"{argv!r}: {got}: {done.stderr[-300:]!r}"


@pytest.fixture(scope="module")
def drawn_store(two_runs_net, tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("drawn") / "evalcore.duckdb"
    shutil.copy(two_runs_net["store"], path)
    return path


@settings(max_examples=12, deadline=None, suppress_health_check=list(HealthCheck), database=None)
@given(when=TIMES)
def test_drawn_times_for_traffic_forget(drawn_store, when):
    _drawn(drawn_store, ["traffic", "forget", f"--before={when}", "--run", "net2"], "traffic forget")


@settings(max_examples=12, deadline=None, suppress_health_check=list(HealthCheck), database=None)
@given(text=st.text(max_size=300))
def test_drawn_texts_for_a_question_set_note(drawn_store, text):
    _drawn(drawn_store, ["dataset", "import", str(MINI), "--name", "drawn", f"--note={text}"], "dataset import")
