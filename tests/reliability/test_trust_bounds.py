"""The reliability suite, issue 34 (trust by construction): the numeric options of the threshold
claim, the gate and the traffic check, given what a careless or hostile user types. Every
refusal is one line in one form, ``--OPTION must be a number in RANGE; got 'TEXT'``, exit 2,
the store's complete runs unchanged; a rate below 1e-6 is refused naming its range, not a crash.
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
    (["threshold", "earlier"], "--max-bluff-rate", "[1e-06, 1)"),
    (["threshold", "earlier"], "--max-lost-rate", "[1e-06, 1)"),
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
    values = VALUES + ([v for v in IN_RANGE_ONLY if interval in ("(0, 1)", "[1e-06, 1)")] or ["-0.5", "1.5"])
    if option == "--threshold":
        values = VALUES  # any finite number is a threshold
    for value in values:
        ran = evalcore(*words, f"{option}={value}", store=store_copy)
        message = f"error: {option} must be a number in {interval}; got {_shown(value)}"
        expected = f"exit 2 · {message} · complete runs unchanged"
        observed = f"exit {ran.code} · {ran.line()} · {kept(store_copy, before)}"
        check(f"{' '.join(words[:2])} {option} {value[:20]!r}", expected, observed, ran.err)


def test_a_rate_below_one_in_a_million_is_refused_naming_the_range(store_copy):
    """A max bluff or lost rate below 1e-6 is refused before any work (issue 45): no set of any
    size supports it, and at 1e-320 the size it would take is no float (an OverflowError was
    "please report this"). The library refuses it too (ClaimError), whoever calls it."""
    before = complete_runs(store_copy)
    for option in ("--max-bluff-rate", "--max-lost-rate"):
        for value in ("1e-300", "5e-324", "1e-320", "9.99e-7"):
            ran = evalcore("threshold", "earlier", f"{option}={value}", store=store_copy)
            expected = (
                f"exit 2 · error: {option} must be a number in [1e-06, 1); got {value!r} · complete runs unchanged"
            )
            observed = f"exit {ran.code} · {ran.line()} · {kept(store_copy, before)}"
            check(f"threshold {option} {value}", expected, observed, ran.out + ran.err)
    ran = evalcore("threshold", "earlier", "--max-bluff-rate=1e-6", "--json", store=store_copy)
    check("threshold --max-bluff-rate 1e-6 (the smallest taken)", "exit 0", f"exit {ran.code}", ran.err)
    from evalcore.errors import ClaimError
    from evalcore.measures.claim import threshold_claim

    for alpha in (5e-324, 1e-320, 1e-7):
        try:
            threshold_claim([0.5, 0.6], [0.1, 0.2], [0.1, 0.2], axis="distance", alpha=alpha)
            seen = "accepted"
        except ClaimError as exc:
            seen = "ClaimError" if "[1e-06, 1)" in str(exc) else f"ClaimError without the range: {exc}"
        except Exception as exc:  # noqa: BLE001 - the row says what escaped
            seen = type(exc).__name__
        check(f"threshold_claim(alpha={alpha!r})", "ClaimError", seen)


def test_splits_must_be_a_whole_number(store_copy):
    for value in ("0", "2.5", "nan", "-1", "10001", "1000000000", str(10**30)):
        ran = evalcore("threshold", "earlier", f"--splits={value}", store=store_copy)
        expected = f"exit 2 · error: --splits must be an integer in [1, 10000]; got {value!r}"
        check(f"threshold --splits {value!r}", expected, f"exit {ran.code} · {ran.line()}", ran.err)
