"""Rough edges a new user hits first, walked in the real browser (chromium through playwright,
as tests/dashboard/test_browser.py, on a private copy of the same two-run store):

- New run: a zip made the usual way (``zip -r corpus.zip corpus``) whose questions name
  documents without the folder validates, saying the folder was left out; questions whose
  document id is wrong show each line's reason and the document ids the corpus has.
- Compare across two runs of the same configurations: the "best" sentence's runner-up is
  another configuration, never the best one's twin in the other run.
- Query: in documents without ``##`` sections the title is a chunk of its own; the gate
  keeps it, but it is not cited (nothing to quote); every answer's needle text is shown,
  a destroyed one's too.

The store served here holds two runs made by the real engine and model on a small corpus
of such documents (three articles, a title then long paragraphs), the same strategies and
retrievers in both, and a saved decision at t = 0.99 (the gate keeps the whole top 4).
"""

from __future__ import annotations

import io
import json
import re
import zipfile

import pytest
from conftest import MINI
from serving import CHROMIUM, healthy, settled, streamlit_app

from dashboard.test_browser import _tab, browser, goto, page, select  # noqa: F401 - the shared browser and tab
from evalcore.inputs.corpus import load_corpus
from evalcore.read.citations import heading_only
from evalcore.store import Store

pytestmark = pytest.mark.browser  # every test here drives chromium

ARTICLES = {
    "civil_disobedience": (
        "Civil disobedience",
        [
            "Civil disobedience is the active, professed refusal of a citizen to obey certain laws, demands, "
            "orders or commands of a government. It is sometimes defined as a public, non-violent and "
            "conscientious breach of law undertaken with the aim of bringing about a change in laws or "
            "government policies. Its practitioners usually accept the legal consequences of their acts, "
            "because they want to show respect for the rule of law while they break one law they hold unjust. "
            "Henry David Thoreau wrote an essay on the subject in 1849, after a night in jail for refusing a tax.",
            "Gandhi used civil disobedience in the campaign for the independence of India. The salt march of "
            "1930 was a protest against the British salt tax, and thousands of people made salt from seawater "
            "in defiance of the law. Martin Luther King Jr. later read Thoreau and Gandhi and led sit-ins and "
            "marches in the United States. Many of the people who joined these protests were arrested, and the "
            "arrests themselves drew attention to the laws they were protesting against across the country.",
        ],
    ),
    "oil_crisis": (
        "1973 oil crisis",
        [
            "The 1973 oil crisis began in October 1973 when the members of the Organization of Arab Petroleum "
            "Exporting Countries proclaimed an oil embargo. The embargo was targeted at nations that had "
            "supported Israel during the Yom Kippur War. By the end of the embargo in March 1974, the price of "
            "oil had risen nearly 300 percent, from about three dollars per barrel to nearly twelve dollars "
            "globally. The crisis had many short-term and long-term effects on global politics and the economy, "
            "and it is often called the first oil shock, followed by a second one in 1979.",
            "Governments answered with rationing, speed limits and daylight saving time in winter. Petrol "
            "stations in several countries ran out of fuel, and drivers waited in long queues. Car makers began "
            "to build smaller cars that used less fuel, and many countries started programmes to save energy "
            "and to find oil of their own, in the North Sea and in Alaska. The crisis also led to the founding "
            "of the International Energy Agency in 1974, which coordinates the stocks its members keep.",
        ],
    ),
    "steam_engine": (
        "Steam engine",
        [
            "A steam engine is a heat engine that performs mechanical work using steam as its working fluid. "
            "The steam engine uses the force produced by steam pressure to push a piston back and forth inside "
            "a cylinder. This pushing force can be transformed, by a connecting rod and crank, into rotational "
            "force for work. The term steam engine is generally applied only to reciprocating engines, not to "
            "the steam turbine. Thomas Newcomen built the first commercially successful engine in 1712, and it "
            "pumped water out of mines for decades before James Watt improved the design.",
            "Watt added a separate condenser in 1765, so that the cylinder no longer had to be cooled and "
            "heated again at every stroke. His engines used far less coal, and they were soon built to turn "
            "wheels as well as to pump water. Steam engines then drove the machines of factories, the "
            "locomotives of the first railways and the paddle wheels of ships. They remained the main source "
            "of power in industry until electric motors and internal combustion engines replaced them.",
        ],
    ),
}
QUESTIONS = [
    ("cd", "What is civil disobedience?", "Civil disobedience is the active, professed refusal of a citizen"),
    (
        "salt",
        "What was the salt march protesting?",
        "The salt march of 1930 was a protest against the British salt tax",
    ),
    ("oil", "When did the 1973 oil crisis begin?", "The 1973 oil crisis began in October 1973"),
    ("price", "How much did the price of oil rise in the embargo?", "the price of oil had risen nearly 300 percent"),
    ("iea", "Which agency was founded after the oil crisis?", "founding of the International Energy Agency in 1974"),
    ("steam", "What is a steam engine?", "A steam engine is a heat engine that performs mechanical work"),
    ("watt", "What did Watt add to the engine?", "Watt added a separate condenser in 1765"),
]
OOD = [("far1", "How do I bake sourdough bread?", "far"), ("near1", "What is the history of wind power?", "near")]


def _articles(folder) -> None:
    folder.mkdir()
    for doc_id, (title, paragraphs) in ARTICLES.items():
        (folder / f"{doc_id}.md").write_text(f"# {title}\n\n" + "\n\n".join(paragraphs) + "\n", encoding="utf-8")


@pytest.fixture(scope="module")
def served(tmp_path_factory, real_embedder):
    """(url, store path, (first run, second run)): the app on a store of two runs of the
    same configurations (C, E x dense, bm25) on ARTICLES, with a decision at t = 0.99 for
    each configuration of the first run."""
    if CHROMIUM is None:
        pytest.skip("chromium is not installed (apt-get install chromium)")
    pytest.importorskip(
        "playwright.sync_api", reason="the playwright package is not installed (pip install playwright)"
    )
    from evalcore.chunking import parse_strategies
    from evalcore.inputs import sources as inputs
    from evalcore.run.runner import RunRequest, run_evaluation

    folder = tmp_path_factory.mktemp("edges")
    _articles(folder / "corpus")
    # and a sentence across character 512 of a document, which blind chunking (A) destroys
    text = (folder / "corpus" / "steam_engine.md").read_text(encoding="utf-8")
    cut = text[text.rfind(". ", 0, 512) + 2 : text.find(".", 512) + 1]
    questions = [*QUESTIONS, ("cut", "What is said about the steam engine?", cut)]
    (folder / "questions.jsonl").write_text(
        "".join(json.dumps({"id": i, "question": q, "needle": n}) + "\n" for i, q, n in questions), encoding="utf-8"
    )
    (folder / "ood.jsonl").write_text(
        "".join(json.dumps({"id": i, "query": q, "kind": k}) + "\n" for i, q, k in OOD), encoding="utf-8"
    )
    corpus, gt = inputs.load_corpus_and_questions(folder / "corpus", folder / "questions.jsonl", folder / "ood.jsonl")
    assert not gt.invalid, gt.invalid
    store_path = folder / "evalcore.duckdb"
    store = Store(store_path)
    ids = []
    for name in ("articles", "articles-again"):
        request = RunRequest(corpus, gt, parse_strategies("A,C,E"), ["dense", "bm25"], name=name)
        ids.append(run_evaluation(request, store, embedders=[real_embedder]).run_id)
    for strategy in ("A", "C", "E"):
        for retriever in ("dense", "bm25"):
            store.save_decision(ids[0], strategy, retriever, 0.99, "keep the whole top 4")
    # a run cancelled during its embedding (its row as a cancelled job leaves it)
    store.start_run({"run_id": "20261201-000000-cancel", "name": "stopped", "strategies": "E", "retrievers": "dense"})
    store.progress("20261201-000000-cancel", "E: embedding 120/377 chunks", 0.4)
    store.finish_run("20261201-000000-cancel", "cancelled", "cancelled from the dashboard")
    with streamlit_app(store_path, folder / "streamlit.log") as url:
        yield url, store_path, tuple(ids)


def _zip_with_top_folder(folder: str) -> bytes:
    """What ``zip -r corpus.zip corpus`` makes of the mini corpus: a folder entry, then the
    files inside it."""
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as z:
        z.writestr(f"{folder}/", b"")
        for path in sorted((MINI / "corpus").iterdir()):
            z.writestr(f"{folder}/{path.name}", path.read_bytes())
    return out.getvalue()


def _span_questions(document_prefix: str) -> tuple[bytes, list[str]]:
    """Two questions given as exact spans (``document``, ``start``, ``end``) of the mini
    corpus, the document named with ``document_prefix``; and the document ids used."""
    corpus = {d.doc_id: d for d in load_corpus(MINI / "corpus").documents}
    lines, used = [], []
    for n, (doc_id, needle) in enumerate(
        [("install", "The server listens on port 8470 by default."), ("recipes", "Steeping time is given in seconds.")]
    ):
        text = corpus[doc_id].text
        start = text.find(needle)
        assert start >= 0 and text.find(needle, start + 1) == -1, (doc_id, needle)
        document = document_prefix + doc_id
        used.append(document)
        lines.append(
            json.dumps(
                {
                    "id": f"q{n}",
                    "question": f"question {n}?",
                    "document": document,
                    "start": start,
                    "end": start + len(needle),
                }
            )
        )
    return ("\n".join(lines) + "\n").encode(), used


def _upload_and_validate(tab, corpus: tuple[str, bytes] | None, questions: bytes) -> None:
    """Upload ``corpus`` (when given: the corpus uploader adds files) and the questions file
    (replacing the one before), then press Validate."""
    inputs = tab.locator('[data-testid="stFileUploader"] input[type="file"]')
    if corpus is not None:
        inputs.nth(0).set_input_files(files=[{"name": corpus[0], "mimeType": "application/zip", "buffer": corpus[1]}])
        settled(tab)
    inputs.nth(1).set_input_files(
        files=[{"name": "questions.jsonl", "mimeType": "application/octet-stream", "buffer": questions}]
    )
    settled(tab)
    tab.get_by_role("button", name="Validate").click()
    settled(tab)


def test_new_run_a_zip_with_its_top_folder_and_a_wrong_document_id(served, page):  # noqa: F811
    url, _, _ = served
    goto(page, url + "/new_run")
    healthy(page, "new run")
    # every strategy chip (A-G) is drawn whole inside the Strategies box, on a laptop's
    # 1100 px too (three pickers side by side left room for five)
    page.set_viewport_size({"width": 1100, "height": 1000})
    settled(page)
    box = page.locator('[data-testid="stMultiSelect"]').first
    assert "Strategies" in box.inner_text()
    edge = box.bounding_box()
    chips = box.locator("[data-tag]")
    assert chips.all_inner_texts() == list("ABCDEFG"), box.inner_html()[:3000]
    for i in range(chips.count()):
        chip = chips.nth(i).bounding_box()
        assert chips.nth(i).is_visible() and chip["x"] + chip["width"] <= edge["x"] + edge["width"] + 1, (i, chip, edge)
    page.set_viewport_size({"width": 1400, "height": 1000})
    settled(page)
    ids = sorted(d.doc_id for d in load_corpus(MINI / "corpus").documents)

    # zip -r corpus.zip corpus: document ids are the file names, as for the folder itself
    questions, _ = _span_questions("")
    _upload_and_validate(page, ("corpus.zip", _zip_with_top_folder("corpus")), questions)
    healthy(page, "new run: zip with a top folder")
    notes = page.locator('[data-testid="stAlertContentInfo"]').filter(has_text="corpus.zip")
    assert notes.count() == 1, page.locator("body").inner_text()[:3000]
    note = notes.first.inner_text()
    assert "every file is inside the folder corpus/" in note and "left out of the document ids" in note, note
    assert "corpus/install.md is document install" in note, note
    valid = page.locator('[data-testid="stAlertContentSuccess"]')
    assert valid.count() == 1, page.locator("body").inner_text()[:3000]
    assert valid.first.inner_text().startswith("Valid: 4 documents") and "ground truths 2 of 2 valid" in (
        valid.first.inner_text()
    )
    assert page.get_by_role("button", name="Start run").count() == 1

    # the questions still name the folder (as the old zip reading made them): every needle
    # is invalid; each line's reason and the corpus's document ids are shown, no Start button
    wrong, used = _span_questions("corpus/")
    _upload_and_validate(page, None, wrong)  # the same zip, other questions
    healthy(page, "new run: wrong document id")
    error = page.locator('[data-testid="stAlertContentError"]')
    assert error.count() == 1, page.locator("body").inner_text()[:3000]
    assert "no valid in-domain question to score" in error.first.inner_text()
    assert "2 ground truths" in error.first.inner_text()
    table = page.locator('[data-testid="stTable"] table').first
    rows = [
        r.split("\t")
        for r in table.locator("tbody tr").evaluate_all(
            "rows => rows.map(r => [...r.querySelectorAll('td')].map(c => c.innerText).join('\\t'))"
        )
    ]
    assert [r[-1] for r in rows] == [f"document '{d}' not in corpus" for d in used], rows
    assert [r[0] for r in rows] == ["1", "2"], rows  # the questions file's lines
    caption = page.locator('[data-testid="stCaptionContainer"]').filter(has_text="Document ids in this corpus")
    assert caption.count() == 1
    assert caption.first.inner_text() == "Document ids in this corpus (4): " + ", ".join(ids)
    assert page.get_by_role("button", name="Start run").count() == 0


def test_compare_two_runs_the_runner_up_is_another_configuration(served, page):  # noqa: F811
    url, store_path, (first, second) = served
    goto(page, f"{url}/compare?run_id={first}")
    select(page, "Second run (same queries)", second)
    healthy(page, "compare two runs")
    best = page.locator('[data-testid="stAlertContainer"]').filter(has_text="Best at hit@4").first.inner_text()
    top = re.search(r"Best at hit@4: (\S+) · run \S+ (\S+?),", best)
    runner = re.search(r"Against the runner-up (\S+) · run \S+ (\S+?)(?: \(|:)", best)
    assert top and runner, best
    top_config, top_run = top.groups()
    runner_config, runner_run = runner.groups()
    assert runner_config != top_config, best  # not the same configuration of the other run
    # an independent count: both runs found the same queries, so the top's twin in the other
    # run ties it, and the runner-up named is the best other configuration among those shown
    hits = Store(store_path).query(
        "SELECT r.run_id, r.strategy || '/' || r.retriever AS config, "
        "count(*) FILTER (WHERE r.first_correct_rank <= 4) AS found FROM results r "
        "JOIN queries q USING (run_id, query_id) WHERE q.domain = 'in' AND q.valid AND r.run_id IN (?, ?) "
        "GROUP BY ALL",
        [first, second],
    )
    found_by = {(row.run_id, row.config): int(row.found) for row in hits.itertuples()}
    twin = second if top_run == first else first
    assert found_by[(twin, top_config)] == found_by[(top_run, top_config)] == max(found_by.values())
    chosen = page.locator('[data-testid="stMultiSelect"]').first.inner_text()
    shown = {(r, c) for (r, c) in found_by if f"{c} · run " in chosen and r in chosen}
    best_other = max(n for (r, c), n in found_by.items() if c != top_config and (r, c) in shown)
    assert found_by[(runner_run, runner_config)] == best_other, (best, found_by)

    # at 1400 px nothing of the screen is cut at the right: every chart (title, legend and
    # all) and every table lies inside the main column
    main = page.locator('[data-testid="stMain"] [data-testid="stMainBlockContainer"]').first.bounding_box()
    right = main["x"] + main["width"]
    for kind in ("stVegaLiteChart", "stDataFrame"):
        items = page.locator(f'[data-testid="{kind}"]')
        for i in range(items.count()):
            item = items.nth(i)
            if not item.is_visible():
                continue  # a tab not shown
            box = item.bounding_box()
            drawn = item.locator("svg, canvas").first.bounding_box() if kind == "stVegaLiteChart" else box
            assert box["x"] + box["width"] <= right + 1, (kind, i, box, right)
            assert drawn["x"] + drawn["width"] <= box["x"] + box["width"] + 1, (kind, i, drawn, box)
            if kind == "stVegaLiteChart" and item.locator("svg").count():  # each text inside its chart
                edges = item.locator("svg text").evaluate_all(
                    "els => els.filter(e => e.textContent).map(e => [e.textContent, e.getBoundingClientRect().right])"
                )
                for text, end in edges:
                    assert end <= drawn["x"] + drawn["width"] + 1, (text, end, drawn)


def test_query_a_title_chunk_is_kept_but_not_cited_and_the_needle_is_shown(served, page):  # noqa: F811
    url, store_path, (first, _) = served
    store = Store(store_path)
    top4 = store.query(
        "SELECT h.query_id, h.strategy, h.retriever, h.rank, c.content FROM hits h JOIN chunks c "
        "ON c.run_id = h.run_id AND c.strategy = h.strategy AND c.chunk_id = h.chunk_id "
        "WHERE h.run_id = ? AND h.rank <= 4 AND h.strategy = 'E' AND h.retriever = 'dense' ORDER BY h.query_id, h.rank",
        [first],
    )
    titles = top4[[heading_only(c) and c.strip().startswith("# ") for c in top4["content"]]]
    assert len(titles), "no title chunk in any top 4"
    query_id = str(titles["query_id"].iloc[0])
    ranks = sorted(int(r) for r in titles.loc[titles["query_id"] == query_id, "rank"])
    goto(page, f"{url}/query?run_id={first}&query_id={query_id}&config=E/dense")
    healthy(page, "query: title chunk")
    expander = page.locator('[data-testid="stExpander"]').first
    note = expander.locator('[data-testid="uncited"]').inner_text()
    assert note.startswith("Kept by the gate but not cited: " + ", ".join(f"#{r}" for r in ranks) + ","), note
    prompt = expander.locator('[data-testid="stCode"]').first.inner_text()
    kept = top4[top4["query_id"] == query_id]
    cited = [c for c in kept["content"] if not heading_only(c)]
    assert re.findall(r"^\[(\d+)\] ", prompt, re.M) == [str(i) for i in range(1, len(cited) + 1)], prompt
    for content in kept["content"]:
        if heading_only(content):
            assert not re.search(r"^" + re.escape(content.strip()) + r"$", prompt, re.M), prompt  # never quoted
    # the needle's text, read from the corpus file at the stored span
    row = store.query('SELECT doc_id, start, "end" FROM queries WHERE run_id = ? AND query_id = ?', [first, query_id])
    corpus = {d.doc_id: d.text for d in load_corpus(store_path.parent / "corpus").documents}
    needle = corpus[row["doc_id"][0]][int(row["start"][0]) : int(row["end"][0])]
    assert page.locator('[data-testid="query-needle"]').inner_text() == f"Answer (needle): {needle}"

    # a destroyed answer (blind cuts through it in A): its needle is shown all the same
    destroyed = store.query(
        'SELECT r.query_id, q.doc_id, q.start, q."end" FROM results r JOIN queries q USING (run_id, query_id) '
        "WHERE r.run_id = ? AND r.destroyed AND r.strategy = 'A' AND r.retriever = 'dense' ORDER BY r.query_id LIMIT 1",
        [first],
    )
    assert len(destroyed), "no destroyed answer in this run"
    d = destroyed.iloc[0]
    goto(page, f"{url}/query?run_id={first}&query_id={d['query_id']}&config=A/dense")
    healthy(page, "query: destroyed")
    assert "destroyed" in page.locator('[data-testid="stExpander"]').first.inner_text()
    text = corpus[d["doc_id"]][int(d["start"]) : int(d["end"])]
    assert page.locator('[data-testid="query-needle"]').inner_text() == f"Answer (needle): {text}"


def test_runs_a_cancelled_run_says_where_it_stopped(served, page):  # noqa: F811
    url, _, _ = served
    goto(page, f"{url}/?run_id=20261201-000000-cancel")
    healthy(page, "runs: cancelled")
    error = page.locator('[data-testid="stAlertContentError"]').first.inner_text()
    assert error == (
        "This run is cancelled: cancelled from the dashboard · stopped at E: embedding 120/377 chunks · 40%"
    ), error
    assert page.locator('[data-testid="stMetric"]').count() == 0  # no "documents 0": nothing was stored
