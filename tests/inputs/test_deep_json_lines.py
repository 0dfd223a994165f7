"""A JSON line nested 50,000 deep in a query list or a traffic log is one reported line, not a
RecursionError: the pasted list names the line, the log counts it and imports the rest."""

from __future__ import annotations

import json

import pytest

from evalcore.errors import InputError
from evalcore.inputs.query_lists import read_queries
from evalcore.traffic.log import LogFields, LogLine, LogProblem, read_log

DEEP = "[" * 50_000 + "]" * 50_000


def test_a_deep_line_in_a_pasted_query_list_names_its_line():
    data = (json.dumps({"query": "how do I reset it"}) + "\n" + DEEP + "\n").encode()
    with pytest.raises(InputError, match=r"^queries\.jsonl:2: invalid JSON"):
        read_queries("queries.jsonl", data)


def test_a_deep_line_in_a_traffic_log_is_counted_and_the_rest_imported(tmp_path):
    log = tmp_path / "log.jsonl"
    good = json.dumps({"query": "how do I reset it", "time": "2026-11-02T10:00:00Z"})
    log.write_text(good + "\n" + DEEP + "\n" + good + "\n", encoding="utf-8")
    items = [item for batch in read_log(log, "jsonl", LogFields()) for item in batch]
    problems = [p for p in items if isinstance(p, LogProblem)]
    assert [p.line for p in problems] == [2]
    assert "not JSON" in problems[0].reason
    assert sum(isinstance(i, LogLine) for i in items) == 2
