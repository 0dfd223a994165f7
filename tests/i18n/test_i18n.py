"""The dashboard in English, German, Dutch and Indonesian (issue 36).

- The catalogs: every message id of the code is in de, nl and id, translated (no empty or
  fuzzy entry) with the message id's placeholders, and nothing else (tools/i18n_catalog.py).
- Figures: locale formatting writes the digits a figure already has (a bound rounded on its
  safe side keeps its digits), intervals as ``[0,566; 0,777]``, charts with Vega-Lite's locale.
- Every screen renders in each language (AppTest on the engine-made store); a German screen
  shows no English text of the catalog; the language changes no figure or selection.
"""

from __future__ import annotations

import math
import random
import re
import sys
from decimal import Decimal
from pathlib import Path

import pytest
from conftest import ROOT
from streamlit.testing.v1 import AppTest

from evalcore.i18n import KEPT_TERMS, LANGUAGES, Translator, catalog, language
from evalcore.measures.rounding import bound_text, threshold_text

APP = str(ROOT / "app.py")
sys.path.insert(0, str(ROOT / "tools"))
import i18n_catalog  # noqa: E402

PAGES = ("runs", "new_run", "questions", "compare", "distances", "threshold", "query", "traffic", "index", "export")
TRANSLATED = [lang for lang in LANGUAGES if lang != "en"]
FIELD = re.compile(r"\{(\w*)\}")


def _ids(cat) -> set:
    return {m.id for m in cat if m.id}


# --- the catalogs --------------------------------------------------------------------------


@pytest.mark.parametrize("lang", TRANSLATED)
def test_every_msgid_is_translated_with_its_placeholders(lang):
    cat = catalog(lang)
    assert cat is not None, f"{lang}: no catalog"
    problems = []
    for m in cat:
        if not m.id:
            continue
        ids = m.id if isinstance(m.id, tuple) else (m.id,)
        strings = m.string if isinstance(m.string, tuple | list) else (m.string,)
        if m.fuzzy or not strings or not all(strings):
            problems.append(f"{m.id!r}: {'fuzzy' if m.fuzzy else 'empty'}")
            continue
        want = sorted(set(FIELD.findall(ids[-1])))
        for s in strings:
            if sorted(set(FIELD.findall(s))) != want:
                problems.append(f"{m.id!r}: placeholders {FIELD.findall(s)} != {want}")
            s.format(**dict.fromkeys(want, "x"))  # a translation with a stray brace cannot be formatted
    assert not problems, "\n".join(problems[:20])


@pytest.mark.parametrize("lang", TRANSLATED)
def test_catalog_holds_exactly_the_msgids_of_the_code(lang):
    found, problems = i18n_catalog.extract()
    assert not problems, problems  # no _(f"...") whose message cannot be read
    cat = i18n_catalog.read(lang)
    missing, extra = set(found) - _ids(cat), _ids(cat) - set(found)
    assert not missing and not extra, (
        f"missing: {sorted(map(str, missing))[:10]}; extra: {sorted(map(str, extra))[:10]}"
    )
    assert not i18n_catalog.problems_of(cat, found, lang)


def test_a_new_untranslated_string_fails_the_check(tmp_path):
    """The check the lead re-runs after a merge: a screen's new text is missing in the catalogs."""
    found, _problems = i18n_catalog.extract()
    found = dict(found)
    found["A sentence nobody translated yet"] = [("evalcore_app/screens/new.py", 1)]
    problems = i18n_catalog.problems_of(i18n_catalog.read("de"), found, "de")
    assert problems == ["de: missing msgid 'A sentence nobody translated yet'"]


def test_no_module_rebinds_the_translation_function():
    """``_`` is the catalog's lookup wherever it is imported: a module that also unpacks into ``_``
    (``_, start, end = part``) makes every later ``_("...")`` a TypeError on that screen."""
    import ast

    root = ROOT
    checked, rebound = 0, []
    for path in sorted((root / "evalcore_app").rglob("*.py")) + sorted((root / "evalcore").rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        imports_it = any(
            isinstance(n, ast.ImportFrom) and any((a.asname or a.name) == "_" for a in n.names) for n in ast.walk(tree)
        )
        if not imports_it:
            continue
        checked += 1
        for node in ast.walk(tree):
            targets = []
            if isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            elif isinstance(node, (ast.For, ast.With)):
                targets = [node.target] if isinstance(node, ast.For) else [i.optional_vars for i in node.items]
            for target in targets:
                for name in ast.walk(target) if target is not None else ():
                    if isinstance(name, ast.Name) and name.id == "_" and isinstance(name.ctx, ast.Store):
                        rebound.append(f"{path.relative_to(root)}:{name.lineno}")
    assert checked >= 10, checked  # the screens were really read
    assert not rebound, "the translation function _ is rebound at " + ", ".join(rebound)


def test_plural_forms_follow_each_language():
    one, many = "{n} logged query carries no label.", "{n} logged queries carry no label."
    assert Translator("de").ngettext(one, many, 1).format(n=1) == "1 geloggte Anfrage trägt kein Label."
    assert Translator("de").ngettext(one, many, 2).format(n=2) == "2 geloggte Anfragen tragen kein Label."
    assert Translator("nl").ngettext(one, many, 3).format(n=3) == "3 gelogde vragen hebben geen label."
    # Indonesian has one form for every n
    assert Translator("id").ngettext(one, many, 1) == Translator("id").ngettext(one, many, 5)
    assert Translator("en").ngettext(one, many, 1) == one and Translator("en").ngettext(one, many, 0) == many


def test_language_choice_from_codes_and_browser_locales():
    assert [language(c) for c in ("de", "de-DE", "nl_BE", "ID", "in-ID", "en-GB")] == [
        "de",
        "de",
        "nl",
        "id",
        "id",
        "en",
    ]
    assert [language(c) for c in (None, "", "fr", "../de", "de\x00", "x" * 5000)] == [None] * 6


# --- figures in a locale --------------------------------------------------------------------


@pytest.mark.parametrize("lang", TRANSLATED)
def test_locale_formatting_never_changes_a_digit(lang):
    tr = Translator(lang)
    rng = random.Random(36)
    values = [rng.random() for _ in range(2000)] + [0.0125, 0.0135, 0.5, 0.9995, 0.1234999, 2.5e-7, 12345.0625]
    for x in values:
        for digits in (1, 2, 3, 4):
            english = f"{x:.{digits}f}"
            shown = tr.number(x, digits)
            assert shown.replace(",", ".") == english, (x, digits, shown)
    # a bound rounded on its safe side (bluff down, lost up) keeps exactly its digits
    for x in values[:300]:
        for op in ("<=", ">"):
            text = bound_text(x, op)
            assert Decimal(tr.decimal_text(text).replace(",", ".")) == Decimal(text)
            assert tr.decimal_text(text).count(",") == 1 and "." not in tr.decimal_text(text)
    assert tr.decimal_text(threshold_text(0.11371)) == "0,11371"
    assert tr.decimal_text("inf") == "inf" and tr.decimal_text("none") == "none"


@pytest.mark.parametrize("lang", TRANSLATED)
def test_intervals_percentages_and_p_values_in_the_locale(lang):
    tr = Translator(lang)
    assert tr.interval("0.566", "0.777") == "[0,566; 0,777]"
    assert tr.numbers_in("AUC 0.81, [0.52, 0.99]; p = 0.031") == "AUC 0,81, [0,52; 0,99]; p = 0,031"
    assert tr.percent(0.025, 1).replace("\xa0", "") == "2,5%"
    assert tr.percent(0.144).replace("\xa0", "") == "14%"
    assert tr.numbers_in("bluffs <= 2.5% with 97.5% confidence").replace("\xa0", "") == (
        "bluffs <= 2,5% with 97,5% confidence"
    )
    assert tr.vega_format_locale()["decimal"] == ","
    english = Translator("en")
    assert english.interval("0.566", "0.777") == "[0.566, 0.777]" and english.percent(0.144) == "14%"
    assert english.numbers_in("p = 0.031 [0.5, 0.6]") == "p = 0.031 [0.5, 0.6]"


def test_german_figures_carry_the_locale_and_csv_stays_machine_readable(engine_store, engine_run_id):
    from evalcore.figures import build
    from evalcore.files import figure_files
    from evalcore.read import runs
    from evalcore.store import Store

    store = Store(engine_store)
    config = runs.configurations(store, engine_run_id)[0]
    english = build.distance_figure(store, engine_run_id, config)
    german = build.distance_figure(store, engine_run_id, config, Translator("de"))
    spec = german.chart.to_dict()
    assert spec["config"]["locale"]["number"]["decimal"] == ","
    assert german.title == "Distanzen" and english.title == "Distances"
    assert "Deutsch (de)" in german.provenance.text() and "Sprache" in german.provenance.text()
    assert german.provenance.english().text() == english.provenance.text().replace(
        english.provenance.made, german.provenance.made
    )
    png, svg = figure_files.to_png(german), figure_files.to_svg(german)
    assert b"evalcore language" in png and b"Deutsch (de)" in png and b"evalcore software" in png
    assert "<title>Distanzen</title>" in svg and "Sprache: Deutsch (de)" in svg
    fields, frame = figure_files.read_csv(figure_files.to_csv(german))
    assert fields["figure"] == "Distances in and out of domain"  # English, machine-readable
    assert "machine-readable" in fields["note"] and "maschinenlesbar" in fields["note"]
    assert fields["language"].startswith("de (Deutsch")
    assert list(frame.columns) == list(english.data.columns)  # English column names
    numbers = english.data.select_dtypes("number").columns
    assert len(numbers) and all(frame[c].dtype.kind in "fiu" for c in numbers)  # '.' decimals: read as numbers


# --- every screen in every language ------------------------------------------------------------


def open_page(store: Path, page: str, monkeypatch, lang: str) -> AppTest:
    monkeypatch.setenv("EVALCORE_STORE", str(store))
    at = AppTest.from_file(APP, default_timeout=180)
    at.query_params["lang"] = lang
    at.run()
    if page != "runs":
        at.switch_page(f"evalcore_app/screens/{page}.py")
        at.run()
    return at


def shown(at: AppTest) -> str:
    """Every text the page shows a reader: titles, text, alerts, labels, tabs, expanders."""
    parts: list[str] = []
    for kind in ("title", "subheader", "header", "markdown", "caption", "info", "warning", "success", "error"):
        parts += [str(e.value) for e in at.get(kind)]
    parts += [e.proto.body for e in at.get("html")]
    for kind in ("button", "selectbox", "multiselect", "number_input", "slider", "radio", "toggle", "text_area"):
        parts += [str(e.label) for e in at.get(kind)]
        parts += [str(e.help or "") for e in at.get(kind) if hasattr(e, "help")]
    parts += [str(e.label) for e in at.tabs] + [str(e.label) for e in at.expander]
    return "\n".join(parts)


@pytest.mark.parametrize("lang", list(LANGUAGES))
def test_every_screen_renders_in_each_language(engine_store, engine_run_id, monkeypatch, lang):
    for page in (*PAGES, "methods"):
        at = open_page(engine_store, page, monkeypatch, lang)
        assert not at.exception, (lang, page, [e.value for e in at.exception])
        assert at.title, (lang, page)
        if page != "methods":
            assert at.session_state["run_id"] == engine_run_id
        if lang != "en":
            assert at.session_state["lang"] == lang


def _english_fragments() -> list[str]:
    """The English text of the catalog a German screen must not show: each message id's pieces
    between placeholders of three words or more, unless German writes them the same way (a
    kept term, a file name) or they are only kept technical terms."""
    cat = catalog("de")
    assert cat is not None
    out = []
    for m in cat:
        if not m.id:
            continue
        ids = m.id if isinstance(m.id, tuple) else (m.id,)
        german = " ".join(m.string if isinstance(m.string, tuple | list) else (m.string,))
        for piece in (p.strip(" .,;:()·") for text in ids for p in FIELD.split(text)):
            words = re.findall(r"[A-Za-z]{2,}", piece)
            rest = [w for w in words if w not in KEPT_TERMS and w.lower() not in {"t", "p", "hit", "recall", "mrr"}]
            if len(words) >= 3 and len(rest) >= 2 and piece not in german:
                out.append(piece)
    return out


@pytest.mark.parametrize("page", ("threshold", "compare", "runs", "distances", "query", "index", "export"))
def test_no_english_catalog_text_on_a_german_screen(engine_store, monkeypatch, page):
    at = open_page(engine_store, page, monkeypatch, "de")
    assert not at.exception
    text = shown(at)
    left = [piece for piece in _english_fragments() if piece in text]
    assert not left, f"{page}: English left on the German screen: {left[:5]}"


def _figures(text: str) -> list[str]:
    return [x.replace(",", ".") for x in re.findall(r"\d+(?:[.,]\d+)?", text)]


def test_the_language_changes_no_figure_or_selection(engine_store, engine_run_id, monkeypatch):
    seen = {}
    for lang in ("en", "de", "id"):
        at = open_page(engine_store, "threshold", monkeypatch, lang)
        assert not at.exception
        sentence = next(e.proto.body for e in at.get("html") if "sentence-at-t" in e.proto.body)
        state = {k: at.session_state[k] for k in ("run_id", "config", "threshold", "claim_alpha", "claim_beta")}
        seen[lang] = (state, _figures(re.sub(r"<[^>]+>", "", sentence)))
    assert seen["de"] == seen["en"] == seen["id"], seen
    assert not math.isnan(seen["en"][0]["threshold"])
