"""The Questions screen in a real browser, walked from an empty store: upload a small corpus,
author three questions by selecting their answers with the mouse (one with two phrasings,
one whose needle the blind strategy A destroys: the screen says so and where it cuts), add
two off-topic questions from a pasted list of real queries (the list and its decisions kept in
the store: a reload shows them), save, download the set and read the files, run on the set
through New run (a background job, the real model: the same figures as ``run --dataset``),
answer a real query in a hit of the run's own A/bm25, open Compare; then upload a changed
document and see the affected item listed as no longer resolving.

Skipped, with the reason, when chromium or the playwright package is absent."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest
from conftest import MINI
from serving import CHROMIUM, healthy, settled, shared_chromium, streamlit_app, watch

from evalcore import jobs
from evalcore.chunking import chunk_document, parse_strategies
from evalcore.inputs import question_sets
from evalcore.inputs.corpus import load_corpus
from evalcore.read.summary import summary_table
from evalcore.store import Store

pytestmark = pytest.mark.browser  # every test here drives chromium

PORT = "The server listens on port 8470 by default."
CUT = "or devices will report the server as unreachable"  # crosses strategy A's cut at 512 (install)
TOKENS = "Tokens do not expire, but an owner can revoke one from the web page at any time"
REAL = ["how do I bake sourdough bread", "which python version do I need for pip", "what port does it use"]


def _select_with_mouse(page, needle: str, nth: int = 0) -> None:
    """Press the mouse at the needle's first character and release it after its last (in the
    ``nth`` text shown: 0 is the document's section, 1.. the hits)."""
    box = page.evaluate(
        """([needle, nth]) => {
            const pre = document.querySelectorAll('[data-testid="qs-text"]')[nth];
            pre.scrollIntoView({block: 'center'});
            const at = pre.textContent.indexOf(needle);
            if (at < 0) return null;
            const walker = document.createTreeWalker(pre, NodeFilter.SHOW_TEXT);
            const nodes = []; let n; while ((n = walker.nextNode())) nodes.push(n);
            const locate = (off) => { let acc = 0; for (const t of nodes) {
                if (acc + t.length >= off) return [t, off - acc]; acc += t.length; } };
            const r = document.createRange();
            r.setStart(...locate(at)); r.setEnd(...locate(at + needle.length));
            const rects = r.getClientRects(); const a = rects[0], b = rects[rects.length - 1];
            return {x1: a.left + 1, y1: a.top + a.height / 2, x2: b.right - 1, y2: b.top + b.height / 2};
        }""",
        [needle, nth],
    )
    assert box is not None, f"{needle!r} is not shown"
    page.mouse.move(box["x1"], box["y1"])
    page.mouse.down()
    page.mouse.move(box["x2"], box["y2"], steps=8)
    page.mouse.up()
    settled(page)


def _open(box) -> None:
    """Open a selectbox's list (a click may only focus it)."""
    box.click()
    if box.get_attribute("aria-expanded") != "true":
        box.press("ArrowDown")


def _pick(page, label: str, option: str) -> None:
    _open(page.get_by_role("combobox", name=label, exact=True))
    page.get_by_role("option").filter(has_text=option).first.click()
    settled(page)


def _author(page, doc: str, section: str, needle: str, phrasings: list[str], variant: str) -> str:
    _pick(page, "Document", doc)
    _pick(page, "Section", section)
    _select_with_mouse(page, needle)
    assert needle in page.locator('[data-testid="qs-needle"]').inner_text()
    verdict = page.locator(".st-key-qs_verdict").inner_text()
    page.get_by_label("Questions this span answers (one phrasing a line: one group)").fill("\n".join(phrasings))
    page.get_by_label("Variant (a free label, e.g. course, ticket)").fill(variant)
    page.keyboard.press("Tab")
    settled(page)
    page.get_by_role("button", name="Add to the set").click()
    settled(page)
    return verdict


def test_author_a_set_from_an_empty_store_and_see_a_changed_document(tmp_path, monkeypatch):
    if CHROMIUM is None:
        pytest.skip("chromium is not installed (apt-get install chromium)")
    pytest.importorskip("playwright.sync_api", reason="the playwright package is not installed")
    corpus_files = sorted(str(p) for p in (MINI / "corpus").glob("*.md"))
    install = load_corpus(MINI / "corpus").by_id()["install"]
    a_cut = [c.end for c in chunk_document(install, parse_strategies("A")[0])]
    at = install.text.index(CUT)
    assert any(at < cut < at + len(CUT) for cut in a_cut)  # the blind strategy cuts this needle
    cut = next(cut for cut in a_cut if at < cut < at + len(CUT))
    store_path = tmp_path / "evalcore.duckdb"
    with streamlit_app(store_path, tmp_path / "streamlit.log") as url, shared_chromium() as browser:
        page = watch(browser.new_context(viewport={"width": 1400, "height": 1000}, accept_downloads=True).new_page())
        page.goto(url + "/questions", wait_until="domcontentloaded")
        settled(page)
        healthy(page, "questions: empty store")
        assert "Upload the corpus" in page.locator("body").inner_text()
        page.locator('[data-testid="stFileUploaderDropzoneInput"]').first.set_input_files(corpus_files)
        settled(page)
        assert page.locator('[data-testid="qs-corpus"]').inner_text().startswith("4 documents")
        page.get_by_label("Name of the new set").fill("kettle")
        page.keyboard.press("Tab")
        settled(page)

        verdict = _author(page, "install", "Requirements", PORT, ["Which port?", "my devices cannot connect"], "course")
        assert "Valid needle" in verdict and "destroyed by" not in verdict
        verdict = _author(page, "install", "Requirements", CUT, ["what do devices report?"], "course")
        assert f"destroyed by A (cut at character {cut})" in verdict
        verdict = _author(page, "security", "Tokens", TOKENS, ["Do tokens expire?"], "ticket")
        assert "Valid needle" in verdict
        healthy(page, "questions: three authored")
        assert page.locator('[data-testid="qs-counts"]').inner_text() == "4 questions in 3 groups, 0 off-topic"

        # a selection that is not a valid needle cannot be added
        _pick(page, "Section", "Tokens")
        _select_with_mouse(page, "device")
        assert "Not a valid needle: found" in page.locator(".st-key-qs_verdict").inner_text()
        assert page.get_by_role("button", name="Add to the set").is_disabled()

        # a candidate from the corpus: selected for the person, with a cloze hint that is not a question
        # (and cannot become one unedited)
        page.get_by_text("Candidates from the corpus").click()
        settled(page)
        healthy(page, "questions: candidates")
        first = page.get_by_role("radiogroup", name="Candidate").inner_text().splitlines()[0]
        page.locator(".st-key-qs_use_candidate button").click()
        settled(page)
        needle = page.locator('[data-testid="qs-needle"]').inner_text()
        assert first.split(": ", 1)[1] in needle and "Valid needle" in page.locator(".st-key-qs_verdict").inner_text()
        assert "____" in page.locator('[data-testid="qs-hint"]').inner_text()
        phrasings = page.get_by_label("Questions this span answers (one phrasing a line: one group)")
        assert phrasings.input_value() == ""
        # the draft copied as it is is not a question: refused, said where the add was tried
        phrasings.fill(page.locator('[data-testid="qs-hint"]').inner_text().split("write your own): ", 1)[1])
        page.keyboard.press("Tab")
        settled(page)
        page.get_by_role("button", name="Add to the set").click()
        settled(page)
        refused = page.locator('[data-testid="stAlertContentError"]').filter(has_text="A cloze draft is a hint")
        assert refused.count() == 1
        assert page.locator('[data-testid="qs-counts"]').inner_text() == "4 questions in 3 groups, 0 off-topic"
        phrasings.fill("")
        page.keyboard.press("Tab")
        settled(page)
        assert page.locator('[data-testid="stAlertContentError"]').filter(has_text="A cloze draft").count() == 0

        # real queries, triaged: two off-topic, one skipped
        page.get_by_text("From real queries").click()
        page.get_by_label("Real user queries (one a line)").fill("\n".join(REAL))
        page.keyboard.press("Tab")
        settled(page)
        for i, decision in ((0, "off-topic (far)"), (1, "off-topic (near)"), (2, "skip")):
            _open(page.locator(f".st-key-qs_triage_{i} input"))
            page.get_by_role("option").filter(has_text=decision).first.click()
            settled(page)
        assert page.locator('[data-testid="qs-progress"]').inner_text() == "3 of 3 queries decided"
        assert page.locator('[data-testid="qs-counts"]').inner_text() == "4 questions in 3 groups, 2 off-topic"

        page.get_by_label("Note for this version").fill("first draft")
        page.keyboard.press("Tab")
        settled(page)
        page.locator(".st-key-qs_save button").click()
        settled(page)
        healthy(page, "questions: saved")
        saved = page.locator('[data-testid="stAlertContentSuccess"]').filter(has_text="Saved kettle@1")
        assert saved.count() == 1 and "(a new set)" in saved.inner_text()

        files = {}
        for name in ("questions.jsonl", "ood.jsonl"):
            with page.expect_download() as info:
                page.locator(f".st-key-qs_download_{name.split('.')[0]} button").click()
            files[name] = Path(info.value.path()).read_text(encoding="utf-8")
            assert info.value.suggested_filename == f"kettle-v1-{name}"
        rows = [json.loads(line) for line in files["questions.jsonl"].splitlines()]
        assert [(r["group"], r["question"], r["needle"], r["variant"]) for r in rows] == [
            ("q001", "Which port?", PORT, "course"),
            ("q001", "my devices cannot connect", PORT, "course"),
            ("q002", "what do devices report?", CUT, "course"),
            ("q003", "Do tokens expire?", TOKENS, "ticket"),
        ]
        ood = [json.loads(line) for line in files["ood.jsonl"].splitlines()]
        assert [(o["query"], o["kind"]) for o in ood] == [(REAL[0], "far"), (REAL[1], "near")]
        stored = question_sets.load_question_set(Store(store_path), "kettle@1")
        assert stored.version.note == "first draft" and stored.version.origin == "dashboard"

        # the triage is kept in the store: a new session (a reload) shows the list and its decisions
        page.reload(wait_until="domcontentloaded")
        settled(page)
        page.locator('[data-testid="stFileUploaderDropzoneInput"]').first.set_input_files(corpus_files)
        settled(page)
        _pick(page, "Question set", "kettle")
        assert page.locator('[data-testid="qs-progress"]').inner_text() == "3 of 3 queries decided"
        assert [page.locator(f".st-key-qs_triage_{i} input").input_value() for i in range(3)] == [
            "off-topic (far)",
            "off-topic (near)",
            "skip",
        ]

        # run on the set through New run (a background job, the real model): the newest version is chosen
        page.goto(url + "/new_run", wait_until="domcontentloaded")
        settled(page)
        healthy(page, "new run: a store with a question set")
        page.locator('[data-testid="stFileUploaderDropzoneInput"]').first.set_input_files(corpus_files)
        settled(page)
        page.get_by_text("A question set of the store").click()
        settled(page)
        assert page.get_by_role("combobox", name="Version", exact=True).input_value() == "kettle@1"
        assert page.locator('[data-testid="stFileUploaderDropzoneInput"]').count() == 1  # no question files asked
        strategies = page.get_by_role("combobox", name="Strategies", exact=True)
        strategies.click()
        for _ in range(6):  # A-G minus G, F, ..., B: A is left
            page.keyboard.press("Backspace")
        page.keyboard.type("E")
        page.keyboard.press("Enter")
        page.keyboard.press("Escape")
        settled(page)
        assert page.locator('[data-testid="stMultiSelect"]').first.locator("[data-tag]").all_inner_texts() == ["A", "E"]
        page.get_by_role("button", name="Validate").click()
        settled(page)
        valid = page.locator('[data-testid="stAlertContentSuccess"]').first.inner_text()
        assert valid.startswith("Valid: Question set kettle@1: 4 documents") and "ground truths 3 of 3 valid" in valid
        page.get_by_role("button", name="Start run").click()
        settled(page)
        store = Store(store_path)
        job_id = store.query("SELECT job_id FROM jobs")["job_id"].tolist()
        assert len(job_id) == 1
        deadline = time.monotonic() + 300
        while jobs.job(store, job_id[0])["status"] in jobs.ACTIVE and time.monotonic() < deadline:
            time.sleep(1)
        assert jobs.job(store, job_id[0])["status"] == "complete"
        first = job_id[0]
        run = store.run(first)
        assert (run.question_set, int(run.question_set_version)) == ("kettle", 1)
        # the same as `run --dataset kettle` in a terminal: the same figures
        from evalcore.cli import main

        argv = ["--store", str(store_path), "run", "--corpus", str(MINI / "corpus"), "--dataset", "kettle"]
        assert main([*argv, "--strategies", "A,E", "--name", "cli", "-q"]) == 0
        cli_run = store.latest_complete("cli")
        assert int(store.run(cli_run).question_set_version) == 1
        assert summary_table(store, first).equals(summary_table(store, cli_run))

        # from real queries through the hits view of the run's A/bm25: the answer selected in a hit
        page.goto(url + "/questions", wait_until="domcontentloaded")
        settled(page)
        page.get_by_text("The corpus of the selected run").click()
        settled(page)
        _pick(page, "Question set", "kettle")
        assert page.locator('[data-testid="qs-progress"]').inner_text() == "3 of 3 queries decided"
        _pick(page, "Query", REAL[2])
        _pick(page, "Hits of", "A/bm25")
        hits = page.locator('[data-testid^="qs-hit-"]').all_inner_texts()
        assert len(hits) >= 2 and hits[1].startswith("2. install · ")
        _select_with_mouse(page, "server", nth=2)
        assert page.locator('[data-testid="qs-needle"]').inner_text().endswith("“server”")
        assert "Not a valid needle: found" in page.locator(".st-key-qs_verdict").inner_text()
        _select_with_mouse(page, "Open that port in the firewall before you start the service", nth=2)
        assert "Valid needle" in page.locator(".st-key-qs_verdict").inner_text()
        assert page.locator(".st-key-qs_triage_2 input").input_value() == "answer in the corpus"  # kept
        assert (
            page.get_by_label("Questions this span answers (one phrasing a line: one group)").input_value() == REAL[2]
        )
        page.get_by_role("button", name="Add to the set").click()
        settled(page)
        assert page.locator('[data-testid="qs-counts"]').inner_text() == "5 questions in 4 groups, 2 off-topic"
        page.locator(".st-key-qs_save button").click()
        settled(page)
        assert page.locator('[data-testid="stAlertContentSuccess"]').filter(has_text="Saved kettle@2 (from version 1)")
        assert main([*argv, "--strategies", "A,E", "--name", "cli", "-q"]) == 0
        second = store.latest_complete("cli")
        assert second != cli_run and int(store.run(second).question_set_version) == 2

        page.goto(url + f"/compare?run_id={first}", wait_until="domcontentloaded")
        settled(page)
        _pick(page, "Second run (same queries)", second)
        healthy(page, "compare: runs on two versions")
        warning = page.locator('[data-testid="stAlertContentWarning"]').filter(has_text="question set kettle")
        assert warning.inner_text().startswith(
            f"The runs used different versions of question set kettle: {first} question set kettle@1, "
            f"{second} question set kettle@2"
        )
        assert "did not answer the same queries (0 only in the first, 1 only in the second)" in (
            page.locator('[data-testid="stAlertContentError"]').inner_text()
        )

        # the corpus changes: the port sentence is rewritten; the item is listed as not resolving
        changed = tmp_path / "changed"
        changed.mkdir()
        for f in corpus_files:
            text = Path(f).read_text(encoding="utf-8")
            (changed / Path(f).name).write_text(text.replace("port 8470", "port 9000"), encoding="utf-8")
        page.goto(url + "/questions", wait_until="domcontentloaded")
        settled(page)
        page.locator('[data-testid="stFileUploaderDropzoneInput"]').first.set_input_files(
            sorted(str(p) for p in changed.glob("*.md"))
        )
        settled(page)
        _pick(page, "Question set", "kettle")
        _pick(page, "Version", "kettle@1")
        healthy(page, "questions: a changed corpus")
        body = page.locator("body").inner_text()
        assert "1 item(s) do not resolve in this corpus" in body
        invalid = page.locator('[data-testid="qs-invalid"]').inner_text()
        assert invalid == "q001 (q001-1, q001-2, line 1): not found"

        # a list of 100,000 real queries (a file) is accepted and paged: 20 shown, the last page reachable
        big = tmp_path / "queries.txt"
        big.write_text("".join(f"real query {i}\n" for i in range(100_000)), encoding="utf-8")
        page.locator('.st-key-qs_real_file input[type="file"]').set_input_files(str(big))
        settled(page)
        healthy(page, "questions: 100,000 real queries")
        assert page.locator('[data-testid="qs-progress"]').inner_text() == "3 of 100,003 queries decided"
        assert page.locator('[class*="st-key-qs_triage_"]').count() == 20
        pages = page.get_by_label("Page (of 5,001)")
        pages.fill("5001")
        pages.press("Enter")
        settled(page)
        assert page.locator('[class*="st-key-qs_triage_"]').count() == 3
        assert "100,003. real query 99999" in page.locator("body").inner_text()
        browser.close()
