"""A hostile search service on 127.0.0.1 for the reliability suite: the path picks how it
misbehaves (``/ok`` answers honestly with the example BM25 retriever of examples/).

- ``/empty``: finds nothing (``{"hits": []}``) for every query;
- ``/fail``: HTTP 500 for every query (``/fail-in-domain``: for every in-domain question);
- ``/deep``: the first question's answer is JSON nested 50,000 levels deep;
- ``/dup``: the first question's answer ranks one chunk at ranks 1, 2 and 3;
- ``/many``: the first question's answer holds 150,003 hits (the honest ones first);
- ``/endless``: the first question's answer is a chunked body that never ends;
- ``/slow``: headers, then a byte every 0.3 s (slowloris), for every query;
- ``/auth``: answers only a request with ``Authorization: Bearer s3cret`` (401 otherwise).

It counts the requests it receives per path.
"""

from __future__ import annotations

import json
import sys
import threading
import time
from collections import Counter
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "examples"))

import external_bm25  # noqa: E402

FIRST = "port-course"
TOKEN = "Bearer s3cret"


class Hostile:
    def __init__(self, corpus, gt) -> None:
        windows = external_bm25.sentence_windows(corpus)
        queries = external_bm25.all_queries(gt)
        self.by_text = {text: qid for qid, text in queries.items()}
        self.in_domain = {q.query_id for q in gt.questions}
        self.rankings = external_bm25.bm25_rankings(windows, queries)
        self.by_id = {w.chunk_id: w for w in windows}
        self.requests: Counter[str] = Counter()
        self.stop = threading.Event()
        service = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):
                pass

            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                qid, mode = service.by_text.get(body["query"], "?"), self.path.strip("/")
                service.requests[mode] += 1
                try:
                    service.answer(self, mode, qid, int(body["k"]))
                except (BrokenPipeError, ConnectionResetError, OSError):
                    pass  # the client hung up: what a bounded client does

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.base = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def url(self, mode: str) -> str:
        return f"{self.base}/{mode}"

    def honest(self, qid: str, k: int) -> list[dict]:
        out = []
        for chunk, score in self.rankings.get(qid, [])[:k]:
            w = self.by_id[chunk]
            out.append({"id": chunk, "text": w.text, "document": w.doc_id, "score": score})
        return out

    def answer(self, h: BaseHTTPRequestHandler, mode: str, qid: str, k: int) -> None:
        if mode == "empty":
            return reply(h, 200, b'{"hits": []}')
        if mode == "fail" or (mode == "fail-in-domain" and qid in self.in_domain):
            return reply(h, 500, b'{"error": "down"}')
        if mode == "auth" and h.headers.get("Authorization") != TOKEN:
            return reply(h, 401, b'{"error": "who are you?"}')
        if mode == "deep" and qid == FIRST:
            return reply(h, 200, b'{"hits": ' + b"[" * 50_000 + b"]" * 50_000 + b"}")
        hits = self.honest(qid, k)
        if mode == "dup" and qid == FIRST:
            hits = [dict(hits[0], score=s) for s in (3.0, 2.0, 1.0)]
        if mode == "many" and qid == FIRST:
            hits += [{"id": f"filler-{i}", "score": -float(i)} for i in range(150_003 - len(hits))]
        if mode == "endless" and qid == FIRST:
            h.send_response(200)
            h.send_header("Content-Type", "application/json")
            h.send_header("Transfer-Encoding", "chunked")
            h.end_headers()
            piece = b" " * 65536
            h.wfile.write(b"%x\r\n" % 1 + b"[" + b"\r\n")
            while not self.stop.is_set():
                h.wfile.write(b"%x\r\n" % len(piece) + piece + b"\r\n")
            return None
        if mode == "slow":
            h.send_response(200)
            h.send_header("Content-Type", "application/json")
            h.send_header("Content-Length", "100000")
            h.end_headers()
            while not self.stop.is_set():
                h.wfile.write(b" ")
                h.wfile.flush()
                time.sleep(0.3)
            return None
        return reply(h, 200, json.dumps({"hits": hits}).encode())

    def __enter__(self) -> Hostile:
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.stop.set()
        self.server.shutdown()
        self.server.server_close()


def reply(h: BaseHTTPRequestHandler, status: int, data: bytes) -> None:
    h.send_response(status)
    h.send_header("Content-Type", "application/json")
    h.send_header("Content-Length", str(len(data)))
    h.end_headers()
    h.wfile.write(data)
