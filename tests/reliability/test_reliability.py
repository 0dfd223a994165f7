"""The reliability suite: bad inputs, faults and attacks against real processes and a real
store, one table row per case (printed at the end of the run: case, expected, observed).

Each case states its expectation as the line a user would see (exit code and message)
plus what must hold of the store: not created, byte for byte unchanged, or its complete
runs unchanged. A command is the CLI's ``main()`` run in this process as ``python -m
evalcore`` runs it (see :func:`evalcore`), or a real ``python -m evalcore`` process where the
process is the point (signals, a full disk, a damaged store, job processes), forked from a
server that has imported the command's modules once (tests/zygote.py);
where the model is not what is tested they use the keyword embedder
(``EVALCORE_TEST_EMBEDDER``, see evalcore.testhooks) so that each starts in a second, and
they pause at a named stage (``EVALCORE_TEST_PAUSE``) to be signalled at that moment.
Disk-full cases use a small tmpfs, so they need root (skipped with the reason otherwise).
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import duckdb
import pytest
import zygote
from conftest import MINI, ROOT, cli_in_process
from reliability_table import record
from zips import deflated_zeros, lying_zip, make_zip

from evalcore import jobs
from evalcore.errors import InputError
from evalcore.inputs import sources as inputs
from evalcore.inputs.uploads import UploadedFile
from evalcore.store import Store
from evalcore.store.migrate import migrations

PYTHONPATH = os.pathsep.join([str(ROOT), str(ROOT / "tests" / "reliability"), str(ROOT / "tests")])
FAKE = {
    "EVALCORE_TEST_EMBEDDER": "fake:embedder",
    "PYTHONPATH": PYTHONPATH,
    "HF_HUB_OFFLINE": "1",
    "TRANSFORMERS_OFFLINE": "1",
}
CORPUS, QUESTIONS, OOD = MINI / "corpus", MINI / "questions.jsonl", MINI / "ood.jsonl"
RUN = ["run", "--corpus", str(CORPUS), "--questions", str(QUESTIONS), "--ood", str(OOD), "-q"]
OUTSIDE = "a symbolic link to a place outside the corpus folder; not followed"
SECRET = "hunter2-the-neighbours-password"


# --- helpers ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Ran:
    code: int
    out: str
    err: str

    def line(self, tmp: Path | None = None) -> str:
        """The one error line (``error: ...``), or ``-``; ``TMP`` for the test folder. A second
        error line or a traceback is shown as such, so that it never passes."""
        if "Traceback" in self.err:
            return "TRACEBACK: " + self.err.strip().splitlines()[-1]
        errors = [x for x in self.err.splitlines() if x.startswith("error: ")]
        text = " | ".join(errors) if errors else "-"
        return text.replace(str(tmp), "TMP") if tmp else text


def check(case: str, expected: str, observed: str, detail: object = None) -> None:
    """One row of the table, and the assertion."""
    record(case, expected, observed)
    assert observed == expected, detail


def evalcore(
    *args: str, store: Path | None = None, env: dict | None = None, timeout: float = 120, process: bool = False
) -> Ran:
    """``python -m evalcore [--store STORE] ARGS`` with the suite's environment (FAKE, then
    ``env``) in the repository folder: what it printed and its exit code.

    ``process=True`` runs it in a real process of its own (killed at ``timeout``), forked
    from a server that has the command's modules imported (tests/zygote.py): for cases about
    the process itself, or where a damaged file or a full disk could harm the process that
    reads it. Otherwise the same ``main()`` runs in this process, as ``python -m evalcore``
    would run it, which saves a process per case: see :func:`in_process`."""
    argv = (["--store", str(store)] if store else []) + list(args)
    if not process:
        return in_process(argv, {**FAKE, **(env or {})})
    res = zygote.run(argv, {**os.environ, **FAKE, **(env or {})}, timeout=timeout)
    return Ran(res.returncode, res.stdout, res.stderr)


def in_process(argv: list[str], env: dict[str, str]) -> Ran:
    """``evalcore.cli.main(argv)`` in this process as ``python -m evalcore`` runs it (see
    conftest.cli_in_process)."""
    done = cli_in_process(argv, env)
    return Ran(done.returncode, done.stdout, done.stderr)


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest() if path.is_file() else "absent"


def listing(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir())


def complete_runs(path: Path) -> dict:
    """Every complete run with its row counts in every result table (read only)."""
    con = duckdb.connect(str(path), read_only=True)
    try:
        out = {}
        for (run_id,) in con.execute("SELECT run_id FROM runs WHERE status = 'complete' ORDER BY run_id").fetchall():
            out[run_id] = {
                t: con.execute(f"SELECT count(*) FROM {t} WHERE run_id = ?", [run_id]).fetchone()[0]
                for t in ("documents", "strategies", "chunks", "queries", "results", "hits", "timings")
            }
        return out
    finally:
        con.close()


def kept(path: Path, before: dict) -> str:
    return "complete runs unchanged" if complete_runs(path) == before else "complete runs CHANGED"


def runs(path: Path) -> list[dict]:
    return Store(path).runs().to_dict("records")


@pytest.fixture(scope="session")
def base_store(tmp_path_factory) -> Path:
    """A store holding one complete run (strategies A,E; the keyword embedder), made by a CLI process."""
    path = tmp_path_factory.mktemp("base") / "evalcore.duckdb"
    ran = evalcore(*RUN, "--strategies", "A,E", "--name", "earlier", store=path, process=True)
    assert ran.code == 0, ran.err
    return path


@pytest.fixture()
def store_copy(base_store, tmp_path) -> Path:
    path = tmp_path / "runs" / "evalcore.duckdb"
    path.parent.mkdir()
    shutil.copy(base_store, path)
    return path


# --- corpus ---------------------------------------------------------------------------------------


def corpus_case(tmp: Path, kind: str) -> Path:
    """A corpus folder holding the mini corpus and one bad thing."""
    corpus = tmp / "corpus"
    shutil.copytree(CORPUS, corpus)
    outside = tmp / "home" / "other-user"
    outside.mkdir(parents=True)
    (outside / "notes.md").write_text(f"# Notes\n\n## Password\n\n{SECRET}\n")
    if kind == "link to a file outside":
        (corpus / "notes.md").symlink_to(outside / "notes.md")
    elif kind == "link to a folder outside":
        (corpus / "notes").symlink_to(outside)
    elif kind == "link through .. to outside":
        (corpus / "up.md").symlink_to(Path("..") / "home" / "other-user" / "notes.md")
    elif kind == "symlink loop":
        (corpus / "loop.md").symlink_to(corpus / "loop.md")
    elif kind == "folder link loop":
        (corpus / "sub").mkdir()
        (corpus / "sub" / "again").symlink_to(corpus)
    elif kind == "broken link":
        (corpus / "gone.md").symlink_to(corpus / "nowhere.md")
    elif kind == "fifo named .md":
        os.mkfifo(corpus / "pipe.md")
    return corpus


CORPUS_CASES = [
    ("link to a file outside", {"notes.md": OUTSIDE}),
    ("link to a folder outside", {"notes": OUTSIDE}),
    ("link through .. to outside", {"up.md": OUTSIDE}),
    ("symlink loop", {"loop.md": "a symbolic link loop"}),
    ("folder link loop", {"sub/again/": "a symbolic link loop (it leads back to a folder that holds it)"}),
    ("broken link", {"gone.md": "a broken symbolic link"}),
    ("fifo named .md", {"pipe.md": "not a regular file"}),
]


@pytest.mark.parametrize("kind, failed", CORPUS_CASES, ids=[c[0] for c in CORPUS_CASES])
def test_corpus_entries_that_must_not_be_followed_are_failed_documents(tmp_path, kind, failed):
    corpus = corpus_case(tmp_path, kind)
    ran = evalcore("validate", "--corpus", str(corpus), "--questions", str(QUESTIONS), "--json")
    report = json.loads(ran.out) if ran.code == 0 else {}
    got = {f["path"]: f["reason"] for f in report.get("failed", [])}
    leaked = SECRET in ran.out or str(tmp_path / "home") in ran.out + ran.err
    expected = f"exit 0 · 4 documents · failed {failed} · nothing from outside shown"
    observed = (
        f"exit {ran.code} · {report.get('documents')} documents · failed {got} · "
        f"{'OUTSIDE SHOWN' if leaked else 'nothing from outside shown'}"
    )
    check(f"corpus: {kind}", expected, observed, ran.err)


def test_corpus_unreadable_folder_is_a_failed_document(tmp_path):
    """A folder the reader may not open is one failed document, not a traceback.

    A normal user cannot open a mode-000 folder. Root can (the capability to read and search
    any folder), so under root the command runs without that capability: still root, with the
    same interpreter and the same installed packages, which a switch to another user would not
    keep when the virtual environment sits in a private folder, as CI's does.
    """
    prefix: list[str] = []
    if os.geteuid() == 0:
        if not shutil.which("setpriv"):
            pytest.skip("under root this needs setpriv, to drop the capability that reads every folder")
        caps = "-dac_override,-dac_read_search"
        prefix = ["setpriv", f"--bounding-set={caps}", f"--inh-caps={caps}"]
        probe = subprocess.run([*prefix, "true"], capture_output=True, text=True, timeout=30)
        if probe.returncode != 0:
            pytest.skip(f"this system lets root keep that capability: {probe.stderr.strip()}")
    corpus = tmp_path / "corpus"
    shutil.copytree(CORPUS, corpus)
    (corpus / "private").mkdir()
    (corpus / "private" / "x.md").write_text("# X\n")
    (corpus / "private").chmod(0o000)
    cmd = [*prefix, sys.executable, "-m", "evalcore", "validate"]
    cmd += ["--corpus", str(corpus), "--questions", str(QUESTIONS), "--json"]
    try:
        res = subprocess.run(cmd, cwd=ROOT, env=dict(os.environ, **FAKE), capture_output=True, text=True, timeout=60)
    finally:
        (corpus / "private").chmod(0o755)
    got = {f["path"]: f["reason"] for f in json.loads(res.stdout)["failed"]} if res.returncode == 0 else res.stderr
    expected = "exit 0 · failed {'private/': 'folder cannot be read (Permission denied)'}"
    observed = f"exit {res.returncode} · failed {got}"
    check("corpus: unreadable sub-folder", expected, observed)


BAD_CORPORA = [
    ("corpus folder missing", lambda t: t / "missing", "error: corpus folder not found: TMP/missing"),
    ("corpus path is a file", lambda t: QUESTIONS, f"error: corpus path is not a folder: {QUESTIONS}"),
    (
        "corpus folder empty",
        lambda t: t,
        "error: no documents (*.md, *.markdown, *.txt, *.pdf, *.html, *.htm) under TMP",
    ),
    (
        "only unreadable documents",
        lambda t: _write(t / "c", {"a.md": b"\xff\xfe", "b.md": b"", "c.txt": b"x\0y"}),
        "error: no readable documents under TMP/c (a.md: not valid UTF-8 (byte offset 0: invalid start byte); "
        "b.md: empty file; c.txt: binary file (NUL byte at offset 1))",
    ),
]


def _write(folder: Path, files: dict[str, bytes]) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    for name, data in files.items():
        (folder / name).write_bytes(data)
    return folder


@pytest.mark.parametrize("name, make, message", BAD_CORPORA, ids=[c[0] for c in BAD_CORPORA])
def test_bad_corpus_is_one_line_exit_2_and_no_store(tmp_path, name, make, message):
    store = tmp_path / "store" / "s.duckdb"
    ran = evalcore("run", "--corpus", str(make(tmp_path)), "--questions", str(QUESTIONS), "-q", store=store)
    expected = f"exit 2 · {message} · store not created"
    observed = f"exit {ran.code} · {ran.line(tmp_path)} · store {'created' if store.parent.exists() else 'not created'}"
    check(f"corpus: {name}", expected, observed)


def test_two_documents_with_one_id_no_longer_break_the_final_write(tmp_path):
    corpus = _write(
        tmp_path / "c",
        {
            "a.md": (CORPUS / "install.md").read_bytes(),
            "a.txt": b"the same id as a.md\n",
            **{p.name: p.read_bytes() for p in CORPUS.iterdir() if p.name != "install.md"},
        },
    )
    store = tmp_path / "s.duckdb"
    ran = evalcore(
        "run", "--corpus", str(corpus), "--questions", str(QUESTIONS), "--strategies", "C", "-q", store=store
    )
    docs = Store(store).query("SELECT doc_id, state FROM documents ORDER BY doc_id") if ran.code == 0 else None
    expected = "exit 0 · run complete · a.txt recorded failed beside document a"
    observed = f"exit {ran.code} · {ran.line() if ran.code else 'run complete'} · " + (
        "a.txt recorded failed beside document a"
        if docs is not None and {("a", "indexed"), ("a.txt", "failed")} <= set(map(tuple, docs.values.tolist()))
        else "not recorded"
    )
    check("corpus: a.md and a.txt (one id)", expected, observed)


# --- question files and options ---------------------------------------------------------------


def _jsonl(tmp: Path, name: str, text: str) -> Path:
    path = tmp / name
    path.write_text(text, encoding="utf-8")
    return path


GOOD = (MINI / "questions.jsonl").read_text().splitlines()


def _json_error(line: str) -> str:
    try:
        json.loads(line)
    except json.JSONDecodeError as exc:
        return f"{exc.msg} at column {exc.colno}"
    raise AssertionError("valid JSON")


BAD_INPUTS = [
    (
        "questions: invalid JSON",
        ["--questions", "{q}"],
        GOOD[0] + "\n" + GOOD[1][:-1] + "\n",
        f"error: TMP/q.jsonl:2: invalid JSON ({_json_error(GOOD[1][:-1])})",
    ),
    (
        "questions: missing field",
        ["--questions", "{q}"],
        '{"id": "a", "needle": "x"}\n',
        "error: TMP/q.jsonl:1: missing field 'question'",
    ),
    (
        "questions: not an object",
        ["--questions", "{q}"],
        '["a", "b"]\n',
        "error: TMP/q.jsonl:1: expected a JSON object, got list",
    ),
    (
        "questions: duplicate id",
        ["--questions", "{q}"],
        GOOD[0] + "\n" + GOOD[0] + "\n",
        "error: TMP/q.jsonl:2: duplicate id 'port-course' (first at TMP/q.jsonl:1)",
    ),
    (
        "questions: needle and span",
        ["--questions", "{q}"],
        '{"id": "a", "question": "x", "needle": "y", "document": "install", "start": 0, "end": 4}\n',
        "error: TMP/q.jsonl:1: give either 'needle' or 'document'/'start'/'end', not both",
    ),
    (
        "questions: span backwards",
        ["--questions", "{q}"],
        '{"id": "a", "question": "x", "document": "install", "start": 5, "end": 4}\n',
        "error: TMP/q.jsonl:1: span must satisfy 0 <= start < end, got start=5, end=4",
    ),
    ("questions: empty file", ["--questions", "{q}"], "\n\n", "error: TMP/q.jsonl: no questions"),
    ("questions: file missing", ["--questions", "{tmp}/absent.jsonl"], None, "error: TMP/absent.jsonl: file not found"),
    (
        "questions: every needle invalid",
        ["--questions", "{q}"],
        '{"id": "a", "question": "x", "needle": "words that are nowhere in the corpus"}\n',
        "error: no valid in-domain question to score (every needle is invalid); see validate",
    ),
    (
        "ood: bad kind",
        ["--questions", str(QUESTIONS), "--ood", "{q}"],
        '{"id": "o1", "query": "x", "kind": "middle"}\n',
        "error: TMP/q.jsonl:1: field 'kind' must be one of near, far, got 'middle'",
    ),
    (
        "ood: id also a question's",
        ["--questions", str(QUESTIONS), "--ood", "{q}"],
        '{"id": "port-course", "query": "x", "kind": "far"}\n',
        f"error: TMP/q.jsonl:1: duplicate id 'port-course' (first at {QUESTIONS}:1)",
    ),
    (
        "option: unknown strategy",
        ["--questions", str(QUESTIONS), "--strategies", "A,Z"],
        None,
        "error: unknown strategy 'Z': known names are A, B, C, D, E, F, G; or a name (A-F, or G = "
        "boundaries+header+intro) or a recipe "
        "BASE[+INGREDIENT...], optionally named NAME:RECIPE; BASE is blind or boundaries, INGREDIENT is header, "
        "intro, overlap, overlap=N or size=N; e.g. 'A,C,E' or 'wide:boundaries+header+intro+overlap=64+size=800'",
    ),
    (
        "option: unknown retriever",
        ["--questions", str(QUESTIONS), "--retrievers", "dense,magic"],
        None,
        "error: unknown retriever magic; known: dense, bm25, hybrid, rerank, bm25:LANG, hybrid:LANG, rerank:LANG",
    ),
    (
        "option: size=0",
        ["--questions", str(QUESTIONS), "--strategies", "x:blind+size=0"],
        None,
        "error: strategy 'blind+size=0': size must be a positive integer, got '0'",
    ),
    (
        "option: intro on blind",
        ["--questions", str(QUESTIONS), "--strategies", "x:blind+intro"],
        None,
        "error: strategy 'blind+intro': intro goes with boundaries (blind chunks everything)",
    ),
    (
        "option: rerank alone",
        ["--questions", str(QUESTIONS), "--retrievers", "rerank"],
        None,
        "error: no retriever left to run (rerank alone needs --reranker PATH)",
    ),
    (
        "option: model folder missing",
        ["--questions", str(QUESTIONS), "--model", "{tmp}/no-model"],
        None,
        "error: TMP/no-model: not a sentence-transformers model folder (no config.json)",
    ),
]


@pytest.mark.parametrize("name, args, content, message", BAD_INPUTS, ids=[c[0] for c in BAD_INPUTS])
def test_bad_question_file_or_option_is_one_line_exit_2_and_no_store(tmp_path, name, args, content, message):
    q = _jsonl(tmp_path, "q.jsonl", content) if content is not None else None
    args = [a.format(q=q, tmp=tmp_path) for a in args]
    store = tmp_path / "store" / "s.duckdb"
    env = {"EVALCORE_TEST_EMBEDDER": ""} if "--model" in args else None  # the real loader is what is tested
    ran = evalcore("run", "--corpus", str(CORPUS), *args, "-q", store=store, env=env)
    expected = f"exit 2 · {message} · store not created"
    observed = f"exit {ran.code} · {ran.line(tmp_path)} · store {'created' if store.parent.exists() else 'not created'}"
    check(name, expected, observed)


# --- stores ---------------------------------------------------------------------------------------


def _duckdb(path: Path, *sql: str) -> Path:
    con = duckdb.connect(str(path))
    for statement in sql:
        con.execute(statement)
    con.close()
    return path


def _sqlite(path: Path) -> Path:
    import sqlite3

    con = sqlite3.connect(path)
    con.execute("CREATE TABLE runs (x)")
    con.commit()
    con.close()
    return path


def _truncated(path: Path, base: Path) -> Path:
    path.write_bytes(base.read_bytes()[: base.stat().st_size // 2])
    return path


def _newer(path: Path, base: Path) -> Path:
    shutil.copy(base, path)
    future = migrations()[-1][0] + 1
    return _duckdb(path, f"INSERT INTO schema_migrations VALUES ({future}, '{future:04d}_future', now())")


NOT_OURS = "a DuckDB database that is not an evalcore run store; refusing to use it (left unchanged)"
STORES = [
    (
        "foreign DuckDB with a runs table",
        lambda p, b: _duckdb(p, "CREATE TABLE runs (id INTEGER)", "INSERT INTO runs VALUES (7)"),
        f"error: TMP/x.duckdb: {NOT_OURS}",
    ),
    ("foreign DuckDB, empty", lambda p, b: _duckdb(p), f"error: TMP/x.duckdb: {NOT_OURS}"),
    (
        "foreign DuckDB with its own schema_migrations",
        lambda p, b: _duckdb(
            p,
            "CREATE TABLE schema_migrations (version INTEGER, name VARCHAR, applied_at TIMESTAMP)",
            "INSERT INTO schema_migrations VALUES (1, 'create_users', now())",
        ),
        f"error: TMP/x.duckdb: {NOT_OURS}",
    ),
    (
        "SQLite file",
        lambda p, b: _sqlite(p),
        "error: TMP/x.duckdb: not a DuckDB database, so not an evalcore run store; left unchanged",
    ),
    (
        "text file",
        lambda p, b: (p.write_text("notes\n" * 50), p)[1],
        "error: TMP/x.duckdb: not a DuckDB database, so not an evalcore run store; left unchanged",
    ),
    (
        "zero-byte file",
        lambda p, b: (p.write_bytes(b""), p)[1],
        "error: TMP/x.duckdb: empty file, not a run store; left unchanged (move it away or choose another store)",
    ),
    ("truncated store", _truncated, "error: TMP/x.duckdb: the run store is damaged or truncated ("),
    (
        "store newer than the code",
        _newer,
        f"error: TMP/x.duckdb: this store has schema version {migrations()[-1][0] + 1}, newer than "
        f"this evalcore knows (schema version {migrations()[-1][0]}); upgrade "
        "evalcore to use it (left unchanged)",
    ),
]


@pytest.mark.parametrize("command", ["list", "run"])
@pytest.mark.parametrize("name, make, message", STORES, ids=[c[0] for c in STORES])
def test_a_store_evalcore_must_not_use_is_refused_byte_for_byte_untouched(
    tmp_path, base_store, name, make, message, command
):
    path = make(tmp_path / "x.duckdb", base_store)
    before, files = digest(path), listing(tmp_path)
    args = RUN + ["--strategies", "A"] if command == "run" else ["list"]
    ran = evalcore(*args, store=path, process=True)  # a damaged store must not harm the suite's process
    line = ran.line(tmp_path)
    if name == "truncated store":  # DuckDB names the byte counts; keep the stable part
        line = line[: len(message)]
    unchanged = digest(path) == before and listing(tmp_path) == files
    expected = f"exit 2 · {message} · file and folder byte for byte unchanged"
    observed = f"exit {ran.code} · {line} · file and folder {'byte for byte unchanged' if unchanged else 'CHANGED'}"
    check(f"store ({command}): {name}", expected, observed)


@pytest.mark.parametrize("command", ["list", "run"])
@pytest.mark.parametrize(
    "name, path, message",
    [
        ("parent is a file", "afile/s.duckdb", "error: TMP/afile/s.duckdb: TMP/afile is a file, not a folder"),
        ("store is a folder", "adir", "error: TMP/adir: is a folder, not a run store file"),
        ("store is a FIFO", "apipe", "error: TMP/apipe: is a FIFO (named pipe), not a run store file"),
        ("store is a link to a FIFO", "alink", "error: TMP/alink: is a FIFO (named pipe), not a run store file"),
        (
            "store's log is a FIFO",
            "b.duckdb",
            "error: TMP/b.duckdb.wal: is a FIFO (named pipe), not a run store's log file",
        ),
    ],
)
def test_a_store_path_that_cannot_be_a_store_is_one_line(tmp_path, base_store, name, path, message, command):
    """Refused at once: a FIFO is never opened for a blocking read (it waited for a writer)."""
    (tmp_path / "afile").write_text("x")
    (tmp_path / "adir").mkdir()
    os.mkfifo(tmp_path / "apipe")
    (tmp_path / "alink").symlink_to(tmp_path / "apipe")
    shutil.copy(base_store, tmp_path / "b.duckdb")
    os.mkfifo(tmp_path / "b.duckdb.wal")
    files = listing(tmp_path)
    args = RUN + ["--strategies", "A"] if command == "run" else ["list"]
    ran = evalcore(*args, store=tmp_path / path, process=True, timeout=30)  # a FIFO would hang this process
    expected = f"exit 2 · {message} · nothing written"
    observed = (
        f"exit {ran.code} · {ran.line(tmp_path)} · {'nothing written' if listing(tmp_path) == files else 'WRITTEN'}"
    )
    check(f"store ({command}): {name}", expected, observed)


def test_a_store_from_before_the_marker_is_upgraded_with_its_runs(tmp_path, base_store):
    path = tmp_path / "old.duckdb"
    con = duckdb.connect(str(path))
    con.execute(
        "CREATE TABLE schema_migrations (version INTEGER PRIMARY KEY, name VARCHAR NOT NULL, "
        "applied_at TIMESTAMP NOT NULL)"
    )
    for number, name, sql in migrations()[:2]:  # what 964372c made
        con.execute(sql)
        con.execute("INSERT INTO schema_migrations VALUES (?, ?, now())", [number, name])
    con.execute("INSERT INTO runs (run_id, name, status, created_at) VALUES ('old-run', 'kept', 'complete', now())")
    con.close()
    ran = evalcore("list", store=path)
    versions = Store(path).query("SELECT max(version) AS v FROM schema_migrations")["v"][0]
    expected = f"exit 0 · old-run listed · schema version {migrations()[-1][0]}"
    observed = (
        f"exit {ran.code} · {'old-run listed' if 'old-run' in ran.out else 'missing'} · schema version {versions}"
    )
    check("store: from before the marker (0001, 0002)", expected, observed)


def test_reading_a_missing_store_creates_nothing(tmp_path):
    ran = evalcore("list", store=tmp_path / "runs" / "s.duckdb")
    expected = "exit 0 · no runs yet; make one with: python -m evalcore demo · nothing created"
    observed = f"exit {ran.code} · {ran.out.strip()} · {'nothing created' if not listing(tmp_path) else 'CREATED'}"
    check("store: list on a store that does not exist", expected, observed)


# --- uploads ----------------------------------------------------------------------------------------


def _mini_files() -> list[UploadedFile]:
    return [UploadedFile(p.name, p.read_bytes()) for p in sorted(CORPUS.iterdir())]


def _encrypted_zip() -> bytes:
    data = bytearray(make_zip({"a.md": b"# A\n"}))
    data[6] |= 1  # local header: encrypted
    i = data.find(b"PK\x01\x02")
    data[i + 8] |= 1  # central directory: encrypted
    return bytes(data)


UPLOADS = [
    (
        "zip slip ../",
        lambda: make_zip({"ok.md": b"# Ok\n", "../evil.md": b"x"}),
        "corpus.zip: entry '../evil.md' escapes the archive folder ('..'); refusing the zip",
    ),
    (
        "zip slip nested ..",
        lambda: make_zip({"ok.md": b"# Ok\n", "d/../../evil.md": b"x"}),
        "corpus.zip: entry 'd/../../evil.md' escapes the archive folder ('..'); refusing the zip",
    ),
    (
        "zip slip backslash",
        lambda: make_zip({"ok.md": b"# Ok\n", "..\\evil.md": b"x"}),
        "corpus.zip: entry '..\\\\evil.md' escapes the archive folder ('..'); refusing the zip",
    ),
    (
        "zip absolute path",
        lambda: make_zip({"ok.md": b"# Ok\n", "/etc/evil.md": b"x"}),
        "corpus.zip: entry '/etc/evil.md' has an absolute path; refusing the zip",
    ),
    (
        "zip drive letter",
        lambda: make_zip({"ok.md": b"# Ok\n", "C:/evil.md": b"x"}),
        "corpus.zip: entry 'C:/evil.md' has an absolute path; refusing the zip",
    ),
    (
        "zip symlink entry",
        lambda: make_zip({"ok.md": b"# Ok\n"}, symlinks=("link.md",)),
        "corpus.zip: entry 'link.md' is a symbolic link; refusing the zip",
    ),
    (
        "zip with lying headers (100 B declared, 64 MiB inside)",
        lambda: lying_zip(["a.md", "b.md"], deflated_zeros(64 << 20)),
        "corpus.zip: entry 'a.md' expands beyond the 100 bytes its header declares; "
        "refusing the zip (a possible zip bomb)",
    ),
    (
        "zip bomb by ratio (honest headers)",
        lambda: make_zip({"big.md": bytes(30 << 20)}),
        "corpus.zip: expands to 30.0 MB from {size:,} bytes ({ratio:.0f} times), over the limit of 100 times; "
        "refusing a possible zip bomb",
    ),
    ("zip encrypted entry", _encrypted_zip, "corpus.zip: entry 'a.md' is encrypted; refusing the zip"),
    (
        "not a zip",
        lambda: b"PK\x03\x04 not really a zip",
        "corpus.zip: not a readable zip file (File is not a zip file)",
    ),
]


@pytest.mark.parametrize("name, make, message", UPLOADS, ids=[c[0] for c in UPLOADS])
def test_a_bad_upload_is_refused_and_changes_nothing(tmp_path, name, make, message):
    store = Store(tmp_path / "runs" / "evalcore.duckdb")
    store.migrate()
    before = (digest(store.path), listing(store.path.parent))
    data = make()
    message = message.format(size=len(data), ratio=(30 << 20) / len(data))
    try:
        jobs.prepare_upload(
            store,
            [UploadedFile("corpus.zip", data)],
            UploadedFile("questions.jsonl", QUESTIONS.read_bytes()),
            None,
            "A",
            "dense",
        )
        got = "accepted"
    except InputError as exc:
        got = str(exc)[: len(message)]
    unchanged = (digest(store.path), listing(store.path.parent)) == before and not (tmp_path / "evil.md").exists()
    expected = f"refused · {message} · store and uploads folder unchanged"
    observed = (
        f"{'refused' if got != 'accepted' else 'ACCEPTED'} · {got} · store and uploads folder "
        f"{'unchanged' if unchanged else 'CHANGED'}"
    )
    check(f"upload: {name}", expected, observed)


# --- server folders (the dashboard's "Folder on the server") -----------------------------------


@pytest.fixture()
def data_root(tmp_path, monkeypatch) -> Path:
    root = tmp_path / "data"
    shutil.copytree(MINI, root / "mini")
    (tmp_path / "private").mkdir()
    (tmp_path / "private" / "notes.md").write_text(f"# Notes\n\n## P\n\n{SECRET}\n")
    (root / "escape").symlink_to(tmp_path / "private")
    monkeypatch.setenv(inputs.DATA_ROOTS_ENV, str(root))
    return root


SERVER = [
    ("an existing file outside the roots", "/etc/shadow", "questions"),
    ("a path that does not exist", "/nonexistent/q.jsonl", "questions"),
    ("a folder outside the roots", "/etc", "corpus"),
    (".. out of a root", "{root}/mini/../../private", "corpus"),
    ("a symlink in a root leading out", "{root}/escape", "corpus"),
    ("a relative path climbing out", "../../../etc/passwd", "questions"),
]


@pytest.mark.parametrize("name, raw, field", SERVER, ids=[c[0] for c in SERVER])
def test_a_server_path_outside_the_data_roots_gets_one_message(data_root, name, raw, field):
    raw = raw.format(root=data_root)
    corpus = raw if field == "corpus" else str(data_root / "mini" / "corpus")
    questions = raw if field == "questions" else str(data_root / "mini" / "questions.jsonl")
    try:
        jobs.prepare_paths(corpus, questions, None, "A", "dense")
        got = "accepted"
    except InputError as exc:
        got = str(exc).replace(str(data_root), "ROOT")
    what = "corpus folder" if field == "corpus" else "questions file"
    expected = f"refused · {what}: not inside the folders this server allows (ROOT)"
    observed = f"{'refused' if got != 'accepted' else 'ACCEPTED'} · {got}"
    check(f"server folder: {name}", expected, observed)


def test_no_data_roots_means_no_server_folders(monkeypatch):
    monkeypatch.delenv(inputs.DATA_ROOTS_ENV, raising=False)
    try:
        jobs.prepare_paths(str(CORPUS), str(QUESTIONS), None, "A", "dense")
        got = "accepted"
    except InputError as exc:
        got = str(exc)
    expected = (
        "refused · corpus folder: folders on the server are off (the operator has not set "
        "EVALCORE_DATA_ROOTS; see docs/DEPLOY.md); upload the files instead"
    )
    observed = f"{'refused' if got != 'accepted' else 'ACCEPTED'} · {got}"
    check("server folder: no data roots configured", expected, observed)


# --- signals ----------------------------------------------------------------------------------------


STAGES = ["query embedding", "A: chunking", "A: embedding", "E: retrieval and scoring", "writing results"]
SIGNALS = [signal.SIGTERM, signal.SIGINT, signal.SIGKILL]


def wait_for(path: Path, proc: zygote.Forked, timeout: float = 90.0) -> None:
    deadline = time.monotonic() + timeout
    while not path.exists():
        if proc.poll() is not None:
            raise AssertionError(f"the process ended ({proc.returncode}) before the stage: {proc.stderr.read()}")
        if time.monotonic() > deadline:
            raise AssertionError("the process never reached the stage")
        time.sleep(0.02)


def signalled(argv: list[str], stage: str, sig: int, tmp: Path, env: dict | None = None) -> Ran:
    """``python -m evalcore ARGV`` (a process of its own, forked by tests/zygote.py) paused at
    ``stage``, then sent ``sig``: its exit code and what it printed."""
    marker = tmp / "paused"
    proc = zygote.start(argv, {**os.environ, **FAKE, "EVALCORE_TEST_PAUSE": f"{stage}={marker}", **(env or {})})
    wait_for(marker, proc)
    proc.send_signal(sig)
    out, err = proc.communicate(timeout=60)
    return Ran(proc.returncode, out, err)


def expected_end(sig: int, stage: str) -> tuple[int, str, str]:
    """(exit code, error line, recorded reason) a run interrupted at ``stage`` must show."""
    name = signal.Signals(sig).name
    if sig == signal.SIGKILL:
        return -9, "-", "process {pid} ended before the run completed (killed or crashed)"
    return (
        128 + sig,
        f"error: interrupted by {name} during {stage}; run {{run}} marked failed",
        f"interrupted by {name} during {stage}",
    )


@pytest.mark.slow
@pytest.mark.parametrize("sig", SIGNALS, ids=[s.name for s in SIGNALS])
@pytest.mark.parametrize("stage", STAGES)
def test_a_signal_at_any_stage_ends_the_run_failed_with_its_reason(store_copy, tmp_path, stage, sig):
    before = complete_runs(store_copy)
    ran = signalled(
        ["--store", str(store_copy), *RUN, "--strategies", "A,E"],
        stage,
        sig,
        tmp_path,
    )
    new = [r for r in runs(store_copy) if r["run_id"] not in before]  # Store.runs() reaps a killed one
    run = new[0] if len(new) == 1 else {"run_id": "?", "status": f"{len(new)} new runs", "reason": "", "pid": 0}
    code, line, reason = expected_end(sig, stage)
    partial = sum(
        Store(store_copy).query(f"SELECT count(*) AS n FROM {t} WHERE run_id = ?", [run["run_id"]])["n"][0]
        for t in ("results", "hits", "chunks", "documents")
    )
    expected = (
        f"exit {code} · {line.format(run=run['run_id'])} · run failed: "
        f"{reason.format(pid=run['pid'])} · 0 partial rows · complete runs unchanged"
    )
    observed = (
        f"exit {ran.code} · {ran.line()} · run {run['status']}: {run['reason']} · {partial} partial rows · "
        f"{kept(store_copy, before)}"
    )
    check(f"signal: {sig.name} at {stage} (CLI)", expected, observed)


def _queued_job(store_path: Path, strategies: str = "A,E") -> str:
    prepared = jobs.prepare_paths(str(CORPUS), str(QUESTIONS), str(OOD), strategies, "dense,bm25,hybrid")
    return jobs.submit(Store(store_path), prepared, "job", start=False)


@pytest.mark.slow
@pytest.mark.parametrize(
    "sig, stage",
    [
        (signal.SIGTERM, "A: embedding"),
        (signal.SIGINT, "E: retrieval and scoring"),
        (signal.SIGTERM, "writing results"),
        (signal.SIGKILL, "writing results"),
    ],
    ids=["SIGTERM-embedding", "SIGINT-retrieval", "SIGTERM-final-write", "SIGKILL-final-write"],
)
def test_a_signal_to_a_job_process_ends_job_and_run_with_the_reason(store_copy, tmp_path, monkeypatch, sig, stage):
    monkeypatch.setenv(inputs.DATA_ROOTS_ENV, str(MINI))
    before = complete_runs(store_copy)
    job_id = _queued_job(store_copy)
    ran = signalled(
        ["--store", str(store_copy), "job", job_id],
        stage,
        sig,
        tmp_path,
        env={inputs.DATA_ROOTS_ENV: str(MINI)},
    )
    store = Store(store_copy)
    row, run = jobs.job(store, job_id), store.run(job_id)
    code, line, reason = expected_end(sig, stage)
    job_reason = (
        "process {pid} ended before the job finished (killed or crashed)"
        if sig == signal.SIGKILL
        else f"interrupted by {sig.name} during {stage}"
    )
    run_reason = job_reason if sig == signal.SIGKILL else reason
    expected = (
        f"exit {code} · {line.format(run=job_id)} · job failed: {job_reason.format(pid=row['pid'])} · "
        f"run failed: {run_reason.format(pid=row['pid'])} · complete runs unchanged"
    )
    observed = (
        f"exit {ran.code} · {ran.line()} · job {row['status']}: {row['reason']} · run {run.status}: "
        f"{run.reason} · {kept(store_copy, before)}"
    )
    check(f"signal: {sig.name} at {stage} (job process)", expected, observed)


def test_a_signal_to_a_queued_job_ends_it_with_the_reason(store_copy, tmp_path, monkeypatch):
    monkeypatch.setenv(inputs.DATA_ROOTS_ENV, str(MINI))
    store = Store(store_copy)
    busy = _queued_job(store_copy)
    with store.connect() as con:  # a running job holds the one slot: this test's own process
        con.execute(
            "UPDATE jobs SET status = 'running', pid = ?, host = (SELECT host FROM runs LIMIT 1) WHERE job_id = ?",
            [os.getpid(), busy],
        )
    time.sleep(1.1)  # queue order is by creation time
    waiting = _queued_job(store_copy)
    proc = zygote.start(["--store", str(store_copy), "job", waiting], dict(os.environ, **FAKE))
    deadline = time.monotonic() + 60
    while not str(jobs.job(store, waiting)["stage"] or "").startswith("waiting"):
        assert time.monotonic() < deadline and proc.poll() is None, proc.stderr.read() if proc.poll() else "no wait"
        time.sleep(0.05)
    proc.send_signal(signal.SIGTERM)
    out, err = proc.communicate(timeout=60)
    row = jobs.job(store, waiting)
    expected = "exit 143 · error: interrupted by SIGTERM · job failed: interrupted by SIGTERM · no run"
    observed = (
        f"exit {proc.returncode} · {Ran(proc.returncode, out, err).line()} · job {row['status']}: "
        f"{row['reason']} · {'no run' if pd_isna(row['run_status']) else 'a run: ' + row['run_status']}"
    )
    check("signal: SIGTERM to a job waiting for a slot", expected, observed)


def pd_isna(value) -> bool:
    import pandas as pd

    return bool(pd.isna(value))


def test_a_job_that_fails_on_its_own_configuration_records_its_reason(store_copy, monkeypatch):
    monkeypatch.setenv(inputs.DATA_ROOTS_ENV, str(MINI))
    job_id = _queued_job(store_copy, "A")
    ran = evalcore("job", job_id, store=store_copy, env={"EVALCORE_MAX_JOBS": "zero"}, process=True)
    row = jobs.job(Store(store_copy), job_id)
    message = "EVALCORE_MAX_JOBS must be a positive integer, got 'zero'"
    expected = f"exit 2 · error: {message} · job failed: {message}"
    observed = f"exit {ran.code} · {ran.line()} · job {row['status']}: {row['reason']}"
    check("job: EVALCORE_MAX_JOBS=zero", expected, observed)


# --- concurrency --------------------------------------------------------------------------------


@pytest.mark.slow
def test_a_cli_run_a_dashboard_job_and_a_second_cli_run_on_one_store(tmp_path, monkeypatch):
    monkeypatch.setenv(inputs.DATA_ROOTS_ENV, str(MINI))
    for key, value in FAKE.items():
        monkeypatch.setenv(key, value)  # the job's process inherits them
    path = tmp_path / "evalcore.duckdb"
    strategies = "A,B,C,D,E,F,G:boundaries+header+intro"
    argv = ["--store", str(path), *RUN, "--strategies", strategies]
    first = zygote.start([*argv, "--name", "cli-1"])
    job_id = jobs.submit(
        Store(path),
        jobs.prepare_paths(str(CORPUS), str(QUESTIONS), str(OOD), strategies, "dense,bm25,hybrid"),
        "dashboard",
    )
    second = zygote.start([*argv, "--name", "cli-2"])
    codes = [p.wait(timeout=180) for p in (first, second)]
    deadline = time.monotonic() + 180
    while jobs.job(Store(path), job_id)["status"] in jobs.ACTIVE:
        assert time.monotonic() < deadline
        time.sleep(0.1)
    done = complete_runs(path)
    counts = {tuple(sorted(c.items())) for c in done.values()}
    statuses = sorted(r["status"] for r in runs(path))
    expected = "exits [0, 0] · job complete · 3 runs complete · identical row counts"
    observed = (
        f"exits {codes} · job {jobs.job(Store(path), job_id)['status']} · "
        f"{statuses.count('complete')} runs complete · "
        f"{'identical row counts' if len(counts) == 1 else f'{len(counts)} different row counts'}"
    )
    check(
        "concurrency: CLI run + dashboard job + second CLI run",
        expected,
        observed,
        [p.stderr.read() for p in (first, second)],
    )


# --- disk full (a small tmpfs) ------------------------------------------------------------------


@pytest.fixture()
def small_disk(tmp_path):
    """A 16 MB tmpfs at tmp_path/disk, unmounted afterwards."""
    if os.geteuid() != 0:
        pytest.skip("disk-full cases mount a small tmpfs, which needs root")
    disk = tmp_path / "disk"
    disk.mkdir()
    res = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=16m", "tmpfs", str(disk)], capture_output=True, text=True)
    if res.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {res.stderr.strip()}")
    try:
        yield disk
    finally:
        subprocess.run(["umount", "-l", str(disk)], check=False)


def fill(disk: Path, leave: int = 0) -> Path:
    """Fill ``disk`` up to ``leave`` free bytes with one file; returns it."""
    filler = disk / "filler"
    free = shutil.disk_usage(disk).free - leave
    with open(filler, "ab") as fh:
        try:
            while free > 0:
                n = min(free, 1 << 20)
                fh.write(bytes(n))
                free -= n
            fh.flush()
        except OSError:
            pass
    return filler


@pytest.mark.slow
def test_disk_full_at_store_creation_leaves_nothing_and_the_next_run_works(small_disk):
    filler = fill(small_disk)
    store = small_disk / "runs" / "evalcore.duckdb"
    ran = evalcore(*RUN, "--strategies", "A", store=store, process=True)
    left = [p.name for p in small_disk.rglob("*") if p != filler and p.is_file()]
    filler.unlink()
    again = evalcore(*RUN, "--strategies", "A", store=store, process=True)
    expected = (
        "exit 2 · error: TMP/disk/runs/evalcore.duckdb: cannot create the run store: the disk is full "
        "(No space left on device) · nothing left behind · after freeing space: exit 0"
    )
    observed = (
        f"exit {ran.code} · {ran.line(small_disk.parent)} · "
        f"{'nothing left behind' if not left else f'left {left}'} · after freeing space: exit {again.code}"
    )
    check("disk full: creating a store", expected, observed)


@pytest.mark.slow
def test_disk_full_during_the_final_write_then_reads_still_work(small_disk, base_store):
    store = small_disk / "evalcore.duckdb"
    shutil.copy(base_store, store)
    before = complete_runs(store)
    filler = fill(small_disk, leave=400 * 1024)  # room for the run's row and its mark, not its results
    # its vectors are cached: only the final write is big
    ran = evalcore(*RUN, "--strategies", "A,E", store=store, process=True)
    fill(small_disk)  # now completely full
    listed = evalcore("list", store=store, process=True)
    shown = evalcore("show", next(iter(before)), store=store, process=True)
    from evalcore.read.runs import runs_overview
    from evalcore.read.summary import summary_table

    try:
        dashboard = len(runs_overview(Store(store))), len(summary_table(Store(store), next(iter(before))))
    except Exception as exc:  # noqa: BLE001 - shown in the table
        dashboard = f"{type(exc).__name__}: {exc}"
    filler.unlink()
    failed = [r for r in runs(store) if r["run_id"] not in before]
    run = failed[0] if failed else {"run_id": "?", "status": "none", "reason": ""}
    message = (
        f"error: run {run['run_id']} was not stored: TMP/disk/evalcore.duckdb: cannot write the run store: "
        "the disk is full (No space left on device)"
    )
    expected = (
        f"exit 2 · {message} · run failed: {message.removeprefix('error: ')} · complete runs unchanged · "
        "on the full disk: list exit 0, show exit 0, dashboard reads (2, 6)"
    )
    observed = (
        f"exit {ran.code} · {ran.line(small_disk.parent)} · run {run['status']}: "
        f"{str(run['reason']).replace(str(small_disk.parent), 'TMP')} · {kept(store, before)} · on the full disk: "
        f"list exit {listed.code}, show exit {shown.code}, dashboard reads {dashboard}"
    )
    check("disk full: during the final write, then list/show/dashboard", expected, observed, ran.err)
