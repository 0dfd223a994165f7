"""Traffic (evalcore.traffic.replay, read.traffic, traffic_check): real questions replayed as a query log.

One run of the real engine and model on the mini corpus (strategy E x dense, bm25, hybrid; the
gate's 30 out-of-domain queries). The log is built from real questions with times: week 1 holds
the run's own in-domain questions (labelled answerable) and its off-topic queries (labelled
off-topic); week 2 holds real COVID-19 questions from ../shared/data (labelled off-topic), which
the mini corpus cannot answer. Every figure is checked against a brute-force computation from the
stored hits, scipy and statsmodels computed here.
"""

from __future__ import annotations

import csv
import json
import math
import shutil
from datetime import datetime, timedelta

import numpy as np
import pytest
from conftest import GATE_OOD, MINI, MINI_ARGS, shared_data
from scipy.stats import ks_2samp
from statsmodels.stats.proportion import proportion_confint

from evalcore.cli import main
from evalcore.embedding.embedder import text_hash
from evalcore.records import Configuration
from evalcore.store import Store

WEEK1 = datetime(2026, 11, 2, 8, 0)  # a Monday, 08:00 UTC: periods start at 00:00 of that day
T = 0.55


@pytest.fixture(scope="module")
def traffic_run(tmp_path_factory, real_embedder):
    from evalcore.chunking import parse_strategies
    from evalcore.inputs.corpus import load_corpus
    from evalcore.inputs.groundtruth import load_ground_truth
    from evalcore.run.runner import RunRequest, run_evaluation

    path = tmp_path_factory.mktemp("traffic") / "evalcore.duckdb"
    corpus = load_corpus(MINI / "corpus")
    gt = load_ground_truth(corpus, MINI / "questions.jsonl", GATE_OOD)
    request = RunRequest(corpus, gt, parse_strategies("E"), ["dense", "bm25", "hybrid"], name="traffic")
    run_id = run_evaluation(request, Store(path), embedders=[real_embedder]).run_id
    return path, run_id


def _questions() -> tuple[list[str], list[str], list[str]]:
    answerable = [json.loads(x)["question"] for x in (MINI / "questions.jsonl").read_text().splitlines()]
    off = [json.loads(x)["query"] for x in GATE_OOD.read_text().splitlines()]
    source = shared_data("covid-qa", "data", "eval_question_similarity_en.csv")
    with open(source, newline="", encoding="utf-8") as fh:
        covid = list(dict.fromkeys(row["question_1"] for row in csv.DictReader(fh)))[:60]
    return answerable, off, covid


def _log_rows() -> list[dict]:
    answerable, off, covid = _questions()
    rows = []
    for i, q in enumerate(answerable + answerable[:5]):  # five questions asked twice
        rows.append({"time": (WEEK1 + timedelta(hours=3 * i)).isoformat() + "Z", "query": q, "label": "answerable"})
    for i, q in enumerate(off):
        rows.append({"time": (WEEK1 + timedelta(hours=3 * i + 1)).isoformat() + "Z", "query": q, "label": "off-topic"})
    for i, q in enumerate(covid):
        rows.append({"time": (WEEK1 + timedelta(days=7, hours=2 * i)).timestamp(), "query": q, "label": "off-topic"})
    return rows


def _write_jsonl(path, rows, extra: bytes = b"") -> None:
    path.write_bytes(b"".join(json.dumps(r).encode() + b"\n" for r in rows) + extra)


@pytest.fixture(scope="module")
def imported(traffic_run, tmp_path_factory, real_embedder):
    """The run's store copy with the log imported into E/dense, and the log's rows."""
    from evalcore.traffic.log import LogFields
    from evalcore.traffic.replay import import_log

    source, run_id = traffic_run
    folder = tmp_path_factory.mktemp("imported")
    path = folder / "evalcore.duckdb"
    shutil.copy(source, path)
    rows = _log_rows()
    log = folder / "log.jsonl"
    _write_jsonl(log, rows)
    store = Store(path)
    result = import_log(store, f"{run_id}:E/dense", log, LogFields(label="label"), embedder=real_embedder)
    return store, run_id, rows, log, result


def _brute(store, run_id, retriever="dense"):
    """Per log line, from the stored hits: time, label, smallest top-4 distance."""
    lines = store.query(
        "SELECT q.asked_at, q.label, q.text_hash FROM traffic_queries q WHERE run_id = ? AND retriever = ?",
        [run_id, retriever],
    )
    hits = store.query(
        "SELECT text_hash, rank, distance FROM traffic_hits WHERE run_id = ? AND retriever = ?", [run_id, retriever]
    )
    head = {}
    for h, rank, d in hits.itertuples(index=False):
        if rank <= 4:
            head.setdefault(h, []).append(d)
    return [(a.to_pydatetime(), lab, head[h]) for a, lab, h in lines.itertuples(index=False)]


def _evaluation_minima(store, run_id, retriever="dense"):
    hits = store.query(
        "SELECT h.query_id, h.distance FROM hits h JOIN queries q USING (run_id, query_id) "
        "WHERE h.run_id = ? AND h.strategy = 'E' AND h.retriever = ? AND h.rank <= 4 AND q.valid",
        [run_id, retriever],
    )
    out = {}
    for q, d in hits.itertuples(index=False):
        out[q] = min(out.get(q, math.inf), d)
    return list(out.values())


def test_the_import_counts_every_line_and_scores_each_text_once(imported):
    store, run_id, rows, _, result = imported
    assert result.lines == result.added == len(rows) and result.problems == 0
    distinct = len({r["query"] for r in rows})
    assert result.new_texts == distinct < len(rows)
    n = store.query("SELECT count(*) AS n FROM traffic_texts WHERE run_id = ?", [run_id])["n"].iloc[0]
    assert n == distinct
    imp = store.query("SELECT author, status, added FROM traffic_imports WHERE run_id = ?", [run_id])
    assert list(imp["status"]) == ["complete"] and int(imp["added"].iloc[0]) == len(rows)
    from evalcore.authors import os_author

    assert imp["author"].iloc[0] == os_author()


@pytest.mark.parametrize("retriever", ["dense", "bm25", "hybrid"])
def test_replaying_the_runs_own_questions_reproduces_its_hits(traffic_run, tmp_path, real_embedder, retriever):
    from evalcore.traffic.replay import import_log

    source, run_id = traffic_run
    path = tmp_path / "evalcore.duckdb"
    shutil.copy(source, path)
    store = Store(path)
    queries = store.query("SELECT query_id, text FROM queries WHERE run_id = ? AND valid", [run_id])
    log = tmp_path / "own.csv"
    with open(log, "w", newline="", encoding="utf-8") as fh:
        w = csv.writer(fh)
        w.writerow(["time", "query"])
        for i, text in enumerate(queries["text"]):
            w.writerow([f"2026-11-02T10:{i // 60:02d}:{i % 60:02d}Z", text])
    import_log(store, f"{run_id}:E/{retriever}", log, embedder=real_embedder)
    ours = store.query(
        "SELECT text_hash, rank, chunk_id, distance, score FROM traffic_hits WHERE retriever = ? "
        "ORDER BY text_hash, rank",
        [retriever],
    )
    theirs = store.query(
        "SELECT q.text, h.rank, h.chunk_id, h.distance, h.score FROM hits h JOIN queries q USING (run_id, query_id) "
        "WHERE h.run_id = ? AND h.strategy = 'E' AND h.retriever = ? AND q.valid",
        [run_id, retriever],
    )
    theirs["text_hash"] = [text_hash(t) for t in theirs["text"]]
    theirs = theirs.drop(columns="text").drop_duplicates(["text_hash", "rank"]).sort_values(["text_hash", "rank"])
    top = min(
        20,
        int(store.query("SELECT count(*) AS n FROM chunks WHERE run_id = ? AND strategy = 'E'", [run_id])["n"].iloc[0]),
    )
    assert len(ours) == len(theirs) == top * len(set(theirs["text_hash"])) and top > 4
    assert list(ours["chunk_id"]) == list(theirs["chunk_id"])
    assert np.array_equal(ours["distance"].to_numpy(), theirs["distance"].to_numpy())  # bit for bit
    assert np.array_equal(ours["score"].to_numpy(), theirs["score"].to_numpy())


def test_periods_refused_share_and_ks_equal_a_brute_force_computation(imported):
    from evalcore.read.traffic.periods import periods

    store, run_id, rows, _, _ = imported
    frame = periods(store, run_id, Configuration("E", "dense"), timedelta(days=7), T)
    lines = _brute(store, run_id)
    start = datetime(2026, 11, 2)
    reference = _evaluation_minima(store, run_id)
    assert len(frame) == 2 and list(frame["start"]) == [start, start + timedelta(days=7)]
    previous = None
    for i, row in frame.iterrows():
        lo, hi = start + i * timedelta(days=7), start + (i + 1) * timedelta(days=7)
        inside = [(lab, d) for at, lab, d in lines if lo <= at < hi]
        gates = [min(d) for _, d in inside]
        k = sum(not any(x < T for x in d) for _, d in inside)
        assert row["queries"] == len(inside) and row["refused"] == k
        low, high = proportion_confint(k, len(inside), method="wilson")
        assert row["refused_share"] == pytest.approx(k / len(inside))
        assert (row["refused_low"], row["refused_high"]) == pytest.approx((low, high))
        res = ks_2samp(gates, reference)
        assert row["ks_statistic"] == pytest.approx(res.statistic) and row["ks_pvalue"] == pytest.approx(res.pvalue)
        if previous is not None:
            prev = ks_2samp(gates, previous)
            assert row["prev_statistic"] == pytest.approx(prev.statistic)
            assert row["prev_pvalue"] == pytest.approx(prev.pvalue)
        previous = gates
    assert sum(frame["queries"]) == len(rows)  # every line counts, duplicates included
    assert not frame["drifted"].iloc[0] and frame["drifted"].iloc[1]  # COVID-19 questions moved


def test_bluff_and_lost_rates_equal_a_brute_force_computation(imported):
    from evalcore.read.traffic.stored import labelled_rates

    store, run_id, _, _, _ = imported
    rates = labelled_rates(store, run_id, Configuration("E", "dense"), T)
    lines = _brute(store, run_id)
    off = [d for _, lab, d in lines if lab == "off-topic"]
    ans = [d for _, lab, d in lines if lab == "answerable"]
    bluffs = sum(any(x < T for x in d) for d in off)
    lost = sum(not any(x < T for x in d) for d in ans)
    assert (rates.traffic_bluff.k, rates.traffic_bluff.n) == (bluffs, len(off))
    assert (rates.traffic_lost.k, rates.traffic_lost.n) == (lost, len(ans))
    low, high = proportion_confint(bluffs, len(off), method="wilson")
    assert (rates.traffic_bluff.low, rates.traffic_bluff.high) == pytest.approx((low, high))
    assert rates.evaluation_bluff.n == 30 and rates.unlabelled == 0


def test_the_threshold_claim_is_recomputed_on_the_real_off_topic_queries(imported):
    from scipy.stats import binom

    from evalcore.read.traffic.stored import traffic_claim

    store, run_id, _, _, _ = imported
    claim = traffic_claim(store, run_id, Configuration("E", "dense"))
    lines = _brute(store, run_id)
    m = sorted(min(d) for _, lab, d in lines if lab == "off-topic")
    assert claim is not None and claim.n_ood == len(m) == 90
    # SPEC 13 by hand: k* = max{k : BinomCDF(k; n, 0.05) <= 0.05}; bluff_ok_up_to = the (k*+1)-th smallest m_q
    k = max(k for k in range(len(m) + 1) if binom.cdf(k, len(m), 0.05) <= 0.05)
    assert claim.bluff_status == "bounded" and claim.bluff_ok_up_to == m[k]


def test_reimporting_stores_nothing_new_and_a_grown_log_adds_only_its_new_lines(imported, tmp_path, real_embedder):
    from evalcore.traffic.log import LogFields
    from evalcore.traffic.replay import TABLES, import_log

    store, run_id, rows, log, _ = imported
    work = Store(tmp_path / "copy.duckdb")
    shutil.copy(store.path, work.path)

    def counts():
        return {t: int(work.query(f"SELECT count(*) AS n FROM {t}")["n"].iloc[0]) for t in TABLES}

    before = counts()
    again = import_log(work, f"{run_id}:E/dense", log, LogFields(label="label"), embedder=real_embedder)
    assert (again.added, again.already, again.import_id) == (0, len(rows), None)
    assert counts() == before
    as_csv = tmp_path / "same.csv"  # the same lines as CSV: the same identities
    with open(as_csv, "w", newline="", encoding="utf-8") as fh:
        w = csv.DictWriter(fh, ["time", "query", "label"])
        w.writeheader()
        w.writerows(rows)
    assert import_log(work, f"{run_id}:E/dense", as_csv, LogFields(label="label"), embedder=real_embedder).added == 0
    grown = tmp_path / "grown.jsonl"
    new = [{"time": "2026-11-20T10:00:00Z", "query": rows[0]["query"], "label": "answerable"}] * 2
    _write_jsonl(grown, rows + new)
    third = import_log(work, f"{run_id}:E/dense", grown, LogFields(label="label"), embedder=real_embedder)
    assert (third.added, third.already, third.new_texts) == (2, len(rows), 0)
    assert counts()["traffic_queries"] == before["traffic_queries"] + 2


def test_bad_lines_are_reported_by_number_and_a_log_without_usable_lines_stores_nothing(traffic_run, tmp_path, capsys):
    source, run_id = traffic_run
    store = tmp_path / "evalcore.duckdb"
    shutil.copy(source, store)
    bad = tmp_path / "bad.jsonl"
    bad.write_bytes(b'{"time": "2026-11-02T10:00:00Z"}\n{"time": "yesterday", "query": "x"}\n\xff\xfe\n')
    argv = ["--store", str(store), "traffic", "import", str(bad), "--run", f"{run_id}:E/dense", "-q"]
    assert main(argv) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err[-1].startswith("error: ") and "no usable line" in err[-1] and "line 1: no 'query' field" in err[-1]
    n = Store(store).query(
        "SELECT (SELECT count(*) FROM traffic_queries) + (SELECT count(*) FROM traffic_imports) AS n"
    )
    assert int(n["n"].iloc[0]) == 0
    mixed = tmp_path / "mixed.jsonl"
    mixed.write_bytes(bad.read_bytes() + b'{"time": "2026-11-02T11:00:00Z", "query": "how do I install kettle"}\n')
    assert main([*argv[:4], str(mixed), *argv[5:], "--json"]) == 0
    captured = capsys.readouterr()
    assert json.loads(captured.out)["added"] == 1
    assert "line 2: time: not an ISO 8601 time" in captured.err and "got 'yesterday'" in captured.err
    assert "line 3: not UTF-8" in captured.err


def test_check_prints_the_exact_keys_and_exits_1_0_or_2(imported, tmp_path, capsys):
    store, run_id, rows, _, _ = imported
    ref = f"{run_id}:E/dense"
    base = ["--store", str(store.path), "traffic", "check", "--run", ref]
    assert main([*base, "--json"]) == 2  # no decision, no --threshold
    assert "no saved decision" in capsys.readouterr().err
    assert main([*base, "--threshold", str(T), "--json"]) == 1
    out = json.loads(capsys.readouterr().out)
    assert list(out) == ["configuration", "threshold", "periods", "failed", "reasons"]
    assert [list(p) for p in out["periods"]] == [
        ["start", "end", "queries", "refused", "refused_share", "ks_statistic", "ks_pvalue"]
    ] * 2
    assert out["periods"][0]["start"] == "2026-11-02T00:00:00Z" and out["periods"][1]["end"] == "2026-11-16T00:00:00Z"
    assert out["failed"] and any("drifted" in r for r in out["reasons"])
    Store(store.path).save_decision(run_id, "E", "dense", T, "traffic test")
    assert main([*base, "--json"]) == 1  # T from the decision now
    assert json.loads(capsys.readouterr().out)["threshold"] == T
    assert main([*base, "--period", "nonsense"]) == 2
    assert "--period looks like 7d" in capsys.readouterr().err


def test_check_passes_on_traffic_like_the_evaluation_and_fails_on_the_refused_share(
    traffic_run, tmp_path, capsys, real_embedder
):
    from evalcore.traffic.log import LogFields
    from evalcore.traffic.replay import import_log

    source, run_id = traffic_run
    path = tmp_path / "evalcore.duckdb"
    shutil.copy(source, path)
    log = tmp_path / "week1.jsonl"
    _write_jsonl(log, [r for r in _log_rows() if isinstance(r["time"], str)])  # the run's own questions
    import_log(Store(path), f"{run_id}:E/dense", log, LogFields(label="label"), embedder=real_embedder)
    base = ["--store", str(path), "traffic", "check", "--run", f"{run_id}:E/dense", "--threshold", str(T)]
    assert main([*base, "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert not out["failed"] and out["reasons"] == [] and out["periods"][0]["ks_pvalue"] > 0.5
    share = out["periods"][-1]["refused_share"]
    assert main([*base, "--max-refused-share", str(share - 0.01)]) == 1
    assert "above" in capsys.readouterr().out


def test_forget_deletes_the_oldest_week_for_real(imported, tmp_path, capsys, real_embedder):
    from evalcore.read.traffic.stored import stored
    from evalcore.traffic.replay import import_log

    store, run_id, rows, _, _ = imported
    path = tmp_path / "forget.duckdb"
    shutil.copy(store.path, path)
    private = "my name is Ada Quill, account 4711-0815, why does kettle not install"
    extra = tmp_path / "private.jsonl"
    _write_jsonl(extra, [{"time": "2026-11-03T12:00:00Z", "query": private}])
    import_log(Store(path), f"{run_id}:E/dense", extra, embedder=real_embedder)
    answerable, _, _ = _questions()
    inode = path.stat().st_ino
    assert main(["--store", str(path), "traffic", "forget", "--before", "2026-11-09"]) == 0
    assert "forgot 55 logged queries" in capsys.readouterr().out
    s = Store(path)
    held = stored(s, run_id, Configuration("E", "dense"))
    assert held.lines == 60 and held.since >= datetime(2026, 11, 9)
    texts = set(s.query("SELECT text FROM traffic_texts")["text"])
    assert not texts & {*answerable, private}
    assert path.stat().st_ino != inode  # rewritten: no free page of the old file is kept
    data = path.read_bytes()
    assert private.encode() not in data and b"Ada Quill" not in data and b"4711-0815" not in data


def test_export_leaves_query_text_out_unless_asked(imported, tmp_path, capsys):
    store, run_id, rows, _, _ = imported
    out = tmp_path / "traffic.csv"
    base = [
        "--store",
        str(store.path),
        "traffic",
        "export",
        str(out),
        "--run",
        f"{run_id}:E/dense",
        "--threshold",
        "0.5",
    ]
    assert main(base) == 0
    content = out.read_text(encoding="utf-8")
    assert rows[0]["query"] not in content and "text_hash" in content.splitlines()[0]
    assert len(content.splitlines()) == len(rows) + 1
    assert main([*base, "--with-text"]) == 0
    assert rows[0]["query"] in out.read_text(encoding="utf-8")
    capsys.readouterr()


def test_every_traffic_subcommand_has_help_text(capsys):
    from evalcore.cli import build_parser

    sub = next(a for a in build_parser()._actions if a.dest == "command").choices["traffic"]
    inner = next(a for a in sub._actions if a.dest == "traffic_command")
    assert sorted(inner.choices) == ["check", "export", "forget", "import", "sample"]
    for name, parser in inner.choices.items():
        with pytest.raises(SystemExit) as exc:
            main(["traffic", name, "--help"])
        assert exc.value.code == 0 and f"usage: python -m evalcore traffic {name}" in capsys.readouterr().out
        assert parser.description and all(a.help for a in parser._actions)


def test_holm_and_psi_agree_with_independent_computations():
    from statsmodels.stats.multitest import multipletests

    from evalcore.measures.drift import psi
    from evalcore.measures.stats import holm

    rng = np.random.default_rng(0)
    for m in (1, 2, 3, 7):
        p = rng.uniform(0, 0.2, m).tolist()
        assert holm(p) == pytest.approx(list(multipletests(p, method="holm")[1]))
    ref, cur = rng.normal(0.5, 0.1, 400), rng.normal(0.6, 0.1, 300)
    edges = np.quantile(ref, np.arange(1, 10) / 10)
    e = np.histogram(ref, [-np.inf, *edges, np.inf])[0] / len(ref)
    a = np.histogram(cur, [-np.inf, *edges, np.inf])[0] / len(cur)
    a, e = np.maximum(a, 1e-4), np.maximum(e, 1e-4)
    assert psi(cur, ref) == pytest.approx(float(np.sum((a - e) * np.log(a / e))))
    assert psi(ref, ref) == pytest.approx(0.0, abs=1e-12)


def test_an_endpoint_run_is_replayed_through_its_response_cache(tmp_path, mini_inputs, capsys):
    from external.test_endpoint import FLAKY, SLOW, TIMEOUT, Service

    from evalcore.read.traffic.stored import lines
    from evalcore.traffic.replay import import_log

    store = Store(tmp_path / "evalcore.duckdb")
    with Service(*mini_inputs) as service:
        argv = ["--store", str(store.path), "run-endpoint", *MINI_ARGS, "--url", service.url, "--timeout"]
        argv += [
            str(TIMEOUT),
            "--retries",
            "0",
            "--max-failures",
            "0.5",
            "--chunker",
            "sent3",
            "--retriever",
            "api",
            "--name",
            "api",
            "-q",
        ]
        assert main([*argv, "--json"]) == 0
        run_id = json.loads(capsys.readouterr().out)["run_id"]
        before = dict(service.requests)
        queries = store.query("SELECT query_id, text FROM queries WHERE run_id = ? AND valid", [run_id])
        log = tmp_path / "api.jsonl"
        rows = [{"time": f"2026-11-02T10:00:{i:02d}Z", "query": t} for i, t in enumerate(queries["text"])]
        rows.append({"time": "2026-11-02T11:00:00Z", "query": "a question the service cannot answer"})
        _write_jsonl(log, rows)
        result = import_log(store, f"{run_id}:sent3/api", log)
        assert result.added == len(rows) and result.embedded == 0  # no model: the service ranks
        # every text with a cached answer came from the response cache; only the two the run got no
        # 2xx answer for (a timeout, an HTTP 500: never cached) were asked again
        asked = {q: n - before.get(q, 0) for q, n in service.requests.items() if n != before.get(q, 0)}
        assert asked == {SLOW: 1, FLAKY: 1}
    ours = store.query("SELECT text_hash, rank, chunk_id, score FROM traffic_hits ORDER BY text_hash, rank")
    theirs = store.query(
        "SELECT q.text, q.query_id, h.rank, h.chunk_id, h.score FROM hits h JOIN queries q USING (run_id, query_id) "
        "WHERE h.run_id = ? AND q.valid AND q.query_id NOT IN (SELECT query_id FROM failures WHERE run_id = ?)",
        [run_id, run_id],
    )
    theirs["text_hash"] = [text_hash(t) for t in theirs["text"]]
    theirs = theirs.drop_duplicates(["text_hash", "rank"]).sort_values(["text_hash", "rank"])
    mine = ours[ours["text_hash"].isin(set(theirs["text_hash"]))]
    assert list(mine["chunk_id"]) == list(theirs["chunk_id"]) and np.allclose(mine["score"], theirs["score"])
    failed = store.query("SELECT text, failure FROM traffic_texts WHERE failure IS NOT NULL")
    assert len(failed) >= 1 and "cannot answer" in " ".join(failed["text"])  # kept with its reason
    assert len(lines(store, run_id, Configuration("sent3", "api"))) == len(rows) - len(failed)  # never a miss


def test_an_imported_run_is_refused_with_one_line(tmp_path, mini_inputs, capsys):
    import sys

    from conftest import ROOT, import_run

    sys.path.insert(0, str(ROOT / "examples"))
    import external_bm25

    files = external_bm25.write_files(tmp_path, *mini_inputs)
    store = tmp_path / "evalcore.duckdb"
    run_id = import_run(store, files["chunks"], files["trec"], capsys, "--name", "ext")["run_id"]
    log = tmp_path / "log.jsonl"
    _write_jsonl(log, [{"time": "2026-11-02T10:00:00Z", "query": "which port does kettle use"}])
    assert main(["--store", str(store), "traffic", "import", str(log), "--run", run_id, "-q"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "imported from rankings made elsewhere: it has no retriever to replay" in err[0]
    assert int(Store(store).query("SELECT count(*) AS n FROM traffic_queries")["n"].iloc[0]) == 0


def test_parquet_logs_read_the_same_lines_and_labels_given_later_count(imported, tmp_path, real_embedder):
    import pandas as pd

    from evalcore.read.traffic.stored import labelled_rates
    from evalcore.traffic.log import LogFields
    from evalcore.traffic.replay import import_log, set_label
    from evalcore.traffic.target import resolve_target

    store, run_id, rows, _, _ = imported
    work = Store(tmp_path / "copy.duckdb")
    shutil.copy(store.path, work.path)
    frame = pd.DataFrame(rows)
    frame["time"] = [
        pd.Timestamp(t, unit="s", tz="UTC") if not isinstance(t, str) else pd.Timestamp(t) for t in frame["time"]
    ]
    frame.to_parquet(tmp_path / "log.parquet")
    again = import_log(
        work, f"{run_id}:E/dense", tmp_path / "log.parquet", LogFields(label="label"), embedder=real_embedder
    )
    assert (again.lines, again.added, again.already) == (len(rows), 0, len(rows))  # the same identities
    extra = tmp_path / "unlabelled.parquet"
    pd.DataFrame({"query": ["what is the capital of France"], "time": ["2026-11-04T10:00:00Z"]}).to_parquet(extra)
    assert import_log(work, f"{run_id}:E/dense", extra, embedder=real_embedder).added == 1
    config = Configuration("E", "dense")
    before = labelled_rates(work, run_id, config, T)
    assert before.unlabelled == 1
    target = resolve_target(work, f"{run_id}:E/dense")
    set_label(work, target, text_hash("what is the capital of France"), "off-topic", "reviewer@example.org")
    after = labelled_rates(work, run_id, config, T)
    assert after.unlabelled == 0 and after.traffic_bluff.n == before.traffic_bluff.n + 1
    set_label(work, target, text_hash(rows[0]["query"]), "off-topic", None)  # the log's own label wins
    assert labelled_rates(work, run_id, config, T).traffic_lost.n == before.traffic_lost.n


def test_the_histogram_bins_count_every_value_once_with_the_same_edges_for_every_group():
    import pandas as pd

    from evalcore.measures.drift import binned_shares

    rng = np.random.default_rng(1)
    a, b = rng.normal(0.5, 0.1, 500), rng.normal(0.7, 0.05, 120)
    frame = pd.DataFrame({"group": ["a"] * 500 + ["b"] * 121, "gate_value": [*a, *b, math.nan]})
    bins = binned_shares(frame, bins=12)
    low, high = min(a.min(), b.min()), max(a.max(), b.max())
    for group, values in (("a", a), ("b", b)):
        part = bins[bins["group"] == group]
        assert len(part) == 12 and part["n"].sum() == len(values)  # NaN left out, every value in one bin
        assert part["bin_start"].iloc[0] == pytest.approx(low) and part["bin_end"].iloc[-1] == pytest.approx(high)
        for start, end, n, share in part[["bin_start", "bin_end", "n", "share"]].itertuples(index=False):
            last = end == part["bin_end"].iloc[-1]
            brute = sum(start <= v < end or (last and v == end) for v in values)  # by hand: [start, end)
            assert n == brute and share == pytest.approx(brute / len(values))
