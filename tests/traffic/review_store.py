"""What the review sample's tests share: a store with one run of E/dense made by the real CLI
(the keyword embedder of tests/traffic/words.py, so that gate values spread), built once per
session, and a deployment whose lines are posted with :func:`evalcore.service.ingest.ingest_traffic`
and scored by the replay the job runner runs (:func:`evalcore.traffic.posted.replay_posted`).

``production`` is deployed with the real clock at t = the median of the evaluation's gate values;
its lines are asked in the coming weeks (the tests ask the library as of a chosen ``now``):
weeks 1 and 2 hold every question and off-topic query three times, week 3 only the off-topic
queries, five times (a change of mix the drift test sees), week 4 a day of questions (a period
that has not ended). ``canary`` ran decision A for a fraction of a second, then moved to B: its
version 1 has ended, so its one review period has ended on the real clock too.
"""

from __future__ import annotations

import json
import math
import shutil
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import numpy as np
import pytest
from built_once import built_once
from conftest import MINI, ROOT

from evalcore.cli import main
from evalcore.read.decisions import save_decision
from evalcore.records import Configuration
from evalcore.service.deployments import deploy
from evalcore.service.ingest import ingest_traffic
from evalcore.store import Store
from evalcore.traffic.posted import replay_posted

E_DENSE = Configuration("E", "dense")
OOD = ROOT / "tests" / "fixtures" / "gate" / "ood.jsonl"
DAY = timedelta(days=1)
WEEK = 7 * DAY
EMBEDDER = "traffic.words:embedder"


def texts() -> tuple[list[str], list[str]]:
    answerable = [json.loads(x)["question"] for x in (MINI / "questions.jsonl").read_text().splitlines()]
    off = [json.loads(x)["query"] for x in OOD.read_text().splitlines()]
    return answerable, off


def post(store: Store, name: str, prefix: str, rows: list[tuple[datetime, str]]) -> None:
    """Post ``rows`` (time, text) to deployment ``name`` and replay them as the job runner does."""
    lines = [
        json.dumps({"id": f"{prefix}-{i}", "query": q, "time": at.isoformat(timespec="microseconds") + "Z"})
        for i, (at, q) in enumerate(rows)
    ]
    results = ingest_traffic(store, name, lines, "key:test", start=False)
    assert [r.status for r in results] == ["stored"] * len(rows), [r.reason for r in results if r.reason]
    assert replay_posted(store, name) is not None


def _run(folder: Path) -> None:
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("EVALCORE_TEST_EMBEDDER", EMBEDDER)
        argv = ["--store", str(folder / "evalcore.duckdb"), "run", "--corpus", str(MINI / "corpus"), "--questions"]
        argv += [str(MINI / "questions.jsonl"), "--ood", str(OOD), "--strategies", "E", "--retrievers", "dense"]
        assert main([*argv, "--name", "base", "-q"]) == 0


def gates(store: Store, run_id: str) -> dict[str, float]:
    """Each stored traffic text's gate value, from its stored top-4 hits (NaN: no hit)."""
    hits = store.query(
        "SELECT text_hash, distance FROM traffic_hits WHERE run_id = ? AND strategy = 'E' AND retriever = 'dense' "
        "AND rank <= 4",
        [run_id],
    )
    out: dict[str, float] = {}
    for h, d in hits.itertuples(index=False):
        out[h] = min(out.get(h, math.inf), float(d))
    return out


def build(tmp_path_factory, name: str) -> dict:
    """The store of the module docstring, in a folder of its own."""
    folder = tmp_path_factory.mktemp(name)
    path = folder / "evalcore.duckdb"
    shutil.copy(built_once(tmp_path_factory, "review-run", _run) / "evalcore.duckdb", path)
    answerable, off = texts()
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("EVALCORE_TEST_EMBEDDER", EMBEDDER)
        store = Store(path)
        run_id = str(store.runs()["run_id"].iloc[0])
        values = store.query(
            "SELECT min(h.distance) AS g FROM hits h JOIN queries q USING (run_id, query_id) WHERE h.run_id = ? "
            "AND h.strategy = 'E' AND h.retriever = 'dense' AND h.rank <= 4 AND q.valid GROUP BY h.query_id",
            [run_id],
        )["g"]
        t = float(np.median(values))
        a = save_decision(store, run_id, E_DENSE, t, "A", author="ana@example.org")
        b = save_decision(store, run_id, E_DENSE, float(np.quantile(values, 0.8)), "B", author="ana@example.org")
        prod = deploy(store, "production", a, "ana@example.org")
        day0 = datetime(prod.deployed_at.year, prod.deployed_at.month, prod.deployed_at.day)
        start = prod.deployed_at + timedelta(seconds=1)
        rows: list[tuple[datetime, str]] = []
        for week, mix, times in ((0, answerable + off, 3), (1, answerable + off, 3), (2, off, 5), (3, answerable, 1)):
            batch = mix * times
            lo = max(day0 + week * WEEK, start)
            step = (day0 + week * WEEK + (WEEK if week < 3 else DAY) - lo) / (len(batch) + 1)
            rows += [(lo + (i + 1) * step, q) for i, q in enumerate(batch)]
        post(store, "production", "p", rows)
        canary = deploy(store, "canary", a, "ana@example.org")
        early = [(canary.deployed_at + timedelta(milliseconds=4 * (i + 1)), q) for i, q in enumerate(answerable + off)]
        post(store, "canary", "c", early)
        wait = canary.deployed_at + timedelta(milliseconds=400) - datetime.now(UTC).replace(tzinfo=None)
        time.sleep(max(0.0, wait.total_seconds()))
        moved = deploy(store, "canary", b, "ben@example.org")
        late = [(moved.deployed_at + timedelta(seconds=1 + i), q) for i, q in enumerate(off)]
        post(store, "canary", "c2", late)
    return {
        "path": path,
        "run_id": run_id,
        "t": t,
        "day0": day0,
        "deployed_at": prod.deployed_at,
        "rows": rows,
        "canary": (canary.deployed_at, moved.deployed_at, early, late),
    }
