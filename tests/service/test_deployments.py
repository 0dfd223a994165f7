"""Named deployments (evalcore.service.deployments) on a real store: a real run, decisions saved
with their claims as the Threshold screen saves them, deployments moved and read back."""

from __future__ import annotations

import json

import pytest
from deployed import deployed_copy

from evalcore.errors import InputError, UnknownDecision
from evalcore.service.deployments import deploy, get_deployment, list_deployments
from evalcore.store import Store


@pytest.fixture(scope="module")
def deployed_store(tmp_path_factory, real_embedder):
    return deployed_copy(tmp_path_factory, real_embedder, tmp_path_factory.mktemp("deployments"))


def _decision_row(path, decision_id):
    with Store(path).read() as con:
        return con.execute(
            "SELECT run_id, strategy, retriever, threshold, author, created_at, claim FROM decisions "
            "WHERE decision_id = ?",
            [decision_id],
        ).fetchone()


def test_a_deployment_carries_its_decision_and_its_claim(deployed_store, tmp_path):
    import shutil

    source, run_id, (first, _) = deployed_store
    path = tmp_path / "s.duckdb"
    shutil.copy(source, path)
    assert get_deployment(path, "production") is None
    got = deploy(path, "production", first, "key:ci")
    row = _decision_row(path, first)
    assert (got.run_id, got.configuration.label, got.threshold) == (row[0], f"{row[1]}/{row[2]}", row[3])
    assert got.claim == json.loads(row[6]) and got.claim["max_bluff_rate"] == pytest.approx(0.05)
    assert (got.decided_by, got.decided_at, got.deployed_by, got.version) == (row[4], row[5], "key:ci", 1)
    assert got == get_deployment(path, "production")
    shown = got.to_json()
    assert shown["configuration"] == "E/dense" and shown["decided_at"].endswith("Z")
    assert json.loads(json.dumps(shown)) == shown
    assert got.etag().startswith('"') and got.etag().endswith('"')


def test_every_move_raises_the_version_and_is_kept(deployed_store, tmp_path):
    import shutil

    source, run_id, (first, second) = deployed_store
    path = tmp_path / "s.duckdb"
    shutil.copy(source, path)
    one = deploy(path, "production", first, "ana@example.org")
    again = deploy(path, "production", first, "bob@example.org")  # the same decision: no move
    assert again == one
    two = deploy(path, "production", second, "bob@example.org")
    staging = deploy(path, "staging", first, None)
    assert (two.version, two.threshold, two.configuration.label) == (2, 0.5, "E/bm25")
    assert two.etag() != one.etag()
    assert staging.version == 1 and staging.deployed_by is None
    history = {h.deployment.name: h for h in list_deployments(path)}
    assert sorted(history) == ["production", "staging"]
    moves = history["production"].moves
    assert [(m.version, m.moved_by, m.from_decision_id, m.to_decision_id) for m in moves] == [
        (2, "bob@example.org", first, second),
        (1, "ana@example.org", None, first),
    ]
    assert moves[0].from_threshold == pytest.approx(0.55) and moves[0].to_threshold == pytest.approx(0.5)
    assert history["production"].to_json()["moves"][0]["to_decision_id"] == second


def test_an_unknown_decision_or_a_bad_name_writes_nothing(deployed_store, tmp_path):
    import shutil

    source, _, (first, _) = deployed_store
    path = tmp_path / "s.duckdb"
    shutil.copy(source, path)
    with pytest.raises(UnknownDecision, match="no saved decision 'ffffffffffff'"):
        deploy(path, "production", "ffffffffffff", "ana")
    with pytest.raises(InputError, match="deployment name"):
        deploy(path, "-rm", first, "ana")
    assert list_deployments(path) == []
