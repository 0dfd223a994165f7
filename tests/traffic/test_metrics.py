"""The service's Prometheus metrics (evalcore.traffic.metrics) against the deployment's check:
on the review store (tests/traffic/review_store.py), as of three weeks after ``production`` was
deployed, with its review sample drawn by the check and every sampled line labelled by its
truth, the exposition parses with prometheus_client's own parser and each figure equals what
``traffic check --deployment --json`` reports for the same deployment. The HTTP route is tried
against a real server in tests/api/test_metrics_api.py."""

from __future__ import annotations

import json
import math

import pytest
from prometheus_client.parser import text_string_to_metric_families

from evalcore.read.traffic.review import next_lines
from evalcore.service.review import label_lines
from evalcore.store import Store
from evalcore.traffic.check import run_deployment_check
from evalcore.traffic.metrics import exposition
from traffic.review_store import WEEK, build, texts


def samples(text: str) -> dict[tuple[str, frozenset], float]:
    """{(sample name, labels): value} of a text exposition, read by prometheus_client's parser."""
    out = {}
    for family in text_string_to_metric_families(text):
        for s in family.samples:
            out[(s.name, frozenset(s.labels.items()))] = s.value
    return out


@pytest.fixture(scope="module")
def labelled(tmp_path_factory):
    made = build(tmp_path_factory, "metrics")
    store = Store(made["path"])
    now = made["deployed_at"] + 3 * WEEK + WEEK / 2
    answerable, off = texts()
    truth = dict.fromkeys(answerable, "answerable") | dict.fromkeys(off, "off-topic")
    # the check draws the ended periods' review samples; then every sampled line is labelled
    assert run_deployment_check(store, "production", now=now).estimate is not None
    while lines := next_lines(store, "production", 1, None, 200, "rita@example.org"):
        labels = [{"line_id": x.line_id, "label": truth[x.query]} for x in lines]
        assert all(r.status == "stored" for r in label_lines(store, "production", labels, "rita@example.org"))
    return made, store, now


def check_json(store: Store, now) -> dict:
    """What ``traffic check --deployment production --json`` prints (the CLI prints this
    report's ``as_json``), as of ``now``."""
    return json.loads(json.dumps(run_deployment_check(store, "production", now=now).as_json()))


def test_the_metrics_parse_and_equal_the_deployments_check(labelled):
    made, store, now = labelled
    before = store.query("SELECT count(*) AS n FROM review_frames")["n"][0]
    got = samples(exposition(store, {("/deployments/{name}", "GET", "200"): 3}, now=now).decode())
    assert store.query("SELECT count(*) AS n FROM review_frames")["n"][0] == before  # a scrape draws nothing
    report = check_json(store, now)
    at = {"deployment": "production", "version": str(report["version"])}

    def value(name: str, **labels: str) -> float:
        return got[(name, frozenset({**at, **labels}.items()))]

    assert value("evalcore_deployment_threshold") == report["threshold"] == made["t"]
    judged = [p for p in report["periods"] if p["judged"]]
    assert len(judged) == 1 and value("evalcore_traffic_refused_share") == judged[0]["refused_share"]
    assert 0.0 < judged[0]["refused_share"] < 1.0
    claim = report["estimate"]["claim"]
    assert value("evalcore_claim_max_rate", claim="bluff") == claim["max_bluff_rate"]
    assert value("evalcore_claim_max_rate", claim="lost") == claim["max_lost_rate"]
    for name in ("bluff", "lost"):
        for bound in ("estimate", "lower", "upper"):
            expected = report[f"{name}_rate"][bound]
            key = ("evalcore_production_rate", frozenset({**at, "claim": name, "bound": bound}.items()))
            if expected is None:  # no estimate (the lost rate: no label said whether the hits hold the answer)
                assert key not in got
            else:
                assert math.isclose(got[key], expected)
    assert report["bluff_rate"]["estimate"] is not None and report["lost_rate"]["estimate"] is None
    for name in ("bluff", "lost"):
        states = {s: value("evalcore_monitor_state", claim=name, state=s) for s in ("holding", "breached", "undecided")}
        assert states == {s: float(s == report["monitor"][name]["state"]) for s in states}
    assert report["labels"]["answered"] > 0 and report["labels"]["refused"] > 0
    for stratum, n in report["labels"].items():
        assert value("evalcore_review_labels", stratum=stratum) == n
    rows = len(made["rows"])
    assert value("evalcore_traffic_lines_posted_total") == value("evalcore_traffic_lines_replayed_total") == rows
    assert value("evalcore_traffic_lines_pending") == 0 and value("evalcore_traffic_lines_failed_total") == 0
    assert got[("evalcore_replay_queue_lines", frozenset())] == 0
    assert got[("evalcore_replay_lag_seconds", frozenset())] == 0
    requests = (
        "evalcore_http_requests_total",
        frozenset({"route": "/deployments/{name}", "method": "GET", "status": "200"}.items()),
    )
    assert got[requests] == 3
    # every label value is a name, a version, a claim, a bound, a state, a stratum or a route: no query text
    every_text = set(texts()[0]) | set(texts()[1])
    assert not {v for _, labels in got for _, v in labels} & every_text
