"""A run with BM25 analyzers, end to end: the engine, the CLI (run, compare, gate,
export-formats), and the dashboard in a real browser (New run's language picker, Query's
tokens, Compare, Export's file names).

One real run of the mini corpus (strategy C x dense, bm25, bm25:english, hybrid,
hybrid:english, the real model) serves every test here. Its bm25 and hybrid rows must equal,
value for value, those of the engine store's run (made without analyzers); p values are
checked against scipy's binomtest, MRR against the exported TREC run read by hand.
"""

from __future__ import annotations

import csv
import io
import json
import shutil
from pathlib import Path

import pytest
from conftest import MINI_ARGS
from scipy.stats import binomtest
from serving import CHROMIUM, healthy, settled, shared_chromium, streamlit_app, watch

from evalcore.cli import main
from evalcore.read.summary import summary_table
from evalcore.store import Store

RETRIEVERS = ["dense", "bm25", "bm25:english", "hybrid", "hybrid:english"]


@pytest.fixture(scope="module")
def lang_store(tmp_path_factory, real_embedder, mini_inputs) -> tuple[Path, str]:
    from evalcore.chunking import parse_strategies
    from evalcore.run.runner import RunRequest, run_evaluation

    path = tmp_path_factory.mktemp("languages") / "evalcore.duckdb"
    corpus, gt = mini_inputs
    request = RunRequest(corpus, gt, parse_strategies("C"), RETRIEVERS, name="languages")
    result = run_evaluation(request, Store(path), embedders=[real_embedder])
    return path, result.run_id


def rows(path: Path, run_id: str, table: str, retriever: str):
    order = "query_id, rank" if table == "hits" else "query_id"
    df = Store(path).query(
        f"SELECT * FROM {table} WHERE run_id = ? AND strategy = 'C' AND retriever = ? ORDER BY {order}",
        [run_id, retriever],
    )
    return df.drop(columns=["run_id"]).reset_index(drop=True)


def test_bm25_and_hybrid_unchanged_beside_analyzers(lang_store, engine_store, engine_run_id):
    path, run_id = lang_store
    for table in ("results", "hits"):
        for retriever in ("bm25", "hybrid"):
            ours, before = rows(path, run_id, table, retriever), rows(engine_store, engine_run_id, table, retriever)
            assert len(ours) and ours.equals(before), (table, retriever)
        assert len(rows(path, run_id, table, "bm25:english")) == len(rows(path, run_id, table, "bm25"))
    settings = Store(path).run(run_id).settings
    assert settings["retrievers"] == RETRIEVERS
    assert "english Snowball stemmer (PyStemmer 3." in settings["bm25_analyzers"]["english"]
    assert "bm25_analyzers" not in Store(engine_store).run(engine_run_id).settings


def hit_at(path: Path, run_id: str, retriever: str, k: int) -> dict[str, bool]:
    df = Store(path).query(
        "SELECT r.query_id, r.first_correct_rank FROM results r JOIN queries q ON q.run_id = r.run_id "
        "AND q.query_id = r.query_id WHERE r.run_id = ? AND r.retriever = ? AND r.domain = 'in' AND q.valid",
        [run_id, retriever],
    )
    ranks = df["first_correct_rank"].fillna(0).astype(int)
    return {q: 0 < r <= k for q, r in zip(df["query_id"], ranks, strict=True)}


def test_cli_compare_gate_export_and_unknown_language(lang_store, tmp_path, capsys):
    path, run_id = lang_store
    store = ["--store", str(path)]
    assert main([*store, "compare", run_id, "--width", "200"]) == 0
    out = capsys.readouterr().out
    assert "C/bm25:english" in out and "C/hybrid:english" in out

    # gate: one analyzer against the other, RUN:STRATEGY/RETRIEVER with a ':' in the retriever
    code = main(
        [*store, "gate", "--baseline", f"{run_id}:C/bm25", "--candidate", f"{run_id}:C/bm25:english"]
        + ["--format", "json", "--metric", "hit@1"]
    )
    report = json.loads(capsys.readouterr().out)
    (result,) = report["configurations"]
    assert result["baseline"]["configuration"] == "C/bm25" and result["candidate"]["configuration"] == "C/bm25:english"
    base, cand = hit_at(path, run_id, "bm25", 1), hit_at(path, run_id, "bm25:english", 1)
    wins = sum(cand[q] and not base[q] for q in base)
    losses = sum(base[q] and not cand[q] for q in base)
    assert (result["wins"], result["losses"]) == (wins, losses)
    assert result["p_value"] == pytest.approx(binomtest(wins, wins + losses).pvalue if wins + losses else 1.0)
    assert code == report["exit_code"] == (1 if losses > wins and result["p_value"] < 0.05 else 0)

    # export-formats: a ':' never reaches a file name (bm25:english -> bm25_english)
    out_dir = tmp_path / "formats"
    assert main([*store, "export-formats", run_id, "-o", str(out_dir)]) == 0
    capsys.readouterr()
    runs = sorted(p.name for p in (out_dir / "C" / "runs").iterdir())
    assert runs == sorted(f"{r.replace(':', '_')}.{ext}" for r in RETRIEVERS for ext in ("json", "trec"))
    assert all(":" not in p.name for p in out_dir.rglob("*"))
    qrels: dict[str, set[str]] = {}
    for line in (out_dir / "C" / "qrels.trec").read_text("utf-8").splitlines():
        q, _, doc, rel = line.split()
        if int(rel):
            qrels.setdefault(q, set()).add(doc)
    first: dict[str, int] = {}
    for line in (out_dir / "C" / "runs" / "bm25_english.trec").read_text("utf-8").splitlines():
        q, _, doc, rank, _, tag = line.split()
        assert tag == "C_bm25_english"  # a TREC tag is one token, as file names are
        if q in qrels and doc in qrels[q] and q not in first:
            first[q] = int(rank)
    mrr = sum(1 / first[q] for q in first) / len(qrels)
    table = summary_table(Store(path), run_id).set_index("config")
    assert mrr == pytest.approx(table.loc["C/bm25:english", "mrr"])

    # an unknown language: one line listing the known ones, exit 2, nothing stored
    before = len(Store(path).query("SELECT run_id FROM runs"))
    assert main([*store, "run", *MINI_ARGS, "--retrievers", "dense,bm25:klingon", "-q"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "'klingon'" in err and "german" in err and "indonesian" in err
    assert len(Store(path).query("SELECT run_id FROM runs")) == before


@pytest.fixture(scope="module")
def served_languages(lang_store, tmp_path_factory):
    if CHROMIUM is None:
        pytest.skip("chromium is not installed (apt-get install chromium)")
    pytest.importorskip("playwright.sync_api", reason="the playwright package is not installed")
    path, run_id = lang_store
    folder = tmp_path_factory.mktemp("served-languages")
    store = folder / "evalcore.duckdb"
    shutil.copy(path, store)
    with streamlit_app(store, folder / "streamlit.log") as url:
        yield url, run_id


@pytest.mark.browser
def test_languages_journey_in_chromium(served_languages):
    """The engineer: New run offers the languages and says which retrievers that makes; Query
    shows the query's tokens as bm25:english reads them; Compare pairs the analyzers; Export
    names the file after the configuration without a ':'."""

    url, run_id = served_languages
    with shared_chromium() as browser:
        page = watch(browser.new_context(viewport={"width": 1400, "height": 1000}, accept_downloads=True).new_page())

        def select(label: str, option: str) -> None:
            box = page.get_by_role("combobox", name=label, exact=True)
            for _ in range(2):  # a click during a redraw can land on the list as it moves
                box.click()
                page.get_by_role("option", name=option, exact=True).click()
                settled(page)
                if box.input_value() == option:
                    return
            assert box.input_value() == option

        page.goto(f"{url}/new_run", wait_until="domcontentloaded")
        settled(page)
        healthy(page, "languages 1 new run")
        page.get_by_text("Built-in demo", exact=True).click()
        settled(page)
        picker = page.locator(".st-key-nr_languages")
        assert "chapter's tokenizer" in picker.inner_text()  # the default
        box = picker.get_by_role("combobox")
        box.click()
        box.press_sequentially("engl")  # the list of 38 is virtual: filter it as a user types
        page.get_by_role("option", name="english", exact=True).click()
        settled(page)
        page.keyboard.press("Escape")
        settled(page)
        healthy(page, "languages 2 english picked")
        assert (
            "Retrievers to run: dense, bm25, bm25:english, hybrid, hybrid:english" in page.locator("body").inner_text()
        )
        page.locator(".st-key-nr_validate button").click()
        settled(page)
        healthy(page, "languages 2b validated")
        validated = page.locator('[data-testid="stAlertContentSuccess"], [data-testid="stAlertContentWarning"]')
        assert "retrievers dense,bm25,bm25:english,hybrid,hybrid:english" in validated.first.inner_text()

        page.goto(
            f"{url}/query?run_id={run_id}&query_id=config-course&config=C/bm25:english", wait_until="domcontentloaded"
        )
        settled(page)
        healthy(page, "languages 3 query")
        tokens = page.locator('[data-testid="query-tokens"]').first
        text = tokens.inner_text()
        # "Where is the configuration file created?": Snowball English stems, and which hits hold them
        for stem in ("configur", "file", "creat"):
            assert stem in text, text
        header = tokens.locator("tr").first.inner_text()
        assert "token" in header and "#1" in header
        created = tokens.locator("tr").filter(has_text="creat").first.inner_text()
        assert "created" in created  # the query's own word beside its stem

        page.goto(f"{url}/compare?run_id={run_id}", wait_until="domcontentloaded")
        settled(page)
        healthy(page, "languages 4 compare")
        body = page.locator("body").inner_text()
        assert "C/bm25:english" in body and "C/hybrid:english" in body

        page.goto(f"{url}/threshold?run_id={run_id}", wait_until="domcontentloaded")
        settled(page)
        select("Configuration (strategy/retriever)", "C/bm25:english")
        healthy(page, "languages 5 threshold")
        assert "Configuration C/bm25:english" in page.locator("body").inner_text()
        assert page.locator('[data-testid="stFormSubmitButton"] button').filter(has_text="for C/bm25:english").count()

        page.goto(f"{url}/export?run_id={run_id}", wait_until="domcontentloaded")
        settled(page)
        select("Configuration (strategy/retriever)", "C/bm25:english")
        healthy(page, "languages 6 export")
        with page.expect_download() as info:
            page.locator(".st-key-csv-export-distances button").first.click()
        name = info.value.suggested_filename
        data = Path(info.value.path()).read_text("utf-8")
        assert "C-bm25-english" in name and ":" not in name, name
        provenance = dict(r[0][2:].split(": ", 1) for r in csv.reader(io.StringIO(data)) if r and r[0].startswith("# "))
        assert provenance["configurations"] == "C/bm25:english"
        browser.close()
