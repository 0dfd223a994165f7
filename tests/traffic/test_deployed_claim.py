"""The deployed claim, watched as a team runs it (issue 46's two end-to-end cases), on one run of
the real engine and model (the demo: the Python language reference, 72 questions and 36
off-topic queries, C/dense), deployed at a t where the evaluation bluffs on 1 of its 36 off-topic
queries and the claim asks for at most 5%:

- **a harmless change of mix**: eight weeks of production traffic drawn from the evaluation's own
  questions, 85% in-domain instead of the evaluation's mix. Each week's review sample (30 + 30) is
  labelled with the truth; ``traffic check --deployment`` passes every complete week, whatever the
  drift tests say (they describe);
- **a harmful shift**: new off-topic questions that the gate answers, so that production's bluff
  rate is three times the claim's alpha. The operator, worried, samples 100 answered lines a week
  (of about 190) and 30 refused ones; labelled, they make the monitor report the bluff claim
  ``breached`` and the check exit 1. (With the default 30 + 30 the monitor stays ``undecided``
  for these eight weeks and says how many labels would decide it: 30 labels of 190 answered
  lines hold 3 or 4 off-topic ones a week, too few to rule out 5%.)

The truth of each line is known here: a text of the off-topic file is off-topic; a question's hits
hold its answer when the evaluation found its answer among the top 4 (the replay ranks the same
text the same way). Every line goes in through the library the API calls (posted with
:func:`evalcore.service.ingest.ingest_traffic`, replayed as the job runner does), the sample is
drawn and labelled with the functions the CLI and the Review screen call.
"""

from __future__ import annotations

import json
import random
import shutil
from datetime import datetime, timedelta

import pandas as pd
import pytest

from evalcore.read.claims import claim_of
from evalcore.read.decisions import save_decision
from evalcore.read.traffic.review import next_lines
from evalcore.read.traffic.stored import evaluation_gate_values
from evalcore.records import Configuration
from evalcore.service.deployments import deploy
from evalcore.service.ingest import ingest_traffic
from evalcore.service.review import label_lines
from evalcore.store import Store
from evalcore.traffic.check import run_deployment_check
from evalcore.traffic.posted import replay_posted
from evalcore.traffic.sampling import draw_samples

DENSE = Configuration("C", "dense")  # the demo run of conftest.demo_store
DAY = timedelta(days=1)
WEEK = 7 * DAY
WEEKS = 8
PER_WEEK = 300


def _post(store: Store, name: str, prefix: str, rows: list[tuple[datetime, str]]) -> None:
    lines = [
        json.dumps({"id": f"{prefix}-{i}", "query": q, "time": at.isoformat(timespec="microseconds") + "Z"})
        for i, (at, q) in enumerate(rows)
    ]
    for lo in range(0, len(lines), 5000):
        results = ingest_traffic(store, name, lines[lo : lo + 5000], "key:test", start=False)
        assert all(r.status == "stored" for r in results), [r.reason for r in results if r.reason][:3]
    assert replay_posted(store, name) is not None


def _label_everything_sampled(store: Store, name: str, truth: dict[str, tuple[str, bool | None]]) -> int:
    """Label every sampled line of the current version with its truth; returns how many."""
    from evalcore.read.traffic.versions import deployed_version

    version = deployed_version(store, name)
    assert version is not None
    done = 0
    while True:
        lines = next_lines(store, name, version.version, None, 200, "rita@example.org")
        if not lines:
            return done
        labels = []
        for line in lines:
            label, held = truth[line.query]
            labels.append({"line_id": line.line_id, "label": label, "hits_hold_answer": held})
        results = label_lines(store, name, labels, "rita@example.org")
        assert all(r.status in ("stored", "unchanged") for r in results), results[:3]
        done += len(lines)


@pytest.fixture(scope="module")
def production(tmp_path_factory, demo_store):
    path = tmp_path_factory.mktemp("claimed") / "evalcore.duckdb"
    shutil.copy(demo_store, path)
    store = Store(path)
    run_id = demo_store.with_suffix(".run_id").read_text()
    claim = claim_of(store, run_id, DENSE)  # alpha 5%, beta 20%
    gate = evaluation_gate_values(store, run_id, DENSE)
    out = gate[gate["domain"] == "out"]["gate_value"].sort_values().to_numpy()
    t = float(out[1])  # one of the 36 off-topic queries is answered at t (about 2.8%, under alpha)
    inside = gate[gate["domain"] == "in"]["gate_value"]
    assert (inside >= t).mean() < claim.max_lost_rate  # and the lost side is under beta too
    decision = save_decision(store, run_id, DENSE, t, "production", "ana@example.org", claim)
    queries = store.query(
        "SELECT q.text, q.domain, r.first_correct_rank FROM queries q JOIN results r USING (run_id, query_id) "
        "WHERE q.run_id = ? AND r.strategy = ? AND r.retriever = ? AND q.valid",
        [run_id, DENSE.strategy, DENSE.retriever],
    )
    truth: dict[str, tuple[str, bool | None]] = {}
    for text, domain, rank in queries.itertuples(index=False):
        held = bool(not pd.isna(rank) and int(rank) <= 4)
        truth[text] = ("off-topic", None) if domain == "out" else ("answerable", held)
    off = [q for q, (label, _) in truth.items() if label == "off-topic"]
    return {"store": store, "run_id": run_id, "t": t, "decision": decision, "claim": claim, "truth": truth, "off": off}


def _weeks(start: datetime, day0: datetime, pick) -> list[tuple[datetime, str]]:
    rows = []
    for week in range(WEEKS):
        lo = max(day0 + week * WEEK, start)
        step = (day0 + (week + 1) * WEEK - lo) / (PER_WEEK + 1)
        rows += [(lo + (i + 1) * step, pick()) for i in range(PER_WEEK)]
    return rows


def test_a_harmless_change_of_mix_passes_every_complete_week(production):
    store, truth, off = production["store"], production["truth"], production["off"]
    inside = [q for q, (label, _) in truth.items() if label == "answerable"]
    rng = random.Random(46)
    deployed = deploy(store, "mix", production["decision"], "ana@example.org")
    day0 = datetime(deployed.deployed_at.year, deployed.deployed_at.month, deployed.deployed_at.day)
    _post(store, "mix", "m", _weeks(deployed.deployed_at + timedelta(seconds=1), day0, lambda: rng.choice(
        inside if rng.random() < 0.85 else off)))  # fmt: skip
    drifted = 0
    for week in range(1, WEEKS + 1):
        now = day0 + week * WEEK + timedelta(hours=1)
        draw_samples(store, "mix", now=now, seed=lambda w=week: 1000 + w)
        _label_everything_sampled(store, "mix", truth)
        report = run_deployment_check(store, "mix", "7d", now=now)
        got = report.as_json()
        assert report.exit_code == 0, (week, got["reasons"])
        assert got["monitor"]["bluff"]["state"] != "breached" and got["monitor"]["lost"]["state"] != "breached"
        assert got["labels"]["answered"] + got["labels"]["refused"] > 0
        drifted += bool(report.drift)
    print(f"mix: {WEEKS} weeks passed, {drifted} of them with drift described; monitor {got['monitor']}")


def test_a_harmful_shift_with_the_sample_labelled_is_reported_breached(production):
    store, truth, claim = production["store"], production["truth"], production["claim"]
    alpha = claim.max_bluff_rate
    # new off-topic questions: in-domain questions turned into ones the corpus cannot answer; the
    # gate answers them (their words are the corpus's), so they bluff
    inside = [q for q, (label, _) in truth.items() if label == "answerable"]
    bluffing = [f"{q.rstrip('?')} on the moon in the year 3000?" for q in inside]
    refused_off = production["off"]
    shifted = dict(truth)
    shifted.update(dict.fromkeys(bluffing, ("off-topic", None)))
    rng = random.Random(47)
    deployed = deploy(store, "shift", production["decision"], "ana@example.org")
    day0 = datetime(deployed.deployed_at.year, deployed.deployed_at.month, deployed.deployed_at.day)

    def pick() -> str:
        if rng.random() < 0.6:
            return rng.choice(inside)
        return rng.choice(bluffing) if rng.random() < 3 * alpha else rng.choice(refused_off)

    _post(store, "shift", "s", _weeks(deployed.deployed_at + timedelta(seconds=1), day0, pick))
    states = []
    for week in range(1, WEEKS + 1):
        now = day0 + week * WEEK + timedelta(hours=1)
        draw_samples(store, "shift", now=now, answered=100, refused=30, seed=lambda w=week: 2000 + w)
        _label_everything_sampled(store, "shift", shifted)
        report = run_deployment_check(store, "shift", "7d", now=now)
        states.append(report.as_json()["monitor"]["bluff"]["state"])
    got = report.as_json()
    print(f"shift: bluff states by week {states}; {got['bluff_rate']}; labels {got['labels']}")
    assert states[-1] == "breached" and report.exit_code == 1
    assert got["bluff_rate"]["lower"] > alpha and got["labels"]["answered"] >= 100 * WEEKS
    assert any("bluff claim is breached" in r for r in got["reasons"])
