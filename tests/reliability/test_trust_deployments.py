"""The reliability suite, issue 33 (the service), deployments and posted traffic: bad names, a
decision the store does not hold (never saved, deleted, from another store), and bad lines
(bad times, control characters, no id, a huge query, one id twice in a post). One table row per
case; the library functions the API's routes call, on a store holding one complete run made
with the keyword embedder: a typed error or a problem naming the field, nothing stored."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import duckdb
import pytest
from test_reliability import RUN, check, evalcore
from test_trust_traffic import BAD_TIMES

from evalcore.errors import EvalcoreError, InputError, UnknownDecision
from evalcore.records import Configuration
from evalcore.service.deployments import deploy, list_deployments
from evalcore.service.ingest import MAX_QUERY, ingest_traffic
from evalcore.store import Store


@pytest.fixture(scope="module")
def decided(tmp_path_factory) -> tuple[Path, str]:
    """A store with one complete run (strategy E, the keyword embedder) and one saved decision."""
    from evalcore.read.decisions import save_decision

    path = tmp_path_factory.mktemp("deploy-base") / "evalcore.duckdb"
    ran = evalcore(*RUN, "--strategies", "E", "--retrievers", "dense", "--name", "deploy", store=path)
    assert ran.code == 0, ran.err
    store = Store(path)
    run_id = str(store.runs()["run_id"].iloc[0])
    return path, save_decision(store, run_id, Configuration("E", "dense"), 0.5, "for production", "ana")


@pytest.fixture()
def store_copy(decided, tmp_path) -> tuple[Path, str]:
    path = tmp_path / "evalcore.duckdb"
    shutil.copy(decided[0], path)
    return path, decided[1]


def _count(path: Path, table: str) -> int:
    con = duckdb.connect(str(path), read_only=True)
    try:
        return int(con.execute(f"SELECT count(*) FROM {table}").fetchone()[0])
    finally:
        con.close()


def _refusal(call) -> str:
    try:
        call()
    except EvalcoreError as exc:
        return f"{type(exc).__name__}: {exc}"
    return "accepted"


BAD_NAMES = [
    ("empty", "", "deployment name: is empty"),
    ("blank", "   ", "deployment name: is empty"),
    ("a leading dash", "-production", "starts with '-'"),
    ("ESC", "prod\x1b[31m", "U+001B"),
    ("a right-to-left override", "prod\u202euction", "U+202E"),
    ("a zero-width space", "prod\u200buction", "U+200B"),
    ("a slash", "prod/uction", "holds a slash"),
    ("101 characters", "p" * 101, "more than the 100 allowed"),
]


@pytest.mark.parametrize(("case", "name", "reason"), BAD_NAMES, ids=[c for c, _, _ in BAD_NAMES])
def test_a_bad_deployment_name_is_refused_and_nothing_is_stored(store_copy, case, name, reason):
    path, decision_id = store_copy
    refused = _refusal(lambda: deploy(path, name, decision_id, "ana"))
    named = refused.startswith("InputError") and reason in refused
    observed = f"{'InputError naming the name' if named else refused}; "
    observed += f"{_count(path, 'deployments')} deployments"
    check(f"deploy: a deployment name that is {case}", "InputError naming the name; 0 deployments", observed)


def test_an_unknown_a_deleted_and_a_foreign_decision_are_refused(store_copy, tmp_path):
    path, decision_id = store_copy
    other = tmp_path / "other.duckdb"
    shutil.copy(path, other)
    foreign = deploy(other, "production", decision_id, "ana").decision_id  # exists there
    con = duckdb.connect(str(other))
    con.execute("DELETE FROM decisions")  # the other store's copy of the decision is gone (deleted)
    con.close()
    cases = {
        "never saved": (path, "0123456789ab"),
        "deleted": (other, foreign),
        "of another store": (path, "ffffffffffff"),
        "an id with a control character": (path, "abc\x00def"),
        "an id of 65 characters": (path, "a" * 65),
    }
    observed = []
    for case, (where, wanted) in cases.items():
        refused = _refusal(lambda where=where, wanted=wanted: deploy(where, "staging", wanted, "ana"))
        observed.append(f"{case}: {refused.split(':', 1)[0]}")
    check(
        "deploy: a decision never saved, deleted, of another store, an id with NUL, a 65-character id",
        "never saved: UnknownDecision; deleted: UnknownDecision; of another store: UnknownDecision; "
        "an id with a control character: InputError; an id of 65 characters: InputError",
        "; ".join(observed),
    )
    assert [h.deployment.name for h in list_deployments(other)] == ["production"]  # the old one is kept
    assert _count(path, "deployments") == 0 and _count(path, "deployment_moves") == 0
    assert issubclass(UnknownDecision, EvalcoreError) and not issubclass(UnknownDecision, InputError)


def _line(i: int, **fields) -> bytes:
    record = {"id": f"q{i}", "query": f"good question {i}", "time": f"2026-11-02T0{i % 10}:00:00Z"}
    record.update(fields)
    return json.dumps({k: v for k, v in record.items() if v is not _GONE}).encode()


_GONE = object()

BAD_LINES = [
    ("no id", {"id": _GONE}, "id: missing"),
    ("a null id", {"id": None}, "id: missing"),
    ("an id that is a list", {"id": [1]}, "id: expected text or an integer, got a list"),
    ("an id that is true", {"id": True}, "id: expected text or an integer, got a boolean"),
    ("an empty id", {"id": ""}, "id: is empty"),
    ("an id with ESC", {"id": "q\x1b[2J"}, "id: character 2 is U+001B"),
    ("an id of 201 characters", {"id": "i" * 201}, "id: 201 characters, more than the 200 allowed"),
    ("no query", {"query": _GONE}, "query: missing"),
    ("a query that is a number", {"query": 7}, "query: expected text, got int"),
    ("a blank query", {"query": "  \n "}, "query: is empty"),
    ("a query with NUL", {"query": "what\x00is"}, "query: character 5 is U+0000"),
    ("a query with ESC", {"query": "\x1b]0;owned\x07"}, "query: character 1 is U+001B"),
    ("a huge query", {"query": "x" * (MAX_QUERY + 1)}, f"query: {MAX_QUERY + 1:,} characters, more than"),
    ("no time", {"time": _GONE}, "time: missing"),
    ("a label that is no label", {"label": "maybe"}, "label: label must be answerable or off-topic"),
]


def test_bad_lines_are_problems_naming_their_field_and_only_the_good_lines_are_stored(store_copy):
    path, decision_id = store_copy
    deploy(path, "production", decision_id, "ana")
    body = [_line(0)]
    expected = [(1, "stored")]
    for i, (_, fields, _) in enumerate(BAD_LINES, start=1):
        body.append(_line(i, **fields))
        expected.append((len(body), "problem"))
    for i, (_, value) in enumerate(BAD_TIMES, start=100):
        body.append(_line(i, time=value) if value == value else _line(i, time=float("nan")))
        expected.append((len(body), "problem"))
    raw = [b"not json", b"[1, 2]", b"", b"\xff\xfe", b'{"id": "d", "id": "e", "query": "q", "time": 0}']
    body += raw
    expected += [(len(body) - len(raw) + k + 1, "problem") for k in range(len(raw))]
    body += [_line(1), _line(0)]  # q1 was a problem line above: stored now; q0 again: a duplicate
    expected += [(len(body) - 1, "stored"), (len(body), "duplicate")]
    results = ingest_traffic(path, "production", body, "key:prod", start=False)
    got = [(r.line, r.status) for r in results]
    reasons = {r.line: r.reason or "" for r in results}
    wrong = [
        case
        for k, (case, _, reason) in enumerate(BAD_LINES, start=2)
        if not reasons[k].startswith(reason.split(" than")[0]) or len(reasons[k]) > 300
    ]
    observed = f"{'one result a line, in order' if got == expected else got}; unnamed: {wrong}; "
    observed += f"{_count(path, 'traffic_posted')} stored"
    check(
        "POST traffic (library): no id, null/list/true/empty/ESC/201-character ids, no/number/blank/NUL/ESC/"
        f"{MAX_QUERY + 1:,}-character queries, no time, a bad label, 13 bad times, not JSON, an array, an empty "
        "line, not UTF-8, a key twice, an id repeated",
        "one result a line, in order; unnamed: []; 2 stored",
        observed,
        reasons,
    )
    assert reasons[len(body)] == "id seen before, on line 1"
    assert all("\x1b" not in r and "\x00" not in r for r in reasons.values())


def test_traffic_for_a_deployment_that_does_not_exist_or_a_bad_name_stores_nothing(store_copy):
    path, _ = store_copy
    observed = [
        _refusal(lambda: ingest_traffic(path, "production", [_line(0)], None, start=False)).split(":")[0],
        _refusal(lambda: ingest_traffic(path, "prod\x1b", [_line(0)], None, start=False)).split(":")[0],
    ]
    check(
        "POST traffic (library): to no deployment; to a name with ESC",
        "UnknownDeployment, InputError; 0 stored",
        f"{', '.join(observed)}; {_count(path, 'traffic_posted')} stored",
    )


def test_server_options_are_refused_with_one_line_and_never_read_a_key_from_an_option(store_copy, tmp_path):
    """--server: no key in the environment, a URL with a password or of another scheme, with
    --store, with a command that cannot use it; traffic import's --deployment without --server
    and --run with it. Each: exit 2, one error line, nothing sent or stored."""
    path, _ = store_copy
    log = tmp_path / "log.jsonl"
    log.write_text('{"query": "q", "time": 0}\n')
    key_env = {"EVALCORE_API_KEY": "evk_" + "k" * 40}
    cases = [
        ("no key", ["--server", "http://127.0.0.1:9", "list"], {}),
        ("a password in the URL", ["--server", "http://u:evk_pw@127.0.0.1:9", "list"], key_env),
        ("ftp", ["--server", "ftp://127.0.0.1/", "list"], key_env),
        ("compare", ["--server", "http://127.0.0.1:9", "compare", "x"], key_env),
        ("--deployment alone", ["traffic", "import", str(log), "--deployment", "production"], {}),
        (
            "--run with --server",
            ["--server", "http://127.0.0.1:9", "traffic", "import", str(log), "--run", "x"],
            key_env,
        ),
    ]
    observed = []
    for case, argv, env in cases:
        ran = evalcore(*argv, env=env)
        errors = [line for line in ran.err.splitlines() if line.startswith("error: ")]
        ok = ran.code == 2 and len(errors) == 1 and "evk_" not in ran.err + ran.out
        observed.append(f"{case}: {'exit 2, one line' if ok else (ran.code, ran.err)}")
    check(
        "--server without a key, with a password in the URL, ftp, compare; traffic import --deployment alone, "
        "--run with --server",
        "; ".join(f"{c}: exit 2, one line" for c, _, _ in cases),
        "; ".join(observed),
    )
    assert _count(path, "traffic_posted") == 0
