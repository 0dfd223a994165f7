"""The dashboard in German in a real browser (chromium + playwright) on real data (issue 36):
``?lang=de`` opens Threshold in German, the claim's sentence with ``0,`` decimals and its
bounds rounded on their safe side; the language is kept moving to Compare and Export (the
address keeps ``lang=de``); the review pack's summary is German and names its language; its
CSV files keep ``.`` decimals and English column names; switching to English in the sidebar
shows the same figures."""

from __future__ import annotations

import csv
import io
import math
import re
import shutil
import zipfile
from fractions import Fraction

import pytest
from cli.test_threshold_claim_cli import _expected
from serving import CHROMIUM, healthy, settled, shared_chromium, streamlit_app, watch

from dashboard.test_browser import _download, goto, nav, select, text_of


@pytest.fixture(scope="module")
def served_german(claim_store, tmp_path_factory):
    if CHROMIUM is None:
        pytest.skip("chromium is not installed (apt-get install chromium)")
    pytest.importorskip("playwright.sync_api", reason="the playwright package is not installed")
    folder = tmp_path_factory.mktemp("served-german")
    store = folder / "evalcore.duckdb"
    shutil.copy(claim_store, store)
    ids = claim_store.with_suffix(".run_ids").read_text().split()
    with streamlit_app(store, folder / "streamlit.log") as url:
        yield url, store, ids


def _down(x: float) -> str:
    """The largest number of three decimals that reads back as a float at most ``x``."""
    d = math.floor(Fraction(x) * 1000)
    while float(Fraction(d + 1, 1000)) <= x:
        d += 1
    return f"{float(Fraction(d, 1000)):.3f}"


def _numbers(text: str) -> list[str]:
    return [x.replace(",", ".") for x in re.findall(r"\d+(?:[.,]\d+)?", text)]


def test_threshold_compare_and_review_pack_in_german(served_german):

    url, store, (_mini, faq, _close) = served_german
    with shared_chromium() as browser:
        try:
            context = browser.new_context(viewport={"width": 1400, "height": 1000}, accept_downloads=True)
            page = watch(context.new_page())

            # 1. Threshold in German: the claim's sentence, 0, decimals, the bound on its safe side
            goto(page, f"{url}/threshold?run_id={faq}&lang=de")
            healthy(page, "de threshold")
            assert page.locator("h1").first.inner_text() == "Ablehnungsschwelle"
            config = page.get_by_role("combobox", name="Konfiguration (Strategie/Retriever)", exact=True).input_value()
            want = _expected(store, faq, config)
            assert want["feasible"]
            sentence = text_of(page, "claim-sentence").replace("\xa0", " ")
            bluff = _down(want["bluff_ok_up_to"]).replace(".", ",")
            assert f"t <= {bluff} hält Bluffs <= 5 % mit 95 % Konfidenz" in sentence, sentence
            assert "verlieren" in sentence and "beantwortbaren Fragen" in sentence
            assert re.search(r"\b0,\d{3}\b", sentence) and not re.search(r"\b0\.\d", sentence), sentence
            assert f"({want['lost']} von {want['n_answerable']};" in sentence
            assert "[" in sentence and "; " in sentence.split("[", 1)[1]  # [11 %; 18 %]
            state = text_of(page, "threshold-state")
            assert state.startswith("Schwelle t = 0,") and "Empfehlung der Schwellen-Zusage" in state, state
            german_at_t = text_of(page, "sentence-at-t")
            assert german_at_t.startswith("Bei t = 0,")
            assert "lang=de" in page.url

            # 2. Compare keeps the language (the address keeps lang=de), numbers with commas
            nav(page, "Vergleich")
            healthy(page, "de compare")
            assert page.locator("h1").first.inner_text() == "Vergleich" and "lang=de" in page.url
            detail = text_of(page, "pair-detail")
            assert " gegen " in detail and "gewonnen" in detail and "alpha 0,05" in detail, detail
            assert "Gepaarte Gewinne und Verluste" in page.locator("body").inner_text()

            # 3. the review pack in German; its CSVs machine-readable
            nav(page, "Export")
            healthy(page, "de export")
            assert "lang=de" in page.url
            _, pack = _download(page, "review-pack")
            with zipfile.ZipFile(io.BytesIO(pack)) as z:
                summary = z.read("summary.md").decode("utf-8")
                csvs = {n: z.read(n).decode("utf-8") for n in z.namelist() if n.endswith(".csv")}
            assert summary.startswith("# Review-Paket: Lauf "), summary[:200]
            assert "## Entscheidung: die Ablehnungsschwelle" in summary and "## Methoden" in summary
            assert "Sprache: Deutsch (de)" in summary and "hält Bluffs" in summary and "Konfidenz" in summary
            assert re.search(r"t = 0,\d{4}", summary)
            assert csvs
            decimals = 0
            for name, text in csvs.items():
                lines = text.split("\r\n")
                assert any("machine-readable" in line and line.startswith("# note:") for line in lines), name
                assert any(line.startswith("# language: de (Deutsch") for line in lines), name
                rows = list(csv.reader([line for line in lines if line and not line.startswith("#")]))
                header, body = rows[0], rows[1:]
                assert all(h.isascii() for h in header), (name, header)  # English column names
                cells = [c for row in body for c in row]
                decimals += sum(1 for c in cells if re.fullmatch(r"-?\d+\.\d+(e-?\d+)?", c))  # '.' decimals
                assert not any(re.fullmatch(r"-?\d+,\d+", c) for c in cells), name
            assert decimals > 0

            # 4. back to English in the sidebar: the same figures, English words
            nav(page, "Schwelle")
            select(page, "Language / Sprache / Taal / Bahasa", "English")
            settled(page)
            healthy(page, "en threshold")
            assert page.locator("h1").first.inner_text() == "Refusal threshold"
            english_at_t = text_of(page, "sentence-at-t")
            assert english_at_t.startswith("At t = 0.")
            assert _numbers(english_at_t) == _numbers(german_at_t)
            context.close()
        finally:
            browser.close()
