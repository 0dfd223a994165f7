"""The reliability suite, issue 36: the address's ``?lang=`` is text a link hands in. One table
row per case: a hostile value opens the screen without an exception, in English (or in the
language it names), never echoed onto the page, and the figures the screen shows do not change.
"""

from __future__ import annotations

import pytest
from conftest import ROOT
from reliability_table import record
from streamlit.testing.v1 import AppTest

HOSTILE = [
    ("unknown code", "fr", "en"),
    ("a path", "../../etc/passwd", "en"),
    ("markup", "<img src=x onerror=alert(1)>", "en"),
    ("Markdown link", "[de](http://example.org)", "en"),
    ("NUL byte", "de\x00", "en"),
    ("very long", "d" * 100_000, "en"),
    ("empty", "", "en"),
    ("upper case", "DE", "de"),
    ("a region", "nl-BE", "nl"),
    ("Java's old code", "in", "id"),
]


def _open(store, monkeypatch, value: str) -> AppTest:
    monkeypatch.setenv("EVALCORE_STORE", str(store))
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=180)
    at.query_params["lang"] = value
    at.run()
    at.switch_page("evalcore_app/screens/threshold.py")
    at.run()
    return at


def _text(at: AppTest) -> str:
    parts = [str(e.value) for kind in ("title", "markdown", "caption", "warning", "error") for e in at.get(kind)]
    return "\n".join(parts + [e.proto.body for e in at.get("html")])


@pytest.mark.parametrize(("case", "value", "expected"), HOSTILE, ids=[c for c, _, _ in HOSTILE])
def test_hostile_lang_parameter(engine_store, monkeypatch, case, value, expected):
    at = _open(engine_store, monkeypatch, value)
    shown_lang = at.session_state["lang"] if "lang" in at.session_state else "en"
    exception = [e.value for e in at.exception]
    echoed = len(value) > 3 and value in _text(at)
    observed = "exception" if exception else "echoed" if echoed else shown_lang
    record(f"?lang= {case}", expected, observed)
    assert observed == expected, (exception, shown_lang)
    title = at.title[0].value
    assert (
        title
        == {"en": "Refusal threshold", "de": "Ablehnungsschwelle", "nl": "Weigerdrempel", "id": "Ambang penolakan"}[
            expected
        ]
    )
