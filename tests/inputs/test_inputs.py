"""Inputs: one loading for the CLI and jobs, and server folders only inside the operator's
data roots, checked on the real path, with one message whatever lies outside."""

from __future__ import annotations

import os

import pytest
from conftest import MINI
from dashboard.test_new_run_page import open_new_run

from evalcore import jobs
from evalcore.errors import InputError
from evalcore.inputs import sources as inputs


@pytest.fixture()
def root(tmp_path, monkeypatch):
    data = tmp_path / "data"
    (data / "mini").mkdir(parents=True)
    for p in (MINI / "corpus").iterdir():
        (data / "mini" / "corpus").mkdir(exist_ok=True)
        (data / "mini" / "corpus" / p.name).write_bytes(p.read_bytes())
    for name in ("questions.jsonl", "ood.jsonl"):
        (data / "mini" / name).write_bytes((MINI / name).read_bytes())
    monkeypatch.setenv(inputs.DATA_ROOTS_ENV, os.pathsep.join([str(data), str(tmp_path / "absent")]))
    return data


def prepare(corpus, questions, ood=None):
    return jobs.prepare_paths(str(corpus), str(questions), str(ood) if ood else None, "A", "dense")


def test_no_data_roots_means_no_server_folders(monkeypatch):
    monkeypatch.delenv(inputs.DATA_ROOTS_ENV, raising=False)
    with pytest.raises(InputError, match="folders on the server are off"):
        prepare(MINI / "corpus", MINI / "questions.jsonl")


def test_a_folder_inside_a_root_is_validated_as_the_cli_would(root):
    prepared = prepare(root / "mini" / "corpus", "mini/questions.jsonl", root / "mini" / "ood.jsonl")
    corpus, gt = inputs.load_corpus_and_questions(MINI / "corpus", MINI / "questions.jsonl", MINI / "ood.jsonl")
    assert prepared.report.to_json()["documents"] == len(corpus.documents) == 4
    assert prepared.spec.questions == str(root / "mini" / "questions.jsonl")  # relative: from the first root
    assert inputs.data_roots() == (root,)  # roots that do not exist are left out


@pytest.mark.parametrize(
    "outside",
    [
        "/etc/shadow",
        "/nonexistent/questions.jsonl",
        "/etc",
        "../../../etc/passwd",
        "{root}/../../etc/passwd",
        "{root}/mini/../../outside.jsonl",
    ],
)
def test_a_path_outside_the_roots_gets_one_message_whether_it_exists_or_not(root, outside):
    outside = outside.format(root=root)
    with pytest.raises(InputError) as exc:
        prepare(root / "mini" / "corpus", outside)
    assert str(exc.value) == f"questions file: not inside the folders this server allows ({root})"


def test_a_symlink_inside_a_root_that_leads_outside_is_refused(root, tmp_path):
    secret = tmp_path / "secret"
    secret.mkdir()
    (secret / "notes.md").write_text("# Notes\n\n## Password\n\nhunter2 is the password.\n")
    (root / "linked").symlink_to(secret)
    (root / "q.jsonl").symlink_to(MINI / "questions.jsonl")
    with pytest.raises(InputError, match=r"^corpus folder: not inside the folders this server allows"):
        prepare(root / "linked", root / "mini" / "questions.jsonl")
    with pytest.raises(InputError, match=r"^questions file: not inside the folders this server allows"):
        prepare(root / "mini" / "corpus", root / "q.jsonl")


def test_the_job_process_checks_the_roots_again(root, monkeypatch):
    prepared = prepare(root / "mini" / "corpus", root / "mini" / "questions.jsonl")
    monkeypatch.setenv(inputs.DATA_ROOTS_ENV, str(MINI))  # the operator narrowed the roots since
    with pytest.raises(InputError, match="corpus folder: not inside"):
        jobs.load_inputs(prepared.spec)


@pytest.mark.parametrize("configured", [False, True])
def test_the_new_run_page_offers_server_folders_only_when_roots_are_configured(tmp_path, monkeypatch, root, configured):
    if not configured:
        monkeypatch.delenv(inputs.DATA_ROOTS_ENV)
    at = open_new_run(tmp_path / "s.duckdb", monkeypatch)
    options = at.radio(key="nr_source").options
    assert ("Folder on the server" in options) == configured
    if configured:
        at.radio(key="nr_source").set_value("folder").run()
        assert str(root) in " ".join(c.value for c in at.caption)
