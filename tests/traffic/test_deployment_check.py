"""``traffic check --deployment NAME`` (issue 46, "Production is judged per deployment"): a
deployment's current version is judged on the lines that deployment posted while that version
was deployed, at the version's decision (t and configuration), and only on the periods that
have ended unless ``--include-partial``.

The store holds one run of E/dense made by the real CLI with a keyword embedder
(tests/traffic/words.py); the decisions, the deployments and their moves are made by the
library the API calls, the lines are posted with :func:`evalcore.service.ingest.ingest_traffic`
and scored by the replay the job runner runs (:func:`evalcore.traffic.posted.replay_posted`, here
in this process). Every figure is checked against a computation from the stored hits and scipy,
made here.

The deployment's moves are stamped with the real clock, so the lines of the current version are
posted at times after it (in the next days, in the future), and the library's check is asked as
of a chosen ``now``; the CLI rows (real ``python -m evalcore`` processes, the real clock) read
their expectations off the check's own ``as_of``.
"""

from __future__ import annotations

import importlib
import json
import math
import os
import shutil
import subprocess
import sys
import time
from datetime import UTC, datetime, timedelta

import numpy as np
import pytest
from conftest import MINI, ROOT
from scipy.stats import ks_2samp

from evalcore.cli import main
from evalcore.errors import InputError, UnknownDeployment
from evalcore.read.decisions import save_decision
from evalcore.records import Configuration
from evalcore.service.deployments import deploy
from evalcore.service.ingest import ingest_traffic
from evalcore.store import Store
from evalcore.traffic.check import run_check, run_deployment_check
from evalcore.traffic.posted import replay_posted

E_DENSE = Configuration("E", "dense")
OOD = ROOT / "tests" / "fixtures" / "gate" / "ood.jsonl"
DAY = timedelta(days=1)
EMBEDDER = "traffic.words:embedder"  # tests/traffic/words.py: gate values spread over many distances


def _texts() -> tuple[list[str], list[str]]:
    answerable = [json.loads(x)["question"] for x in (MINI / "questions.jsonl").read_text().splitlines()]
    off = [json.loads(x)["query"] for x in OOD.read_text().splitlines()]
    return answerable, off


def _stamp(at: datetime) -> str:
    return at.isoformat(timespec="microseconds") + "Z"


def _post(store, name: str, prefix: str, rows: list[tuple[datetime, str]]) -> None:
    """Post ``rows`` (time, text) to deployment ``name`` and replay them as the job runner does."""
    lines = [json.dumps({"id": f"{prefix}-{i}", "query": q, "time": _stamp(at)}) for i, (at, q) in enumerate(rows)]
    results = ingest_traffic(store, name, lines, "key:test", start=False)
    assert [r.status for r in results] == ["stored"] * len(rows), [r.reason for r in results if r.reason]
    assert replay_posted(store, name) is not None


@pytest.fixture(scope="module")
def deployed(tmp_path_factory):
    """A store where ``production`` moved from decision A to decision B (version 2), a newer
    decision C was saved and not deployed, and ``staging`` (decision A) posted lines too:

    - production, version 1: every question once, asked between its two moves;
    - production, version 2: day 0 (the day of the move, after it): the questions, day 1: the
      questions and the off-topic queries, day 2: the off-topic queries twice, day 3: the
      off-topic queries; the lines of a day 20 minutes apart;
    - staging: the off-topic queries on days 1 and 2.
    """
    path = tmp_path_factory.mktemp("deployment-check") / "evalcore.duckdb"
    answerable, off = _texts()
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("EVALCORE_TEST_EMBEDDER", EMBEDDER)
        argv = ["--store", str(path), "run", "--corpus", str(MINI / "corpus"), "--questions"]
        argv += [str(MINI / "questions.jsonl"), "--ood", str(OOD), "--strategies", "E", "--retrievers", "dense"]
        assert main([*argv, "--name", "base", "-q"]) == 0
        store = Store(path)
        run_id = str(store.runs()["run_id"].iloc[0])
        reference = _reference(store, run_id)
        t_a, t_b, t_c = (float(np.quantile(reference, q)) for q in (0.8, 0.5, 0.2))
        a = save_decision(store, run_id, E_DENSE, t_a, "A", author="ana@example.org")
        b = save_decision(store, run_id, E_DENSE, t_b, "B", author="ana@example.org")
        v1 = deploy(store, "production", a, "ana@example.org")
        staging = deploy(store, "staging", a, "ana@example.org")
        between = [(v1.deployed_at + timedelta(milliseconds=5 * (i + 1)), q) for i, q in enumerate(answerable)]
        _post(store, "production", "v1", between)
        wait = v1.deployed_at + timedelta(milliseconds=400) - datetime.now(UTC).replace(tzinfo=None)
        time.sleep(max(0.0, wait.total_seconds()))  # the move comes after every version-1 line
        v2 = deploy(store, "production", b, "ben@example.org")
        c = save_decision(store, run_id, E_DENSE, t_c, "C, newer, not deployed", author="ana@example.org")
        day0 = datetime(v2.deployed_at.year, v2.deployed_at.month, v2.deployed_at.day)
        after = v2.deployed_at + timedelta(seconds=1)
        # day 0 starts at the move (not before it), so its lines sit between the move and the day's end
        step0 = (day0 + DAY - after) / (len(answerable) + 1)
        rows = [(after + i * step0, q) for i, q in enumerate(answerable)]
        rows += [(day0 + DAY + timedelta(minutes=20 * i), q) for i, q in enumerate(answerable + off)]
        rows += [(day0 + 2 * DAY + timedelta(minutes=20 * i), q) for i, q in enumerate(off + off)]
        rows += [(day0 + 3 * DAY + timedelta(minutes=20 * i), q) for i, q in enumerate(off)]
        _post(store, "production", "v2", rows)
        staged = [(day0 + d * DAY + timedelta(minutes=7 * i), q) for d in (1, 2) for i, q in enumerate(off)]
        _post(store, "staging", "s", staged)
    return {
        "path": path,
        "run_id": run_id,
        "decisions": {"A": (a, t_a), "B": (b, t_b), "C": (c, t_c)},
        "v2": v2,
        "staging": staging,
        "day0": day0,
        "rows": rows,
    }


def _reference(store, run_id) -> np.ndarray:
    """The evaluation's in-domain + off-topic gate values of E/dense, from the stored hits."""
    hits = store.query(
        "SELECT h.query_id, h.distance FROM hits h JOIN queries q USING (run_id, query_id) "
        "WHERE h.run_id = ? AND h.strategy = 'E' AND h.retriever = 'dense' AND h.rank <= 4 AND q.valid",
        [run_id],
    )
    out: dict[str, float] = {}
    for q, d in hits.itertuples(index=False):
        out[q] = min(out.get(q, math.inf), float(d))
    return np.array(sorted(out.values()))


def _gate_of(store, run_id) -> dict[str, float]:
    """Each stored traffic text's gate value, from its stored top-4 hits (NaN: no hit)."""
    hits = store.query(
        "SELECT text_hash, distance FROM traffic_hits WHERE run_id = ? AND strategy = 'E' AND retriever = 'dense' "
        "AND rank <= 4",
        [run_id],
    )
    out: dict[str, float] = {}
    for h, d in hits.itertuples(index=False):
        out[h] = min(out.get(h, math.inf), float(d))
    return out


def _expected(deployed, t: float) -> list[dict]:
    """Production's version-2 lines per day (0..3), from the posted rows and the stored hits:
    queries, refused at ``t``, the gate values."""
    from evalcore.embedding.embedder import text_hash

    store = Store(deployed["path"])
    gate = _gate_of(store, deployed["run_id"])
    days: list[dict] = [{"queries": 0, "refused": 0, "values": []} for _ in range(4)]
    for at, q in deployed["rows"]:
        d = days[(at - deployed["day0"]) // DAY]
        g = gate.get(text_hash(q), math.nan)
        d["queries"] += 1
        d["refused"] += int(not g < t)  # a text without hits (NaN) is refused
        if math.isfinite(g):
            d["values"].append(g)
    return days


def _iso(at: datetime) -> str:
    return at.strftime("%Y-%m-%dT%H:%M:%SZ")


def test_the_deployed_version_is_judged_at_its_t_on_its_own_lines_and_only_the_last_ended_period(deployed):
    store, day0 = Store(deployed["path"]), deployed["day0"]
    _, t_b = deployed["decisions"]["B"]
    _, t_c = deployed["decisions"]["C"]
    now = day0 + 3 * DAY + timedelta(hours=12)  # day 3 has not ended
    report = run_deployment_check(store, "production", "1d", now=now)
    got = report.as_json()
    assert (got["deployment"], got["version"], got["decision_id"]) == ("production", 2, deployed["decisions"]["B"][0])
    assert got["threshold"] == t_b != t_c  # the deployed t, not the newest saved decision's
    assert got["deployed_at"] == _iso(deployed["v2"].deployed_at)
    expected = _expected(deployed, t_b)
    assert [p["queries"] for p in got["periods"]] == [d["queries"] for d in expected]  # no v1, no staging line
    assert [p["refused"] for p in got["periods"]] == [d["refused"] for d in expected]
    assert [d["refused"] for d in expected] != [d["refused"] for d in _expected(deployed, t_c)]  # t matters here
    reference = _reference(store, deployed["run_id"])
    for p, d in zip(got["periods"], expected, strict=True):
        scipy_p = ks_2samp(d["values"], reference).pvalue
        assert p["ks_pvalue"] == pytest.approx(scipy_p, rel=1e-9, abs=1e-12)
    spans = [{"start": _iso(day0 + k * DAY), "end": _iso(day0 + (k + 1) * DAY)} for k in range(4)]
    assert [{"start": p["start"], "end": p["end"]} for p in got["periods"]] == spans
    assert got["judged"] == [spans[2]] and got["partial"] == [spans[3]]
    assert [(p["complete"], p["judged"]) for p in got["periods"]] == [
        (True, False), (True, False), (True, True), (False, False)
    ]  # fmt: skip
    assert any("lines of deployment production asked before version 2" in n for n in got["notes"])
    assert "[judged]" in report.text() and "[partial: not judged]" in report.text()


def _holm(ps: list[float]) -> list[float]:
    """Holm's step-down adjustment, written out here (two tests at most in a period)."""
    order = sorted(range(len(ps)), key=lambda i: ps[i])
    out, running = [0.0] * len(ps), 0.0
    for rank, i in enumerate(order):
        running = max(running, min(1.0, (len(ps) - rank) * ps[i]))
        out[i] = running
    return out


def test_drift_is_described_exactly_when_scipy_and_holm_say_it_moved_and_fails_only_when_asked(deployed):
    store, day0 = Store(deployed["path"]), deployed["day0"]
    expected = _expected(deployed, deployed["decisions"]["B"][1])
    reference = _reference(store, deployed["run_id"])
    moved = []
    for k in range(4):
        now = day0 + (k + 1) * DAY + timedelta(hours=1)
        report = run_deployment_check(store, "production", "1d", now=now)
        assert report.as_json()["judged"] == [{"start": _iso(day0 + k * DAY), "end": _iso(day0 + (k + 1) * DAY)}]
        ps = [ks_2samp(expected[k]["values"], reference).pvalue]
        if k:
            ps.append(ks_2samp(expected[k]["values"], expected[k - 1]["values"]).pvalue)
        drifted = sum(p < 0.05 for p in _holm(ps))
        # without --fail-on-drift, drift is a description: the check passes (no label, no breached claim)
        assert sum("drifted" in r for r in report.as_json()["drift"]) == drifted
        assert not any("drifted" in r for r in report.reasons) and report.exit_code == 0
        assert all("mix of in-domain and off-topic questions" in r for r in report.drift)
        strict = run_deployment_check(store, "production", "1d", now=now, fail_on_drift=True)
        assert sum("drifted" in r for r in strict.reasons) == drifted
        assert strict.exit_code == int(drifted > 0)
        moved.append(drifted > 0)
    assert True in moved and False in moved  # the days hold both cases


def test_the_refused_share_fails_only_on_a_judged_period_and_include_partial_judges_the_rest(deployed):
    store, day0 = Store(deployed["path"]), deployed["day0"]
    _, t_b = deployed["decisions"]["B"]
    expected = _expected(deployed, t_b)
    shares = [d["refused"] / d["queries"] for d in expected]
    now = day0 + 2 * DAY + timedelta(hours=3)  # day 1 is the last ended period; days 2 and 3 not
    between = (shares[1] + max(shares[2], shares[3])) / 2
    assert shares[1] < between < max(shares[2], shares[3])  # the periods the test needs
    passed = run_deployment_check(store, "production", "1d", max_refused_share=between, now=now)
    assert not passed.failed and passed.exit_code == 0
    assert passed.as_json()["judged"] == [{"start": _iso(day0 + DAY), "end": _iso(day0 + 2 * DAY)}]
    both = run_deployment_check(store, "production", "1d", max_refused_share=between, include_partial=True, now=now)
    got = both.as_json()
    assert got["include_partial"] is True
    assert [j["start"] for j in got["judged"]] == [_iso(day0 + k * DAY) for k in (1, 2, 3)]
    assert got["partial"] == [{"start": _iso(day0 + k * DAY), "end": _iso(day0 + (k + 1) * DAY)} for k in (2, 3)]
    assert both.failed and both.exit_code == 1
    failing = [k for k in (2, 3) if shares[k] > between]
    on_share = [r for r in both.reasons if " refused " in r]  # the drift tests may add reasons of their own
    assert len(on_share) == len(failing)
    assert all(f"the period from {day0 + k * DAY:%Y-%m-%d}" in r for k, r in zip(failing, on_share, strict=True))


def test_before_any_period_ended_nothing_is_judged_and_the_check_says_so(deployed):
    store, v2 = Store(deployed["path"]), deployed["v2"]
    assert sum(d["refused"] for d in _expected(deployed, deployed["decisions"]["B"][1])) > 0
    report = run_deployment_check(store, "production", "7d", max_refused_share=0.0, now=v2.deployed_at)
    got = report.as_json()
    assert got["judged"] == [] and len(got["partial"]) == 1 and not report.failed
    assert any("--include-partial judges the partial one" in n for n in got["notes"])
    partial = run_deployment_check(
        store, "production", "7d", max_refused_share=0.0, include_partial=True, now=v2.deployed_at
    )
    assert partial.as_json()["judged"] == got["partial"] and partial.failed  # every line of the week, refused > 0


def test_a_move_starts_a_new_version_that_holds_only_the_lines_asked_after_it(deployed, tmp_path):
    path = tmp_path / "evalcore.duckdb"
    shutil.copy(deployed["path"], path)
    store = Store(path)
    c, t_c = deployed["decisions"]["C"]
    v3 = deploy(store, "production", c, "ana@example.org")
    got = run_deployment_check(store, "production", "1d", now=deployed["day0"] + 9 * DAY).as_json()
    assert (got["version"], got["threshold"], got["decision_id"]) == (3, t_c, c)
    assert got["deployed_at"] == _iso(v3.deployed_at) and got["periods"][0]["start"] == _iso(
        datetime(v3.deployed_at.year, v3.deployed_at.month, v3.deployed_at.day)
    )
    # version 2's rows asked after the move (posted in the real clock's future) are version 3's now
    after = [at for at, _ in deployed["rows"] if at >= v3.deployed_at]
    assert sum(p["queries"] for p in got["periods"]) == len(after)
    before = len(_texts()[0]) + len(deployed["rows"]) - len(after)  # version 1's and version 2's
    assert f"{before:,} lines of deployment production asked before version 3 was deployed" in " ".join(got["notes"])


def test_staging_is_judged_on_its_own_lines_at_its_own_t(deployed):
    store, day0 = Store(deployed["path"]), deployed["day0"]
    _, t_a = deployed["decisions"]["A"]
    got = run_deployment_check(store, "staging", "1d", now=day0 + 5 * DAY).as_json()
    assert got["version"] == 1 and got["threshold"] == t_a
    assert got["deployed_at"] == _iso(deployed["staging"].deployed_at)
    _, off = _texts()
    assert [p["queries"] for p in got["periods"] if p["queries"]] == [len(off), len(off)]
    assert got["judged"] == [{"start": _iso(day0 + 4 * DAY), "end": _iso(day0 + 5 * DAY)}]  # the last ended: empty
    assert got["periods"][-2]["queries"] == 0 and not got["failed"]


def test_an_unknown_or_hostile_deployment_name_is_refused_naming_the_field(deployed):
    store = Store(deployed["path"])
    known = r"--deployment: no deployment 'nope' in this store \(it has production, staging\)"
    with pytest.raises(UnknownDeployment, match=known):
        run_deployment_check(store, "nope")
    for hostile in ("", "-rf", "prod\x1b[2J", "a\u202eb"):
        with pytest.raises(InputError, match="^--deployment: "):
            run_deployment_check(store, hostile)


def test_the_run_check_reads_every_line_of_the_configuration_as_before(deployed):
    store = Store(deployed["path"])
    report = run_check(store, f"{deployed['run_id']}:E/dense", "1d")
    got = report.as_json()
    assert set(got) == {"configuration", "threshold", "periods", "failed", "reasons"}
    assert got["threshold"] == deployed["decisions"]["C"][1]  # the latest saved decision
    answerable, off = _texts()
    assert sum(p["queries"] for p in got["periods"]) == len(answerable) + len(deployed["rows"]) + 2 * len(off)
    keys = {"start", "end", "queries", "refused", "refused_share", "ks_statistic", "ks_pvalue"}
    assert set(got["periods"][0]) == keys


# --- the CLI, as a scheduled job runs it (real processes; rows of the reliability table) ----------


def _check(case: str, expected: str, observed: str) -> None:
    """A row of the reliability table (tests/reliability/reliability_table.py), and the assertion."""
    folder = str(ROOT / "tests" / "reliability")
    if folder not in sys.path:
        sys.path.append(folder)
    importlib.import_module("reliability_table").record(case, expected, observed)
    assert observed == expected


def _cli(path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "evalcore", "--store", str(path), "traffic", "check", *args],
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), str(ROOT / "tests")])},
        capture_output=True,
        text=True,
        timeout=120,
    )


def _seen(ran: subprocess.CompletedProcess[str]) -> str:
    lines = ran.stderr.strip().splitlines()
    return f"exit {ran.returncode}: {lines[-1] if lines else ''}"


def test_the_cli_refuses_an_unknown_deployment_and_the_two_ways_at_once_and_judges_partial_periods(deployed):
    path = deployed["path"]
    ran = _cli(path, "--deployment", "nope")
    _check(
        "traffic check --deployment of an unknown name",
        "exit 2: error: --deployment: no deployment 'nope' in this store (it has production, staging)",
        _seen(ran),
    )
    ran = _cli(path, "--deployment", "production", "--run", deployed["run_id"])
    _check(
        "traffic check --deployment with --run",
        "exit 2: python -m evalcore traffic check: error: argument --run: not allowed with argument --deployment",
        _seen(ran),
    )
    ran = _cli(path, "--deployment", "production", "--threshold", "0.3")
    assert ran.returncode == 2 and "--threshold and --deployment" in ran.stderr
    for flag in ([], ["--include-partial"]):
        ran = _cli(path, "--deployment", "production", "--period", "1d", "--json", *flag)
        got = json.loads(ran.stdout)
        as_of = datetime.strptime(got["as_of"], "%Y-%m-%dT%H:%M:%SZ")
        ended = [p for p in got["periods"] if datetime.strptime(p["end"], "%Y-%m-%dT%H:%M:%SZ") <= as_of]
        expected_judged = [{"start": p["start"], "end": p["end"]} for p in ended[-1:]]
        expected_judged += got["partial"] if flag else []
        observed = f"exit {ran.returncode}, version {got['version']}, judged {len(got['judged'])} periods"
        failed = bool(got["reasons"])
        _check(
            f"traffic check --deployment production --json {' '.join(flag)}".strip(),
            f"exit {int(failed)}, version 2, judged {len(expected_judged)} periods",
            observed,
        )
        assert got["judged"] == expected_judged and got["include_partial"] is bool(flag)
        assert len(got["partial"]) >= 3  # days 1 to 3 (and day 0 before its midnight): not ended by the real clock


HOSTILE_NAMES = [
    ("an empty name", "", "--deployment: is empty"),
    ("a name read as an option", "-rf", "--deployment: -rf starts with '-' (it would read as an option)"),
    ("a terminal escape", "a\x1b[31mb", "--deployment: character 2 is"),
    ("a right-to-left override", "a\u202eb", "--deployment: character 2 is"),
    ("10,000 characters", "x" * 10_000, "--deployment: 10,000 characters, more than the 100 allowed"),
]


@pytest.mark.parametrize(("case", "name", "said"), HOSTILE_NAMES, ids=[c for c, _, _ in HOSTILE_NAMES])
def test_a_hostile_deployment_name_is_one_line_naming_the_option(deployed, case, name, said):
    from conftest import cli_in_process

    ran = cli_in_process(["--store", str(deployed["path"]), "traffic", "check", f"--deployment={name}"])
    lines = ran.stderr.strip().splitlines()
    seen = f"exit {ran.returncode}, {len(lines)} line, " + (
        "names it" if lines and said in lines[-1] else repr(lines[-1:])
    )
    _check(f"traffic check --deployment: {case}", "exit 2, 1 line, names it", str(seen))


def test_the_example_app_posts_to_the_deployment_only_when_told_to(deployed, tmp_path):
    """examples/threshold_in_production.py against a real server: a try-out reads the deployment
    and posts nothing; with --post-traffic its queries are posted to the deployment."""
    from api_serving import api_server, make_key

    path = tmp_path / "evalcore.duckdb"
    shutil.copy(deployed["path"], path)
    key = make_key(path, "app", "read,traffic:write")

    def posted() -> int:
        got = Store(path).query("SELECT count(*) AS n FROM traffic_posted WHERE deployment = 'production'")
        return int(got["n"].iloc[0])

    before = posted()
    with api_server(path, tmp_path / "server.log", env={"EVALCORE_TEST_EMBEDDER": EMBEDDER}) as url:
        for flag, added in (([], 0), (["--post-traffic"], 2)):
            ran = subprocess.run(
                [sys.executable, "examples/threshold_in_production.py", *flag, url, "where is the server port", "x"],
                cwd=ROOT,
                env={**os.environ, "EVALCORE_API_KEY": key, "PYTHONPATH": str(ROOT)},
                capture_output=True,
                text=True,
                timeout=120,
            )
            assert ran.returncode == 0, ran.stderr
            assert "version 2" in ran.stdout or "I don't know" in ran.stdout
            assert posted() == before + added, (flag, ran.stdout, ran.stderr)
            before += added
