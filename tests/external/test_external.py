"""import-run: another splitter's chunks and another library's BM25 rankings, scored like ours.

The external retriever is real (examples/external_bm25.py: three-sentence windows ranked by
rank_bm25). Expected figures come from an independent count: needles found with str.find,
windows holding them by their own offsets, ranks read off rank_bm25's lists, and ranx.
"""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

import pytest
import ranx_oracle
from conftest import MINI, ROOT, import_run

sys.path.insert(0, str(ROOT / "examples"))
import external_bm25

from evalcore.cli import main
from evalcore.store import Store

QUESTIONS, OOD, CORPUS = MINI / "questions.jsonl", MINI / "ood.jsonl", MINI / "corpus"
INPUTS = ["--corpus", str(CORPUS), "--questions", str(QUESTIONS), "--ood", str(OOD)]


@pytest.fixture(scope="session")
def bm25_files(tmp_path_factory, mini_inputs):
    corpus, gt = mini_inputs
    return external_bm25.write_files(tmp_path_factory.mktemp("bm25"), corpus, gt)


@pytest.fixture(scope="session")
def oracle(mini_inputs):
    """{query id: first correct rank or None} of the scored questions, counted independently."""
    corpus, gt = mini_inputs
    windows = external_bm25.sentence_windows(corpus)
    rankings = external_bm25.bm25_rankings(windows, external_bm25.all_queries(gt))
    docs = {d.doc_id: d.text for d in corpus.documents}
    first, qrels = {}, {}
    for line in QUESTIONS.read_text().splitlines():
        q = json.loads(line)
        places = [(d, t.find(q["needle"])) for d, t in docs.items() if q["needle"] in t]
        if len(places) != 1:
            continue  # an invalid needle: not scored
        doc, start = places[0]
        end = start + len(q["needle"])
        good = {w.chunk_id for w in windows if w.doc_id == doc and w.start <= start and end <= w.end}
        qrels[q["id"]] = dict.fromkeys(good, 1)
        ranks = [i for i, (c, _) in enumerate(rankings[q["id"]], start=1) if c in good]
        first[q["id"]] = ranks[0] if ranks else None
    return first, qrels, rankings


def run_ids(path: Path) -> list[str]:
    return Store(path).query("SELECT run_id FROM runs ORDER BY created_at")["run_id"].tolist()


def test_trec_and_jsonl_imports_give_the_independent_figures(tmp_path, bm25_files, oracle, capsys):
    first, qrels, rankings = oracle
    store = tmp_path / "s.duckdb"
    outputs = []
    for kind in ("trec", "jsonl"):
        assert (
            main(
                [
                    "--store",
                    str(store),
                    "import-run",
                    *INPUTS,
                    "--chunks",
                    str(bm25_files["chunks"]),
                    "--rankings",
                    str(bm25_files[kind]),
                    "--chunker",
                    "sent3",
                    "--retriever",
                    "rank_bm25",
                    "--name",
                    kind,
                    "--json",
                ]
            )
            == 0
        )
        outputs.append(json.loads(capsys.readouterr().out))
    a, b = outputs
    assert [c["strategy"] + "/" + c["retriever"] for c in a["configurations"]] == ["sent3/rank_bm25"]
    config = a["configurations"][0]
    assert dict(config.items()) == dict(b["configurations"][0].items())
    n = len(first)
    assert config["queries"] == n == a["queries_in"] and a["queries_out"] == 7
    for k in (1, 4, 8, 20):
        assert config[f"recall@{k}"] == sum(1 for r in first.values() if r and r <= k) / n
    assert config["mrr"] == pytest.approx(sum(1 / r for r in first.values() if r) / n, abs=1e-12)
    assert config["destroyed"] == 0 and config["failed"] == 0 and config["gate"] == "score >= t"
    assert config["source"] == "import" and a["unlocated_chunks"] == []
    # ranx on the same qrels and run agrees (scores 1/rank: ranx breaks BM25's ties its own way,
    # evalcore keeps the order the file gives)
    run = {q: {c: 1 / r for r, (c, _) in enumerate(hits, start=1)} for q, hits in rankings.items() if q in qrels}
    scores = ranx_oracle.evaluate(qrels, run, ["hit_rate@1", "hit_rate@4", "mrr"])
    assert (
        config["recall@1"] == pytest.approx(scores["hit_rate@1"])
        and config["recall@4"] == pytest.approx(scores["hit_rate@4"])
        and config["mrr"] == pytest.approx(scores["mrr"])
    )
    # hits keep the library's own scores and no cosine distance
    s = Store(store)
    hits = s.query(
        "SELECT h.rank, h.score, h.distance, c.external_id FROM hits h JOIN chunks c USING "
        "(run_id, strategy, chunk_id) WHERE h.run_id = ? AND h.query_id = 'port-course' ORDER BY rank",
        [a["run_id"]],
    )
    assert hits["external_id"].tolist() == [c for c, _ in rankings["port-course"]]
    assert hits["score"].tolist() == [sc for _, sc in rankings["port-course"]]
    assert hits["distance"].isna().all()


def test_unlocated_chunks_are_stored_reported_and_never_correct(tmp_path, bm25_files, mini_inputs, capsys):
    corpus, _ = mini_inputs
    install = next(d for d in corpus.documents if d.doc_id == "install")
    port = install.text.index("The server listens on port 8470 by default.")
    chunks = tmp_path / "chunks.jsonl"
    extra = [  # each would hold the port answer if it were located
        {"id": "nowhere", "document": "install", "text": "The server listens on port 9999 by default."},
        {"id": "elsewhere", "document": "no-such-doc", "text": "The server listens on port 8470 by default."},
        {"id": "outside", "document": "install", "text": "x", "start": port, "end": 10**6},
        {"id": "twice", "document": "install", "text": "the"},
        {"id": "spaced", "document": "install", "text": "The   server\nlistens on port 8470\tby default."},
    ]
    chunks.write_text(bm25_files["chunks"].read_text() + "".join(json.dumps(r) + "\n" for r in extra))
    ranks = tmp_path / "r.trec"
    ranks.write_text("".join(f"port-course Q0 {r['id']} {i} {10 - i} t\n" for i, r in enumerate(extra, start=1)))
    store = tmp_path / "s.duckdb"
    assert (
        main(
            ["--store", str(store), "import-run", *INPUTS, "--chunks", str(chunks), "--rankings", str(ranks), "--json"]
        )
        == 0
    )
    out, err = capsys.readouterr()
    summary = json.loads(out)
    reasons = {u["chunk"]: u["reason"] for u in summary["unlocated_chunks"]}
    assert set(reasons) == {"nowhere", "elsewhere", "outside", "twice"}
    assert reasons["nowhere"] == "text not found in document 'install'"
    assert reasons["elsewhere"] == "document 'no-such-doc' is not in the corpus"
    assert reasons["outside"].startswith(f"offsets [{port}, 1000000) lie outside document 'install'")
    assert reasons["twice"].startswith("text found ") and "times in document 'install'" in reasons["twice"]
    assert "warning: 4 chunk(s) could not be located" in err and f"{chunks}:" in err
    # the whitespace-tolerant one (rank 5) is the first correct hit; the four above never are
    rows = Store(store).query("SELECT rank, correct FROM hits WHERE query_id = 'port-course' ORDER BY rank")
    assert rows["correct"].tolist() == [False, False, False, False, True]
    stored = Store(store).query("SELECT external_id, problem, start FROM chunks WHERE problem IS NOT NULL")
    assert set(stored["external_id"]) == set(reasons) and stored["start"].isna().all()
    # queries the rankings leave out are answered with nothing: misses, and reported
    assert summary["configurations"][0]["recall@20"] == pytest.approx(1 / summary["queries_in"])
    assert len(summary["unranked_queries"]) == summary["queries_in"] + summary["queries_out"] - 1


BAD_CHUNKS = [
    ('{"id": "a", "document": "install"}', "field 'text' must be a non-empty string"),
    ('{"id": "a b", "document": "install", "text": "x"}', "contains whitespace"),
    ('{"document": "install", "text": "x"}', "missing field 'id'"),
    ('{"id": "a", "document": "install", "text": "x", "start": 5}', "give both 'start' and 'end'"),
    ('{"id": "a", "document": "install", "text": "x", "start": 5, "end": 5}', "0 <= start < end"),
    ('{"id": "install::0", "document": "install", "text": "x"}', "duplicate chunk id 'install::0'"),
    ("not json", "invalid JSON"),
]
BAD_RANKINGS = [
    ("port-course Q0 install::0 1 9.5\n", "a TREC run line has 6 fields"),
    ("port-course Q0 install::0 1 nine t\n", "score must be a number"),
    ("port-course Q0 install::0 1 nan t\n", "score must be a finite number"),
    ("port-course Q0 no-such-chunk 1 1.0 t\n", "chunk 'no-such-chunk' is not in"),
    ("no-such-query Q0 install::0 1 1.0 t\n", "query 'no-such-query' is neither in the questions"),
    ("port-course Q0 install::0 1 1.0 t\nport-course Q0 install::0 2 0.5 t\n", "ranked twice"),
    ("port-course Q0 install::0 1 0.5 t\nport-course Q0 install::1 2 0.9 t\n", "is the score a distance?"),
]


@pytest.mark.parametrize("bad, message", BAD_CHUNKS + BAD_RANKINGS)
def test_a_bad_file_is_one_line_naming_file_and_line_and_nothing_is_stored(tmp_path, bm25_files, bad, message, capsys):
    store = tmp_path / "s.duckdb"
    shutil.copy(bm25_files["chunks"], tmp_path / "chunks.jsonl")
    chunks, ranks = tmp_path / "chunks.jsonl", tmp_path / "r.trec"
    ranks.write_text("port-course Q0 install::0 1 1.0 t\n")
    if (bad, message) in BAD_CHUNKS:
        lines = chunks.read_text().splitlines()
        chunks.write_text("\n".join(lines[:3] + [bad] + lines[3:]) + "\n")
        where = f"{chunks}:4: "
    else:
        ranks.write_text(bad)
        where = f"{ranks}:{bad.count(chr(10))}: " if "twice" in message or "distance" in message else f"{ranks}:1: "
    code = main(["--store", str(store), "import-run", *INPUTS, "--chunks", str(chunks), "--rankings", str(ranks)])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2
    assert err[-1].startswith(f"error: {where}") and message in err[-1], err[-1]
    assert not store.exists() or run_ids(store) == []


def test_distance_scores_rank_lowest_first(tmp_path, bm25_files, oracle, capsys):
    """The same ranking written as distances (negated BM25) gives the same figures under --score distance."""
    lines = bm25_files["trec"].read_text().splitlines()
    flipped = tmp_path / "d.trec"
    flipped.write_text("".join(f"{q} Q0 {c} {r} {-float(s)!r} t\n" for q, _, c, r, s, _ in (x.split() for x in lines)))
    out = []
    for path, kind in ((bm25_files["trec"], "similarity"), (flipped, "distance")):
        assert (
            main(
                [
                    "--store",
                    str(tmp_path / "s.duckdb"),
                    "import-run",
                    *INPUTS,
                    "--chunks",
                    str(bm25_files["chunks"]),
                    "--rankings",
                    str(path),
                    "--score",
                    kind,
                    "--json",
                ]
            )
            == 0
        )
        out.append(json.loads(capsys.readouterr().out)["configurations"][0])
    assert out[1]["gate"] == "score < t"
    assert {k: v for k, v in out[0].items() if k != "gate"} == {k: v for k, v in out[1].items() if k != "gate"}


def test_imported_run_compares_paired_with_builtin_configurations(
    tmp_path, engine_store, engine_run_id, bm25_files, oracle, capsys
):
    """Same store, two runs, same queries: the win/loss matrix and the gate pair the imported
    configuration with built-in E/hybrid; wins, losses and p from an independent count + scipy."""
    from scipy.stats import binomtest

    from evalcore.read.compare import compare
    from evalcore.records import Configuration, RunConfiguration

    first, _, _ = oracle
    store = tmp_path / "both.duckdb"
    shutil.copy(engine_store, store)
    ext = import_run(
        str(store),
        str(bm25_files["chunks"]),
        str(bm25_files["trec"]),
        capsys,
        "--chunker",
        "sent3",
        "--retriever",
        "rank_bm25",
        "--name",
        "ext",
    )["run_id"]
    builtin = Store(store).query(
        "SELECT query_id, first_correct_rank FROM results WHERE run_id = ? AND "
        "strategy = 'E' AND retriever = 'hybrid' AND domain = 'in'",
        [engine_run_id],
    )
    theirs = {
        q: (None if r != r else int(r)) for q, r in zip(builtin["query_id"], builtin["first_correct_rank"], strict=True)
    }
    assert set(theirs) == set(first)
    wins = sum(1 for q in first if (first[q] or 99) <= 4 < (theirs[q] or 99))
    losses = sum(1 for q in first if (theirs[q] or 99) <= 4 < (first[q] or 99))
    p = binomtest(wins, wins + losses, 0.5).pvalue if wins + losses else 1.0

    sides = [
        RunConfiguration(ext, Configuration("sent3", "rank_bm25")),
        RunConfiguration(engine_run_id, Configuration("E", "hybrid")),
    ]
    matrix = compare(Store(store), sides, 4, adjust=False).matrix
    cell = matrix[matrix["row"].str.startswith("sent3/rank_bm25") & matrix["column"].str.startswith("E/hybrid")].iloc[0]
    assert (cell["wins"], cell["losses"]) == (wins, losses) and cell["p_value"] == pytest.approx(p)

    code = main(
        [
            "--store",
            str(store),
            "gate",
            "--baseline",
            "mini:E/hybrid",
            "--candidate",
            "ext:sent3/rank_bm25",
            "--format",
            "json",
        ]
    )
    gate = json.loads(capsys.readouterr().out)
    result = gate["configurations"][0]
    assert (result["wins"], result["losses"]) == (wins, losses)
    assert result["p_value"] == pytest.approx(p) and code == (1 if losses > wins and p < 0.05 else 0)
    assert gate["notes"] == ["model sentence-transformers/all-MiniLM-L6-v2 -> ranked elsewhere (import)"]


def test_evaluate_a_python_retriever(tmp_path, mini_inputs, oracle):
    """evalcore.evaluate(retriever=fn): dicts, (object, score) pairs and metadata paths all
    read; a call that raises fails its query, which is left out, not scored as a miss."""
    from dataclasses import dataclass

    import evalcore

    @dataclass
    class Doc:  # the shape of a LangChain Document: page_content + metadata
        page_content: str
        metadata: dict

    corpus, gt = mini_inputs
    first, _, _ = oracle
    windows = external_bm25.sentence_windows(corpus)
    by_id = {w.chunk_id: w for w in windows}
    rankings = external_bm25.bm25_rankings(windows, external_bm25.all_queries(gt))
    by_text = {text: qid for qid, text in external_bm25.all_queries(gt).items()}
    calls = []

    def search(query: str, k: int):
        qid = by_text[query]
        calls.append((qid, k))
        if qid == "link-ticket":
            raise RuntimeError("index shard 3 is down")
        hits = rankings[qid][:k]
        if qid.endswith("course"):
            return [(Doc(by_id[c].text, {"source": str(CORPUS / f"{by_id[c].doc_id}.md")}), s) for c, s in hits]
        return [{"id": c, "text": by_id[c].text, "document": by_id[c].doc_id, "score": s} for c, s in hits]

    result = evalcore.evaluate(
        corpus=CORPUS,
        questions=QUESTIONS,
        ood=OOD,
        retriever=search,
        k=20,
        store=tmp_path / "s.duckdb",
        chunker="sent3",
        retriever_name="bm25fn",
    )
    assert len(calls) == len(first) + len(gt.ood) and {k for _, k in calls} == {20}
    assert result.failures == {"link-ticket": "RuntimeError: index shard 3 is down"}
    row = result.summary.iloc[0]
    scored = {q: r for q, r in first.items() if q != "link-ticket"}
    assert row["config"] == "sent3/bm25fn" and row["queries"] == len(scored) and row["failed"] == 1
    assert row["recall@4"] == sum(1 for r in scored.values() if r and r <= 4) / len(scored)
    assert row["mrr"] == pytest.approx(sum(1 / r for r in scored.values() if r) / len(scored), abs=1e-12)
    assert "sent3/bm25fn" in str(result) and "1 queries failed" in str(result)
    info = Store(tmp_path / "s.duckdb").run(result.run_id)
    assert info.status == "complete" and info.settings["source"] == "python"


def test_front_door_is_small_and_lazy():
    import subprocess

    import evalcore

    assert set(evalcore.__all__) >= {"evaluate", "import_run", "run_endpoint", "export_formats", "Store"}
    code = (
        "import sys, evalcore; assert 'pandas' not in sys.modules and 'duckdb' not in sys.modules; "
        "evalcore.evaluate; assert 'evalcore.run.evaluate' in sys.modules"
    )
    subprocess.run([sys.executable, "-c", code], check=True, cwd=ROOT)


def test_every_page_and_the_gate_axis_on_an_imported_run(
    tmp_path, engine_store, bm25_files, oracle, capsys, monkeypatch
):
    """The dashboard's reads on an imported run: the sweep and the distances read BM25's own
    score (kept when >= t), recomputed here from the rankings and the independent correctness;
    every page renders."""
    from dashboard.test_app import PAGES, open_page

    from evalcore.configurations import info
    from evalcore.measures.threshold import counts_at, state_at
    from evalcore.read.distances import distance_summary, distances
    from evalcore.read.queries import query_answer, query_view
    from evalcore.read.sweeps import run_sweep, suggest_on_grid
    from evalcore.records import Configuration

    first, qrels, rankings = oracle
    store = tmp_path / "both.duckdb"
    shutil.copy(engine_store, store)
    chunks = tmp_path / "chunks.jsonl"
    chunks.write_text(
        bm25_files["chunks"].read_text()
        + json.dumps({"id": "lost", "document": "install", "text": "not in the corpus"})
        + "\n"
    )
    ranks = tmp_path / "r.trec"
    ranks.write_text("ood-paella Q0 lost 0 1000.0 t\n" + bm25_files["trec"].read_text())  # unlocated, first
    run_id = import_run(
        str(store), str(chunks), str(ranks), capsys, "--chunker", "sent3", "--retriever", "rank_bm25", "--name", "ext"
    )["run_id"]
    s = Store(store)
    config = Configuration("sent3", "rank_bm25")
    assert info(s, run_id, "sent3", "rank_bm25").axis.label == "score (higher = closer)"
    ind = {q: [(sc, c in qrels[q]) for c, sc in rankings[q]] for q in qrels}
    ood = {q: [sc for _, sc in hits] for q, hits in rankings.items() if q.startswith("ood-")}
    ood["ood-paella"] = [1000.0] + ood["ood-paella"]
    swept = run_sweep(s, run_id, config)
    for t in [0.0, 2.5, 5.0, 7.5, 10.0, 100.0, *swept["threshold"].iloc[:-1].tolist()]:
        assert state_at(swept, t) == counts_at(ind, ood, t, higher_is_closer=True), t
    suggestion = suggest_on_grid(swept, cost_ratio=3.0)
    assert counts_at(ind, ood, suggestion.threshold, higher_is_closer=True).bluffs == suggestion.bluffs
    frame = distances(s, run_id, config)
    answers = frame[frame["measure"] == "in: answer"].set_index("query_id")["distance"]
    assert answers.to_dict() == {q: rankings[q][first[q] - 1][1] for q in first if first[q]}
    summary = distance_summary(frame)
    assert summary.worst_in == min(answers) and summary.axis == "score (higher = closer)"
    view = query_view(s, run_id, "port-course", config, 5.0)
    assert view.kept["gate_value"].tolist() == [sc for _, sc in rankings["port-course"][:4] if sc >= 5.0]
    quoted = query_answer(s, run_id, "ood-paella", config, 500.0)  # only the unlocated chunk passes
    assert quoted.answered and quoted.citations["quote"].tolist() == ["not in the corpus"]
    assert quoted.citations["fragment"].tolist() == [""]
    from evalcore.figures.build import Selection
    from evalcore.figures.review import review_summary

    pack = review_summary(s, Selection(run_id, config, 5.0, "set", (), 4, True), [], {})
    gate_line = next(line for line in pack.splitlines() if line.startswith("- The gate at t keeps"))
    assert "score >= t" in gate_line and "cosine" not in gate_line, gate_line  # the pack's rule is the run's
    for page in PAGES:
        at = open_page(store, page, monkeypatch, run_id=run_id)
        assert not at.exception, (page, [e.value for e in at.exception])
        assert not at.error, (page, [e.value for e in at.error])
        if page == "index":  # no model embedded its chunks here: the window was not measured, not passed
            assert "No chunk is over the window." not in [m.value for m in at.success]
            assert any("not measured" in m.value.lower() for m in at.info), [m.value for m in at.info]
        if page == "methods":  # the Methods screen defines what the other screens show for this run
            methods = " ".join(m.value for m in at.markdown)
            assert "score >= t" in methods and "score (higher = closer)" in methods
