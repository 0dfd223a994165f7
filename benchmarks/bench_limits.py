"""The dashboard server's memory with its work bounded: the evaluation queue full at its cap and a
held (slow) connection in every connection slot, against the same server idle, in one run.

Starts ``evalcore dashboard`` (a real process) over a fresh store with small caps
(``EVALCORE_MAX_JOBS=1``, ``EVALCORE_QUEUE_MAX``, ``EVALCORE_QUEUE_PER_KEY``,
``EVALCORE_MAX_CONNECTIONS``), measures the resident memory of the server and all its children
(``/proc``), then fills the queue through ``POST /evaluations`` (the first job held at its
chunking by the test hook, so the rest stay queued), opens a connection per free slot that
sends half its headers and stops, and measures again. Prints both figures and their ratio, how
many job processes there were (one: a queued evaluation holds none), and what the request past
each cap got (429, 503).

    python benchmarks/bench_limits.py [--queue 20] [--per-key 5] [--connections 100]
"""

from __future__ import annotations

import argparse
import os
import socket
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "tests"), str(ROOT / "tests" / "reliability")]


def tree_rss(pid: int) -> tuple[int, int]:
    """(bytes resident in ``pid`` and all its descendants, how many processes that is)."""
    parents: dict[int, int] = {}
    rss: dict[int, int] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            status = (entry / "status").read_text()
        except OSError:
            continue
        parents[int(entry.name)] = int(stat[1])
        kb = next((int(line.split()[1]) for line in status.splitlines() if line.startswith("VmRSS:")), 0)
        rss[int(entry.name)] = kb * 1024
    tree, todo = {pid}, [pid]
    while todo:
        here = todo.pop()
        for child, parent in parents.items():
            if parent == here and child not in tree:
                tree.add(child)
                todo.append(child)
    return sum(rss.get(p, 0) for p in tree), len(tree)


def main() -> None:
    import httpx
    from api_serving import FAKE_ENV, OOD, make_key
    from conftest import MINI
    from test_trust_limits import dashboard, job_children

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--queue", type=int, default=20, help="EVALCORE_QUEUE_MAX (default 20)")
    parser.add_argument("--per-key", type=int, default=5, help="EVALCORE_QUEUE_PER_KEY (default 5)")
    parser.add_argument("--connections", type=int, default=100, help="EVALCORE_MAX_CONNECTIONS (default 100)")
    args = parser.parse_args()
    os.environ.update(FAKE_ENV)
    spec = {
        "corpus": str(MINI / "corpus"),
        "questions": str(MINI / "questions.jsonl"),
        "ood": str(OOD),
        "strategies": "E",
        "retrievers": "bm25",
    }
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        store = folder / "evalcore.duckdb"
        n_keys = -(-args.queue // args.per_key)
        keys = [make_key(store, f"k{i}", "read,evaluate") for i in range(n_keys)]
        env = {
            "EVALCORE_MAX_JOBS": "1",
            "EVALCORE_QUEUE_MAX": str(args.queue),
            "EVALCORE_QUEUE_PER_KEY": str(args.per_key),
            "EVALCORE_MAX_CONNECTIONS": str(args.connections),
            "EVALCORE_HEADER_SECONDS": "600",
            "EVALCORE_DATA_ROOTS": str(MINI.parent),
            "EVALCORE_API_RATE": "1000/1000",
            "EVALCORE_TEST_PAUSE": f"E: chunking={folder / 'hold'}",
        }
        with dashboard(store, folder / "server.log", env) as (url, proc):
            time.sleep(3)
            idle, idle_n = tree_rss(proc.pid)
            accepted, over = 0, None
            limits = httpx.Limits(max_keepalive_connections=0)
            for i in range(args.queue + 1):
                key = keys[min(i // args.per_key, n_keys - 1)]
                with httpx.Client(base_url=url + "/api/v1", timeout=60, limits=limits) as c:
                    answer = c.post("/evaluations", json=spec, headers={"Authorization": f"Bearer {key}"})
                if answer.status_code == 202:
                    accepted += 1
                    if accepted == 1:
                        deadline = time.monotonic() + 120
                        while not (folder / "hold").exists() and time.monotonic() < deadline:
                            time.sleep(0.1)
                else:
                    over = f"{answer.status_code} Retry-After {answer.headers.get('retry-after')}"
            port = int(url.rsplit(":", 1)[1])
            held: list[socket.socket] = []
            refused = None
            for _ in range(args.connections + 1):
                sock = socket.create_connection(("127.0.0.1", port), timeout=10)
                sock.sendall(b"GET /api/v1/health HTTP/1.1\r\nHost: x\r\n")
                held.append(sock)
            time.sleep(1)
            for sock in held:
                sock.setblocking(False)
                try:
                    data = sock.recv(100)
                    refused = refused or data.split(b"\r\n", 1)[0].decode()
                except BlockingIOError:
                    pass
            time.sleep(2)
            loaded, loaded_n = tree_rss(proc.pid)
            workers = len(job_children(proc.pid))
            for sock in held:
                sock.close()
            (folder / "hold").unlink(missing_ok=True)
    mib = 1024 * 1024
    print(f"server idle:   {idle / mib:8.1f} MiB RSS in {idle_n} process(es)")
    print(
        f"server loaded: {loaded / mib:8.1f} MiB RSS in {loaded_n} process(es): {accepted} evaluations accepted "
        f"(queue cap {args.queue}, {args.per_key} per key), {workers} job process, "
        f"{args.connections} connection slots held by slow clients"
    )
    print(f"ratio loaded / idle: {loaded / idle:.2f}")
    print(f"the request past the queue's cap: {over}; the connection past the cap: {refused}")


if __name__ == "__main__":
    main()
