"""``meets_claim`` over HTTP: ``evalcore dashboard`` as a real process on a store of the real
engine and model (tests/deployed.py), decisions saved and deployments moved through the API,
read back with httpx and with ``evalcore.Client``. What the server says is checked against the
claim computed here from the raw hits (scipy's binomial CDF, the order statistics, the counts at
t), for a t inside the bluff bound, exactly at it and outside it, and on the lost side too; the
deployment list and the client's record carry the same object."""

from __future__ import annotations

import math
from decimal import Decimal
from fractions import Fraction

import httpx
import numpy as np
import pytest
from api_serving import ALL_SCOPES, api_server, make_key
from deployed import deployed_copy
from scipy.stats import binom

import evalcore
from evalcore.measures.claim_check import ClaimCheck
from evalcore.measures.rounding import threshold_text
from evalcore.service.deployments import get_deployment
from evalcore.store import Store

CONFIG = "E/dense"
ALPHA, BETA = 0.2, 0.2  #: 30 off-topic questions bound bluffs at 20% (at 5% they are too few)


def raw_gate(store_path, run_id: str, config: str) -> tuple[np.ndarray, np.ndarray]:
    """Per off-topic query the smallest top-4 distance (inf: no hit), per answerable in-domain
    query the smallest correct one: read here from the stored hits, not through evalcore.read."""
    strategy, retriever = config.split("/")
    store = Store(store_path)
    domain = dict(
        store.query("SELECT query_id, domain FROM queries WHERE run_id = ? AND valid", [run_id]).itertuples(index=False)
    )
    hits = store.query(
        "SELECT query_id, distance, correct FROM hits "
        "WHERE run_id = ? AND strategy = ? AND retriever = ? AND rank <= 4",
        [run_id, strategy, retriever],
    )
    m: dict[str, float] = {}
    c: dict[str, float] = {}
    for q, d, correct in hits.itertuples(index=False):
        m[q] = min(m.get(q, math.inf), float(d))
        if correct:
            c[q] = min(c.get(q, math.inf), float(d))
    ood = np.array([m.get(q, math.inf) for q, dom in domain.items() if dom == "out"])
    ans = np.array([c[q] for q, dom in domain.items() if dom == "in" and q in c])
    return ood, ans


def bound_of(values: np.ndarray, rate: float, largest: bool, confidence: float = 0.95) -> tuple[float, int]:
    """The (k*+1)-th smallest (largest) value, k* the most failures the claim allows (scipy)."""
    ks = [k for k in range(len(values) + 1) if binom.cdf(k, len(values), rate) <= 1 - confidence]
    assert ks and ks[-1] + 1 <= len(values), "the set must bound this side"
    ordered = np.sort(values)[::-1] if largest else np.sort(values)
    return float(ordered[ks[-1]]), ks[-1]


def down(x: float) -> str:
    """The largest three-decimal number whose float is at most ``x`` (the bluff bound's safe side)."""
    d = math.floor(Fraction(x) * 1000)
    while float(Fraction(d + 1, 1000)) <= x:
        d += 1
    return f"{float(Fraction(d, 1000)):.3f}"


def up(x: float) -> str:
    """The smallest three-decimal number whose float is at least ``x`` (the lost bound's safe side)."""
    d = math.ceil(Fraction(x) * 1000)
    while float(Fraction(d - 1, 1000)) >= x:
        d -= 1
    return f"{float(Fraction(d, 1000)):.3f}"


@pytest.fixture(scope="module")
def served(tmp_path_factory, real_embedder):
    folder = tmp_path_factory.mktemp("meets-claim-api")
    store, run_id, _ = deployed_copy(tmp_path_factory, real_embedder, folder)
    key = make_key(store, "all", ALL_SCOPES)
    with api_server(store, folder / "server.log") as url:
        yield url, store, run_id, key


def test_meets_claim_is_served_for_t_inside_at_and_outside_each_bound(served):
    url, store, run_id, key = served
    ood, ans = raw_gate(store, run_id, CONFIG)
    bluff_bound, k = bound_of(ood, ALPHA, largest=False)
    lost_bound, j = bound_of(ans, BETA, largest=True)
    grid_in = float(down(bluff_bound))
    grid_out = float(down(bluff_bound)) + 0.001
    cases = {  # name: (t, bluff side met, lost side met)
        "bluff-inside": (grid_in, True, grid_in > lost_bound),
        "bluff-at": (bluff_bound, True, bluff_bound > lost_bound),
        "bluff-outside": (round(grid_out, 3), False, round(grid_out, 3) > lost_bound),
        "lost-at": (lost_bound, lost_bound <= bluff_bound, False),
        "lost-above": (float(up(lost_bound)) + 0.001, float(up(lost_bound)) + 0.001 <= bluff_bound, True),
    }
    # both answers on each side are served (the real run separates well enough: lost bound < bluff bound)
    assert {c[1] for c in cases.values()} == {True, False} and {c[2] for c in cases.values()} == {True, False}
    api = httpx.Client(base_url=url + "/api/v1", headers={"Authorization": f"Bearer {key}"}, timeout=60)
    try:
        for name, (t, bluff_met, lost_met) in cases.items():
            saved = api.post(
                f"/runs/{run_id}/decisions",
                json={"configuration": CONFIG, "threshold": t, "max_bluff_rate": ALPHA, "max_lost_rate": BETA},
            )
            assert saved.status_code == 201, saved.text
            put = api.put(f"/deployments/{name}", json={"decision_id": saved.json()["decision_id"]})
            assert put.status_code == 201, put.text
            got = api.get(f"/deployments/{name}")
            assert got.status_code == 200
            meets = got.json()["meets_claim"]
            assert put.json()["meets_claim"] == meets  # the move answers what a read answers
            bluffs, lost = int((ood < t).sum()), int((ans >= t).sum())
            assert (meets["bluff"], meets["lost"]) == (bluff_met, lost_met), (name, t, meets)
            assert meets["met"] is (bluff_met and lost_met)
            assert (meets["bluffs_at_t"], meets["n_ood"], meets["lost_at_t"], meets["n_answerable"]) == (
                bluffs,
                len(ood),
                lost,
                len(ans),
            )
            assert (bluffs <= k) is bluff_met and (lost <= j) is lost_met  # what the bounds promise
            assert (meets["bluff_op"], meets["lost_op"], meets["threshold"]) == ("<=", ">", t)
            # the printed bounds: on their safe side, and read with the printed t as the exact ones are
            shown_t = Decimal(threshold_text(t))
            assert (shown_t <= Decimal(meets["bluff_bound_text"])) is bluff_met
            assert (shown_t > Decimal(meets["lost_bound_text"])) is lost_met
            assert meets["bluff_bound"] <= bluff_bound and meets["lost_bound"] >= lost_bound
            if name != "bluff-at":  # a t on the three-decimal grid away from the bound: three decimals do
                assert meets["bluff_bound_text"] == down(bluff_bound)
            if name not in ("lost-at",):
                assert meets["lost_bound_text"] == up(lost_bound)
        listed = {d["name"]: d["meets_claim"] for d in api.get("/deployments").json()["data"]}
        for name in cases:
            assert listed[name] == api.get(f"/deployments/{name}").json()["meets_claim"]
    finally:
        api.close()


def test_the_client_record_carries_meets_claim_as_the_library_computes_it(served):
    url, store, run_id, key = served
    ood, _ = raw_gate(store, run_id, CONFIG)
    bluff_bound, _ = bound_of(ood, ALPHA, largest=False)
    t = round(float(down(bluff_bound)) + 0.05, 3)  # outside the bluff claim
    with evalcore.Client(url, key, timeout=60) as client:
        decided = client.decide(run_id, CONFIG, t, max_bluff_rate=ALPHA, max_lost_rate=BETA)
        client.deploy("client-outside", decided["decision_id"])
        live = client.deployment("client-outside")
        assert not live.stale and isinstance(live.meets_claim, ClaimCheck)
        assert live.meets_claim == get_deployment(store, "client-outside").meets_claim  # the library's own
        assert live.meets_claim.bluff is False and live.meets_claim.met is False
        assert live.meets_claim.bluffs_at_t == int((ood < t).sum())
        history = {h.deployment.name: h.deployment for h in client.deployments()}
        assert history["client-outside"].meets_claim == live.meets_claim
