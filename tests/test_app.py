"""Every dashboard page driven by streamlit.testing.v1.AppTest against the engine-made store.

Each page must render without an exception, and its key figures must equal those computed
here straight from the store (pandas over the stored rows, a brute-force gate).
"""
from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from evalcore import report
from evalcore.store import Store

APP = str(Path(__file__).resolve().parents[1] / "app.py")
PAGES = ("runs", "compare", "distances", "threshold", "query", "index", "export")


def open_page(store_path: Path, page: str, **state) -> AppTest:
    at = AppTest.from_file(APP, default_timeout=120)
    at.session_state["store_path"] = str(store_path)
    for key, value in state.items():
        at.session_state[key] = value
    at.run()
    if page != "runs":
        at.switch_page(f"pages/{page}.py")
        at.run()
    return at


def no_exception(at: AppTest) -> None:
    assert not at.exception, [e.value for e in at.exception]


@pytest.mark.parametrize("page", PAGES)
def test_page_renders_without_exception(engine_store, engine_run_id, page):
    at = open_page(engine_store, page)
    no_exception(at)
    assert at.session_state["run_id"] == engine_run_id  # opens on the newest complete run
    assert at.title and not at.error


def test_runs_page_figures(engine_store, engine_run_id):
    at = open_page(engine_store, "runs")
    store = Store(engine_store)
    queries = store.query("SELECT * FROM queries WHERE run_id = ?", [engine_run_id])
    docs = store.query("SELECT * FROM documents WHERE run_id = ? AND state = 'indexed'", [engine_run_id])
    metrics = {m.label: m.value for m in at.metric}
    assert metrics["Documents"] == str(len(docs))
    assert metrics["In-domain queries"] == str(int(((queries["domain"] == "in") & queries["valid"]).sum()))
    assert metrics["Out-of-domain queries"] == str(int((queries["domain"] == "out").sum()))
    assert engine_run_id in set(at.dataframe[0].value["run_id"])


def test_compare_page_pair_matches_results(engine_store, engine_run_id):
    at = open_page(engine_store, "compare")
    no_exception(at)
    first, second = at.session_state["pair_first"], at.session_state["pair_second"]
    k = at.session_state["hit_k"]
    store = Store(engine_store)
    results = store.query("SELECT r.* FROM results r JOIN queries q USING (run_id, query_id) "
                          "WHERE r.run_id = ? AND r.domain = 'in' AND q.valid", [engine_run_id])
    results["config"] = results["strategy"] + "/" + results["retriever"]
    hit = results.assign(hit=results["first_correct_rank"].fillna(99) <= k).pivot(
        index="query_id", columns="config", values="hit")
    wins = int((hit[first] & ~hit[second]).sum())
    losses = int((~hit[first] & hit[second]).sum())
    text = " ".join(m.value for m in at.markdown)
    assert f"+{wins} won / -{losses} lost" in text
    assert "Holm-adjusted" in text or "no pair" in text
    # choose another pair with the pickers: the listed queries follow
    at.selectbox(key="w_pair_second").select(at.selectbox(key="w_pair_second").options[-1]).run()
    no_exception(at)


def test_threshold_page_table_matches_brute_force(engine_store, engine_run_id, tmp_path):
    path = tmp_path / "copy.duckdb"
    shutil.copy(engine_store, path)
    at = open_page(path, "threshold")
    no_exception(at)
    t = at.session_state["threshold"]
    config = at.session_state["config"]
    strategy, retriever = report.parse_config(config)
    hits = Store(path).query(
        "SELECT h.*, q.domain AS qd FROM hits h JOIN queries q USING (run_id, query_id) "
        "WHERE h.run_id = ? AND strategy = ? AND retriever = ? AND rank <= 4 AND q.valid",
        [engine_run_id, strategy, retriever])
    kept = hits[hits["distance"] < t]
    bluffs = kept[kept["qd"] == "out"]["query_id"].nunique()
    answered_in = kept[kept["qd"] == "in"]["query_id"].nunique()
    in_total = hits[hits["qd"] == "in"]["query_id"].nunique()
    table = at.dataframe[0].value.set_index("outcome")["queries"]
    assert table.iloc[0] == bluffs
    assert table.iloc[2] == in_total - answered_in
    # move the slider, then save the decision: it is listed
    at.slider(key="w_threshold").set_value(round(t + 0.01, 3)).run()
    no_exception(at)
    at.text_area(key="decision_note").input("for the review")
    at.button[-1].click().run()  # the form's submit button: the note is sent with it
    no_exception(at)
    saved = Store(path).query("SELECT * FROM decisions")
    assert len(saved) == 1 and saved["note"].iloc[0] == "for the review"
    assert saved["threshold"].iloc[0] == pytest.approx(round(t + 0.01, 3))


def test_distances_page_marks(engine_store, engine_run_id):
    at = open_page(engine_store, "distances")
    no_exception(at)
    strategy, retriever = report.parse_config(at.session_state["config"])
    res = Store(engine_store).query("SELECT * FROM results WHERE run_id = ? AND strategy = ? AND retriever = ?",
                                    [engine_run_id, strategy, retriever])
    metrics = {m.label: m.value for m in at.metric}
    assert metrics["Worst in-domain answer"] == f"{res[res['domain'] == 'in']['answer_distance'].max():.3f}"
    assert metrics["Best out-of-domain top hit"] == f"{res[res['domain'] == 'out']['top_distance'].min():.3f}"


def test_query_page_ranks(engine_store, engine_run_id):
    store = Store(engine_store)
    qid = store.query("SELECT query_id FROM queries WHERE run_id = ? AND domain = 'in' AND valid "
                      "ORDER BY query_id LIMIT 1", [engine_run_id]).iloc[0, 0]
    at = open_page(engine_store, "query", query_id=qid)
    no_exception(at)
    assert at.session_state["query_id"] == qid
    res = store.query("SELECT * FROM results WHERE run_id = ? AND query_id = ?", [engine_run_id, qid])
    labels = [e.label for e in at.expander]
    for row in res.itertuples():
        label = next(x for x in labels if x.startswith(f"{row.strategy}/{row.retriever} "))
        if row.destroyed:
            assert "destroyed" in label
        elif row.first_correct_rank == row.first_correct_rank and row.first_correct_rank is not None:
            assert f"first correct rank: {int(row.first_correct_rank)} " in label
    at.text_input(key="w_query_search").input("zzzz-no-such-query").run()
    no_exception(at)
    assert any("No query matches" in i.value for i in at.info)


def test_index_page_matches_strategies(engine_store, engine_run_id):
    at = open_page(engine_store, "index")
    no_exception(at)
    chunks = Store(engine_store).query("SELECT strategy, count(*) AS n FROM chunks WHERE run_id = ? GROUP BY strategy",
                                       [engine_run_id]).set_index("strategy")["n"]
    shown = at.dataframe[0].value.set_index("strategy")["chunks"]
    assert shown.to_dict() == chunks.reindex(shown.index).to_dict()


def test_failed_run_and_empty_store_show_messages(engine_store, tmp_path):
    path = tmp_path / "copy.duckdb"
    shutil.copy(engine_store, path)
    store = Store(path)
    store.start_run({"run_id": "zz-failed", "name": "broken"})
    store.finish_run("zz-failed", "failed", "corpus folder not found")
    for page in PAGES:
        at = open_page(path, page, run_id="zz-failed")
        no_exception(at)
        shown = " ".join(e.value for e in at.error)
        assert "corpus folder not found" in shown, page
    empty = tmp_path / "empty.duckdb"
    at = open_page(empty, "compare")
    no_exception(at)
    assert any("python -m evalcore demo" in w.value for w in at.warning)


def test_empty_store_offers_to_start_the_demo_in_the_background(tmp_path):
    import time

    from evalcore import jobs

    empty = tmp_path / "empty.duckdb"
    at = open_page(empty, "runs")
    no_exception(at)
    button = next(b for b in at.button if b.label == "Start the demo run")
    button.click().run()
    no_exception(at)
    store = Store(empty)
    submitted = jobs.jobs_overview(store)
    try:
        assert submitted["name"].tolist() == ["demo"]
        assert any("under way" in i.value for i in at.info)
    finally:  # do not leave a four-minute demo running behind the test
        job_id = submitted["job_id"].iloc[0]
        jobs.cancel(store, job_id)
        deadline = time.monotonic() + 120
        while jobs.job(store, job_id)["status"] in ("queued", "running") and time.monotonic() < deadline:
            time.sleep(0.5)
    assert jobs.job(store, job_id)["status"] == "cancelled"
