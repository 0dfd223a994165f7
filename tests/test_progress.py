"""One progress scale: the stages the runner announces tile 0..1 in run order, and the run's
row in the store shows exactly what every other Progress receives."""

from __future__ import annotations

from itertools import pairwise

import pytest
from conftest import KeywordEmbedder

from evalcore.chunking import parse_strategies
from evalcore.progress import Scale, Stage
from evalcore.run.runner import RunRequest, run_evaluation
from evalcore.store import Store


def test_the_stages_of_a_run_tile_the_scale_in_order():
    scale = Scale(["A", "E", "G"])
    stages = [scale.query_embedding(31)]
    for s in scale.strategies:
        stages += [scale.strategy(s, part, 10) for part in ("chunking", "embedding", "retrieval and scoring")]
    stages.append(scale.write(8))
    assert stages[0].start == pytest.approx(0.02) and stages[-1].end == pytest.approx(1.0)
    for before, after in pairwise(stages):
        assert before.start < before.end == pytest.approx(after.start)
    # strategy 2 of 3 (E): 0.05 + 0.3 ... 0.05 + 0.6; embedding is its 10 %-50 %
    e = scale.strategy("E", "embedding", 1120)
    assert (e.start, e.end) == (pytest.approx(0.35 + 0.03), pytest.approx(0.35 + 0.15))
    assert e.text(340) == "E: embedding 340/1120 chunks"
    assert e.fraction(560) == pytest.approx((e.start + e.end) / 2)
    assert Stage("x", "queries", 0, 0.1, 0.2).fraction(0) == 0.2  # an empty stage is done


class Recorder:
    """Records every stage and, at each, the run's row as the store shows it then."""

    def __init__(self, store: Store) -> None:
        self.store, self.seen, self.done = store, [], 0
        self.advanced: dict[str, int] = {}

    def stage(self, stage: Stage) -> None:
        row = self.store.query("SELECT stage, progress FROM runs WHERE status = 'running'").iloc[0]
        self.seen.append((stage, row["stage"], row["progress"]))

    def advance(self, n: int = 1) -> None:
        self.done += n
        name = self.seen[-1][0].name
        self.advanced[name] = self.advanced.get(name, 0) + n

    def close(self) -> None:
        pass


def test_the_store_row_and_the_cli_receive_the_same_stages(tmp_path, mini_inputs):
    corpus, gt = mini_inputs
    store = Store(tmp_path / "s.duckdb")
    recorder = Recorder(store)
    result = run_evaluation(
        RunRequest(corpus, gt, parse_strategies("A,E"), ["dense", "bm25"], name="p"),
        store,
        embedders=[KeywordEmbedder(["install", "cache", "token"])],
        progress=recorder,
    )
    names = [stage.name for stage, _, _ in recorder.seen]
    assert names == [
        "query embedding",
        "A: chunking",
        "A: embedding",
        "A: retrieval and scoring",
        "E: chunking",
        "E: embedding",
        "E: retrieval and scoring",
        "writing results",
    ]
    for stage, text, fraction in recorder.seen:
        assert text == stage.text(0) and fraction == pytest.approx(stage.fraction(0))
    fractions = [f for _, _, f in recorder.seen]
    assert fractions == sorted(fractions)
    row = store.run(result.run_id)
    assert row.status == "complete" and row.progress == 1.0 and row.stage is None
    # the last bar ends full: one advance per table written (the tables that have rows)
    write = recorder.seen[-1][0]
    tables = store.query(
        "SELECT DISTINCT table_name FROM information_schema.columns "
        "WHERE column_name = 'run_id' AND table_name <> 'runs'"
    )["table_name"]
    rows = {
        t: store.query(f'SELECT count(*) AS n FROM "{t}" WHERE run_id = ?', [result.run_id])["n"][0] for t in tables
    }
    with_rows = [t for t, n in rows.items() if n]
    assert write.total == len(with_rows) > 0 and recorder.advanced.get("writing results") == write.total
