"""The review sample over HTTP for annotation tools, against a real server (``evalcore dashboard``
as a process, tests/api_serving.py) over a real store (tests/traffic/review_store.py):
``GET /deployments/{name}/review`` draws the frames of the periods that have ended and answers
the next sampled lines; ``POST /deployments/{name}/labels`` answers 207, one result a label, the
author the key's name. ``canary``'s version 1 ended at its move, so its review period has ended
on the real clock. Each answer is checked against the library's own reads of the same store and
against the schema the OpenAPI document gives it."""

from __future__ import annotations

import httpx
import jsonschema
import pytest
from api_serving import api_server, is_problem, make_key
from traffic.review_store import EMBEDDER, build

from evalcore.read.traffic.review import version_samples
from evalcore.store import Store


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    made = build(tmp_path_factory, "review-api")
    store = made["path"]
    keys = {
        "ana": make_key(store, "ana", "label"),
        "ben": make_key(store, "ben", "read,label"),
        "reader": make_key(store, "reader", "read,traffic:write"),
    }
    with api_server(store, store.parent / "server.log", {"EVALCORE_TEST_EMBEDDER": EMBEDDER}) as url:
        yield url, store, keys, made


def client(url: str, key: str | None) -> httpx.Client:
    headers = {"Authorization": f"Bearer {key}"} if key else {}
    return httpx.Client(base_url=url + "/api/v1", headers=headers, timeout=60)


def _schema(doc: dict, path: str, method: str, status: int) -> dict:
    content = doc["paths"][path][method]["responses"][str(status)]["content"]["application/json"]["schema"]
    return {**content, "components": doc["components"]}


def test_the_review_read_draws_the_ended_period_and_answers_its_next_lines(served):
    url, store, keys, made = served
    deployed, moved, early, _ = made["canary"]
    with client(url, keys["ana"]) as c:
        doc = c.get("/openapi.json").json()
        assert c.get("/deployments/canary/review").json() == {"data": []}  # version 2 has not ended a period
        got = c.get("/deployments/canary/review", params={"version": 1, "limit": 7})
        assert got.status_code == 200, got.text
        jsonschema.validate(got.json(), _schema(doc, "/deployments/{name}/review", "get", 200))
        data = got.json()["data"]
    period = version_samples(Store(store), "canary", 1)[0]
    assert period.drawn and period.answered.lines + period.refused.lines == len(early)
    assert len(data) == 7 and [d["period"] for d in data] == [f"{deployed:%Y-%m-%d}"] * 7
    texts = {q for _, q in early}
    for d in data:
        s = period.answered if d["stratum"] == "answered" else period.refused
        assert d["inclusion_probability"] == s.sampled / s.lines
        assert d["query"] in texts and d["role"] == "first" and 1 <= len(d["hits"]) <= 4
        assert all(h["kept"] == (h["value"] < d["threshold"]) for h in d["hits"])
        assert (d["stratum"] == "answered") == any(h["kept"] for h in d["hits"])
    ranks = sorted((d["rank"], d["stratum"]) for d in data)
    assert ranks == sorted((d["rank"], d["stratum"]) for d in data) and ranks[0][0] == 1


def test_labels_are_stored_with_the_keys_name_one_result_each_and_the_next_lines_move_on(served):
    url, store, keys, _ = served
    with client(url, keys["ana"]) as c:
        doc = c.get("/openapi.json").json()
        first = c.get("/deployments/canary/review", params={"version": 1, "limit": 3}).json()["data"]
        labels = [
            {"line_id": first[0]["line_id"], "label": "off-topic", "hits_hold_answer": None},
            {"line_id": first[1]["line_id"], "label": "answerable", "hits_hold_answer": True},
            {"line_id": first[2]["line_id"], "label": "answerable"},
            {"line_id": first[0]["line_id"], "label": "answerable"},
            {"line_id": "0123456789ab-a1", "label": "off-topic"},
            {"line_id": first[2]["line_id"][:-1] + "x", "label": "off-topic"},
            {"line_id": "x", "label": "maybe"},
        ]
        posted = c.post("/deployments/canary/labels", json={"labels": labels})
        assert posted.status_code == 207, posted.text
        jsonschema.validate(posted.json(), _schema(doc, "/deployments/{name}/labels", "post", 207))
        results = posted.json()["results"]
        assert [r["status"] for r in results] == ["stored"] * 3 + ["problem"] * 4
        assert [r["field"] for r in results[3:]] == ["line_id", "line_id", "line_id", "line_id"]
        assert (
            "given twice" in results[3]["reason"]
            and "not a sampled line of deployment 'canary'" in results[4]["reason"]
        )
        again = c.post("/deployments/canary/labels", json={"labels": labels[:3]}).json()["results"]
        assert [r["status"] for r in again] == ["unchanged"] * 3
        after = c.get("/deployments/canary/review", params={"version": 1, "limit": 3}).json()["data"]
    assert not {d["line_id"] for d in after} & {d["line_id"] for d in first}
    authors = Store(store).query("SELECT DISTINCT author, role FROM review_labels")
    assert authors.to_dict("records") == [{"author": "key:ana", "role": "first"}]
    refused = version_samples(Store(store), "canary", 1)[0]
    assert refused.answered.labels + refused.refused.labels == 3


def test_a_second_person_gets_the_offered_lines_and_the_first_author_may_not_second_them(served):
    url, store, keys, _ = served
    with client(url, keys["ana"]) as ana, client(url, keys["ben"]) as ben:
        while lines := ana.get("/deployments/canary/review", params={"version": 1, "limit": 100}).json()["data"]:
            assert {d["role"] for d in lines} == {"first"}
            ana.post(
                "/deployments/canary/labels",
                json={"labels": [{"line_id": d["line_id"], "label": "off-topic"} for d in lines]},
            )
        offered = ben.get("/deployments/canary/review", params={"version": 1, "limit": 100}).json()["data"]
        sample = Store(store).query(
            "SELECT count(*) AS n FROM review_sample s JOIN review_frames f USING (frame_id) "
            "WHERE f.deployment = 'canary' AND s.second"
        )
        assert offered and len(offered) == int(sample["n"].iloc[0]) and {d["role"] for d in offered} == {"second"}
        own = ana.post(
            "/deployments/canary/labels",
            json={"labels": [{"line_id": offered[0]["line_id"], "label": "answerable", "role": "second"}]},
        ).json()["results"][0]
        assert own["status"] == "problem" and "another author" in own["reason"]
        got = ben.post(
            "/deployments/canary/labels",
            json={"labels": [{"line_id": d["line_id"], "label": "answerable"} for d in offered]},
        ).json()["results"]
        assert {(r["status"], r["role"]) for r in got} == {("stored", "second")}
        assert ben.get("/deployments/canary/review", params={"version": 1}).json() == {"data": []}


def test_the_review_routes_need_the_label_scope_a_deployment_and_an_ended_period(served):
    url, _, keys, made = served
    deployed = made["deployed_at"]
    is_problem(client(url, None).get("/deployments/canary/review"), 401)
    body = is_problem(client(url, keys["reader"]).get("/deployments/canary/review"), 403)
    assert "'label'" in body["detail"]
    is_problem(client(url, keys["reader"]).post("/deployments/canary/labels", json={"labels": []}), 403)
    with client(url, keys["ana"]) as c:
        assert "no deployment 'nowhere'" in is_problem(c.get("/deployments/nowhere/review"), 404)["detail"]
        late = is_problem(c.get("/deployments/production/review", params={"period": f"{deployed:%Y-%m-%d}"}), 422)
        assert "has not come" in late["detail"] and late["detail"].startswith("period:")
        assert (
            "YYYY-MM-DD"
            in is_problem(c.get("/deployments/production/review", params={"period": "soon"}), 422)["detail"]
        )
        is_problem(c.post("/deployments/canary/labels", json={"labels": [{}] * 1001}), 422)
