"""The Threshold screen's "Deploy as…" and the Traffic screen opened on a deployment, driven by
streamlit.testing.v1.AppTest on a real store (a real run, decisions saved with their claims)."""

from __future__ import annotations

import html
import json

import pytest
from deployed import deployed_copy
from streamlit.testing.v1 import AppTest

from dashboard.test_app import APP, no_exception, open_page, shown_text
from evalcore.read import decisions
from evalcore.service.deployments import deploy, get_deployment, list_deployments
from evalcore.store import Store


@pytest.fixture()
def store(tmp_path_factory, real_embedder, tmp_path):
    return deployed_copy(tmp_path_factory, real_embedder, tmp_path)


def _deploy_button(at: AppTest):
    return next(b for b in at.button if str(b.label).startswith("Deploy decision"))


def test_deploy_as_points_a_deployment_at_the_decision_shown(store, monkeypatch):
    path, run_id, _ = store
    at = open_page(path, "threshold", monkeypatch)
    no_exception(at)
    config = at.session_state["config"]
    shown = decisions.latest_decision(Store(path), run_id, _config(config))
    assert f"Latest decision: {shown.describe()}" in shown_text(at)
    at.text_input(key="deploy_name").input("production")
    # the fixture's decision (t = 0.5 on E/bm25) loses more answers than its claim allows: the
    # screen says so and deploys it only once the box is ticked (tests/dashboard/test_claim_deploy_de_browser.py)
    assert "The claim is NOT met: t = " in shown_text(at)
    _deploy_button(at).click().run()
    no_exception(at)
    assert "Not deployed: its t lies outside its claim" in shown_text(at) and list_deployments(path) == []
    at.checkbox(key=f"deploy_outside_{shown.decision_id}").check()
    _deploy_button(at).click().run()
    no_exception(at)
    got = get_deployment(path, "production")
    assert (got.decision_id, got.threshold, got.configuration.label) == (shown.decision_id, shown.threshold, config)
    assert got.deployed_by is None and got.version == 1  # no trusted header named: not recorded, as for Save
    assert f"Deployment production now points at decision {shown.decision_id}" in shown_text(at)
    assert f"Deployment production: t = {shown.threshold:.4f} for {config}" in shown_text(at)
    _deploy_button(at).click().run()  # the same decision again: no move
    assert [len(h.moves) for h in list_deployments(path)] == [1]


def _config(label):
    from evalcore.records import Configuration

    return Configuration.parse(label)


def test_a_bad_deployment_name_is_said_and_nothing_is_deployed(store, monkeypatch):
    path, _, _ = store
    at = open_page(path, "threshold", monkeypatch)
    at.text_input(key="deploy_name").input("prod\u202euction")
    for box in at.checkbox:  # deploy anyway, outside its claim: the name alone is refused
        if str(box.key).startswith("deploy_outside_"):
            box.check()
    _deploy_button(at).click().run()
    no_exception(at)
    assert "U+202E" in shown_text(at)
    assert list_deployments(path) == []


def test_the_traffic_screen_opens_on_a_deployment(store, monkeypatch):
    from evalcore.jobs import run_job
    from evalcore.service.ingest import ingest_traffic

    path, run_id, (dense, _) = store
    deploy(path, "production", dense, "ana@example.org")  # E/dense at 0.55; the sidebar's default is E/bm25
    lines = [
        json.dumps({"id": f"q{i}", "query": q, "time": f"2026-11-0{2 + i % 3}T10:00:00Z"}).encode()
        for i, q in enumerate(["what is a list?", "how do I open a file?", "best pizza in town?"])
    ]
    ingest_traffic(path, "production", lines, "key:prod", start=False)
    job_id = str(Store(path).query("SELECT job_id FROM jobs WHERE kind = 'traffic'")["job_id"].iloc[0])
    assert run_job(Store(path), job_id) == "complete"
    monkeypatch.setenv("EVALCORE_STORE", str(path))
    at = AppTest.from_file(APP, default_timeout=180)
    at.query_params["deployment"] = "production"
    at.switch_page("evalcore_app/screens/traffic.py")
    at.run()
    no_exception(at)
    assert (at.session_state["run_id"], at.session_state["config"]) == (run_id, "E/dense")
    assert at.session_state["threshold"] == pytest.approx(0.55)
    text = html.unescape(shown_text(at))
    assert "Threshold t = 0.5500 for E/dense · deployment production (version 1)" in text
    assert f"Deployment production: decision {dense}, version 1." in text and "'deployment production'" in text
    from evalcore.read.traffic.stored import stored

    held = stored(Store(path), run_id, _config("E/dense"))
    assert held.lines == 3 and held.sentence() in text  # the three posted lines, stored for E/dense


def test_an_unknown_deployment_is_said_and_the_screen_goes_on(store, monkeypatch):
    path, _, _ = store
    monkeypatch.setenv("EVALCORE_STORE", str(path))
    at = AppTest.from_file(APP, default_timeout=180)
    at.query_params["deployment"] = "nowhere"
    at.switch_page("evalcore_app/screens/traffic.py")
    at.run()
    no_exception(at)
    assert "No deployment nowhere in this store" in shown_text(at)
