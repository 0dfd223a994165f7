"""A run made elsewhere, walked in a real browser as an engineer and a product manager walk it.

The store is a copy of the engine store (the built-in run "mini" on tests/fixtures/mini) plus a
run imported with ``python -m evalcore import-run``: examples/external_bm25.py's three-sentence
windows ranked by rank_bm25, written as a chunk file and a TREC run file, with two changes a real
splitter and a real index make possible:

- the window holding the "config" needle is cut in two inside the needle, so that ground truth
  is destroyed in the imported run (no chunk holds it);
- a chunk whose text is nowhere in its document ("lost") is in the chunk file and ranked first
  for ood-paella: it is kept, reported with its reason, and never correct.

Every figure the browser shows is checked against an independent count: first correct ranks
from str.find and the chunks' own offsets, BM25 scores read off the rankings written, the
built-in side's ranks as stored, wins/losses counted here and p from scipy's ``binomtest``.

Steps (one served app for the module; each fails on an exception box, a traceback or an echoed
object): Runs -> Compare (paired with the built-in run) -> Distances -> Threshold (a threshold,
the bluff list, one bluff opened, the decision saved, a reload) -> Query (in-domain, destroyed,
out-of-domain) -> Index (the unlocated chunk's reason) -> Export (PNG, SVG and CSV read back).

Skipped, with the reason, when chromium or the playwright package is absent.
"""

from __future__ import annotations

import csv
import io
import json
import os
import re
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from conftest import MINI, ROOT
from serving import CHROMIUM, healthy, settled, shared_chromium, streamlit_app, watch

from dashboard.test_browser import _download, goto, nav, save_decision, select, selected, text_of, threshold_shown

sys.path.insert(0, str(ROOT / "examples"))
import external_bm25

from evalcore.store import Store

pytestmark = pytest.mark.browser  # every test here drives chromium

CONFIG = "sent3/rank_bm25"  # the imported configuration
BUILTIN = "E/hybrid"  # the built-in configuration it is paired with
AXIS = "score (higher = closer)"
DESTROYED_GROUP = "config"  # its window is cut inside the needle
LOST = {"id": "lost", "document": "install", "text": "Kettle also brews tea on a toaster."}
LOST_REASON = "text not found in document 'install'"
LOST_FOR = "ood-paella"  # the lost chunk is this query's top hit


def _needles() -> dict[str, tuple[str, str, str, int, int]]:
    """{query id: (group, needle, doc id, start, end)} of the questions whose needle is found
    exactly once in the corpus (the others are invalid: not scored), found with str.find."""
    from evalcore.inputs.corpus import load_corpus

    docs = {d.doc_id: d.text for d in load_corpus(MINI / "corpus").documents}
    out = {}
    for line in (MINI / "questions.jsonl").read_text().splitlines():
        q = json.loads(line)
        places = [(d, t.find(q["needle"])) for d, t in docs.items() if q["needle"] in t]
        if len(places) == 1 and docs[places[0][0]].count(q["needle"]) == 1:
            doc, start = places[0]
            out[q["id"]] = (q["group"], q["needle"], doc, start, start + len(q["needle"]))
    return out


def _external_files(folder: Path, corpus, gt) -> dict:
    """The chunk file and the TREC run file of the imported run, and what they say (the oracle)."""
    needles = _needles()
    _, _, doc, start, end = next(v for v in needles.values() if v[0] == DESTROYED_GROUP)
    windows = external_bm25.sentence_windows(corpus)
    cut = start + (end - start) // 2
    texts = {d.doc_id: d.text for d in corpus.documents}
    chunks = []
    for w in windows:
        if w.doc_id == doc and w.start <= start and end <= w.end:  # the window holding the needle: cut in two
            chunks += [
                external_bm25.Window(w.chunk_id + ".a", doc, w.start, cut, texts[doc][w.start : cut]),
                external_bm25.Window(w.chunk_id + ".b", doc, cut, w.end, texts[doc][cut : w.end]),
            ]
        else:
            chunks.append(w)
    rankings = external_bm25.bm25_rankings(chunks, external_bm25.all_queries(gt))
    top = rankings[LOST_FOR][0][1]
    rankings[LOST_FOR] = [(LOST["id"], top + 5.0)] + rankings[LOST_FOR][:-1]
    chunk_file = folder / "chunks.jsonl"
    with open(chunk_file, "w", encoding="utf-8") as fh:
        for i, c in enumerate(chunks):
            row = {"id": c.chunk_id, "document": c.doc_id, "text": c.text}
            if i % 2 == 0:  # half with offsets, half located by their text
                row.update(start=c.start, end=c.end)
            fh.write(json.dumps(row) + "\n")
        fh.write(json.dumps(LOST) + "\n")
    trec = folder / "rankings.trec"
    with open(trec, "w", encoding="utf-8") as fh:
        for qid, hits in rankings.items():
            fh.writelines(f"{qid} Q0 {c} {r} {s!r} journey\n" for r, (c, s) in enumerate(hits, start=1))
    # first correct rank of each scored question: a located chunk holding the needle whole
    first = {}
    for qid, (_, _, d, s, e) in needles.items():
        good = {c.chunk_id for c in chunks if c.doc_id == d and c.start <= s and e <= c.end}
        ranks = [r for r, (c, _) in enumerate(rankings[qid], start=1) if c in good]
        first[qid] = ranks[0] if ranks else None
    return {"chunks": chunk_file, "trec": trec, "rankings": rankings, "first": first, "needles": needles}


@pytest.fixture(scope="module")
def journey(tmp_path_factory, engine_store, engine_run_id, mini_inputs):
    """(store path, imported run id, built-in run id, oracle): the engine store's copy plus the import."""
    corpus, gt = mini_inputs
    folder = tmp_path_factory.mktemp("journey")
    files = _external_files(folder, corpus, gt)
    store = folder / "evalcore.duckdb"
    shutil.copy(engine_store, store)
    args = ["--corpus", str(MINI / "corpus"), "--questions", str(MINI / "questions.jsonl")]
    args += ["--ood", str(MINI / "ood.jsonl"), "--chunks", str(files["chunks"]), "--rankings", str(files["trec"])]
    out = folder / "import.json"
    code = subprocess.run(
        [sys.executable, "-m", "evalcore", "--store", str(store), "import-run", *args]
        + ["--chunker", "sent3", "--retriever", "rank_bm25", "--name", "ext", "--json"],
        cwd=ROOT,
        stdout=open(out, "wb"),
        stderr=subprocess.PIPE,
        env=dict(os.environ, HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1"),
    )
    assert code.returncode == 0, code.stderr.decode()
    summary = json.loads(out.read_text())
    assert [u["chunk"] for u in summary["unlocated_chunks"]] == [LOST["id"]]
    assert summary["configurations"][0]["destroyed"] == 1  # the config group
    stored = Store(store).query(  # the built-in side's first correct ranks, as its run stored them
        "SELECT query_id, first_correct_rank FROM results WHERE run_id = ? AND strategy = ? AND retriever = ? "
        "AND domain = 'in'",
        [engine_run_id, *BUILTIN.split("/")],
    )
    files["builtin_first"] = {
        q: None if r != r else int(r) for q, r in zip(stored["query_id"], stored["first_correct_rank"], strict=True)
    }
    return store, summary["run_id"], engine_run_id, files


@pytest.fixture(scope="module")
def served(journey):
    """(url, imported run id, built-in run id, oracle): the app on the journey's store."""
    if CHROMIUM is None:
        pytest.skip("chromium is not installed (apt-get install chromium)")
    pytest.importorskip(
        "playwright.sync_api", reason="the playwright package is not installed (pip install playwright)"
    )
    store, ext, builtin, oracle = journey
    with streamlit_app(store, store.parent / "streamlit.log") as url:
        yield url, ext, builtin, oracle


@pytest.fixture(scope="module")
def tab(served):
    """One browser tab for the whole journey: a session goes on from screen to screen."""

    with shared_chromium() as browser:
        try:
            context = browser.new_context(viewport={"width": 1400, "height": 1000}, accept_downloads=True)
            yield watch(context.new_page())
        finally:
            browser.close()


def main_text(page) -> str:
    return page.locator('[data-testid="stMainBlockContainer"]').inner_text()


def grid_cells(page) -> list[str]:
    """The cells of every table drawn (the data grid's accessible cells)."""
    return page.locator('[data-testid="stDataFrame"] [role="gridcell"]').all_inner_texts()


def expander_of(page, config: str):
    return page.locator('[data-testid="stExpander"]').filter(has=page.locator("summary").filter(has_text=config)).first


def shown_hits(page, config: str) -> list[tuple[int, str, float]]:
    """(rank, place, value shown) of the hits drawn under a configuration on the Query screen."""
    text = expander_of(page, config).inner_text()
    return [
        (int(r), place, float(v))
        for r, place, v in re.findall(
            r"^#(\d+) (.*?) · score = (-?\d+\.\d{4})(?: · not located: .*)?$", text, flags=re.M
        )
    ]


def test_engineer_picks_the_imported_run_and_pairs_it_with_the_builtin_run(served, tab):
    from scipy.stats import binomtest

    url, ext, builtin, oracle = served
    goto(tab, url)
    healthy(tab, "runs")
    cells = grid_cells(tab)
    assert "ext" in cells and "mini" in cells and "sent3" in cells and "A,B,C,D,E,F" in cells, cells
    tab.get_by_role("combobox", name="Run", exact=True).click()
    options = tab.get_by_role("option").all_inner_texts()
    assert any(ext in o and o.startswith("ext") for o in options) and any(builtin in o for o in options), options
    tab.get_by_role("option").filter(has_text=ext).first.click()
    settled(tab)
    healthy(tab, "runs: the imported run chosen")
    assert selected(tab, "Run").startswith("ext")
    text = main_text(tab)
    assert "Selected: ext" in text and "Strategies sent3 · retrievers rank_bm25" in text

    # Compare: the imported configuration against built-in E/hybrid, query by query
    nav(tab, "Compare")
    select(tab, "Second run (same queries)", builtin)
    healthy(tab, "compare: second run")
    chosen = tab.locator('[data-testid="stMultiSelect"]').first
    for _ in range(30):  # keep the imported configuration only
        remove = chosen.locator('button[aria-label^="Remove "]').filter(has_not_text="zzz")
        labels = [
            a for a in remove.evaluate_all("els => els.map(e => e.getAttribute('aria-label'))") if "run mini" in a
        ]
        if not labels:
            break
        chosen.locator(f'button[aria-label="{labels[0]}"]').click()
        settled(tab)
    tab.get_by_role("combobox", name="Configurations compared").click()
    tab.keyboard.type(BUILTIN)
    tab.get_by_role("option").filter(has_text=f"{BUILTIN} · run mini").first.click()
    settled(tab)
    tab.keyboard.press("Escape")
    settled(tab)
    healthy(tab, "compare: two configurations")
    mine, theirs = f"{CONFIG} · run ext {ext}", f"{BUILTIN} · run mini {builtin}"
    assert chosen.locator("[data-tag]").all_inner_texts() == [mine, theirs]

    # the independent count: hit@4 on the same queries, wins and losses, scipy's sign test
    first, other = oracle["first"], oracle["builtin_first"]
    assert set(first) == set(other)
    hit = {q: r is not None and r <= 4 for q, r in first.items()}
    hit_other = {q: r is not None and r <= 4 for q, r in other.items()}
    wins = sum(hit[q] and not hit_other[q] for q in first)
    losses = sum(hit_other[q] and not hit[q] for q in first)
    ties = len(first) - wins - losses
    p = binomtest(wins, wins + losses, 0.5).pvalue if wins + losses else 1.0

    cells = tab.locator('[data-testid="stVegaLiteChart"] svg path[aria-label*="second: "]')
    labels = [cells.nth(i).get_attribute("aria-label") for i in range(cells.count())]
    cell = next(lab for lab in labels if f"first: {mine};" in lab and f"second: {theirs};" in lab)
    assert f"wins: {wins}; losses: {losses}; ties: {ties};" in cell, cell
    shown_p = re.search(r"Holm-adjusted p: ([^;]+);", cell).group(1)
    assert shown_p == re.search(r"unadjusted p: ([^;]+);", cell).group(1)  # one pair: Holm changes nothing
    assert (p < 0.001) if shown_p == "<0.001" else float(shown_p) == pytest.approx(p, rel=5e-3), (shown_p, p)
    detail = text_of(tab, "pair-detail")
    assert detail.startswith(f"{mine} against {theirs} at hit@4: +{wins} won / -{losses} lost, {ties} ties;"), detail

    # the table: recall@4 of each, counted here
    tab.get_by_role("tab", name="table").click()
    settled(tab)
    table = tab.locator('[role="tabpanel"]:visible [data-testid="stDataFrame"]').first
    header = table.locator('[role="columnheader"]').all_inner_texts()
    cells = table.locator('[role="gridcell"]').all_inner_texts()
    for label, ranks in ((mine, first), (theirs, other)):
        row = cells[cells.index(label) : cells.index(label) + len(header)]
        assert row[header.index("n")] == str(len(ranks)), (header, row)
        recall4 = sum(r is not None and r <= 4 for r in ranks.values()) / len(ranks)
        assert float(row[header.index("recall@4")]) == pytest.approx(recall4, abs=1e-12), (header, row)


def test_product_manager_sets_a_threshold_on_the_score_axis(served, tab):
    url, ext, _, oracle = served
    rankings, first = oracle["rankings"], oracle["first"]
    ood_top = {q: hits[0][1] for q, hits in rankings.items() if q.startswith("ood-")}
    answers = [rankings[q][r - 1][1] for q, r in first.items() if r is not None]

    nav(tab, "Distances")
    healthy(tab, "distances")
    text = main_text(tab)
    assert f"Configuration {CONFIG} · {AXIS} of each in-domain query" in text
    assert "cosine distance" not in text
    drawn = tab.locator('[data-testid="stVegaLiteChart"] svg text').evaluate_all("els => els.map(e => e.textContent)")
    assert AXIS in drawn and "cosine distance" not in drawn
    metrics = dict(
        zip(
            tab.locator('[data-testid="stMetricLabel"]').all_inner_texts(),
            tab.locator('[data-testid="stMetricValue"]').all_inner_texts(),
            strict=True,
        )
    )
    assert metrics["Worst in-domain answer"] == f"{min(answers):.3f}"  # the lowest score of an answer
    assert metrics["Best out-of-domain top hit"] == f"{max(ood_top.values()):.3f}"  # the highest off-topic score

    nav(tab, "Threshold")
    healthy(tab, "threshold")
    assert "The gate keeps, from the top 4 hits, those with score ≥ t" in main_text(tab)
    assert "cosine distance" not in main_text(tab)
    tab.locator('[data-testid="stSlider"] input[type="range"]').first.focus()
    for _ in range(4):  # a page of the slider each: about a tenth of its range
        tab.keyboard.press("PageDown")
    settled(tab)
    healthy(tab, "threshold moved")
    t = threshold_shown(tab)
    assert "set on the Threshold screen" in text_of(tab, "threshold-state")
    bluffing = {q: s for q, s in ood_top.items() if s >= t}  # the gate keeps score >= t
    assert 0 < len(bluffing) < len(ood_top), (t, ood_top)  # a threshold that refuses some, not all
    links = tab.locator('[data-testid="stPageLink"] a').filter(has_text="nearest")
    listed = {}
    for line in links.all_inner_texts():
        found = re.search(r"([\w-]+) · (near|far) · nearest (\w+) = (-?\d+\.\d{3})", line)
        assert found and found.group(3) == "score", line
        listed[found.group(1)] = found.group(4)
    assert listed == {q: f"{s:.3f}" for q, s in bluffing.items()}
    assert f"Out-of-domain queries that still bluff ({len(bluffing)})" in main_text(tab)

    # one click: the bluffing query on the Query screen, with this threshold
    bluff_id = next(iter(listed))
    links.filter(has_text=f"{bluff_id} · ").first.click()
    settled(tab)
    healthy(tab, "bluffing query opened")
    assert f"/query?run_id={ext}&query_id={bluff_id}" in tab.url
    assert threshold_shown(tab) == pytest.approx(t)
    assert "Out-of-domain" in text_of(tab, "query-meta")
    assert "the gate keeps top-4 hits with score >= t" in text_of(tab, "threshold-state")
    summary = expander_of(tab, CONFIG).locator("summary").inner_text()
    assert f"nearest in the top 4 score = {bluffing[bluff_id]:.3f}" in summary and "bluffs: answers from" in summary, (
        summary
    )
    hits = shown_hits(tab, CONFIG)
    assert [(r, v) for r, _, v in hits] == [(r, round(s, 4)) for r, (_, s) in enumerate(rankings[bluff_id][:4], 1)]
    assert "d = " not in expander_of(tab, CONFIG).inner_text()

    # back on Threshold: the same t; saved with a note; a reload (a new session) restores it
    nav(tab, "Threshold")
    assert threshold_shown(tab) == pytest.approx(t)
    save_decision(tab, "refuse below the BM25 score of a real answer", "decision saved")
    tab.reload(wait_until="domcontentloaded")
    settled(tab)
    healthy(tab, "reloaded")
    assert threshold_shown(tab) == pytest.approx(t) and "saved decision" in text_of(tab, "threshold-state")
    nav(tab, "Query")
    assert threshold_shown(tab) == pytest.approx(t)


def test_query_screen_for_each_kind_of_query(served, tab):
    url, ext, _, oracle = served
    rankings, first, needles = oracle["rankings"], oracle["first"], oracle["needles"]
    t = threshold_shown(tab)  # the decision saved above
    found = [q for q, r in first.items() if r is not None and r <= 4]
    refused = next(q for q, hits in rankings.items() if q.startswith("ood-") and hits[0][1] < t)
    picks = {
        "in-domain": found[0],
        "destroyed": next(q for q, (group, *_) in needles.items() if group == DESTROYED_GROUP),
        "out-of-domain": refused,
    }
    for what, query_id in picks.items():
        goto(tab, f"{url}/query?run_id={ext}&query_id={query_id}")
        healthy(tab, f"query {what}")
        assert selected(tab, "Query").startswith(query_id)
        assert threshold_shown(tab) == pytest.approx(t)
        box = expander_of(tab, CONFIG)
        summary = box.locator("summary").inner_text()
        hits = shown_hits(tab, CONFIG)  # "score = ...", read off the rankings written
        assert [(r, v) for r, _, v in hits] == [(r, round(s, 4)) for r, (_, s) in enumerate(rankings[query_id][:4], 1)]
        assert "d = " not in box.inner_text()
        if what == "in-domain":
            assert f"first correct rank {first[query_id]}" in summary, summary
            marked = box.locator("mark")
            assert marked.all_inner_texts() == [needles[query_id][1]]  # the needle, in the correct hit only
            holder = box.locator("div").filter(has=tab.locator("mark")).last.inner_text()
            assert holder.startswith(f"#{first[query_id]} "), holder
        elif what == "destroyed":
            assert "destroyed: no chunk holds the answer" in summary and box.locator("mark").count() == 0
        else:
            assert "NO ANSWER, as it should" in summary, summary
            words = box.inner_text()
            assert "is under t" not in words, words  # the gate keeps scores at or above t
            assert re.search(rf"No hit in the top 4 passes the gate \(score (>=|≥) t, t = {t:.3f}\)", words), words


def test_query_screen_marks_the_chunk_that_could_not_be_located(served, tab):
    url, ext, _, oracle = served
    goto(tab, f"{url}/query?run_id={ext}&query_id={LOST_FOR}")
    healthy(tab, "query with the unlocated chunk first")
    box = expander_of(tab, CONFIG)
    hits = shown_hits(tab, CONFIG)
    assert hits[0][0] == 1 and hits[0][1].startswith(LOST["document"]), hits
    header = box.locator("div").filter(has_text=re.compile(r"^#1 ")).last.inner_text()
    assert f"not located: {LOST_REASON}" in header, header
    assert LOST_REASON in grid_cells(tab)  # the hits table's problem column


def test_index_names_the_unlocated_chunk_and_its_reason(served, tab):
    nav(tab, "Index")
    healthy(tab, "index")
    text = main_text(tab)
    assert "Chunks that could not be located (1)" in text, text
    cells = grid_cells(tab)
    at = cells.index(LOST["id"])
    assert LOST_REASON in cells[at : at + 6], cells[at : at + 6]
    assert "Destroyed ground truths (1)" in text and DESTROYED_GROUP in cells


def test_export_names_the_imported_run_its_configuration_and_the_score_axis(served, tab):
    from PIL import Image

    url, ext, _, _ = served
    nav(tab, "Export")
    healthy(tab, "export")
    assert selected(tab, "Configuration (strategy/retriever)") == CONFIG
    t = threshold_shown(tab)

    png_name, png = _download(tab, "png-export-distances")
    assert png_name == f"evalcore-{ext}-distances-{CONFIG.replace('/', '-')}.png"
    image = Image.open(io.BytesIO(png))
    image.load()
    caption = image.text["Description"]
    for value in (f"ext {ext}", f"configurations {CONFIG}", AXIS):
        assert value in caption, (value, caption)

    svg_name, svg = _download(tab, "svg-export-sweep-rates")
    root = ET.fromstring(svg)
    ns = "{http://www.w3.org/2000/svg}"
    drawn = " ".join(" ".join(e.itertext()) for e in root.iter(ns + "tspan"))
    assert f"run: ext {ext}" in drawn and f"configurations: {CONFIG}" in drawn and f"t = {t:.4f}" in drawn
    assert "score >= t" in " ".join(root.itertext())  # the chart's own axis title

    csv_name, data = _download(tab, "csv-export-sweep-rates")
    assert csv_name == svg_name[:-4] + ".csv" and f"t{t:.4f}" in csv_name
    rows = list(csv.reader(io.StringIO(data.decode("utf-8"))))
    provenance = dict(r[0][2:].split(": ", 1) for r in rows if r and r[0].startswith("# "))
    assert provenance["run"].startswith(f"ext {ext}") and provenance["configurations"] == CONFIG
    assert provenance["threshold"] == f"t = {t:.4f}" and AXIS in provenance["figure"], provenance
