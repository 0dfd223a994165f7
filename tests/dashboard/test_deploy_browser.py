"""Deploy from the Threshold screen in a real browser (chromium + playwright) on the server that
also answers /api/v1 (``evalcore dashboard`` as a process), then read the deployment back over
HTTP with httpx: the dashboard keeps working on the same port after API calls, and the
deployment names the decision shown, its threshold and the author from the operator's header."""

from __future__ import annotations

import httpx
import pytest
from api_serving import api_server, make_key, make_store
from reliability.header_proxy import HeaderProxy
from serving import CHROMIUM, healthy, settled, shared_chromium, watch

from dashboard.test_browser import goto, text_of
from evalcore.read.decisions import latest_decision
from evalcore.records import Configuration
from evalcore.store import Store

HEADER = "X-Forwarded-Email"
PM = "pm@example.org"


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    if CHROMIUM is None:
        pytest.skip("chromium is not installed (apt-get install chromium)")
    pytest.importorskip("playwright.sync_api", reason="the playwright package is not installed")
    folder = tmp_path_factory.mktemp("deploy-browser")
    store = make_store(tmp_path_factory, folder / "evalcore.duckdb")
    key = make_key(store, "prod", "read")
    with api_server(store, folder / "server.log", {"EVALCORE_USER_HEADER": HEADER}) as url:
        yield url, store, key


def test_deploy_as_from_the_threshold_screen_is_read_back_over_http(served):

    url, store, key = served
    api = httpx.Client(base_url=url + "/api/v1", headers={"Authorization": f"Bearer {key}"}, timeout=30)
    assert api.get("/deployments/production").status_code == 404
    base = str(Store(store).latest_complete("base"))
    port = int(url.rsplit(":", 1)[1])
    # the person signs in at the proxy, which sets the user header on every request (docs/DEPLOY.md)
    with HeaderProxy(port, f"{HEADER}: {PM}\r\n".encode()) as signed_in, shared_chromium() as browser:
        try:
            context = browser.new_context(viewport={"width": 1400, "height": 1000})
            page = watch(context.new_page())
            goto(page, f"{signed_in}/threshold?run_id={base}&config=E/dense")
            healthy(page, "deploy 1 threshold")
            # save the threshold shown, then point production at that decision
            page.locator('[data-testid="stTextArea"] textarea').fill("for production")
            page.locator('[data-testid="stFormSubmitButton"] button').filter(has_text="Save t =").click()
            page.locator('[data-testid="stAlertContentSuccess"]').filter(has_text="Saved decision").first.wait_for(
                timeout=60_000
            )
            settled(page)
            decision = latest_decision(Store(store), base, Configuration("E", "dense"))
            assert decision is not None and decision.author == PM
            assert api.get("/health").status_code == 200  # an API call between two dashboard actions
            page.get_by_role("textbox", name="Deploy as…").fill("production")
            page.locator('[data-testid="stFormSubmitButton"] button').filter(has_text="Deploy decision").click()
            page.locator('[data-testid="stAlertContentSuccess"]').filter(
                has_text="Deployment production now points"
            ).first.wait_for(timeout=60_000)
            settled(page)
            healthy(page, "deploy 2 deployed")
            assert f"Deployment production: t = {decision.threshold:.4f} for E/dense" in text_of(page, "deployment")

            got = api.get("/deployments/production")
            assert got.status_code == 200 and got.headers["etag"]
            body = got.json()
            assert body["decision_id"] == decision.decision_id
            assert body["threshold"] == pytest.approx(decision.threshold) and body["configuration"] == "E/dense"
            assert (body["deployed_by"], body["decided_by"], body["version"]) == (PM, PM, 1)
            assert body["claim"] == decision.claim

            # the Traffic screen opens on the deployment, on the same port, after the API calls
            goto(page, f"{signed_in}/traffic?deployment=production")
            healthy(page, "deploy 3 traffic")
            said = text_of(page, "traffic-deployment")
            assert f"Deployment production: decision {decision.decision_id}, version 1." in said, said
        finally:
            browser.close()
            api.close()
