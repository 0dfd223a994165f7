"""``GET /api/v1/metrics`` against a real server (``evalcore dashboard`` as a process) over the
review store (tests/traffic/review_store.py): a key of scope ``read`` reads Prometheus's text
format, parsed with prometheus_client's parser; the figures of each deployment equal its check
(``traffic check --deployment --json``'s report) on the server's clock; every answer counts
under its route's template, whatever path the caller sent."""

from __future__ import annotations

import httpx
import pytest
from api_serving import api_server, is_problem, make_key
from prometheus_client.parser import text_string_to_metric_families
from traffic.review_store import EMBEDDER, build

from evalcore.store import Store
from evalcore.traffic.check import run_deployment_check


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    made = build(tmp_path_factory, "metrics-api")
    store = made["path"]
    keys = {"reader": make_key(store, "prometheus", "read"), "labeller": make_key(store, "ana", "label")}
    with api_server(store, store.parent / "server.log", {"EVALCORE_TEST_EMBEDDER": EMBEDDER}) as url:
        yield url, store, keys, made


def scrape(url: str, key: str | None) -> httpx.Response:
    headers = {"Authorization": f"Bearer {key}"} if key else {}
    return httpx.get(url + "/api/v1/metrics", headers=headers, timeout=60)


def test_a_read_key_scrapes_the_figures_of_every_deployment_and_the_requests(served):
    url, store, keys, made = served
    assert is_problem(scrape(url, None), 401)
    assert is_problem(scrape(url, keys["labeller"]), 403)
    odd = "how do I reset my password"  # a path a caller sent: it must not become a label
    with httpx.Client(base_url=url + "/api/v1", headers={"Authorization": f"Bearer {keys['reader']}"}) as c:
        assert c.get("/deployments/canary").status_code == 200
        assert is_problem(c.get(f"/deployments/{odd}"), 404)
    got = scrape(url, keys["reader"])
    assert got.status_code == 200, got.text
    assert got.headers["content-type"].startswith("text/plain") and "version=0.0.4" in got.headers["content-type"]
    samples = {}
    for family in text_string_to_metric_families(got.text):
        for s in family.samples:
            samples[(s.name, frozenset(s.labels.items()))] = s.value
    for name in ("production", "canary"):
        report = run_deployment_check(Store(store), name, draw=False).as_json()
        at = {"deployment": name, "version": str(report["version"])}

        def value(metric: str, at: dict = at, **labels: str) -> float:
            return samples[(metric, frozenset({**at, **labels}.items()))]

        assert value("evalcore_deployment_threshold") == report["threshold"]
        claim = report["estimate"]["claim"]
        assert value("evalcore_claim_max_rate", claim="bluff") == claim["max_bluff_rate"]
        assert value("evalcore_claim_max_rate", claim="lost") == claim["max_lost_rate"]
        assert not [p for p in report["periods"] if p["judged"]]  # no period of the current versions has ended
        assert ("evalcore_traffic_refused_share", frozenset(at.items())) not in samples
    posted = len(made["rows"])
    assert (
        samples[
            ("evalcore_traffic_lines_posted_total", frozenset({"deployment": "production", "version": "1"}.items()))
        ]
        == posted
    )
    canary = made["canary"]
    assert samples[
        ("evalcore_traffic_lines_replayed_total", frozenset({"deployment": "canary", "version": "2"}.items()))
    ] == len(canary[2]) + len(canary[3])
    assert samples[("evalcore_replay_queue_lines", frozenset())] == 0

    def answers(route: str, status: str) -> float:
        key = frozenset({"route": route, "method": "GET", "status": status}.items())
        return samples.get(("evalcore_http_requests_total", key), 0.0)

    assert answers("/metrics", "401") == 1 and answers("/metrics", "403") == 1
    assert answers("/deployments/{name}", "200") >= 1 and answers("/deployments/{name}", "404") == 1
    assert not [labels for _, labels in samples if any(odd in v for _, v in labels)]
