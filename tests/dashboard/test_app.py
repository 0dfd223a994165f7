"""Every dashboard page driven by streamlit.testing.v1.AppTest against the engine-made stores.

Each page must render without an exception or an echoed object, and its key figures must
equal those computed here straight from the store (pandas over the stored rows, a
brute-force gate). The dashboard shows the operator's store ($EVALCORE_STORE), so each test
points that variable at its store.
"""

from __future__ import annotations

import shutil
import socket
import subprocess
import sys
from pathlib import Path

import duckdb
import pytest
from conftest import ROOT
from streamlit.testing.v1 import AppTest

from evalcore.measures.stats import p_relation
from evalcore.read import compare, decisions, runs
from evalcore.read.comparison import statements
from evalcore.records import Configuration
from evalcore.store import Store, connection

APP = str(ROOT / "app.py")
PAGES = ("runs", "new_run", "compare", "distances", "threshold", "query", "traffic", "index", "export", "methods")


def open_page(operator_store: Path, page: str, monkeypatch, **state) -> AppTest:
    monkeypatch.setenv("EVALCORE_STORE", str(operator_store))
    at = AppTest.from_file(APP, default_timeout=180)
    for key, value in state.items():
        at.session_state[key] = value
    at.run()
    if page != "runs":
        at.switch_page(f"evalcore_app/screens/{page}.py")
        at.run()
    return at


def no_exception(at: AppTest) -> None:
    assert not at.exception, [e.value for e in at.exception]


def shown_text(at: AppTest) -> str:
    parts = [e.value for kind in (at.markdown, at.caption, at.info, at.warning, at.success, at.error) for e in kind]
    parts += [e.proto.body for e in at.get("html")]
    return "\n".join(str(p) for p in parts)


@pytest.fixture()
def copy(engine_store, tmp_path) -> Path:
    path = tmp_path / "copy.duckdb"
    shutil.copy(engine_store, path)
    return path


@pytest.mark.parametrize("page", PAGES)
def test_page_renders_without_exception_or_echo(engine_store, engine_run_id, page, monkeypatch):
    at = open_page(engine_store, page, monkeypatch)
    no_exception(at)
    assert at.session_state["run_id"] == engine_run_id  # opens on the newest complete run
    assert at.title and not at.error
    assert not at.get("doc_string") and "DeltaGenerator" not in shown_text(at)  # no Streamlit magic echo


def test_streamlit_magic_is_off(monkeypatch):
    monkeypatch.chdir(ROOT)  # the app's .streamlit/config.toml: runner.magicEnabled = false
    at = AppTest.from_string(
        "import streamlit as st\nst.title('x')\n'echoed text'\nst.dataframe if True else st.write\n"
    )
    at.run()
    assert not at.markdown and not at.get("doc_string")


def test_runs_page_figures_and_no_missing_text(engine_store, engine_run_id, monkeypatch):
    at = open_page(engine_store, "runs", monkeypatch)
    store = Store(engine_store)
    queries = store.query("SELECT * FROM queries WHERE run_id = ?", [engine_run_id])
    docs = store.query("SELECT * FROM documents WHERE run_id = ? AND state = 'indexed'", [engine_run_id])
    metrics = {m.label: m.value for m in at.metric}
    assert metrics["Documents"] == str(len(docs))
    assert metrics["In-domain queries"] == str(int(((queries["domain"] == "in") & queries["valid"]).sum()))
    assert metrics["Out-of-domain queries"] == str(int((queries["domain"] == "out").sum()))
    table = at.dataframe[0].value
    assert engine_run_id in set(table["run_id"])
    assert table.loc[table["run_id"] == engine_run_id, "state"].iloc[0] == "complete"
    text = table.drop(columns=["created_at", "duration_s"]).astype(str)
    assert not text.isin(["None", "nan", "NaN"]).any().any()


def test_compare_page_pair_and_p_match_the_matrix(engine_store, engine_run_id, monkeypatch):
    at = open_page(engine_store, "compare", monkeypatch)
    no_exception(at)
    first, second = at.session_state["pair_first"], at.session_state["pair_second"]
    k = at.session_state["hit_k"]
    store = Store(engine_store)
    results = store.query(
        "SELECT r.* FROM results r JOIN queries q USING (run_id, query_id) "
        "WHERE r.run_id = ? AND r.domain = 'in' AND q.valid",
        [engine_run_id],
    )
    results["config"] = results["strategy"] + "/" + results["retriever"]
    hit = results.assign(hit=results["first_correct_rank"].fillna(99) <= k).pivot(
        index="query_id", columns="config", values="hit"
    )
    wins = int((hit[first] & ~hit[second]).sum())
    losses = int((~hit[first] & hit[second]).sum())
    detail = next(h.proto.body for h in at.get("html") if "pair-detail" in h.proto.body)
    assert f"+{wins} won / -{losses} lost" in detail
    sides = runs.run_configurations(store, engine_run_id)
    chosen = tuple(s for s in sides if f"{s.run_id}|{s.configuration.label}" in at.session_state["matrix_configs"])
    cell = compare.compare(store, chosen, k, True).cell(first, second)
    assert f"Holm-adjusted p {p_relation(cell['p_text'])}" in detail  # the detail shows the cell's p first
    assert "Best at hit@4" in shown_text(at)
    at.selectbox(key="w_pair_second").select(at.selectbox(key="w_pair_second").options[-1]).run()
    no_exception(at)


def test_threshold_page_opens_on_the_best_configuration_and_matches_brute_force(copy, engine_run_id, monkeypatch):
    at = open_page(copy, "threshold", monkeypatch)
    no_exception(at)
    store = Store(copy)
    sides = tuple(runs.run_configurations(store, engine_run_id))
    best = statements.best(compare.compare(store, sides, 4, True))
    assert at.session_state["config"] == best.label
    assert "best configuration by recall@4" in shown_text(at)
    t = at.session_state["threshold"]
    config = Configuration.parse(at.session_state["config"])
    hits = store.query(
        "SELECT h.*, q.domain AS qd FROM hits h JOIN queries q USING (run_id, query_id) "
        "WHERE h.run_id = ? AND strategy = ? AND retriever = ? AND rank <= 4 AND q.valid",
        [engine_run_id, config.strategy, config.retriever],
    )
    kept = hits[hits["distance"] < t]
    bluffs = kept[kept["qd"] == "out"]["query_id"].nunique()
    answered_in = kept[kept["qd"] == "in"]["query_id"].nunique()
    in_total = hits[hits["qd"] == "in"]["query_id"].nunique()
    table = at.dataframe[0].value.set_index("outcome")["queries"]
    assert table.iloc[0] == bluffs
    assert table.iloc[2] == in_total - answered_in
    sentence = next(h.proto.body for h in at.get("html") if "sentence-at-t" in h.proto.body)
    assert f"{in_total - answered_in})" in sentence and "off-topic questions" in sentence


@pytest.mark.slow
def test_decision_is_one_threshold_restored_after_a_reload(copy, engine_run_id, monkeypatch):
    """Move the slider on another configuration, save; a new session (a reload) opens on that
    configuration and threshold on Threshold, Query and Export."""
    at = open_page(copy, "threshold", monkeypatch)
    configs = [c.label for c in runs.configurations(Store(copy), engine_run_id)]
    other = next(c for c in configs if c != at.session_state["config"])
    at.selectbox(key="w_config").select(other).run()
    no_exception(at)
    t = round(at.session_state["threshold"] + 0.013, 3)
    at.slider(key="w_threshold").set_value(t).run()
    no_exception(at)
    assert "set on the Threshold screen" in at.session_state["threshold_source"]
    at.switch_page("evalcore_app/screens/query.py").run()  # the same value on Query, in the same session
    assert f"Threshold t = {t:.4f}" in shown_text(at)
    at.switch_page("evalcore_app/screens/threshold.py").run()
    at.text_area(key="decision_note").input("for the review")
    for box in at.checkbox:  # a t outside the claim is saved once the PM says so (the Threshold screen asks)
        if str(box.key).startswith("save_outside_"):
            box.check()
    save = next(b for b in at.button if b.label.startswith("Save t ="))  # the decision form's submit button
    save.click().run()  # the note is sent with it
    no_exception(at)
    saved = decisions.latest_decision(Store(copy), engine_run_id)
    assert (saved.configuration.label, saved.threshold, saved.note) == (other, pytest.approx(t), "for the review")
    for page in ("threshold", "query", "export"):
        fresh = open_page(copy, page, monkeypatch)  # a new session, as after a reload
        no_exception(fresh)
        assert fresh.session_state["config"] == other, page
        assert fresh.session_state["threshold"] == pytest.approx(t), page
        assert f"Threshold t = {t:.4f}" in shown_text(fresh) and "saved decision" in shown_text(fresh), page


def test_distances_page_marks_and_n(engine_store, engine_run_id, monkeypatch):
    at = open_page(engine_store, "distances", monkeypatch)
    no_exception(at)
    config = Configuration.parse(at.session_state["config"])
    res = Store(engine_store).query(
        "SELECT * FROM results WHERE run_id = ? AND strategy = ? AND retriever = ?",
        [engine_run_id, config.strategy, config.retriever],
    )
    metrics = {m.label: m.value for m in at.metric}
    assert metrics["Worst in-domain answer"] == f"{res[res['domain'] == 'in']['answer_distance'].max():.3f}"
    assert metrics["Best out-of-domain top hit"] == f"{res[res['domain'] == 'out']['top_distance'].min():.3f}"
    assert f"{int((res['domain'] == 'in').sum())} in-domain queries" in shown_text(at)


@pytest.mark.slow
def test_query_page_every_kind_of_query(engine_store, engine_run_id, monkeypatch):
    store = Store(engine_store)
    results = store.query(
        "SELECT r.*, q.kind FROM results r JOIN queries q USING (run_id, query_id) WHERE r.run_id = ? AND q.valid",
        [engine_run_id],
    )
    picks = {
        "in-domain": results[(results["domain"] == "in") & ~results["destroyed"]]["query_id"].iloc[0],
        "destroyed": results[results["destroyed"]]["query_id"].iloc[0],
        "near": results[results["kind"] == "near"]["query_id"].iloc[0],
        "far": results[results["kind"] == "far"]["query_id"].iloc[0],
    }
    for what, qid in picks.items():
        at = open_page(engine_store, "query", monkeypatch, query_id=qid)
        no_exception(at)
        assert at.session_state["query_id"] == qid
        labels = [e.label for e in at.expander]
        mine = results[results["query_id"] == qid]
        assert len(labels) == len(mine), what
        for row in mine.itertuples():
            label = next(x for x in labels if x.startswith(f"{row.strategy}/{row.retriever} "))
            assert "sources)" not in label and "(s)" not in label
            if row.domain == "out":
                assert "out\\-of\\-domain" in label or "out-of-domain" in label
                assert "top 20" not in label and "rank" not in label
            elif row.destroyed:
                assert "destroyed" in label
            else:
                assert f"first correct rank {int(row.first_correct_rank)}" in label
    at.text_input(key="w_query_search").input("zzzz-no-such-query").run()
    no_exception(at)
    assert any("No query matches" in i.value for i in at.info)


@pytest.mark.slow
def test_user_text_is_never_markup(engine_store, engine_run_id, monkeypatch):
    """The fixture's e417-ticket variant holds an image, an <img> tag and bold Markdown."""
    at = open_page(engine_store, "query", monkeypatch, query_id="e417-ticket")
    no_exception(at)
    meta = next(h.proto.body for h in at.get("html") if "query-meta" in h.proto.body)
    assert "&lt;img src=x onerror=alert(1)&gt;" in meta and "<img" not in meta
    assert "![tracker](http://127.0.0.1:9/pixel.png)" in meta  # as text, inside an escaped HTML block
    for element in (*at.markdown, *at.caption):
        assert "![tracker](" not in element.value and "<img" not in element.value


def test_index_page_matches_strategies(engine_store, engine_run_id, monkeypatch):
    at = open_page(engine_store, "index", monkeypatch)
    no_exception(at)
    chunks = (
        Store(engine_store)
        .query("SELECT strategy, count(*) AS n FROM chunks WHERE run_id = ? GROUP BY strategy", [engine_run_id])
        .set_index("strategy")["n"]
    )
    shown = at.dataframe[0].value.set_index("strategy")["chunks"]
    assert shown.to_dict() == chunks.reindex(shown.index).to_dict()


@pytest.mark.slow
def test_failed_run_and_empty_store_show_messages(copy, tmp_path, monkeypatch):
    store = Store(copy)
    store.start_run({"run_id": "zz-failed", "name": "broken"})
    store.finish_run("zz-failed", "failed", "corpus folder not found")
    for page in PAGES:
        if page in ("new_run", "methods"):
            continue
        at = open_page(copy, page, monkeypatch, run_id="zz-failed")
        no_exception(at)
        shown = " ".join(e.value for e in at.error)
        assert "corpus folder not found" in shown, page
    empty = tmp_path / "empty" / "evalcore.duckdb"
    at = open_page(empty, "compare", monkeypatch)
    no_exception(at)
    assert any("python -m evalcore demo" in w.value for w in at.warning)
    for page in PAGES:  # looking at the dashboard never creates the store
        no_exception(open_page(empty, page, monkeypatch))
    assert not empty.exists()


def test_store_is_the_operators_never_a_typed_path(copy, tmp_path, monkeypatch):
    """No text box: a store path put in the session is not opened, let alone created; the
    picker offers the operator's store and the other existing stores beside it."""
    typed = tmp_path / "elsewhere" / "typed.duckdb"
    at = open_page(copy, "runs", monkeypatch, store_path=str(typed))
    no_exception(at)
    assert not at.text_input and at.session_state["store_path"] == str(copy)
    assert not typed.exists() and not typed.parent.exists()
    sibling = copy.with_name("other.duckdb")
    shutil.copy(copy, sibling)
    at = open_page(copy, "runs", monkeypatch)
    assert at.selectbox(key="w_store_path").options == [copy.name, sibling.name]  # existing files only
    at.selectbox(key="w_store_path").select(str(sibling)).run()
    no_exception(at)
    assert at.session_state["store_path"] == str(sibling)


def test_empty_store_offers_to_start_the_demo_in_the_background(tmp_path, monkeypatch):
    import time

    from evalcore import jobs

    empty = tmp_path / "empty.duckdb"
    at = open_page(empty, "runs", monkeypatch)
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
        jobs.cancel_job(store, job_id)
        deadline = time.monotonic() + 120
        while jobs.job(store, job_id)["status"] in ("queued", "running") and time.monotonic() < deadline:
            time.sleep(0.5)
    assert jobs.job(store, job_id)["status"] == "cancelled"


def _charts(at: AppTest) -> list[dict]:
    """Every chart drawn: its spec, theme, and its datasets as records (Streamlit ships them as Arrow)."""
    import json

    import pyarrow as pa

    out = []
    for element in at.get("vega_lite_chart"):
        rows = [
            r for d in element.proto.datasets for r in pa.ipc.open_stream(d.data.data).read_pandas().to_dict("records")
        ]
        out.append(json.loads(element.proto.spec) | {"_theme": element.proto.theme, "_rows": rows})
    return out


def _matrix_cells(spec: dict) -> set[tuple[str, str, str]]:
    return {(r["row"], r["column"], r["p_text"]) for r in spec["_rows"] if isinstance(r.get("p_text"), str)}


@pytest.mark.slow
def test_export_equals_the_compare_screen(engine_store, engine_run_id, monkeypatch):
    """The same configurations, the same Holm family, the same p in every cell; the retriever
    colours are the export's (Streamlit's theme off, fixed colours)."""
    from evalcore.figures.charts import RETRIEVER_COLOURS

    at = open_page(engine_store, "compare", monkeypatch)
    keys = at.multiselect(key="w_matrix_configs").options
    chosen = list(at.session_state["matrix_configs"])[:3]
    at.multiselect(key="w_matrix_configs").set_value(chosen).run()
    no_exception(at)
    on_compare = [c for c in _charts(at) if _matrix_cells(c)]
    assert len(on_compare) == 1 and len(_matrix_cells(on_compare[0])) == 6  # 3 configurations, 6 ordered pairs
    for chart in _charts(at):
        assert chart["_theme"] == ""  # drawn as exported
        for layer in [chart, *chart.get("layer", []), *chart.get("spec", {}).get("layer", [])]:
            colour = layer.get("encoding", {}).get("color", {})
            if colour.get("field") == "retriever":
                scale = colour["scale"]
                assert scale["range"] == [RETRIEVER_COLOURS[r] for r in scale["domain"]]
    at.switch_page("evalcore_app/screens/export.py").run()
    no_exception(at)
    on_export = [c for c in _charts(at) if _matrix_cells(c)]
    assert len(on_export) == 1
    assert _matrix_cells(on_export[0]) == _matrix_cells(on_compare[0])
    assert len(keys) > 3


def test_the_run_list_is_read_again_only_when_the_store_changed_or_a_run_died(copy, engine_run_id, monkeypatch):
    """The sidebar's run list is read once per change of the store: a rerun (a click) with the
    store unchanged reuses it. A run whose process is gone shows failed at the next rerun
    although nothing wrote to the store since the last read (the look for dead runs comes
    before the kept list)."""
    monkeypatch.setattr(connection, "REAP_EVERY", 0.0)  # look for dead runs at every rerun
    reads = []
    real = runs.runs_overview

    def counted(store):
        reads.append(store.path)
        return real(store)

    monkeypatch.setattr(runs, "runs_overview", counted)
    alive = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"])
    try:
        con = duckdb.connect(str(copy))
        con.execute(
            "UPDATE runs SET status = 'running', host = ?, pid = ? WHERE run_id = ?",
            [socket.gethostname(), alive.pid, engine_run_id],
        )
        con.close()
        at = open_page(copy, "runs", monkeypatch)
        no_exception(at)
        label = at.selectbox(key="w_run_id").options[0]
        assert label.endswith(f"{engine_run_id} (running)"), label
        before = len(reads)
        at.run()
        assert len(reads) == before  # unchanged store: the list is not read again
        assert at.selectbox(key="w_run_id").options[0] == label
    finally:
        alive.kill()
        alive.wait()
    at.run()  # the process is gone; nothing was written since the last read
    no_exception(at)
    assert len(reads) > before
    assert at.selectbox(key="w_run_id").options[0].endswith(f"{engine_run_id} (failed)")
