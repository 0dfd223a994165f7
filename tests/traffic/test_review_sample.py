"""The review sample by design (issue 46, "A review sample by design"): each ended review period
of a deployment version gets one sampling frame, its lines split by the gate at the deployed t
into answered and refused, each stratum in a seeded order whose first n lines are the sample;
more lines continue the order; a drifted period takes twice the lines; only the labelled prefix
counts.

The store (tests/traffic/review_store.py) is real: a run made by the CLI, lines posted and
replayed as production's are. Every count is checked against a computation made here from the
posted rows and the stored hits, the order against an independent SplitMix64 written here in
plain Python integers, and uniformity with scipy over many seeds.
"""

from __future__ import annotations

import json
import math
from itertools import combinations

import numpy as np
import pytest
from scipy.stats import binomtest, chisquare

from evalcore.cli import main
from evalcore.embedding.embedder import text_hash
from evalcore.read.traffic.periods import periods
from evalcore.read.traffic.review import agreement, next_lines, version_samples
from evalcore.records import Configuration
from evalcore.service.review import label_lines
from evalcore.store import Store
from evalcore.traffic.sample_order import first_in_order, offered_second
from evalcore.traffic.sampling import draw_samples
from traffic.review_store import DAY, WEEK, build, gates, post

MASK = (1 << 64) - 1


def _mix(x: int) -> int:
    """SplitMix64's finaliser, in Python integers (an implementation apart from the library's)."""
    x = (x + 0x9E3779B97F4A7C15) & MASK
    x = ((x ^ (x >> 30)) * 0xBF58476D1CE4E5B9) & MASK
    x = ((x ^ (x >> 27)) * 0x94D049BB133111EB) & MASK
    return x ^ (x >> 31)


def _key(seed: int, line_key: int, occurrence: int) -> int:
    a = _mix((line_key & MASK) ^ seed)
    return _mix(a ^ _mix((occurrence & MASK) ^ 0x9E3779B97F4A7C15))


@pytest.fixture(scope="module")
def review(tmp_path_factory):
    made = build(tmp_path_factory, "review-sample")
    made["now"] = made["day0"] + 3 * WEEK + DAY / 2  # weeks 1-3 have ended, week 4 has not
    made["drawn"] = draw_samples(
        Store(made["path"]), "production", now=made["now"], seed=iter(range(101, 200)).__next__
    )
    return made


def _frames(store: Store, name: str = "production"):
    return store.query(
        "SELECT * FROM review_frames WHERE deployment = ? ORDER BY version, period_start", [name]
    ).to_dict("records")


def _sample(store: Store, frame_id: str):
    return store.query(
        "SELECT s.stratum, s.rank, s.line_key, s.occurrence, s.second, q.asked_at, q.text_hash FROM review_sample s "
        "JOIN traffic_queries q USING (run_id, strategy, retriever, deployment, line_key, occurrence) "
        "WHERE s.frame_id = ? ORDER BY s.stratum, s.rank",
        [frame_id],
    )


def _window(review, k: int):
    lo = max(review["day0"] + k * WEEK, review["deployed_at"])
    return lo, review["day0"] + (k + 1) * WEEK


def test_each_ended_period_gets_one_frame_with_its_strata_counted_from_the_stored_hits(review):
    store = Store(review["path"])
    got = review["drawn"].to_json()
    assert [p["status"] for p in got["periods"]] == ["drawn", "drawn", "drawn", "not-ended"]
    gate = gates(store, review["run_id"])
    frames = _frames(store)
    assert [f["period_index"] for f in frames] == [1, 2, 3]
    for k, f in enumerate(frames):
        lo, hi = _window(review, k)
        refused = [not gate.get(text_hash(q), math.nan) < review["t"] for at, q in review["rows"] if lo <= at < hi]
        assert (f["answered_lines"], f["refused_lines"]) == (refused.count(False), refused.count(True))
        assert f["threshold"] == review["t"] and (f["period_start"], f["period_end"]) == (
            review["day0"] + k * WEEK,
            hi,
        )
        rows = _sample(store, f["frame_id"])
        for stratum, n, size in (
            ("answered", f["answered_lines"], f["answered_size"]),
            ("refused", f["refused_lines"], f["refused_size"]),
        ):
            mine = rows[rows["stratum"] == stratum]
            assert list(mine["rank"]) == list(range(1, min(size, n) + 1))
            for at, h in zip(mine["asked_at"], mine["text_hash"], strict=True):
                assert lo <= at.to_pydatetime() < hi
                assert (not gate.get(h, math.nan) < review["t"]) == (stratum == "refused")
    assert frames[0]["answered_lines"] > 30 and frames[0]["refused_lines"] > 30  # both strata are really sampled


def test_the_sample_is_the_first_n_of_an_independent_splitmix_order(review):
    store = Store(review["path"])
    for f in _frames(store):
        lines = store.query(
            "SELECT q.line_key, q.occurrence, t.gate_value FROM traffic_queries q JOIN traffic_texts t "
            "USING (run_id, strategy, retriever, text_hash) WHERE q.deployment = 'production' "
            "AND q.asked_at >= ? AND q.asked_at < ?",
            [f["lines_from"], f["period_end"]],
        )
        rows = _sample(store, f["frame_id"])
        for stratum, size in (("answered", f["answered_size"]), ("refused", f["refused_size"])):
            mine = lines[(lines["gate_value"] < f["threshold"]) == (stratum == "answered")]
            order = sorted(
                (_key(int(f["seed"]), int(k), int(o)), int(k), int(o))
                for k, o in zip(mine["line_key"], mine["occurrence"], strict=True)
            )
            expected = [(k, o) for _, k, o in order[:size]]
            got = rows[rows["stratum"] == stratum]
            assert list(zip(got["line_key"].astype(int), got["occurrence"].astype(int), strict=True)) == expected
            assert list(got["second"]) == list(offered_second(int(f["seed"]), stratum, np.array(got["rank"]), 0.1))


def test_drawing_again_keeps_the_frames_and_more_lines_continue_the_same_order(review):
    store = Store(review["path"])
    before = {f["frame_id"]: _sample(store, f["frame_id"]) for f in _frames(store)}
    again = draw_samples(store, "production", now=review["now"]).to_json()
    assert [p["status"] for p in again["periods"]] == ["kept", "kept", "kept", "not-ended"]
    smaller = draw_samples(store, "production", answered="5", now=review["now"]).to_json()
    assert [p["status"] for p in smaller["periods"]][:3] == ["kept"] * 3  # a size only grows
    first = _frames(store)[0]
    assert not isinstance(first["reason"], str)  # not drifted: 30 + 30
    more = draw_samples(
        store, "production", answered="40", version=1, period=f"{first['period_start']:%Y-%m-%d}", now=review["now"]
    )
    assert [(p.status, p.added) for p in more.periods] == [("extended", 40 - 30)]
    after = _sample(store, first["frame_id"])
    kept = before[first["frame_id"]]
    answered = after[after["stratum"] == "answered"]
    assert list(answered["rank"]) == list(range(1, 41))
    head = answered[answered["rank"] <= 30].reset_index(drop=True)
    assert head[["line_key", "occurrence"]].equals(
        kept[kept["stratum"] == "answered"][["line_key", "occurrence"]].reset_index(drop=True)
    )
    # the 40 are the first 40 of the frame's order: the same as a frame drawn with 40 at once
    lines = store.query(
        "SELECT q.line_key, q.occurrence FROM traffic_queries q "
        "JOIN traffic_texts t USING (run_id, strategy, retriever, text_hash) WHERE q.deployment = 'production' "
        "AND q.asked_at >= ? AND q.asked_at < ? AND t.gate_value < ?",
        [first["lines_from"], first["period_end"], first["threshold"]],
    )
    order = sorted((_key(int(first["seed"]), int(k), int(o)), int(k), int(o)) for k, o in lines.itertuples(index=False))
    assert list(zip(answered["line_key"].astype(int), answered["occurrence"].astype(int), strict=True)) == [
        (k, o) for _, k, o in order[:40]
    ]
    for other, rows in before.items():  # the other frames are as they were
        if other != first["frame_id"]:
            assert _sample(store, other).equals(rows)
    line = next(
        x for x in next_lines(store, "production", 1, first["period_start"], 100, None) if x.stratum == "answered"
    )
    assert line.inclusion_probability == 40 / first["answered_lines"]


def test_a_period_whose_drift_test_moved_gets_twice_the_lines_and_says_why(review):
    store = Store(review["path"])
    flags = periods(
        store, review["run_id"], Configuration("E", "dense"), WEEK, review["t"], deployment="production",
        since=review["deployed_at"], until=review["now"],
    )  # fmt: skip
    drifted = {row["start"]: bool(row["drifted"]) for row in flags.to_dict("records")}
    frames = _frames(store)
    assert {drifted[f["period_start"]] for f in frames} == {True, False}  # the data holds both cases
    for f in frames:
        factor = 2 if drifted[f["period_start"]] else 1
        assert (f["answered_size"], f["refused_size"]) == (
            max(30, f["answered_asked"]) * factor,
            max(30, f["refused_asked"]) * factor,
        )
        reason = f["reason"] if isinstance(f["reason"], str) else ""
        assert reason.startswith("drift: The period from") == drifted[f["period_start"]]
        assert ("Holm-adjusted p" in reason) == drifted[f["period_start"]]


def test_lines_stored_after_the_draw_are_outside_the_frame_and_counted_late(review):
    store = Store(review["path"])
    first = _frames(store)[0]
    before = version_samples(store, "production", 1, now=review["now"])[0]
    lo, hi = _window(review, 0)
    texts = [q for at, q in review["rows"] if lo <= at < hi][:7]
    post(store, "production", "late", [(lo + DAY + i * DAY / 10, q) for i, q in enumerate(texts)])
    after = version_samples(store, "production", 1, now=review["now"])[0]
    assert after.late_lines == before.late_lines + 7
    assert (after.answered.lines, after.refused.lines) == (first["answered_lines"], first["refused_lines"])
    assert after.answered.sampled == before.answered.sampled and after.refused.sampled == before.refused.sampled


def test_only_the_labelled_prefix_counts_and_second_labels_never_do(review):
    store = Store(review["path"])
    frame = _frames(store)[1]
    ids = {(x.stratum, x.rank): x.line_id for x in next_lines(store, "production", 1, frame["period_start"], 100, None)}
    give = [
        {"line_id": ids[("refused", 1)], "label": "off-topic"},
        {"line_id": ids[("refused", 2)], "label": "answerable", "hits_hold_answer": True},
        {"line_id": ids[("refused", 4)], "label": "answerable", "hits_hold_answer": False},
    ]
    assert [r.status for r in label_lines(store, "production", give, "ana@example.org")] == ["stored"] * 3
    period = version_samples(store, "production", 1, now=review["now"])[1]
    r = period.refused
    assert (r.labelled, r.labels, r.blocked, r.off_topic, r.answerable_held, r.answerable_missed) == (2, 3, 1, 1, 1, 0)
    third = {"line_id": ids[("refused", 3)], "label": "answerable"}
    assert label_lines(store, "production", [third], "ana@example.org")[0].status == "stored"
    r = version_samples(store, "production", 1, now=review["now"])[1].refused
    assert (r.labelled, r.off_topic, r.answerable_held, r.answerable_missed, r.answerable_unknown) == (4, 1, 1, 1, 1)
    # the same label again is unchanged, another by the same author a correction
    again = label_lines(store, "production", [give[0], {**give[1], "hits_hold_answer": False}], "ana@example.org")
    assert [x.status for x in again] == ["unchanged", "updated"]
    r = version_samples(store, "production", 1, now=review["now"])[1].refused
    assert (r.answerable_held, r.answerable_missed) == (0, 2)
    # a second person's labels: offered only to another author, after the first label; never counted
    sample = _sample(store, frame["frame_id"])
    offered = [
        int(k)
        for s, k, sec in zip(sample["stratum"], sample["rank"], sample["second"], strict=True)
        if s == "refused" and sec
    ]
    firsts = [{"line_id": ids[("refused", k)], "label": "off-topic"} for k in offered if k > 4]
    label_lines(store, "production", firsts, "ana@example.org")
    for_ben = [x for x in next_lines(store, "production", 1, frame["period_start"], 100, "ben") if x.role == "second"]
    for_ana = [
        x
        for x in next_lines(store, "production", 1, frame["period_start"], 100, "ana@example.org")
        if x.role == "second"
    ]
    assert offered and for_ana == [] and sorted(x.rank for x in for_ben) == sorted(offered)
    counted = version_samples(store, "production", 1, now=review["now"])[1].refused
    seconds = [{"line_id": x.line_id, "label": "answerable"} for x in for_ben]
    assert {x.status for x in label_lines(store, "production", seconds, "ben")} == {"stored"}
    assert version_samples(store, "production", 1, now=review["now"])[1].refused == counted
    pairs, kappa = agreement(store, "production", 1)
    assert pairs == len(seconds)


def test_agreement_is_cohens_kappa_of_the_first_and_second_labels(review):
    from evalcore.measures.agreement import cohens_kappa

    first = ["off-topic"] * 6 + ["answerable"] * 4
    second = ["off-topic"] * 4 + ["answerable"] * 2 + ["answerable"] * 3 + ["off-topic"]
    po = sum(a == b for a, b in zip(first, second, strict=True)) / 10
    pe = sum((first.count(c) / 10) * (second.count(c) / 10) for c in ("off-topic", "answerable"))
    assert cohens_kappa(first, second) == pytest.approx((po - pe) / (1 - pe), abs=1e-12)
    assert cohens_kappa([], []) is None and cohens_kappa(["answerable"] * 3, ["answerable"] * 3) is None


def test_an_earlier_version_is_sampled_on_its_own_lines_until_its_move(review):
    store = Store(review["path"])
    deployed, moved, early, late = review["canary"]
    got = draw_samples(store, "canary").to_json()  # the real clock: version 1 ended at the move
    assert [(p["version"], p["status"]) for p in got["periods"]] == [(1, "drawn"), (2, "not-ended")]
    frame = _frames(store, "canary")[0]
    assert frame["period_end"] == moved and frame["lines_from"] == deployed
    assert frame["answered_lines"] + frame["refused_lines"] == len(early)  # none of version 2's lines


def test_the_first_n_of_the_seeded_order_is_a_uniform_sample_without_replacement():
    """Over 3,000 seeds, every line of 40 is among the first 8 about 3,000 x 8/40 times, and the
    first 16 (the 8 taken further) hold the first 8 and are as uniform; every pair of 6 lines is
    the first 2 equally often; a tenth of the ranks are offered to a second person."""
    rng = np.random.default_rng(7)
    keys = rng.integers(-(2**62), 2**62, size=40)
    occ = np.ones(40, dtype=np.int64)
    seeds = [int(s) for s in rng.integers(0, 2**63, size=3000)]
    eight, sixteen = np.zeros(40), np.zeros(40)
    for s in seeds:
        a, b = first_in_order(s, keys, occ, 8), first_in_order(s, keys, occ, 16)
        assert list(b[:8]) == list(a) and len(set(b)) == 16
        eight[a] += 1
        sixteen[b] += 1
    for counts, n in ((eight, 8), (sixteen, 16)):
        assert chisquare(counts, np.full(40, len(seeds) * n / 40)).pvalue > 1e-3
        assert binomtest(int(counts[0]), len(seeds), n / 40).pvalue > 1e-3
    pairs = dict.fromkeys(combinations(range(6), 2), 0)
    for s in seeds:
        pairs[tuple(sorted(int(i) for i in first_in_order(s, keys[:6], occ[:6], 2)))] += 1
    assert chisquare(list(pairs.values())).pvalue > 1e-3
    offered = sum(int(offered_second(s, "answered", np.arange(1, 11), 0.1).sum()) for s in seeds[:1000])
    assert binomtest(offered, 10_000, 0.1).pvalue > 1e-3


def test_traffic_sample_prints_what_it_drew_and_its_json(review, capsys):
    code = main(["--store", str(review["path"]), "traffic", "sample", "--deployment", "canary", "--json"])
    got = json.loads(capsys.readouterr().out)
    assert code == 0 and [p["status"] for p in got["periods"]] == ["kept", "not-ended"]
    assert main(["--store", str(review["path"]), "traffic", "sample", "--deployment", "canary"]) == 0
    text = capsys.readouterr().out
    assert "version 1 period 1" in text and "kept" in text and "not ended yet" in text
