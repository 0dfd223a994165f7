"""The reliability suite, issue 34 (trust by construction): the numeric options of the threshold
claim, the gate and the traffic check, given what a careless or hostile user types. Every
refusal is one line in one form, ``--OPTION must be a number in RANGE; got 'TEXT'``, exit 2,
the store's complete runs unchanged; a tiny but valid rate is answered, not a crash.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from test_reliability import RUN, check, complete_runs, evalcore, kept


@pytest.fixture(scope="module")
def one_run(tmp_path_factory) -> Path:
    """A store holding one complete run ``earlier`` (strategy E, the keyword embedder), made in process."""
    path = tmp_path_factory.mktemp("numbers") / "evalcore.duckdb"
    ran = evalcore(*RUN, "--strategies", "E", "--name", "earlier", store=path)
    assert ran.code == 0, ran.err
    return path


@pytest.fixture()
def store_copy(one_run, tmp_path) -> Path:
    path = tmp_path / "evalcore.duckdb"
    shutil.copy(one_run, path)
    return path


#: (command words before the option, option, range as the message says it)
OPTIONS = [
    (["threshold", "earlier"], "--max-bluff-rate", "(0, 1)"),
    (["threshold", "earlier"], "--max-lost-rate", "(0, 1)"),
    (["threshold", "earlier"], "--confidence", "(0, 1)"),
    (["gate", "--baseline", "earlier", "--candidate", "earlier"], "--alpha", "(0, 1)"),
    (["gate", "--baseline", "earlier", "--candidate", "earlier"], "--min-effect", "[0, 1]"),
    (["traffic", "check", "--run", "earlier"], "--max-refused-share", "[0, 1]"),
    (["traffic", "check", "--run", "earlier"], "--threshold", "(-inf, inf)"),
]
#: what a user may type that is no number in range (a float() would take the first five)
VALUES = ["nan", "inf", "-Infinity", "1e400", "1_0", "0x1p-3", "", "0.5.5", "\u0665", "1" * 120]
IN_RANGE_ONLY = ["0", "1", "-0.0", "2"]  # numbers, but outside at least the open unit interval


def _shown(value: str) -> str:
    return repr(value if len(value) <= 40 else value[:40] + "...")


@pytest.mark.parametrize(("words", "option", "interval"), OPTIONS, ids=[f"{w[0]} {o}" for w, o, _ in OPTIONS])
def test_a_bad_number_is_refused_in_one_form(store_copy, words, option, interval):
    before = complete_runs(store_copy)
    values = VALUES + ([v for v in IN_RANGE_ONLY if interval == "(0, 1)"] or ["-0.5", "1.5"])
    if option == "--threshold":
        values = VALUES  # any finite number is a threshold
    for value in values:
        ran = evalcore(*words, f"{option}={value}", store=store_copy)
        message = f"error: {option} must be a number in {interval}; got {_shown(value)}"
        expected = f"exit 2 · {message} · complete runs unchanged"
        observed = f"exit {ran.code} · {ran.line()} · {kept(store_copy, before)}"
        check(f"{' '.join(words[:2])} {option} {value[:20]!r}", expected, observed, ran.err)


def test_a_tiny_rate_is_answered_not_a_crash(store_copy):
    """alpha = 1e-300 is a valid rate: no off-topic set can support it, and the command says how
    many questions it would take instead of dividing by zero (ln(1 - 1e-300) is 0 in floats)."""
    before = complete_runs(store_copy)
    ran = evalcore("threshold", "earlier", "--max-bluff-rate", "1e-300", store=store_copy)
    needed = "about 3e+300 are needed for 1e-298% at 95%" in ran.out
    says = "says" if needed else "does NOT say"
    observed = f"exit {ran.code} · {ran.line()} · {says} how many are needed · {kept(store_copy, before)}"
    expected = "exit 0 · - · says how many are needed · complete runs unchanged"
    check("threshold --max-bluff-rate 1e-300", expected, observed, ran.out + ran.err)
    json_run = evalcore("threshold", "earlier", "--max-bluff-rate", "1e-300", "--json", store=store_copy)
    assert json_run.code == 0 and '"bluff_status": "too_few"' in json_run.out


def test_splits_must_be_a_whole_number(store_copy):
    for value in ("0", "2.5", "nan", "-1"):
        ran = evalcore("threshold", "earlier", f"--splits={value}", store=store_copy)
        expected = f"exit 2 · error: --splits must be an integer in [1, inf); got {value!r}"
        check(f"threshold --splits {value!r}", expected, f"exit {ran.code} · {ran.line()}", ran.err)
