"""Configuration: one label rule, written and read back."""

from __future__ import annotations

import pytest

from evalcore.records import Configuration, RunConfiguration


def test_configuration_label_and_parse():
    assert Configuration.parse("E/dense") == Configuration("E", "dense")
    assert Configuration("E", "dense").label == "E/dense" == str(Configuration("E", "dense"))
    assert Configuration.parse("my/strategy/bm25") == Configuration("my/strategy", "bm25")  # split at the last /
    for bad in ("E", "/dense", "E/", ""):
        with pytest.raises(ValueError, match=repr(bad)):
            Configuration.parse(bad)


def test_run_configuration_label_leads_with_the_configuration():
    side = RunConfiguration("20261129-225237-0ff462", Configuration("E", "dense"), "demo")
    assert side.label() == "E/dense · run demo 20261129-225237-0ff462"
    assert side.label(with_run=False) == "E/dense"
    assert side == RunConfiguration("20261129-225237-0ff462", Configuration("E", "dense"), "renamed")
