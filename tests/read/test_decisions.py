"""evalcore.read.decisions: saved, listed, the latest read back."""

from __future__ import annotations

import math

import pytest

from evalcore.read import decisions, runs


def test_save_list_and_latest(scratch, engine_run_id):
    first, second = runs.configurations(scratch, engine_run_id)[:2]
    assert decisions.latest_decision(scratch, engine_run_id) is None
    one = decisions.save_decision(scratch, engine_run_id, first, 0.42, "pm review")
    two = decisions.save_decision(scratch, engine_run_id, second, 0.51, "second thoughts")
    saved = decisions.decisions(scratch, engine_run_id)
    assert saved["decision_id"].tolist() == [two, one]
    assert saved["configuration"].tolist() == [second.label, first.label]
    latest = decisions.latest_decision(scratch, engine_run_id)
    assert (latest.decision_id, latest.configuration, latest.threshold) == (two, second, 0.51)
    assert decisions.latest_decision(scratch, engine_run_id, first).threshold == 0.42
    assert "t = 0.4200 for " + first.label in decisions.latest_decision(scratch, engine_run_id, first).describe()
    with pytest.raises(ValueError, match="finite"):
        decisions.save_decision(scratch, engine_run_id, first, math.inf, "")
