"""The Review screen in a real headless browser, in German (issue 46, "Done when"): a reviewer
signed in at the proxy (the header the operator names in EVALCORE_USER_HEADER) opens
``/review?deployment=production``, labels 20 sampled lines from the keyboard (o: off-topic,
y / n: answerable and whether its hits hold the answer, a then y: the same in two keys, s: skip),
and the estimates and the monitor change on the screen.

The store: one run of E/dense made by the real CLI with the keyword embedder of
tests/traffic/words.py, a decision saved under its claim and deployed as ``production`` by the
library the API calls, the mini corpus's questions and the gate's off-topic queries posted to it
over the version's first review period (:func:`evalcore.service.ingest.ingest_traffic`) and
replayed as the job runner does (:func:`evalcore.traffic.posted.replay_posted`), and the period's
sample drawn once it has ended (:func:`evalcore.traffic.sampling.draw`, as of a time after its
end: the deployment is made with the real clock, so its first period ends in seven days).

What the screen shows is checked against the store: the labels stored with the header's author,
each stratum's labelled prefix, and the bluff rate's point estimate computed here from the frame's
strata (Horvitz-Thompson: N k / n in each stratum) and written as the German locale writes it.
Skipped when chromium or playwright is absent.
"""

from __future__ import annotations

import json
import re
from datetime import timedelta
from urllib.parse import urlsplit

import numpy as np
import pandas as pd
import pytest
from conftest import MINI, ROOT
from reliability.header_proxy import HeaderProxy
from serving import CHROMIUM, healthy, settled, shared_chromium, streamlit_app, watch

from evalcore.cli import main
from evalcore.i18n import Translator
from evalcore.read.claims import claim_of
from evalcore.read.decisions import save_decision
from evalcore.records import Configuration
from evalcore.service.deployments import deploy
from evalcore.service.ingest import ingest_traffic
from evalcore.store import Store
from evalcore.traffic.posted import replay_posted

pytestmark = pytest.mark.browser  # every test here drives chromium

E_DENSE = Configuration("E", "dense")
OOD = ROOT / "tests" / "fixtures" / "gate" / "ood.jsonl"
EMBEDDER = "traffic.words:embedder"
HEADER = "X-Forwarded-Email"
REVIEWER = "rita@example.org"
DE = Translator("de")
STRATUM = {DE.gettext("answered"): "answered", DE.gettext("refused"): "refused"}
LABELS = 20


def _texts() -> tuple[list[str], list[str]]:
    answerable = [json.loads(x)["question"] for x in (MINI / "questions.jsonl").read_text().splitlines()]
    off = [json.loads(x)["query"] for x in OOD.read_text().splitlines()]
    return answerable, off


@pytest.fixture(scope="module")
def reviewed(tmp_path_factory):
    """The store described in the module docstring; the sample: 12 + 12 lines."""
    if CHROMIUM is None:
        pytest.skip("chromium is not installed (apt-get install chromium)")
    pytest.importorskip("playwright.sync_api", reason="the playwright package is not installed")
    from evalcore.traffic import sampling

    path = tmp_path_factory.mktemp("review-browser") / "evalcore.duckdb"
    answerable, off = _texts()
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("EVALCORE_TEST_EMBEDDER", EMBEDDER)
        argv = ["--store", str(path), "run", "--corpus", str(MINI / "corpus"), "--questions"]
        argv += [str(MINI / "questions.jsonl"), "--ood", str(OOD), "--strategies", "E", "--retrievers", "dense"]
        assert main([*argv, "--name", "base", "-q"]) == 0
        store = Store(path)
        run_id = str(store.runs()["run_id"].iloc[0])
        claim = claim_of(store, run_id, E_DENSE, alpha=0.2, beta=0.2, confidence=0.9)
        values = claim_of(store, run_id, E_DENSE).n_ood  # the run holds off-topic queries (a claim can be made)
        assert values == len(off)
        reference = np.array(
            sorted(
                store.query(
                    "SELECT min(h.distance) AS d FROM hits h WHERE h.run_id = ? AND h.strategy = 'E' "
                    "AND h.retriever = 'dense' AND h.rank <= 4 GROUP BY h.query_id",
                    [run_id],
                )["d"]
            )
        )
        t = float(np.quantile(reference, 0.5))  # both strata get lines of both kinds
        decision = save_decision(store, run_id, E_DENSE, t, "for review", author=REVIEWER, claim=claim)
        version = deploy(store, "production", decision, REVIEWER)
        start = version.deployed_at + timedelta(seconds=1)
        texts = (answerable + off) * 3
        rows = [
            json.dumps({"id": f"l-{i}", "query": q, "time": (start + timedelta(minutes=7 * i)).isoformat() + "Z"})
            for i, q in enumerate(texts)
        ]
        results = ingest_traffic(store, "production", rows, "key:test", start=False)
        assert [r.status for r in results] == ["stored"] * len(rows), [r.reason for r in results if r.reason]
        assert replay_posted(store, "production") is not None
        after = version.deployed_at + timedelta(days=8)  # the first review period (7 days) has ended
        sampling.draw_samples(store, "production", answered=12, refused=12, now=after)
    return {"path": path, "answerable": set(answerable), "off": set(off)}


def _frame(path) -> dict[str, int]:
    got = Store(path).query("SELECT answered_lines, refused_lines FROM review_frames WHERE deployment = 'production'")
    assert len(got) == 1
    return {"answered": int(got["answered_lines"].iloc[0]), "refused": int(got["refused_lines"].iloc[0])}


def _labels(path) -> list[tuple[str, int, str, bool | None, str]]:
    got = Store(path).query(
        "SELECT stratum, rank, label, hits_hold_answer, author FROM review_labels WHERE role = 'first' "
        "ORDER BY stratum, rank"
    )
    return [(s, int(r), lab, None if pd.isna(h) else bool(h), a) for s, r, lab, h, a in got.itertuples(index=False)]


def _text(page, testid: str) -> str:
    return page.locator(f'[data-testid="{testid}"]').first.inner_text()


def _meta(page) -> tuple[str, int]:
    """The line shown: its stratum (German) and its place in the stratum's order."""
    found = re.search(r"Schicht (\S+), Platz (\d+)", _text(page, "review-meta"))
    assert found, _text(page, "review-meta")
    return found.group(1), int(found.group(2))


def _press(page, key: str, where: str) -> None:
    page.locator("h1").first.click()  # the document has the focus, not a field
    page.keyboard.press(key)
    settled(page)
    healthy(page, where)


def _ht(frame: dict[str, int], labels: list[tuple[str, int, str, bool | None, str]]) -> float:
    """The bluff rate's Horvitz-Thompson estimate over each stratum's labelled prefix."""
    total = {}
    for stratum in ("answered", "refused"):
        ranks = sorted(r for s, r, *_ in labels if s == stratum)
        prefix = next((i for i, r in enumerate(ranks, 1) if r != i), len(ranks) + 1) - 1
        off = sum(1 for s, r, lab, *_ in labels if s == stratum and r <= prefix and lab == "off-topic")
        total[stratum] = frame[stratum] * off / prefix
    return total["answered"] / (total["answered"] + total["refused"])


def test_a_reviewer_labels_20_sampled_lines_from_the_keyboard_and_the_estimates_and_monitor_change(reviewed, tmp_path):
    path = reviewed["path"]
    frame = _frame(path)
    assert frame["answered"] > 12 and frame["refused"] > 12  # both strata larger than their samples
    with (
        streamlit_app(path, tmp_path / "streamlit.log", {"EVALCORE_USER_HEADER": HEADER}) as served,
        HeaderProxy(urlsplit(served).port, f"{HEADER}: {REVIEWER}\r\n".encode()) as url,
        shared_chromium() as browser,
    ):
        context = browser.new_context(viewport={"width": 1400, "height": 1100})
        page = watch(context.new_page())
        page.goto(f"{url}/review?deployment=production&lang=de", wait_until="domcontentloaded")
        settled(page)
        healthy(page, "review de")
        assert page.locator("h1").first.inner_text() == DE.gettext("Review")
        assert REVIEWER in _text(page, "review-author")
        before = {k: _text(page, f"review-{k}") for k in ("bluff", "lost", "monitor-bluff", "monitor-lost")}
        assert DE.gettext("not estimable yet (no label counts)") in before["bluff"]
        assert page.locator('[data-testid="review-hit"]').count() >= 1  # the line's hits, with their citations
        assert "#char=" in page.locator('[data-testid="review-hit"]').first.inner_text()

        # s: the first line is skipped; it stays in the sample and holds back the lines after it
        first = _meta(page)
        _press(page, "s", "review skip")
        assert _meta(page) != first
        given = 0

        def label_shown(two_keys: bool = False) -> None:
            nonlocal given
            query = _text(page, "review-query")
            assert query in reviewed["answerable"] or query in reviewed["off"], query
            shown = _meta(page)
            if query in reviewed["off"]:
                _press(page, "o", f"review label {given}")
            elif two_keys:
                _press(page, "a", f"review answerable {given}")
                assert page.get_by_role("button", name=DE.gettext("Yes (y)")).count() == 1
                _press(page, "y", f"review label {given}")
            else:
                _press(page, "y" if shown[0] == DE.gettext("answered") else "n", f"review label {given}")
            given += 1
            assert _meta(page) != shown or given == LABELS  # the next line is shown

        for i in range(LABELS - 1):
            label_shown(two_keys=i % 5 == 1)
        stored = _labels(path)
        assert len(stored) == LABELS - 1 and {a for *_, a in stored} == {REVIEWER}  # who: the trusted header
        skipped = (STRATUM[first[0]], first[1])
        assert skipped not in {(s, r) for s, r, *_ in stored}  # the skipped line holds no label
        # it holds back the lines after it: the answered stratum's labelled prefix is empty, so no rate counts
        assert _text(page, "review-bluff") == before["bluff"]
        assert f"({DE.gettext('answered')}: {DE.integer(0)} " in _text(page, "review-labels")
        # the skipped line is offered again, and labelled: now 20 labels, every prefix whole
        page.get_by_role("button", name=re.compile("übersprungene")).click()
        settled(page)
        assert _meta(page) == first
        label_shown()
        stored = _labels(path)
        assert len(stored) == LABELS
        for stratum in ("answered", "refused"):
            ranks = sorted(r for s, r, *_ in stored if s == stratum)
            assert ranks == list(range(1, len(ranks) + 1)), (stratum, ranks)  # the labelled prefix is whole
        after = {k: _text(page, f"review-{k}") for k in ("bluff", "lost", "monitor-bluff", "monitor-lost")}
        assert after["bluff"] != before["bluff"] and after["lost"] != before["lost"]
        assert after["monitor-bluff"] != before["monitor-bluff"], (before, after)
        expected = DE.percent(_ht(frame, stored), 1)
        assert after["bluff"].split(": ", 1)[1].startswith(expected), (after["bluff"], expected)
        labelled = _text(page, "review-labels")
        assert DE.integer(LABELS) in labelled, labelled
        # a reload keeps it: the labels are in the store, the figures read them back
        page.reload(wait_until="domcontentloaded")
        settled(page)
        healthy(page, "review reloaded")
        assert _text(page, "review-bluff") == after["bluff"]
        browser.close()
