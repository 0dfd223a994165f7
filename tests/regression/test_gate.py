"""The regression gate on real runs (mini corpus, real model; see conftest.gate_store).

Every figure is checked against an independent computation from the stored rows: wins and
losses by pandas, p by scipy's binomtest, Holm by statsmodels' multipletests, Wilson by
statsmodels' proportion_confint.
"""

from __future__ import annotations

import json
import shutil
import xml.etree.ElementTree as ET

import pytest
import zygote
from conftest import copy_with_failed_run
from scipy.stats import binomtest
from statsmodels.stats.multitest import multipletests
from statsmodels.stats.proportion import proportion_confint

from evalcore.cli import main
from evalcore.read.refs import parse_ref
from evalcore.regression.gate import run_gate
from evalcore.regression.report import to_dict, to_junit, to_markdown
from evalcore.store import Store

CONFIGS = [f"{s}/{r}" for s in "ABCDEFP" for r in ("dense", "bm25", "hybrid")]


def gate_cli(store, *args, capsys):
    code = main(["--store", str(store), "gate", *args])
    out, err = capsys.readouterr()
    return code, out, err


def hits(store_path, run_name: str, configuration: str, k: int = 4) -> dict[str, bool]:
    """Oracle: hit@k per scored in-domain query, straight from the stored rows with pandas."""
    strategy, retriever = configuration.split("/")
    df = Store(store_path).query(
        "SELECT r.query_id, r.first_correct_rank, q.valid FROM results r "
        "JOIN runs USING (run_id) JOIN queries q USING (run_id, query_id) "
        "WHERE runs.name = ? AND r.strategy = ? AND r.retriever = ? AND r.domain = 'in'",
        [run_name, strategy, retriever],
    )
    df = df[df["valid"]]
    return {
        q: bool(r <= k) if r == r and r is not None else False
        for q, r in zip(df["query_id"], df["first_correct_rank"].astype("float"), strict=True)
    }


def expected(store_path, base: tuple[str, str], cand: tuple[str, str], k: int = 4):
    b, c = hits(store_path, *base, k), hits(store_path, *cand, k)
    assert set(b) == set(c) and b
    wins = sorted(q for q in b if c[q] and not b[q])
    losses = sorted(q for q in b if b[q] and not c[q])
    p = binomtest(len(wins), len(wins) + len(losses), 0.5).pvalue if wins or losses else 1.0
    return b, c, wins, losses, p


def test_damaged_candidate_fails_with_exit_1_and_lists_the_lost_queries(gate_store, capsys):
    code, out, err = gate_cli(gate_store, "--baseline", "base", "--candidate", "cand", capsys=capsys)
    assert code == 1, err
    assert out.startswith("evalcore gate: FAIL: 3 of 21 configurations worse")
    texts = dict(
        Store(gate_store)
        .query("SELECT query_id, text FROM queries JOIN runs USING (run_id) WHERE name = 'base'")
        .values.tolist()
    )
    for configuration in ("P/dense", "P/bm25", "P/hybrid"):
        *_, losses, p = expected(gate_store, ("base", configuration), ("cand", configuration))
        assert len(losses) >= 10 and p < 0.05 / 21
        block = out.split(f"{configuration}: {len(losses)} queries lost")[1].split("\n\n")[0]
        for q in losses:
            assert f"{q} " in block and texts[q] in block
    for configuration in CONFIGS[:-3]:  # A-F are the same in both runs: they pass
        line = next(x for x in out.splitlines() if x.startswith(configuration + " "))
        assert line.rstrip().endswith("pass") and "0/0/18" in line


def test_the_exit_code_reaches_the_shell(gate_store):
    res = zygote.run(
        ["--store", str(gate_store), "gate", "--baseline", "base:P/hybrid", "--candidate", "cand"], timeout=300
    )
    assert res.returncode == 1, res.stderr
    assert "P/hybrid" in res.stdout and "FAIL: regression" in res.stdout


def test_every_figure_against_independent_oracles(gate_store):
    report = run_gate(Store(gate_store), "base", "cand")
    assert [r.name for r in report.results] == CONFIGS
    rows = [expected(gate_store, ("base", c), ("cand", c)) for c in CONFIGS]
    p_raw = [row[-1] for row in rows]
    p_holm = multipletests(p_raw, method="holm")[1]
    for r, (b, c, wins, losses, p), adj in zip(report.results, rows, p_holm, strict=True):
        n = len(b)
        assert (r.wins, r.losses, r.ties) == (len(wins), len(losses), n - len(wins) - len(losses))
        assert r.p_value == pytest.approx(p, rel=1e-12)
        assert r.p_adjusted == pytest.approx(adj, rel=1e-12)
        for side, outcome in ((r.baseline, b), (r.candidate, c)):
            lo, hi = proportion_confint(sum(outcome.values()), n, alpha=0.05, method="wilson")
            assert (side.successes, side.n) == (sum(outcome.values()), n)
            assert (side.low, side.high) == (pytest.approx(lo, abs=1e-12), pytest.approx(hi, abs=1e-12))
        assert [q.query_id for q in r.lost] == losses and [q.query_id for q in r.won] == wins
        assert r.regressed == (len(losses) > len(wins) and adj < 0.05)
    assert report.exit_code == 1 and {r.name for r in report.failed} == {"P/dense", "P/bm25", "P/hybrid"}


def test_the_lost_queries_carry_both_ranks(gate_store):
    report = run_gate(Store(gate_store), "base:P/hybrid", "cand:P/hybrid")
    ranks = Store(gate_store).query(
        "SELECT name, query_id, first_correct_rank FROM results JOIN runs USING (run_id) "
        "WHERE strategy = 'P' AND retriever = 'hybrid'"
    )
    rank = {
        (n, q): (None if r != r else int(r))
        for n, q, r in zip(ranks["name"], ranks["query_id"], ranks["first_correct_rank"].astype("float"), strict=True)
    }
    (result,) = report.results
    assert result.lost
    for q in result.lost:
        assert q.baseline_rank == rank[("base", q.query_id)] and q.baseline_rank <= 4
        assert q.candidate_rank == rank[("cand", q.query_id)]
        assert q.candidate_rank is None or q.candidate_rank > 4


def test_the_same_configuration_against_itself_passes(gate_store, capsys):
    code, out, _ = gate_cli(gate_store, "--baseline", "base:P/hybrid", "--candidate", "base:P/hybrid", capsys=capsys)
    assert code == 0 and "PASS" in out and "0/0/18" in out
    code, out, _ = gate_cli(gate_store, "--baseline", "base", "--candidate", "base", "--format", "json", capsys=capsys)
    data = json.loads(out)
    assert code == 0 and data["verdict"] == "pass" and len(data["configurations"]) == 21
    assert all(c["p_value"] == 1.0 and c["wins"] == c["losses"] == 0 for c in data["configurations"])
    # run ids and unique prefixes name the same run as its name
    run_id = Store(gate_store).query("SELECT run_id FROM runs WHERE name = 'base'").iloc[0, 0]
    code, _, _ = gate_cli(gate_store, "--baseline", run_id, "--candidate", run_id[:-2] + ":A/dense", capsys=capsys)
    assert code == 0


def test_runs_on_different_queries_exit_2(gate_store, capsys):
    code, out, err = gate_cli(gate_store, "--baseline", "base:E/dense", "--candidate", "fewer", capsys=capsys)
    assert code == 2 and out == ""
    assert err.count("\n") == 1 and err.startswith("error: ")
    assert (
        "did not answer the same in-domain queries: 2 (pairing-course, pairing-ticket) only in the "
        "baseline, none only in the candidate"
    ) in err


@pytest.mark.parametrize(
    "args, message",
    [
        (["--baseline", "nope", "--candidate", "cand"], "no run with id or name 'nope'"),
        (["--baseline", "base:Z/dense", "--candidate", "cand"], "has no configuration 'Z/dense'"),
        (["--baseline", "base:G", "--candidate", "cand"], None),  # a name with a colon: unknown run
        (["--baseline", "base", "--candidate", "cand", "--metric", "mrr"], "mrr has no such outcome"),
        (["--baseline", "base", "--candidate", "cand", "--metric", "ndcg@4"], "unknown metric 'ndcg@4'"),
        (["--baseline", "base", "--candidate", "cand", "--alpha", "1.5"], "--alpha must be a number in (0, 1)"),
        (["--baseline", "base", "--candidate", "cand", "--min-effect", "2"], "--min-effect must be a number in [0, 1]"),
        (["--baseline", "base:E/dense", "--candidate", "cand:nope/dense"], "has no configuration 'nope/dense'"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(gate_store, capsys, args, message):
    code, out, err = gate_cli(gate_store, *args, capsys=capsys)
    assert code == 2 and out == "" and err.startswith("error: ") and err.count("\n") == 1
    if message:
        assert message in err


def test_an_incomplete_run_is_refused(gate_store, tmp_path, capsys):
    path = copy_with_failed_run(gate_store, tmp_path, "broken-1", "broken", "disk full")
    code, _, err = gate_cli(path, "--baseline", "base", "--candidate", "broken", capsys=capsys)
    assert code == 2 and "run name 'broken' has no complete run" in err and "disk full" in err
    code, _, err = gate_cli(path, "--baseline", "base", "--candidate", "broken-1", capsys=capsys)
    assert code == 2 and "is failed: disk full" in err


def test_parse_ref():
    assert parse_ref("demo:P/hybrid") == parse_ref(" demo:P/hybrid ")
    assert (parse_ref("demo:P/hybrid").run, parse_ref("demo:P/hybrid").configuration) == ("demo", "P/hybrid")
    assert parse_ref("exp:1").configuration is None and parse_ref("exp:1").run == "exp:1"
    assert parse_ref("a:b:E/dense").run == "a:b"


def test_min_effect_fails_a_drop_that_is_not_significant(gate_store, capsys):
    base, cand = ("base", "P/dense"), ("base", "P/bm25")
    b, c, wins, losses, p = expected(gate_store, base, cand)
    drop = (sum(b.values()) - sum(c.values())) / len(b)
    assert drop > 0 and p >= 0.05  # a real but not significant drop in these runs
    args = ["--baseline", "base:P/dense", "--candidate", "base:P/bm25"]
    assert gate_cli(gate_store, *args, capsys=capsys)[0] == 0
    code, out, _ = gate_cli(gate_store, *args, "--min-effect", f"{drop - 0.001:.4f}", capsys=capsys)
    assert code == 1 and "FAIL: below floor" in out
    code, out, _ = gate_cli(gate_store, *args, "--min-effect", f"{drop:.12f}", capsys=capsys)
    assert code == 1  # exactly D worse fails too
    code, out, _ = gate_cli(gate_store, *args, "--min-effect", f"{drop + 0.001:.4f}", capsys=capsys)
    assert code == 0


def ood_bluffs(store_path, run_name: str, configuration: str, t: float) -> dict[str, bool]:
    """Oracle: does an out-of-domain query keep a top-4 hit with distance < t? (pandas over hits)."""
    strategy, retriever = configuration.split("/")
    store = Store(store_path)
    q = store.query(
        "SELECT query_id FROM queries JOIN runs USING (run_id) WHERE name = ? AND domain = 'out'", [run_name]
    )
    h = store.query(
        "SELECT h.query_id, h.rank, h.distance FROM hits h JOIN runs USING (run_id) "
        "WHERE name = ? AND strategy = ? AND retriever = ?",
        [run_name, strategy, retriever],
    )
    kept = h[(h["rank"] <= 4) & (h["distance"] < t)]
    return {x: x in set(kept["query_id"]) for x in q["query_id"]}


def test_the_refusal_contract_fails_on_more_bluffs(gate_store, tmp_path, capsys):
    path = tmp_path / "copy.duckdb"
    shutil.copy(gate_store, path)
    store = Store(path)
    base_id = store.query("SELECT run_id FROM runs WHERE name = 'base'").iloc[0, 0]
    store.save_decision(base_id, "P", "dense", 0.5, "older choice")
    store.save_decision(base_id, "P", "dense", 0.80, "bluffs rare enough")  # the latest one counts
    b = ood_bluffs(path, "base", "P/dense", 0.80)
    c = ood_bluffs(path, "cand", "P/dense", 0.80)
    new = sorted(q for q in b if c[q] and not b[q])
    fixed = sorted(q for q in b if b[q] and not c[q])
    p = binomtest(len(new), len(new) + len(fixed), 0.5).pvalue
    assert len(b) == 30 and len(new) > len(fixed) and p < 0.05  # tiny chunks come closer to ood queries

    report = run_gate(store, "base:P/dense", "cand", threshold_from_decision=True)
    (r,) = report.results
    x = r.bluffs
    assert (x.threshold, x.note) == (0.80, "bluffs rare enough")
    assert (x.baseline_bluffs, x.candidate_bluffs, x.out_domain) == (sum(b.values()), sum(c.values()), 30)
    assert (x.new, x.fixed) == (len(new), len(fixed)) and [q for q, _ in x.new_queries] == new
    assert x.p_value == pytest.approx(p, rel=1e-12) and x.failed and "more bluffs" in r.verdicts

    code, out, _ = gate_cli(
        path,
        "--baseline",
        "base:P/dense",
        "--candidate",
        "cand",
        "--threshold-from-decision",
        "--junit",
        str(tmp_path / "j.xml"),
        capsys=capsys,
    )
    assert code == 1 and "refusal contract: P/dense: threshold 0.8" in out
    suite = ET.parse(tmp_path / "j.xml").getroot().find("testsuite")
    failed = {(tc.get("classname"), tc.get("name")) for tc in suite.iter("testcase") if tc.find("failure") is not None}
    assert failed == {("evalcore.gate.hit@4", "P/dense"), ("evalcore.gate.bluffs", "P/dense bluffs at 0.8")}

    # the same configuration against itself keeps its contract; without a saved threshold: exit 2
    code, out, _ = gate_cli(
        path, "--baseline", "base:P/dense", "--candidate", "base", "--threshold-from-decision", capsys=capsys
    )
    assert code == 0 and "0 new, 0 fixed" in out
    code, _, err = gate_cli(
        path, "--baseline", "base:E/dense", "--candidate", "cand", "--threshold-from-decision", capsys=capsys
    )
    assert code == 2 and "no saved threshold for E/dense" in err


def test_markdown_report_renders_as_tables(gate_store):
    from markdown_it import MarkdownIt

    report = run_gate(Store(gate_store), "base", "cand")
    text = to_markdown(report)
    md = MarkdownIt("commonmark").enable("table")
    tokens = md.parse(text)
    tables, current = [], None
    for tok in tokens:
        if tok.type == "table_open":
            current = []
        elif tok.type == "tr_open" and current is not None:
            current.append([])
        elif tok.type == "inline" and current is not None and current:
            current[-1].append(tok.content)
        elif tok.type == "table_close":
            tables.append(current)
            current = None
    main_table = tables[0]
    assert main_table[0] == [
        "configuration",
        "baseline hit@4",
        "candidate hit@4",
        "difference",
        "wins / losses / ties",
        "p",
        "p (Holm)",
        "verdict",
    ]
    assert len(main_table) == 1 + 21 and all(len(row) == 8 for row in main_table)
    by_name = {row[0].strip("`"): row for row in main_table[1:]}
    for r in report.results:
        row = by_name[r.name]
        assert row[4] == f"{r.wins} / {r.losses} / {r.ties}"
        assert ("FAIL" in row[7]) == r.failed
    lost_tables = tables[1:]
    failing = [r for r in report.results if r.lost]
    assert len(lost_tables) == len(failing) == 3
    for r, table in zip(failing, lost_tables, strict=True):
        assert [row[0].strip("`") for row in table[1:]] == [q.query_id for q in r.lost]
        assert all(len(row) == 3 for row in table)
    html = md.render(text)
    assert html.count("<details>") == 3 and "<summary>P/hybrid:" in html
    assert text.startswith("### evalcore gate: FAIL")


@pytest.mark.parametrize(
    "text",
    [
        "a | b <script>alert(1)</script>",
        "I made a grid with [[]] * 3 and * twice",
        "x_y and `code` \\ ~z~",
        "r'C:\\Users\\me\\' gives SyntaxError",
        "what is **bold** and [a](link)?",
    ],
)
def test_a_query_text_renders_as_itself_in_a_markdown_cell(text):
    import html
    import re

    from markdown_it import MarkdownIt

    from evalcore.regression.report import _cell

    rendered = MarkdownIt("commonmark").enable("table").render(f"| q |\n|---|\n| {_cell(text)} |\n")
    (cell,) = re.findall(r"<td>(.*?)</td>", rendered)
    assert html.unescape(cell) == text


def test_junit_lists_one_case_per_configuration_with_the_failures(gate_store, tmp_path, capsys):
    junit = tmp_path / "gate.xml"
    code, _, _ = gate_cli(
        gate_store,
        "--baseline",
        "base",
        "--candidate",
        "cand",
        "--junit",
        str(junit),
        "--format",
        "markdown",
        capsys=capsys,
    )
    assert code == 1
    root = ET.parse(junit).getroot()
    assert root.tag == "testsuites" and root.get("tests") == "21" and root.get("failures") == "3"
    cases = list(root.iter("testcase"))
    assert [c.get("name") for c in cases] == CONFIGS
    failed = {c.get("name"): c.find("failure") for c in cases if c.find("failure") is not None}
    assert set(failed) == {"P/dense", "P/bm25", "P/hybrid"}
    *_, losses, _ = expected(gate_store, ("base", "P/hybrid"), ("cand", "P/hybrid"))
    assert failed["P/hybrid"].get("type") == "regression"
    assert all(f"lost {q}:" in failed["P/hybrid"].text for q in losses)
    assert to_junit(run_gate(Store(gate_store), "base", "base")).count("<failure") == 0


def test_json_report_is_complete(gate_store):
    report = run_gate(Store(gate_store), "base", "cand", min_effect=0.5)
    data = json.loads(json.dumps(to_dict(report)))
    assert data["verdict"] == "fail" and data["exit_code"] == 1 and data["queries"] == 18
    g = next(c for c in data["configurations"] if c["configuration"] == "P/hybrid")
    *_, losses, _ = expected(gate_store, ("base", "P/hybrid"), ("cand", "P/hybrid"))
    assert [q["query_id"] for q in g["lost"]] == losses
    assert set(g["verdicts"]) == {"regression", "below floor"}
    assert data["smallest_flag"] == 10  # 2 * 0.5**10 < 0.05 / 21 <= 2 * 0.5**9
    assert binomtest(0, 10, 0.5).pvalue < 0.05 / 21 <= binomtest(0, 9, 0.5).pvalue
