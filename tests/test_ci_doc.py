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
