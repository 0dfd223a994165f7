"""Traffic posted to a deployment (evalcore.service.ingest) on a real store: one result a line,
idempotent by the caller's id under twenty posts at once, and the replay in the job runner
storing what a file import of the same lines stores."""

from __future__ import annotations

import json
import shutil
import threading
from datetime import datetime, timedelta

import pytest
from conftest import GATE_OOD, MINI
from deployed import deployed_copy

from evalcore.errors import UnknownDeployment
from evalcore.service.deployments import deploy
from evalcore.service.ingest import ingest_traffic
from evalcore.store import Store

START = datetime(2026, 11, 2, 8, 0)


def _queries() -> list[str]:
    answerable = [json.loads(x)["question"] for x in (MINI / "questions.jsonl").read_text().splitlines()]
    off = [json.loads(x)["query"] for x in GATE_OOD.read_text().splitlines()]
    return answerable + off


def _line(i: int, query: str, **extra) -> bytes:
    record = {"id": f"q-{i}", "query": query, "time": (START + timedelta(minutes=i)).isoformat() + "Z", **extra}
    return json.dumps(record).encode()


@pytest.fixture()
def production(tmp_path_factory, real_embedder, tmp_path):
    path, run_id, (first, _) = deployed_copy(tmp_path_factory, real_embedder, tmp_path)
    deploy(path, "production", first, "ana@example.org")
    return path, run_id


def _jobs(path):
    return Store(path).query("SELECT job_id, status, kind, deployment, run_id FROM jobs WHERE kind = 'traffic'")


def test_each_line_gets_its_result_and_a_second_post_of_an_id_is_a_duplicate(production):
    path, run_id = production
    qs = _queries()
    body = [_line(0, qs[0]), _line(1, qs[1], label="off-topic"), b'{"query": "no id", "time": 0}', _line(0, qs[2])]
    results = ingest_traffic(path, "production", body, "key:prod", start=False)
    assert [(r.line, r.id, r.status) for r in results] == [
        (1, "q-0", "stored"),
        (2, "q-1", "stored"),
        (3, None, "problem"),
        (4, "q-0", "duplicate"),
    ]
    assert results[2].reason == "id: missing (each line needs the caller's id of the query)"
    again = ingest_traffic(path, "production", [_line(1, qs[1]), _line(5, qs[5])], "key:prod", start=False)
    assert [r.status for r in again] == ["duplicate", "stored"]
    posted = Store(path).query("SELECT post_id, author, label, text FROM traffic_posted ORDER BY seq")
    assert list(posted["post_id"]) == ["q-0", "q-1", "q-5"]
    assert set(posted["author"]) == {"key:prod"} and list(posted["text"]) == [qs[0], qs[1], qs[5]]
    jobs = _jobs(path)
    assert len(jobs) == 1 and jobs["status"].iloc[0] == "queued" and jobs["run_id"].iloc[0] == run_id


def test_twenty_posts_at_once_store_each_id_exactly_once(production):
    path, _ = production
    qs = _queries()
    # each post holds 30 ids; neighbouring posts overlap by 15, so 20 posts name 315 distinct ids
    posts = [[_line(i, qs[i % len(qs)]) for i in range(15 * p, 15 * p + 30)] for p in range(20)]
    results: list = [None] * 20
    barrier = threading.Barrier(20)

    def post(p: int) -> None:
        barrier.wait()
        results[p] = ingest_traffic(path, "production", posts[p], f"key:p{p}", start=False)

    threads = [threading.Thread(target=post, args=(p,)) for p in range(20)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    stored = [r.id for rs in results for r in rs if r.status == "stored"]
    assert len(stored) == len(set(stored)) == 15 * 19 + 30
    assert all(r.status in ("stored", "duplicate") for rs in results for r in rs)
    n = Store(path).query("SELECT count(*) AS n, count(DISTINCT seq) AS s FROM traffic_posted")
    assert int(n["n"].iloc[0]) == int(n["s"].iloc[0]) == 15 * 19 + 30
    assert len(_jobs(path)) == 1  # one queued replay takes every pending line


def test_the_replay_job_stores_what_a_file_import_of_the_same_lines_stores(production, tmp_path, real_embedder):
    from evalcore.jobs import run_job
    from evalcore.traffic.log import LogFields
    from evalcore.traffic.replay import import_log

    path, run_id = production
    qs = _queries()
    body = [_line(i, q, label="answerable" if i % 2 else None) for i, q in enumerate(qs)]
    body.append(_line(len(qs), qs[0]))  # the same text asked again later: a line of its own
    assert {r.status for r in ingest_traffic(path, "production", body, "key:prod", start=False)} == {"stored"}
    job_id = _jobs(path)["job_id"].iloc[0]
    assert run_job(Store(path), job_id) == "complete"
    store = Store(path)
    imports = store.query("SELECT source, status, lines, added, author FROM traffic_imports")
    n = len(body)
    assert imports.to_dict("records") == [
        {"source": "deployment production", "status": "complete", "lines": n, "added": n, "author": None}
    ]
    assert store.query("SELECT count(*) AS n FROM traffic_posted WHERE text IS NOT NULL")["n"].iloc[0] == 0
    # the same lines imported from a file into a copy of the store before the replay
    reference = tmp_path / "reference"
    reference.mkdir()
    ref_path = reference / "evalcore.duckdb"
    shutil.copy(deployed_copy.__globals__["_MADE"]["store"][0], ref_path)
    log = reference / "log.jsonl"
    log.write_bytes(b"\n".join(body) + b"\n")
    import_log(Store(ref_path), f"{run_id}:E/dense", log, LogFields(), embedder=real_embedder)
    sql = (
        "SELECT q.asked_at, q.label, q.occurrence, t.gate_value FROM traffic_queries q JOIN traffic_texts t "
        "USING (run_id, strategy, retriever, text_hash) ORDER BY q.asked_at, q.occurrence"
    )
    got, want = store.query(sql), Store(ref_path).query(sql)
    assert len(got) == len(body)
    assert got[["asked_at", "label", "occurrence"]].equals(want[["asked_at", "label", "occurrence"]])
    assert got["gate_value"].to_numpy() == pytest.approx(want["gate_value"].to_numpy(), abs=1e-6)
    # a second post of the same ids adds nothing, and queues no job
    assert {r.status for r in ingest_traffic(path, "production", body, "key:prod", start=False)} == {"duplicate"}
    assert list(_jobs(path)["status"]) == ["complete"]


def test_an_unknown_deployment_is_refused(production):
    path, _ = production
    with pytest.raises(UnknownDeployment, match="no deployment 'staging'"):
        ingest_traffic(path, "staging", [_line(0, "what is a list?")], None, start=False)
