"""The reliability suite, issue 46: a deployment's ``meets_claim``. The client reads it from a
hostile server (tests/hostile_server.py, a real socket server writing its answers byte for byte):
an answer without it (a server of before the field) is still a valid deployment, never stale; an
answer whose ``meets_claim`` is of another shape serves the last known value, stale, with the
reason logged once and naming the field. ``evalcore.measures.claim_check.meets_claim`` reads a claim as
a decision stores it: one of another shape is refused with ClaimError naming the field, and a
side whose bound cannot be read is no claim (None), never "met". One table row per case."""

from __future__ import annotations

import json
import logging
import math

import pytest
from hostile_server import HostileServer, answer, deployment_answer, deployment_json
from test_reliability import check

import evalcore
from evalcore.errors import ClaimError
from evalcore.measures.claim_check import meets_claim
from evalcore.measures.rounding import threshold_text

KEY = "evk_" + "m3t" * 12
DEADLINE = 2.0

#: a deployment's meets_claim as the API answers it: t = 0.41 outside the bluff claim t <= 0.213
MEETS = {
    "met": False,
    "threshold": 0.41,
    "axis": "distance",
    "bluff": False,
    "lost": True,
    "bluff_op": "<=",
    "lost_op": ">",
    "bluff_bound": 0.213,
    "lost_bound": 0.3,
    "bluff_bound_text": "0.213",
    "lost_bound_text": "0.300",
    "max_bluff_rate": 0.05,
    "max_lost_rate": 0.2,
    "confidence": 0.95,
    "n_ood": 190,
    "n_answerable": 98,
    "bluffs_at_t": 46,
    "lost_at_t": 3,
}


def _with(**changes: object) -> dict:
    return {**MEETS, **changes}


def _raw(meets: str) -> bytes:
    """The valid deployment's JSON with ``meets_claim`` written as the literal ``meets``."""
    return json.dumps(deployment_json(meets_claim="@@")).replace('"@@"', meets).encode()


@pytest.fixture()
def server():
    with HostileServer() as s:
        yield s


def _seen(client: evalcore.Client) -> str:
    live = client.deployment("production")
    met = "meets_claim None" if live.meets_claim is None else f"met {live.meets_claim.met}"
    return f"{'stale' if live.stale else 'fresh'} {live.threshold}, {met}"


VALID = {
    "no meets_claim at all (a server of before it)": (deployment_answer(), "fresh 0.41, meets_claim None"),
    "meets_claim null (no claim saved)": (deployment_answer(meets_claim=None), "fresh 0.41, meets_claim None"),
    "meets_claim outside the claim": (deployment_answer(meets_claim=MEETS), "fresh 0.41, met False"),
}


@pytest.mark.parametrize("kind", list(VALID))
def test_an_answer_with_or_without_meets_claim_is_a_valid_deployment(server, kind):
    behaviour, want = VALID[kind]
    server.answer = behaviour
    client = evalcore.Client(server.url, KEY, max_age=0, timeout=DEADLINE)
    check(f"client, {kind}", want, _seen(client))


BROKEN = {
    "meets_claim a text": (_raw('"false"'), "meets_claim: not a JSON object"),
    "meets_claim a list": (_raw("[false]"), "meets_claim: not a JSON object"),
    "bluff the text 'false'": (_raw(json.dumps(_with(bluff="false"))), "bluff: not true, false or null"),
    "bluff 0": (_raw(json.dumps(_with(bluff=0))), "bluff: not true, false or null"),
    "met true, the bluff side false": (_raw(json.dumps(_with(met=True))), "met: True, but"),
    "threshold 1e999": (
        _raw(json.dumps(_with(threshold=1)).replace('"threshold": 1,', '"threshold": 1e999,')),
        "threshold: not a finite number",
    ),
    "axis cosine": (_raw(json.dumps(_with(axis="cosine"))), "axis: 'cosine' is none of"),
    "bluff_op <": (_raw(json.dumps(_with(bluff_op="<"))), "bluff_op: '<' is none of"),
    "bluff_bound a text": (_raw(json.dumps(_with(bluff_bound="0.213"))), "bluff_bound: not a number"),
    "bluff_bound_text a number": (_raw(json.dumps(_with(bluff_bound_text=0.213))), "bluff_bound_text: not a text"),
    "n_ood -1": (_raw(json.dumps(_with(n_ood=-1))), "n_ood: not a count"),
    "bluffs_at_t 4.5": (_raw(json.dumps(_with(bluffs_at_t=4.5))), "bluffs_at_t: not an integer"),
    "confidence missing": (
        _raw(json.dumps({k: v for k, v in MEETS.items() if k != "confidence"})),
        "confidence: not a number",
    ),
}


@pytest.mark.parametrize("kind", list(BROKEN))
def test_a_malformed_meets_claim_serves_the_stale_value_and_names_the_field(server, caplog, kind):
    body, reason = BROKEN[kind]
    server.answer = deployment_answer(meets_claim=MEETS)
    client = evalcore.Client(server.url, KEY, max_age=0, timeout=DEADLINE)
    assert _seen(client) == "fresh 0.41, met False"
    server.answer = answer(200, body, ETag='"v2-x"')
    with caplog.at_level(logging.WARNING, logger="evalcore.client"):
        seen = {_seen(client) for _ in range(3)}
    lines = [r.getMessage() for r in caplog.records if r.name == "evalcore.client"]
    logged = f"{len(lines)} log line" + ("s" if len(lines) != 1 else "")
    named = "naming the field" if lines and all(reason in x for x in lines) else f"saying {lines[:2]}"
    shown = f"{', '.join(sorted(seen))}; {logged} {named}"
    check(f"client, meets_claim: {kind}", "stale 0.41, met False; 1 log line naming the field", shown)


CLAIM = {
    "axis": "distance",
    "bluff_status": "bounded",
    "bluff_ok_up_to": 0.213,
    "lost_status": "bounded",
    "lost_ok_above": 0.3,
    "max_bluff_rate": 0.05,
    "max_lost_rate": 0.2,
    "confidence": 0.95,
    "n_ood": 190,
    "n_answerable": 98,
}


def _claim(**changes: object) -> dict:
    out = {**CLAIM, **changes}
    return {k: v for k, v in out.items() if v is not ...}


HOSTILE_CLAIMS = {
    "a list, not a claim": ([], "ClaimError: claim: not a claim but list"),
    "no axis": (_claim(axis=...), "ClaimError: claim: no field 'axis'"),
    "axis cosine": (_claim(axis="cosine"), "ClaimError: claim: axis must be 'distance' or 'score', got 'cosine'"),
    "n_ood the text '190'": (_claim(n_ood="190"), "ClaimError: claim: n_ood is not a count ('190')"),
    "n_ood -5": (_claim(n_ood=-5), "ClaimError: claim: n_ood is not a count ('-5')"),
    "max_bluff_rate NaN": (
        _claim(max_bluff_rate=math.nan),
        "ClaimError: claim: max_bluff_rate is not a finite number ('nan')",
    ),
    "confidence true": (_claim(confidence=True), "ClaimError: claim: confidence is not a finite number ('True')"),
    "bluff bound the text '0.213'": (_claim(bluff_ok_up_to="0.213"), "bluff None, lost True"),
    "bluff bound NaN": (_claim(bluff_ok_up_to=math.nan), "bluff None, lost True"),
    "bluff bound infinite": (_claim(bluff_ok_up_to=math.inf), "bluff None, lost True"),
    "bluff bound missing, status bounded": (_claim(bluff_ok_up_to=...), "bluff None, lost True"),
    "bluff status 'maybe'": (_claim(bluff_status="maybe"), "bluff None, lost True"),
    "a bound of 1e308, t 0.41": (_claim(bluff_ok_up_to=1e308), "bluff True, lost True"),
}


@pytest.mark.parametrize("kind", list(HOSTILE_CLAIMS))
def test_meets_claim_reads_a_hostile_stored_claim_safely(kind):
    claim, want = HOSTILE_CLAIMS[kind]
    try:
        found = meets_claim(claim, 0.41)  # type: ignore[arg-type]
        seen = f"bluff {found.bluff}, lost {found.lost}"
        if found.bluff_bound_text is not None:  # the shown bound reads t = 0.41 as the exact one
            assert (float(found.bluff_bound_text) >= 0.41) is found.bluff, threshold_text(0.41)
    except ClaimError as exc:
        seen = f"ClaimError: {exc}"
    check(f"meets_claim, a stored claim: {kind}", want, seen)
