"""docs/CI.md: the example workflow's evalcore steps run as written, on the mini corpus.

The YAML block is read from the doc; every step with a ``run:`` that calls evalcore is run
with ``bash -e`` and the workflow's variables (corpus paths pointed at the test corpus), the
baseline job in one folder, the pull-request job in a fresh one with the artifact copied
over, as GitHub Actions would.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET

import pytest
import yaml
from conftest import MINI, ROOT

DOC = ROOT / "docs" / "CI.md"


def workflow() -> dict:
    blocks = re.findall(r"```yaml\n(.*?)```", DOC.read_text(encoding="utf-8"), re.S)
    assert len(blocks) == 1, "docs/CI.md should hold exactly one YAML block: the workflow"
    return yaml.safe_load(blocks[0])


def run_job(job: dict, cwd, env: dict) -> dict[str, subprocess.CompletedProcess]:
    """Run the job's evalcore steps in order; stop at the first that fails (as GitHub does)."""
    done = {}
    for step in job["steps"]:
        script = step.get("run", "")
        if "python -m evalcore" not in script:
            continue
        res = subprocess.run(
            ["bash", "-e", "-c", script], cwd=cwd, env=env, capture_output=True, text=True, timeout=900
        )
        done[step["name"]] = res
        if res.returncode != 0:
            break
    return done


def uses(job: dict, action: str) -> dict:
    return next(s for s in job["steps"] if s.get("uses", "").startswith(action))


@pytest.fixture(scope="module")
def baseline(tmp_path_factory):
    wf = workflow()
    env = {
        **os.environ,
        **{k: str(v) for k, v in wf["env"].items()},
        "CORPUS": str(MINI / "corpus"),
        "QUESTIONS": str(MINI / "questions.jsonl"),
        "OOD": str(MINI / "ood.jsonl"),
        "PYTHONPATH": str(ROOT),
    }
    folder = tmp_path_factory.mktemp("ci-main")
    done = run_job(wf["jobs"]["baseline"], folder, env)
    assert list(done) == ["Evaluate main", "Export the baseline"]
    for name, res in done.items():
        assert res.returncode == 0, (name, res.stderr)
    upload = uses(wf["jobs"]["baseline"], "actions/upload-artifact")["with"]
    artifact = folder / upload["path"]
    assert artifact.is_file()
    return wf, env, artifact


def pull_request(baseline, tmp_path, **overrides):
    wf, env, artifact = baseline
    job = wf["jobs"]["gate"]
    download = uses(job, "dawidd6/action-download-artifact")["with"]
    upload = uses(wf["jobs"]["baseline"], "actions/upload-artifact")["with"]
    assert download["name"] == upload["name"] and download["workflow"] == "retrieval-gate.yml"
    shutil.copy(artifact, tmp_path / artifact.name)  # what the download step does
    done = run_job(job, tmp_path, {**env, **overrides})
    assert list(done) == ["Load the baseline", "Evaluate this pull request", "Gate"]
    assert done["Load the baseline"].returncode == 0, done["Load the baseline"].stderr
    assert done["Evaluate this pull request"].returncode == 0
    comment = uses(job, "marocchino/sticky-pull-request-comment")["with"]["path"]
    junit = uses(job, "mikepenz/action-junit-report")["with"]["report_paths"]
    return done["Gate"], (tmp_path / comment).read_text(), ET.parse(tmp_path / junit).getroot()


def test_an_unchanged_pull_request_passes(baseline, tmp_path):
    gate, comment, junit = pull_request(baseline, tmp_path)
    assert gate.returncode == 0, gate.stderr
    assert comment.startswith("### evalcore gate: PASS") and "`prod/hybrid`" in comment
    assert junit.get("tests") == "1" and junit.get("failures") == "0"


def test_a_damaging_pull_request_fails_with_the_lost_queries(baseline, tmp_path):
    gate, comment, junit = pull_request(baseline, tmp_path, STRATEGIES="prod:blind+size=40")
    assert gate.returncode == 1, gate.stderr
    assert comment.startswith("### evalcore gate: FAIL") and "**FAIL: regression**" in comment
    assert "<details>" in comment and "Which port does the Kettle server listen on by default?" in comment
    (case,) = junit.iter("testcase")
    assert case.get("name") == "prod/hybrid" and case.find("failure").get("type") == "regression"


def test_the_service_job_uploads_the_run_and_gates_it_against_the_services_baseline(baseline, tmp_path):
    """The ``service`` job's steps against a real server (``evalcore dashboard`` as a process)
    whose store holds ``main`` (the baseline job's run file, loaded as the job itself would from
    a push to main): a damaging pull request is uploaded and fails the gate with exit 1."""
    from api_serving import api_server, make_key

    wf, env, artifact = baseline
    job = wf["jobs"]["service"]
    server_store = tmp_path / "server" / "evalcore.duckdb"
    server_store.parent.mkdir()
    loaded = subprocess.run(
        [sys.executable, "-m", "evalcore", "--store", str(server_store), "load-run", str(artifact)],
        env=env,
        capture_output=True,
        text=True,
        cwd=ROOT,
    )
    assert loaded.returncode == 0, loaded.stderr
    key = make_key(server_store, "ci", "runs:write,gate")
    runner = tmp_path / "runner"
    runner.mkdir()
    with api_server(server_store, tmp_path / "server.log", {"HF_HUB_OFFLINE": "1"}) as url:
        # what GitHub fills in: the secret, the variable, the run's name for pull request 42
        overrides = {"EVALCORE_API_KEY": key, "SERVER": url, "RUN_NAME": "pr-42", "STRATEGIES": "prod:blind+size=40"}
        overrides["GITHUB_EVENT_NAME"] = "pull_request"
        done = run_job(job, runner, {**env, **overrides, "EVALCORE_STORE": str(runner / "ci.duckdb")})
    assert list(done) == ["Evaluate and upload", "Gate against the service's baseline"]
    upload, gate = done.values()
    assert upload.returncode == 0, upload.stderr
    assert "loaded run " in upload.stdout and "(pr-42) into http://127.0.0.1:" in upload.stdout
    assert gate.returncode == 1, gate.stderr
    comment = (runner / "gate.md").read_text()
    assert comment.startswith("### evalcore gate: FAIL") and "**FAIL: regression**" in comment
    (case,) = ET.parse(runner / "gate-junit.xml").getroot().iter("testcase")
    assert case.get("name") == "prod/hybrid" and case.find("failure").get("type") == "regression"
    assert key not in upload.stdout + upload.stderr + gate.stdout + gate.stderr
