"""HTTP API benchmark: 304 revalidations a second of ``GET /deployments/{name}``, traffic
ingestion in lines a second next to the embedding stage's rate in the same run, and the memory
the API adds to the dashboard's server.

    HF_HUB_OFFLINE=1 python benchmarks/bench_api.py [--seconds 5] [--clients 4] [--posts 10]

Makes a store with one real run (the mini corpus, strategy E x dense, the real model), a key
(``evalcore keys create``), a decision and a deployment ``production``; starts ``evalcore
dashboard --headless`` as a process on a free port of 127.0.0.1 (rate limit raised out of the
way) and measures, with httpx from this process:

- the server's resident memory once Streamlit answers (the API not built yet: it is built on its
  first request), after the first API request, and after the measurements below;
- revalidations: ``--clients`` threads, each on its own connection, sending ``GET
  /deployments/production`` with ``If-None-Match`` for ``--seconds`` seconds (each must be 304);
- ingestion: ``--posts`` posts of 1,000 distinct lines each (the limit of one post), one after
  the other, each answered 207; then the embedding stage alone (``embed_with_cache``, the real
  model, in this process) on 1,000 fresh texts of the same kind: the rate the replay that the
  posts feed can go at.

The clients share the machine's cores with the server, as they would in a test on one machine.
Prints one JSON object with every figure and the load average while it ran.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))


def rss_mb(pid: int) -> float:
    with open(f"/proc/{pid}/status", encoding="ascii") as fh:
        for line in fh:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return float("nan")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--seconds", type=float, default=5.0, help="how long the revalidation clients run")
    p.add_argument("--clients", type=int, default=4, help="revalidation clients (threads, one connection each)")
    p.add_argument("--posts", type=int, default=10, help="traffic posts of 1,000 lines")
    args = p.parse_args()

    from serving import free_port, stop

    from evalcore.chunking import parse_strategies
    from evalcore.embedding.embedder import load_embedder
    from evalcore.embedding.vector_cache import embed_with_cache
    from evalcore.inputs.corpus import load_corpus
    from evalcore.inputs.groundtruth import load_ground_truth
    from evalcore.run.runner import RunRequest, run_evaluation
    from evalcore.store import Store

    mini = ROOT / "tests" / "fixtures" / "mini"
    folder = Path(tempfile.mkdtemp(prefix="bench-api-"))
    store_path = folder / "evalcore.duckdb"
    embedder = load_embedder()
    corpus = load_corpus(mini / "corpus")
    gt = load_ground_truth(corpus, mini / "questions.jsonl", mini / "ood.jsonl")
    request = RunRequest(corpus, gt, parse_strategies("E"), ["dense"], name="bench")
    run_evaluation(request, Store(store_path), embedders=[embedder])

    env = dict(os.environ, EVALCORE_API_RATE="1000000/1000000", HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1")
    made = subprocess.run(
        [
            sys.executable,
            "-m",
            "evalcore",
            "--store",
            str(store_path),
            "keys",
            "create",
            "bench",
            "--scope",
            "read,deploy,traffic:write",
        ],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    key = made.stdout.splitlines()[-1]
    port = free_port()
    log = open(folder / "server.log", "wb")
    proc = subprocess.Popen(
        [sys.executable, "-m", "evalcore", "--store", str(store_path), "dashboard", "--headless", "--port", str(port)],
        cwd=ROOT,
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    url = f"http://127.0.0.1:{port}"
    out: dict[str, object] = {}
    try:
        deadline = time.monotonic() + 120
        while True:
            try:
                if httpx.get(url + "/_stcore/health", timeout=2).text == "ok":
                    break
            except httpx.HTTPError:
                pass
            if time.monotonic() > deadline or proc.poll() is not None:
                raise SystemExit("the server did not start: " + (folder / "server.log").read_text()[-2000:])
            time.sleep(0.3)
        time.sleep(1.0)
        out["rss_streamlit_only_mb"] = round(rss_mb(proc.pid), 1)
        api = httpx.Client(base_url=url + "/api/v1", headers={"Authorization": f"Bearer {key}"}, timeout=60)
        assert api.get("/health").status_code == 200
        out["rss_after_first_api_request_mb"] = round(rss_mb(proc.pid), 1)
        decision = api.post("/runs/bench/decisions", json={"configuration": "E/dense", "threshold": 0.5})
        assert decision.status_code == 201, decision.text
        put = api.put("/deployments/production", json={"decision_id": decision.json()["decision_id"]})
        assert put.status_code == 201, put.text
        etag = put.headers["etag"]

        counts = [0] * args.clients
        load_before = os.getloadavg()[0]

        def revalidate(i: int) -> None:
            with httpx.Client(
                base_url=url + "/api/v1", headers={"Authorization": f"Bearer {key}", "If-None-Match": etag}
            ) as c:
                c.get("/deployments/production")  # the connection is open before the clock starts
                began = time.perf_counter()
                while time.perf_counter() - began < args.seconds:
                    r = c.get("/deployments/production")
                    assert r.status_code == 304, r.status_code
                    counts[i] += 1

        threads = [threading.Thread(target=revalidate, args=(i,)) for i in range(args.clients)]
        began = time.perf_counter()
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        took = time.perf_counter() - began
        out["revalidations"] = sum(counts)
        out["revalidations_per_s"] = round(sum(counts) / took, 1)
        out["revalidation_clients"] = args.clients

        questions = [json.loads(line)["question"] for line in (mini / "questions.jsonl").read_text().splitlines()]
        lines_sent = 0
        began = time.perf_counter()
        for n in range(args.posts):
            body = "\n".join(
                json.dumps(
                    {
                        "id": f"p{n}-{i}",
                        "query": f"{questions[i % len(questions)]} (case {n}-{i})",
                        "time": 1764842400 + i,
                    }
                )
                for i in range(1000)
            )
            r = api.post(
                "/deployments/production/traffic", content=body, headers={"Content-Type": "application/x-ndjson"}
            )
            assert r.status_code == 207, r.text[:300]
            assert all(x["status"] == "stored" for x in r.json()["results"])
            lines_sent += 1000
        took = time.perf_counter() - began
        out["ingested_lines"] = lines_sent
        out["ingestion_lines_per_s"] = round(lines_sent / took, 1)
        fresh = [f"{questions[i % len(questions)]} (item {i})" for i in range(1000)]
        began = time.perf_counter()
        embed_with_cache(embedder, fresh, None)
        out["embedding_stage_texts_per_s"] = round(len(fresh) / (time.perf_counter() - began), 1)
        out["ingestion_over_embedding"] = round(
            float(out["ingestion_lines_per_s"]) / float(out["embedding_stage_texts_per_s"]),
            2,  # type: ignore[arg-type]
        )
        out["rss_after_benchmark_mb"] = round(rss_mb(proc.pid), 1)
        out["api_added_mb_first_request"] = round(
            float(out["rss_after_first_api_request_mb"]) - float(out["rss_streamlit_only_mb"]),
            1,  # type: ignore[arg-type]
        )
        out["api_added_mb_after_benchmark"] = round(
            float(out["rss_after_benchmark_mb"]) - float(out["rss_streamlit_only_mb"]),
            1,  # type: ignore[arg-type]
        )
        out["load_average_1min"] = [round(load_before, 1), round(os.getloadavg()[0], 1)]
        out["cpus"] = os.cpu_count()
    finally:
        stop(proc)
        log.close()
    print(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
