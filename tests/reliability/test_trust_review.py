"""The reliability suite, issue 46 (the review sample): hostile labels, sample sizes, periods and
callers of the review routes, one table row per case. The store is real
(tests/traffic/review_store.py: a run made by the CLI, lines posted and replayed); the routes are
served by a real ``evalcore dashboard`` process; ``traffic sample`` runs as ``python -m evalcore``
runs it (in this process). A label that breaks a rule is a problem naming its field in the 207,
never stored; a bad size or period is one ``error:`` line naming the option (exit 2) or a 4xx
problem naming the field; nothing stored is half-written."""

from __future__ import annotations

from datetime import timedelta

import httpx
import pytest
from api_serving import api_server, make_key
from conftest import cli_in_process
from test_reliability import check
from traffic.review_store import DAY, EMBEDDER, WEEK, build

from evalcore.read.traffic.review import next_lines
from evalcore.store import Store
from evalcore.traffic.sampling import draw_samples


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    """The review store, ``production``'s first three weeks drawn as of a day in week 4 (so its
    lines have ids), and a server with a ``label`` key, a ``read`` key."""
    made = build(tmp_path_factory, "trust-review")
    path = made["path"]
    now = made["day0"] + 3 * WEEK + DAY / 2
    draw_samples(Store(path), "production", now=now)
    other = next_lines(Store(path), "production", 1, None, 1, None)[0].line_id
    keys = {"label": make_key(path, "labeller", "label"), "read": make_key(path, "reader", "read")}
    with api_server(path, path.parent / "server.log", {"EVALCORE_TEST_EMBEDDER": EMBEDDER}) as url:
        with httpx.Client(
            base_url=url + "/api/v1", headers={"Authorization": f"Bearer {keys['label']}"}, timeout=120
        ) as c:
            canary = c.get("/deployments/canary/review", params={"version": 1, "limit": 100}).json()["data"]
        yield {"url": url, "path": path, "keys": keys, "made": made, "other": other, "canary": canary}


def _rows(path, table: str) -> int:
    """The rows of ``table`` (read as the library reads: retried while the server writes)."""
    return int(Store(path).query(f"SELECT count(*) AS n FROM {table}")["n"].iloc[0])


def _post(served, labels, key: str = "label"):
    headers = {"Authorization": f"Bearer {served['keys'][key]}"}
    return httpx.post(
        f"{served['url']}/api/v1/deployments/canary/labels", json={"labels": labels}, headers=headers, timeout=60
    )


def _labels(served):
    lines = served["canary"]
    return {
        "an unknown line id (well formed)": ({"line_id": "0123456789ab-a1", "label": "off-topic"}, "line_id"),
        "a forged line id": ({"line_id": "../../review_labels", "label": "off-topic"}, "line_id"),
        "a line id with SQL": ({"line_id": "'; DROP TABLE review_labels; --", "label": "off-topic"}, "line_id"),
        "a rank past the sample": (
            {"line_id": lines[0]["line_id"].split("-")[0] + "-a99999", "label": "off-topic"},
            "line_id",
        ),
        "another deployment's line": ({"line_id": served["other"], "label": "off-topic"}, "line_id"),
        "a line id that is a number": ({"line_id": 5, "label": "off-topic"}, "line_id"),
        "a label that is a number": ({"line_id": lines[1]["line_id"], "label": 3}, "label"),
        "a label not offered": ({"line_id": lines[1]["line_id"], "label": "maybe"}, "label"),
        "a label with a NUL": ({"line_id": lines[1]["line_id"], "label": "off\x00topic"}, "label"),
        "a line id with a NUL": ({"line_id": lines[1]["line_id"] + "\x00", "label": "off-topic"}, "line_id"),
        "a huge line id": ({"line_id": "x" * 100_000, "label": "off-topic"}, "line_id"),
        "hits_hold_answer a string": (
            {"line_id": lines[1]["line_id"], "label": "answerable", "hits_hold_answer": "yes"},
            "hits_hold_answer",
        ),
        "hits_hold_answer 1": (
            {"line_id": lines[1]["line_id"], "label": "answerable", "hits_hold_answer": 1},
            "hits_hold_answer",
        ),
        "hits_hold_answer for off-topic": (
            {"line_id": lines[1]["line_id"], "label": "off-topic", "hits_hold_answer": False},
            "hits_hold_answer",
        ),
        "an unknown field": (
            {"line_id": lines[1]["line_id"], "label": "off-topic", "author": "someone else"},
            "author",
        ),
        "a label that is a string": ("off-topic", "label"),
        "a label that is null": (None, "label"),
        "a role not offered": ({"line_id": lines[1]["line_id"], "label": "off-topic", "role": "third"}, "role"),
    }


def test_a_bad_label_is_a_problem_naming_its_field_and_the_good_one_beside_it_is_stored(served):
    good = {"line_id": served["canary"][2]["line_id"], "label": "answerable", "hits_hold_answer": True}
    for case, (bad, field) in _labels(served).items():
        before = _rows(served["path"], "review_labels")
        response = _post(served, [good, bad])
        results = response.json().get("results", [{}, {}]) if response.status_code == 207 else [{}, {}]
        kept = "good kept" if results[0].get("status") in ("stored", "unchanged") else "good lost"
        observed = f"{response.status_code}; {kept}; {results[1].get('status')} {results[1].get('field')}"
        check(f"review label: {case}", f"207; good kept; problem {field}", observed, response.text[:300])
        stored = _rows(served["path"], "review_labels") - before
        assert stored == (1 if results[0].get("status") == "stored" else 0), (case, stored)


def test_a_label_request_too_large_or_repeating_an_id_and_a_second_label_by_its_first_author(served):
    lines = served["canary"]
    before = _rows(served["path"], "review_labels")
    many = _post(served, [{"line_id": lines[3]["line_id"], "label": "off-topic"}] * 10_001)
    check(
        "review labels: 10,001 in one request",
        "422, nothing stored",
        f"{many.status_code}, {'nothing stored' if _rows(served['path'], 'review_labels') == before else 'stored'}",
    )
    twice = _post(
        served,
        [
            {"line_id": lines[3]["line_id"], "label": "off-topic"},
            {"line_id": lines[3]["line_id"], "label": "answerable"},
        ],
    )
    got = [(r["status"], r["field"]) for r in twice.json()["results"]]
    check("review labels: one line id twice in a request", "[('stored', None), ('problem', 'line_id')]", str(got))
    own = _post(served, [{"line_id": lines[3]["line_id"], "label": "answerable", "role": "second"}])
    result = own.json()["results"][0]
    check(
        "review labels: a second label by the first label's author",
        "problem role",
        f"{result['status']} {result['field']}",
        result,
    )
    empty = _post(served, [])
    check("review labels: an empty list", "422", str(empty.status_code), empty.text[:300])


CLI_SIZES = {
    "--answered 0": (["--answered", "0"], {}, "--answered"),
    "--answered -1": (["--answered=-1"], {}, "--answered"),
    "--answered 10^9": (["--answered", "1000000000"], {}, "--answered"),
    "--answered ²": (["--answered", "²"], {}, "--answered"),
    "--refused abc": (["--refused", "abc"], {}, "--refused"),
    "--refused 1e3": (["--refused", "1e3"], {}, "--refused"),
    "--refused ''": (["--refused", ""], {}, "--refused"),
    "EVALCORE_REVIEW_ANSWERED=0": ([], {"EVALCORE_REVIEW_ANSWERED": "0"}, "$EVALCORE_REVIEW_ANSWERED"),
    "EVALCORE_REVIEW_REFUSED=²": ([], {"EVALCORE_REVIEW_REFUSED": "²"}, "$EVALCORE_REVIEW_REFUSED"),
    "EVALCORE_REVIEW_REFUSED=many": ([], {"EVALCORE_REVIEW_REFUSED": "many"}, "$EVALCORE_REVIEW_REFUSED"),
    "EVALCORE_REVIEW_SECOND_SHARE=2": ([], {"EVALCORE_REVIEW_SECOND_SHARE": "2"}, "$EVALCORE_REVIEW_SECOND_SHARE"),
    "--version 0": (["--version", "0"], {}, "--version"),
    "--period soon": (["--period", "soon"], {}, "--period"),
    "--period 2026-02-30": (["--period", "2026-02-30"], {}, "--period"),
    "--period before the version": (["--period", "2000-01-01"], {}, "--period"),
    "--period 9999-12-31": (["--period", "9999-12-31"], {}, "--period"),
    "--period of a period not ended": (["--period", "@today"], {}, "--period"),
    "--deployment unknown": (["--deployment", "nowhere"], {}, "--deployment"),
}


@pytest.mark.parametrize("case", list(CLI_SIZES))
def test_traffic_sample_refuses_a_bad_size_or_period_in_one_line_and_stores_nothing(served, case):
    args, env, names = CLI_SIZES[case]
    made = served["made"]
    args = [a.replace("@today", f"{made['deployed_at']:%Y-%m-%d}") for a in args]
    deployment = [] if "--deployment" in args else ["--deployment", "production"]
    before = _rows(served["path"], "review_frames"), _rows(served["path"], "review_sample")
    ran = cli_in_process(["--store", str(served["path"]), "traffic", "sample", *deployment, *args], env)
    errors = [line for line in ran.stderr.splitlines() if line.startswith("error: ")]
    after = _rows(served["path"], "review_frames"), _rows(served["path"], "review_sample")
    observed = f"exit {ran.returncode}, {len(errors)} error line, names it: {bool(errors) and names in errors[0]}"
    observed += ", nothing stored" if after == before else ", stored"
    check(f"traffic sample {case}", "exit 2, 1 error line, names it: True, nothing stored", observed, ran.stderr[-800:])
    assert "Traceback" not in ran.stderr


def _get(served, path: str, key: str | None = "label", **params):
    headers = {"Authorization": f"Bearer {served['keys'][key]}"} if key else {}
    return httpx.get(f"{served['url']}/api/v1{path}", params=params, headers=headers, timeout=60)


def test_the_review_routes_refuse_bad_callers_periods_and_limits_with_a_problem(served):
    deployed = served["made"]["deployed_at"]
    cases = {
        "GET review without a key": (lambda: _get(served, "/deployments/canary/review", None), "401"),
        "GET review with the read scope": (lambda: _get(served, "/deployments/canary/review", "read"), "403"),
        "POST labels with the read scope": (
            lambda: _post(served, [{"line_id": "x", "label": "off-topic"}], "read"),
            "403",
        ),
        "GET review of an unknown deployment": (lambda: _get(served, "/deployments/nowhere/review"), "404"),
        "GET review of a hostile name": (lambda: _get(served, "/deployments/a\u202eb/review"), "422"),
        "POST labels to an unknown deployment": (
            lambda: httpx.post(
                f"{served['url']}/api/v1/deployments/nowhere/labels",
                json={"labels": [{"line_id": "x", "label": "off-topic"}]},
                headers={"Authorization": f"Bearer {served['keys']['label']}"},
            ),
            "404",
        ),
        "GET review: period not a date": (
            lambda: _get(served, "/deployments/production/review", period="soon"),
            "422 period",
        ),
        "GET review: period 2026-02-30": (
            lambda: _get(served, "/deployments/production/review", period="2026-02-30"),
            "422 period",
        ),
        "GET review: a period not ended": (
            lambda: _get(served, "/deployments/production/review", period=f"{deployed:%Y-%m-%d}"),
            "422 period",
        ),
        "GET review: before the version": (
            lambda: _get(served, "/deployments/production/review", period="2000-01-01"),
            "422 period",
        ),
        "GET review: far future": (
            lambda: _get(served, "/deployments/production/review", period="9999-12-31"),
            "422 period",
        ),
        "GET review: a period of 41 characters": (
            lambda: _get(served, "/deployments/production/review", period="2" * 41),
            "422 query.period",
        ),
        "GET review: limit 0": (lambda: _get(served, "/deployments/canary/review", limit=0), "422 query.limit"),
        "GET review: limit 10^9": (lambda: _get(served, "/deployments/canary/review", limit=10**9), "422 query.limit"),
        "GET review: version 99": (lambda: _get(served, "/deployments/canary/review", version=99), "422 version"),
    }
    for case, (call, expected) in cases.items():
        before = _rows(served["path"], "review_frames")
        response = call()
        body = (
            response.json() if response.headers.get("content-type", "").startswith("application/problem+json") else {}
        )
        named = ""
        if " " in expected:
            field = expected.split(" ", 1)[1]
            errors = [e["field"] for e in body.get("errors", [])]
            named = (
                f" {field}" if field in errors or str(body.get("detail", "")).startswith(field + ":") else " (unnamed)"
            )
        observed = f"{response.status_code}{named}" + (
            "" if body.get("status") == response.status_code else " not a problem"
        )
        check(f"review route: {case}", expected, observed, response.text[:300])
        assert _rows(served["path"], "review_frames") == before, case
        assert "Traceback" not in response.text


def test_a_period_after_now_is_refused_before_any_frame_is_drawn(served):
    path = served["path"]
    made = served["made"]
    before = _rows(path, "review_frames")
    try:
        draw_samples(
            Store(path),
            "production",
            period=f"{made['day0'] + 5 * WEEK:%Y-%m-%d}",
            now=made["day0"] + 4 * WEEK + timedelta(hours=1),
        )
    except Exception as exc:  # noqa: BLE001 - the case reads the error's type and words
        observed = f"{type(exc).__name__}: {'has not come' in str(exc)}"
    else:
        observed = "accepted"
    check("review sample: a period after now", "InputError: True", observed)
    assert _rows(path, "review_frames") == before
