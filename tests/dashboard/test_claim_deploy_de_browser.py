"""A threshold outside its claim, in German, in a real browser (chromium + playwright) on the
server that also answers /api/v1 (``evalcore dashboard`` as a process), on real data (the
xquad-faq run: 160 off-topic questions, all-MiniLM-L6-v2): the product manager moves the slider
past the claim's bluff bound, the Threshold screen warns before saving, naming the bound (rounded
on its safe side) and the bluffs at t; Save and Deploy refuse until the box saying "anyway" is
ticked; once saved and deployed, the latest decision and the deployment say that the claim is not
met, and ``GET /api/v1/deployments/production`` answers ``meets_claim`` with ``bluff: false``. The
bound and the count are computed here from the raw hits (scipy), not by the code under test."""

from __future__ import annotations

import re
import shutil
from decimal import Decimal

import httpx
import pytest
from api.test_meets_claim_api import bound_of, down, raw_gate
from api_serving import api_server, make_key
from serving import CHROMIUM, healthy, settled, shared_chromium, watch

from dashboard.test_browser import goto, text_of
from evalcore.read.decisions import latest_decision
from evalcore.records import Configuration
from evalcore.store import Store

pytestmark = pytest.mark.browser  # every test here drives chromium

WARNING = '[data-testid="stAlertContentWarning"]'


@pytest.fixture(scope="module")
def served_de(claim_store, tmp_path_factory):
    if CHROMIUM is None:
        pytest.skip("chromium is not installed (apt-get install chromium)")
    pytest.importorskip("playwright.sync_api", reason="the playwright package is not installed")
    folder = tmp_path_factory.mktemp("claim-deploy-de")
    store = folder / "evalcore.duckdb"
    shutil.copy(claim_store, store)
    ids = claim_store.with_suffix(".run_ids").read_text().split()
    key = make_key(store, "prod", "read")
    with api_server(store, folder / "server.log") as url:
        yield url, store, ids[1], key


def _de(text: str) -> str:
    """A number as the German screen writes it (``0,381``)."""
    return text.replace(".", ",")


def _shown_t(page) -> float:
    state = text_of(page, "threshold-state")
    match = re.search(r"Schwelle t = (\d+,\d+)", state)
    assert match, state
    return float(match.group(1).replace(",", "."))


def _submit(page, text: str):
    return page.locator('[data-testid="stFormSubmitButton"] button').filter(has_text=text).first


def test_a_t_outside_the_claim_is_flagged_saved_deployed_anyway_and_read_false_over_http(served_de):
    url, store, faq, key = served_de
    api = httpx.Client(base_url=url + "/api/v1", headers={"Authorization": f"Bearer {key}"}, timeout=60)
    with shared_chromium() as browser:
        try:
            context = browser.new_context(viewport={"width": 1400, "height": 1000})
            page = watch(context.new_page())
            goto(page, f"{url}/threshold?run_id={faq}&lang=de")
            healthy(page, "de claim 1 threshold")
            config = page.get_by_role("combobox", name="Konfiguration (Strategie/Retriever)", exact=True).input_value()
            ood, ans = raw_gate(store, faq, config)
            bound, allowed = bound_of(ood, 0.05, largest=False)
            assert page.locator(WARNING).filter(has_text="außerhalb der Zusage 'Bluffs").count() == 0  # the claim's t

            # 1. the slider all the way up: past the bluff bound, warned before anything is saved
            page.locator('[data-testid="stSlider"] input[type="range"]').first.focus()
            page.keyboard.press("End")
            settled(page)
            healthy(page, "de claim 2 slider")
            t = _shown_t(page)
            bluffs = int((ood < t).sum())
            assert t > bound and bluffs > allowed  # outside the claim, by the claim's own count
            t_de = _de(f"{t:.3f}")
            want = (
                f"t = {t_de} liegt außerhalb der Zusage 'Bluffs <= 5 %': ihre Grenze ist t <= {_de(down(bound))}, "
                f"und bei t = {t_de} bluffen {bluffs} von {len(ood)} themenfremden Fragen."
            )
            # an alert is Markdown: its "<=" is drawn as "≤"
            warned = [w.replace("\xa0", " ").replace("≤", "<=") for w in page.locator(WARNING).all_inner_texts()]
            assert sum(want in w for w in warned) == 2, (want, warned)  # beside the slider and in the save form

            # 2. Save refuses until the box is ticked: nothing is stored
            save = _submit(page, "speichern")
            save.click()
            page.locator('[data-testid="stAlertContentError"]').filter(has_text="Nicht gespeichert").first.wait_for(
                timeout=60_000
            )
            settled(page)
            assert latest_decision(Store(store), faq, Configuration.parse(config)) is None
            page.locator('[data-testid="stCheckbox"]').filter(has_text="Trotzdem speichern").first.click()
            _submit(page, "speichern").click()
            page.locator('[data-testid="stAlertContentSuccess"]').filter(has_text="gespeichert").first.wait_for(
                timeout=60_000
            )
            settled(page)
            healthy(page, "de claim 3 saved")
            decision = latest_decision(Store(store), faq, Configuration.parse(config))
            assert decision is not None and decision.threshold == pytest.approx(t)
            latest = text_of(page, "latest").replace("\xa0", " ")
            assert "Gespeichert unter der Zusage: Bluffs <= 5 %" in latest, latest
            assert f"Die Zusage ist NICHT erfüllt: {want}" in latest, latest

            # 3. Deploy refuses until its box is ticked, then points production at the decision
            assert api.get("/deployments/production").status_code == 404
            deploy = _submit(page, "bereitstellen")
            deploy.click()
            page.locator('[data-testid="stAlertContentError"]').filter(has_text="Nicht bereitgestellt").first.wait_for(
                timeout=60_000
            )
            settled(page)
            assert api.get("/deployments/production").status_code == 404
            page.locator('[data-testid="stCheckbox"]').filter(has_text="Trotzdem bereitstellen").first.click()
            _submit(page, "bereitstellen").click()
            page.locator('[data-testid="stAlertContentSuccess"]').filter(has_text="production").first.wait_for(
                timeout=60_000
            )
            settled(page)
            healthy(page, "de claim 4 deployed")
            shown = text_of(page, "deployment").replace("\xa0", " ")
            assert "production" in shown and f"Die Zusage ist NICHT erfüllt: {want}" in shown, shown

            # 4. over HTTP: meets_claim says the bluff side is not met, with the bound the screen named
            got = api.get("/deployments/production")
            assert got.status_code == 200
            body = got.json()
            assert body["decision_id"] == decision.decision_id and body["threshold"] == pytest.approx(t)
            meets = body["meets_claim"]
            assert meets["bluff"] is False and meets["met"] is False, meets
            assert (meets["bluff_op"], meets["bluff_bound_text"]) == ("<=", down(bound))
            assert Decimal(meets["bluff_bound_text"]) <= Decimal(repr(bound))  # the safe side
            assert (meets["bluffs_at_t"], meets["n_ood"]) == (bluffs, len(ood))
            assert meets["lost_at_t"] == int((ans >= t).sum())
            context.close()
        finally:
            browser.close()
            api.close()
