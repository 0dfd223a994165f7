"""The SQuAD-format importer on the real public sets in ../shared/data (skipped when absent)."""

from __future__ import annotations

import json

import pytest
from conftest import shared_data

from evalcore.errors import InputError
from evalcore.inputs.corpus import load_corpus
from evalcore.inputs.groundtruth import load_ground_truth
from evalcore.inputs.public_sets import import_squad, questions_from_csv


def test_xquad_imports_with_every_answer_at_its_exact_span(tmp_path):
    source = shared_data("xquad", "xquad.en.json")
    faq = shared_data("covid-qa", "data", "faqs", "faq_covidbert.csv")
    report = import_squad(source, tmp_path, questions_from_csv(faq, limit=60))
    assert (report.documents, report.questions, report.ood, report.relocated) == (48, 1190, 60, 0)
    corpus = load_corpus(tmp_path / "corpus")
    gt = load_ground_truth(corpus, tmp_path / "questions.jsonl", tmp_path / "ood.jsonl")
    assert len(gt.spans) == 1190 and not gt.invalid and len(gt.ood) == 60
    # independent check: the answer text of the original file sits at each stored span
    answers = {
        qa["id"]: qa["answers"][0]["text"]
        for art in json.loads(source.read_text())["data"]
        for p in art["paragraphs"]
        for qa in p["qas"]
    }
    text = {d.doc_id: d.text for d in corpus.documents}
    for group, span in gt.spans.items():
        assert text[span.doc_id][span.start : span.end] == answers[group]


def test_covid_qa_answer_offsets_that_are_off_are_found_again(tmp_path):
    source = shared_data("covid-qa", "data", "question-answering", "200423_covidQA.json")
    report = import_squad(source, tmp_path)
    # SOURCE.txt: 1380 questions over 98 documents; 234 answer_start values are off
    assert (report.documents, report.questions, report.relocated, report.skipped) == (98, 1380, 234, [])
    corpus = load_corpus(tmp_path / "corpus")
    assert not load_ground_truth(corpus, tmp_path / "questions.jsonl").invalid


def test_importer_refuses_bad_input_and_a_used_folder(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text('{"version": 1}')
    with pytest.raises(InputError, match="not a SQuAD-format JSON file"):
        import_squad(bad, tmp_path / "out")
    good = tmp_path / "good.json"
    good.write_text(
        json.dumps(
            {
                "data": [
                    {
                        "title": "T",
                        "paragraphs": [
                            {
                                "context": "Paris is in France.",
                                "qas": [
                                    {
                                        "id": "q1",
                                        "question": "Where is Paris?",
                                        "answers": [{"text": "France", "answer_start": 12}],
                                    },
                                    {"id": "q2", "question": "?", "answers": [{"text": "Spain", "answer_start": 0}]},
                                ],
                            }
                        ],
                    }
                ]
            }
        )
    )
    report = import_squad(good, tmp_path / "out")
    assert report.questions == 1 and report.skipped == ["q2: answer 'Spain' not found in its paragraph"]
    with pytest.raises(InputError, match="already holds files"):
        import_squad(good, tmp_path / "out")
