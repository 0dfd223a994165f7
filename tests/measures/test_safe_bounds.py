"""A bound is a promise (issue 34): every bound the Threshold screen, ``evalcore threshold`` and
the review pack show must hold at the value shown, counted by brute force over the stored hits.

Two real-engine runs (all-MiniLM-L6-v2, strategy C x dense, bm25, hybrid): the demo (the
Python language reference, 36 off-topic questions) and one of real data with more than 1,000
off-topic questions (the first three paragraphs of five XQuAD articles, their questions in
domain, every question of the other articles off topic; skipped when the data is absent).
At 20 (alpha, beta) pairs, each bound shown is read back from the text and checked against
a count over the raw hits: at a bluff bound ``t <= x`` at most k* off-topic questions keep a
top-4 hit closer than x; just above a lost bound ``t > y`` at most j* answerable ones lose
every correct hit; k* and j* come from scipy's binomial CDF. The shown bound may be no more
than 0.001 away from the exact one (unless the thresholds beside it need more decimals).
"""

from __future__ import annotations

import functools
import html
import json
import math
import re
import shutil

import numpy as np
import pytest
from conftest import DEMO_RETRIEVERS, DEMO_STRATEGIES, XQUAD_ARTICLES, shared_data
from dashboard.test_app import open_page, shown_text
from scipy.stats import binom

from evalcore.cli import main
from evalcore.measures.rounding import threshold_text
from evalcore.store import Store, reading

#: 20 (alpha, beta) pairs: strict to loose, some not on a percent (2.5%, 7.5%, 33.3%)
PAIRS = [
    (0.01, 0.05),
    (0.02, 0.1),
    (0.025, 0.2),
    (0.03, 0.15),
    (0.04, 0.3),
    (0.05, 0.2),
    (0.05, 0.05),
    (0.06, 0.25),
    (0.075, 0.1),
    (0.08, 0.4),
    (0.1, 0.2),
    (0.1, 0.02),
    (0.12, 0.3),
    (0.15, 0.15),
    (0.2, 0.2),
    (0.2, 0.5),
    (0.25, 0.1),
    (0.3, 0.3),
    (0.333, 0.25),
    (0.4, 0.45),
]
CONFIDENCE = 0.95
STRATEGIES = DEMO_STRATEGIES  # the session's demo run (tests/conftest.py): C x dense, bm25, hybrid
RETRIEVERS = list(DEMO_RETRIEVERS)
NUMBER = r"(-?\d+(?:\.\d+)?)"
GATE_WORDS = rf"holds for t <= {NUMBER}; t = {NUMBER} (meets it|no longer meets it)"
VERDICT = rf"The chosen t = {NUMBER} (meets|does NOT meet) the bluff claim \(t <= {NUMBER}\)"


def _run(path, corpus, gt, name, embedder) -> str:
    from evalcore.chunking import parse_strategies
    from evalcore.run.runner import RunRequest, run_evaluation

    request = RunRequest(corpus, gt, parse_strategies(STRATEGIES), RETRIEVERS, name=name)
    return run_evaluation(request, Store(path), embedders=[embedder]).run_id


@pytest.fixture(scope="module")
def demo_run(demo_store):
    """The session's demo run (tests/conftest.py): :data:`STRATEGIES` x :data:`RETRIEVERS`."""
    return demo_store, demo_store.with_suffix(".run_id").read_text()


@pytest.fixture(scope="module")
def many_store(tmp_path_factory, real_embedder):
    """Five XQuAD articles' first three paragraphs; their questions in domain, every question of
    the other 43 articles off topic (more than 1,000)."""
    from evalcore.inputs.corpus import load_corpus
    from evalcore.inputs.groundtruth import load_ground_truth
    from evalcore.inputs.public_sets import import_squad

    source = shared_data("xquad", "xquad.en.json")
    folder = tmp_path_factory.mktemp("bounds-many")
    data = json.loads(source.read_text(encoding="utf-8"))["data"]
    chosen = data[XQUAD_ARTICLES]
    small = folder / "xquad-part.json"
    small.write_text(json.dumps({"data": [dict(a, paragraphs=a["paragraphs"][:3]) for a in chosen]}))
    out = folder / "inputs"
    import_squad(small, out, ())
    others = [a for i, a in enumerate(data) if i not in range(len(data))[XQUAD_ARTICLES]]
    off_topic = [q for a in others for p in a["paragraphs"] for q in p["qas"]]
    assert len(off_topic) >= 1000
    (out / "ood.jsonl").write_text(
        "".join(json.dumps({"id": f"ood-{q['id']}", "query": q["question"], "kind": "near"}) + "\n" for q in off_topic)
    )
    corpus = load_corpus(out / "corpus")
    gt = load_ground_truth(corpus, out / "questions.jsonl", out / "ood.jsonl")
    path = folder / "evalcore.duckdb"
    return path, _run(path, corpus, gt, "xquad-1000", real_embedder)


# --- the brute force ---------------------------------------------------------------------------


class Counted:
    """One configuration's raw hits: per off-topic query the smallest top-4 distance, per
    answerable in-domain query the smallest correct top-4 distance (numpy over the rows)."""

    def __init__(self, path, run_id: str, config: str) -> None:
        strategy, retriever = config.split("/")
        store = Store(path)
        domain = dict(
            store.query("SELECT query_id, domain FROM queries WHERE run_id = ? AND valid", [run_id]).itertuples(
                index=False
            )
        )
        hits = store.query(
            "SELECT query_id, distance, correct FROM hits WHERE run_id = ? AND strategy = ? AND retriever = ? "
            "AND rank <= 4",
            [run_id, strategy, retriever],
        )
        closest: dict[str, float] = {}
        correct: dict[str, float] = {}
        for q, d, c in hits.itertuples(index=False):
            closest[q] = min(closest.get(q, math.inf), float(d))
            if c:
                correct[q] = min(correct.get(q, math.inf), float(d))
        self.ood = np.array([closest.get(q, math.inf) for q, dom in domain.items() if dom == "out"])
        self.ans = np.array([v for q, v in correct.items() if domain.get(q) == "in"])

    def bluffs(self, t: float) -> int:
        return int((self.ood < t).sum())

    def lost(self, t: float) -> int:
        return int((self.ans >= t).sum())

    def k_star(self, alpha: float) -> int | None:
        return _largest_allowed(len(self.ood), alpha)

    def j_star(self, beta: float) -> int | None:
        return _largest_allowed(len(self.ans), beta)


@functools.cache
def _largest_allowed(n: int, rate: float) -> int | None:
    """The largest count k in 0..n with scipy's binomial CDF(k; n, rate) <= 1 - confidence
    (every k's CDF in one call, once per (n, rate)); None when there is none."""
    allowed = np.flatnonzero(binom.cdf(np.arange(n + 1), n, rate) <= 1 - CONFIDENCE)
    return int(allowed[-1]) if allowed.size else None


def check_text(text: str, counted: Counted, alpha: float, beta: float, where: str) -> int:
    """Every bound and threshold the text shows, checked by brute force; how many were checked."""
    k, j = counted.k_star(alpha), counted.j_star(beta)
    seen = 0
    bluff_bounds = re.findall(rf"t <= {NUMBER} keeps bluffs", text)
    bluff_bounds += re.findall(rf"bluffs <= [^ ]+% needs t <= {NUMBER}", text)
    lost_bounds = re.findall(rf"holds for t > {NUMBER}\)", text)
    lost_bounds += re.findall(rf"lost <= [^ ]+% needs t > {NUMBER}", text)
    for low, high in re.findall(rf"holds for {NUMBER} < t <= {NUMBER}", text):
        lost_bounds.append(low)
        bluff_bounds.append(high)
    for t_text, verdict, shown in re.findall(VERDICT, text):
        assert (float(t_text) <= float(shown)) == (verdict == "meets"), (where, t_text, verdict, shown)
        assert (counted.bluffs(float(t_text)) <= k) if verdict == "meets" else True, (where, t_text)
        bluff_bounds.append(shown)
    for shown in bluff_bounds:
        assert k is not None, (where, "a bluff bound shown where none can be made", shown)
        x = float(shown)
        exact = float(np.sort(counted.ood)[k])
        assert counted.bluffs(x) <= k and counted.bluffs(x) <= alpha * len(counted.ood), (where, shown, exact)
        assert x <= exact and exact - x < 0.001 + 1e-12, (where, "not the safe side, or too far", shown, exact)
        seen += 1
    for shown in lost_bounds:
        assert j is not None, (where, "a lost bound shown where none can be made", shown)
        y = float(shown)
        exact = float(np.sort(counted.ans)[::-1][j])
        above = math.nextafter(y, math.inf)  # the strictest t the words allow
        assert counted.lost(above) <= j and counted.lost(above) <= beta * len(counted.ans), (where, shown, exact)
        assert y >= exact and y - exact < 0.001 + 1e-12, (where, "not the safe side, or too far", shown, exact)
        seen += 1
    for shown in re.findall(rf"there \(t = {NUMBER}\)", text) + re.findall(rf"Use the claim's t = {NUMBER}", text):
        t = float(shown)
        assert k is not None and j is not None
        assert counted.bluffs(t) <= k and counted.lost(t) <= j, (where, "the recommended t breaks the claim", shown)
        seen += 1
    return seen


def cli_text(capsys, path, run_id: str, alpha: float, beta: float) -> dict[str, str]:
    """``evalcore threshold RUN`` (every configuration): {configuration: its sentence and table row}."""
    argv = ["--store", str(path), "threshold", run_id, "--max-bluff-rate", repr(alpha), "--max-lost-rate", repr(beta)]
    assert main(argv) == 0
    out = capsys.readouterr().out
    texts: dict[str, str] = {}
    for config in (f"{STRATEGIES}/{r}" for r in RETRIEVERS):
        row = next(line for line in out.splitlines() if line.startswith(config + " "))
        sentence = next(line for line in out.splitlines() if line.startswith(config + ": "))
        texts[config] = sentence + "\n" + _table_words(row)
    return texts


def _table_words(row: str) -> str:
    """The table's bounds in the words of a sentence, so the same checks read them."""
    config, _, _, _, up_to, _, above, feasible, t, *_ = row.split()
    words = []
    if up_to != "-":
        words.append(f"t <= {up_to} keeps bluffs")
    if above != "-":
        words.append(f"holds for t > {above})")
    if feasible == "yes":
        words.append(f"there (t = {t})")
    return "; ".join(words)


def pack_text(path, run_id: str, config: str, alpha: float, beta: float, t: float) -> str:
    """The review pack's summary.md and its sweep figures' captions (where the band is stated)."""
    from evalcore.figures import build
    from evalcore.figures.review import review_summary
    from evalcore.records import Configuration

    store = Store(path)
    chosen = Configuration.parse(config)
    params = (alpha, beta, CONFIDENCE)
    selection = build.Selection(run_id, chosen, t, "set", (), 4, True, params)
    with reading():  # its reads share one connection, as in the Export screen's page view
        figures = list(build.sweep_figures(store, run_id, chosen, t, params))
        return review_summary(store, selection, figures, {})


@pytest.mark.parametrize("which", ["demo", "many"])
def test_every_bound_shown_holds_at_the_value_shown(which, request, capsys, monkeypatch, tmp_path):
    path, run_id = request.getfixturevalue("demo_run" if which == "demo" else "many_store")
    counted = {f"{STRATEGIES}/{r}": Counted(path, run_id, f"{STRATEGIES}/{r}") for r in RETRIEVERS}
    if which == "many":
        assert all(len(c.ood) >= 1000 for c in counted.values())
    copy = tmp_path / "screen.duckdb"
    shutil.copy(path, copy)
    screen_config = f"{STRATEGIES}/hybrid"
    at = open_page(copy, "threshold", monkeypatch, run_id=run_id, config=screen_config, config_run=run_id)
    checked = {"cli": 0, "screen": 0, "pack": 0}
    statuses = set()
    for alpha, beta in PAIRS:
        for config, text in cli_text(capsys, path, run_id, alpha, beta).items():
            checked["cli"] += check_text(text, counted[config], alpha, beta, f"cli {config} {alpha} {beta}")
        at.session_state["claim_alpha"], at.session_state["claim_beta"] = alpha, beta
        at.run()
        assert not at.exception, [e.value for e in at.exception]
        shown = html.unescape(re.sub(r"<[^>]+>", "", shown_text(at))) + "\n" + "\n".join(b.label for b in at.button)
        where = f"screen {screen_config} {alpha} {beta}"
        checked["screen"] += check_text(shown, counted[screen_config], alpha, beta, where)
        t = float(at.session_state["threshold"])
        pack = pack_text(path, run_id, screen_config, alpha, beta, t)
        checked["pack"] += check_text(pack, counted[screen_config], alpha, beta, f"pack {alpha} {beta}")
        statuses.add("bounded" if "keeps bluffs" in pack else "too few")
    assert (statuses == {"bounded", "too few"}) if which == "demo" else ("bounded" in statuses)
    assert min(checked.values()) >= 20, checked  # the checks really read bounds off every text


def test_the_slider_offers_a_threshold_that_meets_the_claim(many_store, monkeypatch, tmp_path):
    """The page opens (no decision saved) on the claim's recommendation and its button offers
    it too: on the slider's grid where the band allows, and both claims hold there by brute
    force; a slider move lands on the grid exactly."""
    path, run_id = many_store
    copy = tmp_path / "screen.duckdb"
    shutil.copy(path, copy)
    config = f"{STRATEGIES}/hybrid"
    counted = Counted(path, run_id, config)
    at = open_page(copy, "threshold", monkeypatch, run_id=run_id, config=config, config_run=run_id)
    t, on_grid = math.nan, 0
    for alpha, beta in PAIRS[:8]:
        at.session_state["claim_alpha"], at.session_state["claim_beta"] = alpha, beta
        at.session_state["threshold_for"] = ""  # nothing set: the page opens on its default again
        at.run()
        assert not at.exception, [e.value for e in at.exception]
        k, j = counted.k_star(alpha), counted.j_star(beta)
        offered = [b for b in at.button if b.label.startswith("Use the claim's t = ")]
        if not offered:
            continue
        slider = at.slider(key="w_threshold")
        t = float(slider.value)
        assert counted.bluffs(t) <= k and counted.lost(t) <= j, (alpha, beta, t)
        assert offered[0].label == f"Use the claim's t = {threshold_text(t)}", offered[0].label
        on_grid += f"{t:.3f}" == threshold_text(t)
        assert slider.proto.format == f"%.{len(threshold_text(t).partition('.')[2])}f"  # never rounded past t
        offered[0].click().run()
        assert float(at.slider(key="w_threshold").value) == t
    assert on_grid >= 3 and not math.isnan(t)
    at.slider(key="w_threshold").set_value(t + 0.0101).run()  # off the grid, as a browser may send
    moved = float(at.session_state["threshold"])
    assert moved == float(f"{t + 0.0101:.3f}") and f"Threshold t = {moved:.4f} " in shown_text(at)


def test_the_gate_words_agree_with_its_verdict_on_a_bit_identical_run(many_store, tmp_path, capsys):
    """The issue's case: a decision saved at the bound as shown passes the gate on the same run;
    one saved at the bound rounded to the nearest (past it) fails; the exact bound passes; and
    each message reads its t against the bound the way the verdict does."""
    from evalcore.read.claims import claim_of
    from evalcore.read.decisions import save_decision
    from evalcore.records import Configuration

    path, run_id = many_store
    copy = tmp_path / "gate.duckdb"
    shutil.copy(path, copy)
    store = Store(copy)
    config = Configuration.parse(f"{STRATEGIES}/hybrid")
    claim = claim_of(store, run_id, config)
    assert claim.bluff_status == "bounded" and claim.bluff_ok_up_to is not None
    exact = claim.bluff_ok_up_to
    shown = float(re.search(rf"t <= {NUMBER}", claim.bluff_region(())).group(1))
    nearest = round(exact, 3)
    cases = [(shown, False), (exact, False)] + ([(nearest, True)] if nearest > exact else [])
    for t, fails in cases:
        save_decision(store, run_id, config, t, f"at {t!r}", claim=claim)
        argv = ["--store", str(copy), "gate", "--baseline", f"{run_id}:{config.label}"]
        code = main([*argv, "--candidate", f"{run_id}:{config.label}", "--threshold-from-decision", "--format", "json"])
        report = json.loads(capsys.readouterr().out)
        contract = report["configurations"][0]["refusal_contract"]
        assert contract["claim_failed"] == fails and code == (1 if fails else 0), (t, contract)
        words = re.search(GATE_WORDS, contract["claim_note"])
        assert words, contract["claim_note"]
        bound, said_t, verdict = float(words.group(1)), float(words.group(2)), words.group(3)
        assert said_t == t and (said_t <= bound) == (verdict == "meets it") == (not fails), contract["claim_note"]
