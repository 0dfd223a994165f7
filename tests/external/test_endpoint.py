"""run-endpoint against a real HTTP server on 127.0.0.1 (started and stopped here) that answers
with the external BM25 retriever, with faults: a slow answer, a 500 then success, a malformed
answer. The server counts what it receives; a second run must send nothing."""

from __future__ import annotations

import json
import shutil
import sys
import threading
import time
from collections import Counter
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from conftest import MINI, MINI_ARGS, ROOT

sys.path.insert(0, str(ROOT / "examples"))
import external_bm25

from evalcore.cli import main
from evalcore.store import Store

INPUTS = list(MINI_ARGS)
SLOW, FLAKY, BROKEN = "port-course", "config-course", "e417-ticket"  # query ids with faults
TIMEOUT = 0.5


class Service:
    """A search API: POST {"query", "k"} -> {"hits": [{"id", "text", "document", "score"}]}."""

    def __init__(self, corpus, gt) -> None:
        self.windows = external_bm25.sentence_windows(corpus)
        queries = external_bm25.all_queries(gt)
        self.by_text = {text: qid for qid, text in queries.items()}
        self.rankings = external_bm25.bm25_rankings(self.windows, queries)
        self.by_id = {w.chunk_id: w for w in self.windows}
        self.requests: Counter[str] = Counter()
        service = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):  # quiet
                pass

            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                qid = service.by_text[body["query"]]
                service.requests[qid] += 1
                n = service.requests[qid]
                if qid == SLOW and n == 1:
                    time.sleep(TIMEOUT * 3)  # the client gives up and tries again
                if qid == FLAKY and n == 1:
                    return self.reply(500, b'{"error": "overloaded"}')
                if qid == BROKEN:
                    return self.reply(200, b'{"hits": [{"id": "x", "score": 1.0}')  # cut short
                hits = []
                for i, (chunk, score) in enumerate(service.rankings[qid][: body["k"]]):
                    w = service.by_id[chunk]
                    hit = {"id": chunk, "text": w.text, "document": w.doc_id, "score": score}
                    if i % 2:
                        hit.update(start=w.start, end=w.end)
                    hits.append(hit)
                self.reply(200, json.dumps({"hits": hits}).encode())

            def reply(self, status, data):
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/search"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.server.shutdown()
        self.server.server_close()
        self.thread.join(5)


@pytest.fixture(scope="module")
def service(mini_inputs):
    with Service(*mini_inputs) as s:
        yield s


def run(store, service, *extra, capsys):
    code = main(
        [
            "--store",
            str(store),
            "run-endpoint",
            *INPUTS,
            "--url",
            service.url,
            "--timeout",
            str(TIMEOUT),
            "--retries",
            "2",
            "--concurrency",
            "3",
            "--chunker",
            "sent3",
            "--retriever",
            "bm25api",
            "--name",
            "api",
            "--json",
            *extra,
        ]
    )
    out, err = capsys.readouterr()
    return code, (json.loads(out) if out.strip() else None), err


def test_endpoint_run_with_faults_then_from_the_cache(tmp_path, service, mini_inputs, capsys):
    corpus, gt = mini_inputs
    store = tmp_path / "s.duckdb"
    code, first, err = run(store, service, capsys=capsys)
    assert code == 0, err
    asked = sum(service.requests.values())
    n_queries = len(gt.valid_questions) + len(gt.ood)
    # every query once; the slow one and the flaky one twice (retried); the broken one once
    assert service.requests[SLOW] == 2 and service.requests[FLAKY] == 2 and service.requests[BROKEN] == 1
    assert asked == n_queries + 2 and first["sent"] == {"requests": asked, "cached": 0, "retries": 2}
    assert [f["query"] for f in first["failures"]] == [BROKEN]
    assert first["failures"][0]["reason"].startswith("malformed JSON in the answer")
    assert f"{BROKEN}: malformed JSON" in err
    config = first["configurations"][0]
    assert config["destroyed"] is None  # the service's chunk set is unknown
    # the failed in-domain query is left out of every figure, not scored as a miss
    scored = [q for q in gt.valid_questions if q.query_id != BROKEN]
    assert config["failed"] == 1 and config["queries"] == len(scored) == len(gt.valid_questions) - 1

    # the figures equal the independent count over the same BM25 lists (top 20 asked)
    docs = {d.doc_id: d.text for d in corpus.documents}
    hits = 0
    mrr = 0.0
    for q in scored:
        doc = next(d for d, t in docs.items() if q.needle in t)
        s = docs[doc].find(q.needle)
        e = s + len(q.needle)
        ranks = [
            i
            for i, (c, _) in enumerate(service.rankings[q.query_id][:20], start=1)
            if service.by_id[c].doc_id == doc and service.by_id[c].start <= s and e <= service.by_id[c].end
        ]
        hits += bool(ranks and ranks[0] <= 4)
        mrr += 1 / ranks[0] if ranks else 0.0
    assert config["recall@4"] == hits / len(scored)
    assert config["mrr"] == pytest.approx(mrr / len(scored), abs=1e-12)

    # a second run sends nothing: every answer (the malformed one too) comes from the cache
    code, second, _ = run(store, service, capsys=capsys)
    assert code == 0 and sum(service.requests.values()) == asked
    assert second["sent"] == {"requests": 0, "cached": n_queries, "retries": 0}
    assert second["configurations"][0] == config
    assert [(f["query"], f["reason"], f["attempts"]) for f in second["failures"]] == [
        (f["query"], f["reason"], 0) for f in first["failures"]
    ]  # nothing sent for it either
    stored = Store(store).query("SELECT query_id, reason FROM failures WHERE run_id = ?", [second["run_id"]])
    assert stored["query_id"].tolist() == [BROKEN]

    # --refresh asks again; --max-failures 0 then fails the run with the reason, nothing stored
    code, _, err = run(store, service, "--refresh", "--max-failures", "0", capsys=capsys)
    assert code == 2 and sum(service.requests.values()) > asked
    assert err.strip().splitlines()[-1].startswith("error: 1 of 25 queries failed (4%), more than the allowed 0%")
    failed = Store(store).query("SELECT status, reason FROM runs ORDER BY created_at DESC LIMIT 1").iloc[0]
    assert failed["status"] == "failed" and "1 of 25 queries failed" in failed["reason"]
    assert (
        Store(store)
        .query("SELECT count(*) AS n FROM results r JOIN runs u USING (run_id) WHERE u.status = 'failed'")["n"]
        .iloc[0]
        == 0
    )


def test_unreachable_service_and_bad_options(tmp_path, capsys):
    store = tmp_path / "s.duckdb"
    code = main(["--store", str(store), "run-endpoint", *INPUTS, "--url", "ftp://x/search"])
    assert code == 2 and "--url 'ftp://x/search': an http:// or https:// URL" in capsys.readouterr().err
    code = main(["--store", str(store), "run-endpoint", *INPUTS, "--url", "http://127.0.0.1:9/", "--body", "{oops"])
    assert code == 2 and "--body '{oops': not JSON" in capsys.readouterr().err
    assert not store.exists() or Store(store).runs().empty
    # nothing listens on port 9 (discard): every query fails, so the run fails, quickly
    code = main(
        ["--store", str(store), "run-endpoint", *INPUTS, "--url", "http://127.0.0.1:9/", "--retries", "0", "--quiet"]
    )
    err = capsys.readouterr().err
    assert code == 2 and "25 of 25 queries failed" in err and "cannot reach 127.0.0.1:9" in err


def test_failed_queries_are_left_out_of_pairing(tmp_path, service, engine_store, engine_run_id, mini_inputs, capsys):
    """An endpoint run with one failed in-domain query, paired with built-in E/hybrid in the same
    store: the matrix, the query list and the gate pair on the other 17 queries."""
    from evalcore.read.compare import compare, pair_queries
    from evalcore.records import Configuration, RunConfiguration

    _, gt = mini_inputs
    store = tmp_path / "both.duckdb"
    shutil.copy(engine_store, store)
    code, out, _ = run(store, service, capsys=capsys)
    assert code == 0 and [f["query"] for f in out["failures"]] == [BROKEN]
    api = out["run_id"]
    n = len(gt.valid_questions) - 1
    ours = RunConfiguration(api, Configuration("sent3", "bm25api"))
    theirs = RunConfiguration(engine_run_id, Configuration("E", "hybrid"))
    matrix = compare(Store(store), [ours, theirs], 4).matrix
    assert set(matrix["n"]) == {n}
    test, listed = pair_queries(Store(store), ours, theirs, 4)
    assert test.n == n and BROKEN not in set(listed["query_id"])
    cell = matrix[matrix["row"].str.startswith("sent3/bm25api")].iloc[0]
    assert (cell["wins"], cell["losses"]) == (test.wins, test.losses)
    code = main(
        [
            "--store",
            str(store),
            "gate",
            "--baseline",
            "mini:E/hybrid",
            "--candidate",
            f"{api}:sent3/bm25api",
            "--format",
            "json",
        ]
    )
    gate = json.loads(capsys.readouterr().out)
    result = gate["configurations"][0]
    assert result["baseline"]["queries"] == n and (result["wins"], result["losses"]) == (test.wins, test.losses)
    assert any(
        note.startswith(
            f"E/hybrid -> sent3/bm25api: 1 of {n + 1} queries left out, not counted as losses: "
            f"the candidate could not answer them (failed calls: {BROKEN})"
        )
        for note in gate["notes"]
    )


def test_endpoint_run_as_a_dashboard_job(tmp_path, service, monkeypatch):
    """The New run page's endpoint option: the operator allows the service's URL prefix, the job
    runs in its own process like any run, and its run is stored with its failure."""
    from evalcore import jobs
    from evalcore.errors import ConfigError

    monkeypatch.setenv("EVALCORE_DATA_ROOTS", str(MINI))
    prepared = jobs.prepare_paths(
        str(MINI / "corpus"), str(MINI / "questions.jsonl"), str(MINI / "ood.jsonl"), "E", "dense"
    )
    endpoint = {"url": service.url, "timeout": TIMEOUT, "retries": 2, "chunker": "sent3", "retriever": "bm25api"}
    monkeypatch.delenv("EVALCORE_ENDPOINTS", raising=False)
    with pytest.raises(ConfigError, match="endpoint runs from the dashboard are off"):
        jobs.with_options(prepared, endpoint=endpoint)
    monkeypatch.setenv("EVALCORE_ENDPOINTS", "http://127.0.0.1:1/")
    with pytest.raises(ConfigError, match="not under a prefix the operator allows"):
        jobs.with_options(prepared, endpoint=endpoint)
    monkeypatch.setenv("EVALCORE_ENDPOINTS", service.url.rsplit("/", 1)[0] + "/")
    ready = jobs.with_options(prepared, endpoint=endpoint)
    store = Store(tmp_path / "evalcore.duckdb")
    job_id = jobs.submit(store, ready, "api job")
    deadline = time.monotonic() + 120
    while jobs.job(store, job_id)["status"] in jobs.ACTIVE and time.monotonic() < deadline:
        time.sleep(0.2)
    row = jobs.job(store, job_id)
    assert row["status"] == "complete", row
    run = store.run(row["run_id"])
    assert run.settings["source"] == "endpoint" and run.strategies == ("sent3",)
    failed = store.query("SELECT query_id FROM failures WHERE run_id = ?", [row["run_id"]])
    assert failed["query_id"].tolist() == [BROKEN]


def test_new_run_screen_starts_an_endpoint_run(tmp_path, service, monkeypatch):
    """The New run screen: the endpoint option is off until the operator allows a prefix; then
    the mini folder's queries go to the test server as a background job."""
    from dashboard.test_new_run_page import open_new_run

    from evalcore import jobs

    store_path = tmp_path / "evalcore.duckdb"
    monkeypatch.setenv("EVALCORE_DATA_ROOTS", str(MINI))
    monkeypatch.delenv("EVALCORE_ENDPOINTS", raising=False)
    at = open_new_run(store_path, monkeypatch)
    at.radio(key="nr_mode").set_value("endpoint").run()
    assert any("Endpoint runs from the dashboard are off" in i.value for i in at.info)
    monkeypatch.setenv("EVALCORE_ENDPOINTS", service.url.rsplit("/", 1)[0] + "/")
    at = open_new_run(store_path, monkeypatch)
    at.radio(key="nr_source").set_value("folder").run()
    at.text_input(key="nr_corpus_dir").set_value(str(MINI / "corpus"))
    at.text_input(key="nr_questions_path").set_value(str(MINI / "questions.jsonl"))
    at.text_input(key="nr_ood_path").set_value(str(MINI / "ood.jsonl"))
    at.radio(key="nr_mode").set_value("endpoint").run()
    at.text_input(key="nr_url").set_value(service.url)
    at.text_input(key="nr_chunker").set_value("sent3")
    at.text_input(key="nr_retriever").set_value("bm25api")
    at.run()
    at.button(key="nr_validate").click().run()
    assert not at.exception and not at.error, ([e.value for e in at.exception], [e.value for e in at.error])
    assert at.session_state["nr_prepared"].spec.endpoint.url == service.url
    at.button(key="nr_start").click().run()
    assert not at.exception and not at.error, ([e.value for e in at.exception], [e.value for e in at.error])
    store = Store(store_path)
    # the job from the store: the page says "Started job" only while the job waits or runs, and
    # on a busy machine this short job can end before the page has drawn itself again
    listed = jobs.jobs_overview(store)
    assert len(listed) == 1, listed
    job_id = str(listed["job_id"].iloc[0])
    if "nr_last_job" in at.session_state:  # the job still waited or ran when the page was drawn
        assert at.session_state["nr_last_job"] == job_id
    deadline = time.monotonic() + 120
    while jobs.job(store, job_id)["status"] in jobs.ACTIVE and time.monotonic() < deadline:
        time.sleep(0.2)
    row = jobs.job(store, job_id)
    assert row["status"] == "complete", row
    assert store.run(row["run_id"]).strategies == ("sent3",)
