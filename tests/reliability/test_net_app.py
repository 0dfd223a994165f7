"""The standing net of the dashboard: every text input, text area and file uploader a screen
shows when opened, fed a rotating sample of hostile text and files through streamlit.testing's
AppTest against a store holding real runs, traffic and a question set.

:data:`INPUTS` maps each input's widget key to its kind (``text``, ``name``, ``path``,
``upload``). A test reads every screen's source and fails naming an input (a
``text_input``, ``text_area`` or ``file_uploader`` call, directly or through ``ui.bound``)
whose key the table lacks; another fails when a rendered page shows an input the table lacks.
Each hostile value must leave the page without an exception, and no text the page then shows
may carry it as live Markdown or HTML: an image, a link, a style or raw HTML typed by a user
is shown escaped or not at all.
"""

from __future__ import annotations

import ast
import re

import pytest
from conftest import ROOT
from dashboard.test_app import no_exception, open_page
from reliability_table import record
from test_net_cli import two_runs_net  # noqa: F401 - the shared store (a session fixture)

from evalcore_app.ui import state

#: the dashboard: its entry, its pages (screens/), its frame (ui/) and partials
SCREENS = sorted((ROOT / "evalcore_app").rglob("*.py"))
WIDGETS = {"text_input", "text_area", "file_uploader"}

#: widget key (an f-string key as written, e.g. ``nr_{key}``) -> kind
INPUTS: dict[str, str] = {
    "decision_note": "text",
    "deploy_name": "name",  # Deploy as… (a deployment's name)
    "qs_upload": "upload",
    "qs_new_name": "name",
    "qs_doc_search": "text",
    "qs_phrase": "text",
    "qs_phrasings": "text",
    "qs_variant": "name",
    "qs_ood_text": "text",
    "qs_note": "text",
    "query_search": "text",
    "nr_corpus": "upload",
    "nr_questions": "upload",
    "nr_ood": "upload",
    "nr_corpus_dir": "path",
    "nr_questions_path": "path",
    "nr_ood_path": "path",
    "nr_url": "text",
    "nr_body": "text",
    "nr_{key}": "name",
    "nr_chunker": "name",
    "nr_retriever": "name",
    "nr_custom": "name",
    "nr_models": "path",
    "nr_name": "name",
    "qs_real": "text",
    "qs_real_file": "upload",
    "qs_real_column": "name",
}
#: The pages AppTest opens (the Questions screen included).
PAGES = (
    "runs",
    "new_run",
    "compare",
    "distances",
    "threshold",
    "query",
    "traffic",
    "index",
    "export",
    "methods",
    "questions",
)

MARKUP = [
    '<img src="x" onerror="alert(1)">',
    "[click](javascript:alert(1))",
    "![i](http://x.test/i.png)",
    "<style>body{display:none}</style>",
    "<a href='http://x.test'>a</a>",
    ":red[colour] **bold**",
]
HOSTILE: dict[str, list[str]] = {
    "text": [*MARKUP, "a\x00b\x1b[31mc", "x" * 20_000, "=cmd|' /C calc'!A0"],
    "name": [*MARKUP[:3], "-rf", "a\u202eb", "", "x" * 5_000],
    "path": ["/etc/passwd", "../../..", "/proc/self/environ", "a\x00b", MARKUP[0]],
}
UPLOADS = [
    ("<img src=x onerror=alert(1)>.md", b"# title\n\nsome text\n"),
    ("[a](javascript:alert(1)).md", b"\xff\xfe not utf-8 \x80"),
    ("../../outside.md", b""),
]
#: (page, input key, value or upload name) -> why it fails today, fixed by another change;
#: strict: a listed row that holds fails the test until it is taken off.
KNOWN_OPEN: dict[tuple[str, str, str], str] = {}
#: Values tried per input, rotating with the input's place (each AppTest rerun takes seconds).
SAMPLE = 3
#: What must never reach a Markdown body unescaped: it would become an element.
LIVE = re.compile(r"<img|<style|<a\s|\]\(javascript:|!\[i\]\(http|\]\(http://x\.test|:red\[")


def _key_pattern(node: ast.expr) -> str:
    declared = _declared_key(node)
    if declared is not None:
        return declared
    if isinstance(node, ast.Constant):
        return str(node.value)
    if isinstance(node, ast.JoinedStr):
        return "".join(
            str(v.value) if isinstance(v, ast.Constant) else "{" + ast.unparse(v.value) + "}"  # type: ignore[attr-defined]
            for v in node.values
        )
    return ast.unparse(node)


def _declared_key(node: ast.expr) -> str | None:
    """The key string of a key declared in evalcore_app.ui.state (``ui.state.Query.search``,
    ``state.Query.search`` or ``Query.search``), else None."""
    parts = ast.unparse(node).split(".")
    if len(parts) < 2:
        return None
    found: object = getattr(state, parts[-2], None)
    found = getattr(found, parts[-1], None) if found is not None else None
    return found.name if isinstance(found, state.Key) else None


def source_inputs() -> dict[str, str]:
    """{key: 'file:line'} of every text input, text area and file uploader in the screens."""
    found = {}
    for path in SCREENS:
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not isinstance(node, ast.Call):
                continue
            func = node.func
            name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
            if name == "bound" and node.args:  # ui.bound(st.text_input, label, key=...)
                inner = node.args[0]
                name = inner.attr if isinstance(inner, ast.Attribute) else ""
            if name not in WIDGETS:
                continue
            keys = [k.value for k in node.keywords if k.arg == "key"]
            where = f"{path.relative_to(ROOT)}:{node.lineno}"
            found[_key_pattern(keys[0]) if keys else f"(no key) {where}"] = where
    return found


def test_the_table_lists_every_input_of_every_screen():
    found = source_inputs()
    missing = sorted(f"{k} ({w})" for k, w in found.items() if k not in INPUTS)
    stale = sorted(set(INPUTS) - set(found))
    assert len(found) >= 20
    assert not missing, f"dashboard inputs the net does not list (add them to INPUTS): {missing}"
    assert not stale, f"INPUTS lists keys no screen has: {stale}"


def _listed(key: str) -> bool:
    key = key.removeprefix("w_")  # a widget drawn by ui.bound has the key w_KEY
    return key in INPUTS or any(
        "{" in k and re.fullmatch(re.sub(r"\\\{[^}]*\\\}", ".+", re.escape(k)), key) for k in INPUTS
    )


def shown(at) -> list[str]:
    """Every Markdown-rendered text the page shows."""
    parts = [e.value for kind in (at.markdown, at.caption, at.info, at.warning, at.success, at.error) for e in kind]
    parts += [e.label for e in at.metric] + [e.proto.body for e in at.get("html")]
    return [str(p) for p in parts]


def inputs_on(at) -> list:
    return [*at.text_input, *at.text_area]


@pytest.mark.parametrize("page", PAGES)
def test_every_input_on_the_page_takes_hostile_values(two_runs_net, page, monkeypatch):  # noqa: F811
    at = open_page(two_runs_net["store"], page, monkeypatch)
    no_exception(at)
    seen = [w.key for w in [*inputs_on(at), *at.file_uploader]]
    assert all(_listed(k) for k in seen if k), (
        f"inputs on {page} the net does not list: {[k for k in seen if not _listed(k)]}"
    )
    problems: list[str] = []
    fixed: list[tuple[str, str, str]] = []
    typed = [("text_input", w.key) for w in at.text_input] + [("text_area", w.key) for w in at.text_area]
    for n, (widget_kind, key) in enumerate(typed):
        plain = key.removeprefix("w_")
        kind = INPUTS.get(plain) or next(v for k, v in INPUTS.items() if "{" in k and _listed(plain))
        values = HOSTILE[kind]
        for value in [values[(n + i) % len(values)] for i in range(min(SAMPLE, len(values)))]:
            found = [w for w in getattr(at, widget_kind) if w.key == key]
            if not found:  # an earlier value changed what the page shows: the input is gone for now
                continue
            found[0].set_value(value)
            at.run()
            got = "held"
            if at.exception:
                got = f"exception {at.exception[0].value[:200]}"
            else:
                live = [t for t in shown(at) if LIVE.search(t) and value in t and LIVE.search(value)]
                if live:
                    got = f"shown live: {live[0][:200]!r}"
            record(f"dashboard net: {page} {key}={value[:40]!r}", "held", got)
            if (page, key, value) in KNOWN_OPEN:
                if got == "held":
                    fixed.append((page, key, value))
            elif got != "held":
                problems.append(f"{key}={value[:40]!r}: {got}")
    uploaders = [(u.key, u.accept_multiple_files, list(u.allowed_type or [])) for u in at.file_uploader]
    for n, (key, many, allowed) in enumerate(uploaders):
        for stem, data in [UPLOADS[(n + i) % len(UPLOADS)] for i in range(min(SAMPLE, len(UPLOADS)))]:
            found = [u for u in at.file_uploader if u.key == key]
            if not found:
                continue
            suffix = allowed[0] if allowed else ".md"  # a type the uploader takes, as a browser would send
            name = stem.removesuffix(".md") + (suffix if suffix.startswith(".") else "." + suffix)
            files = [(name, data, "text/markdown")]
            found[0].set_value(files if many else files[0])
            at.run()
            got = "held"
            if at.exception:
                got = f"exception {at.exception[0].value[:200]}"
            elif live := [t for t in shown(at) if LIVE.search(t) and stem.removesuffix(".md") in t]:
                got = f"the file's name shown live: {live[0][:150]!r}"
            record(f"dashboard net: {page} {key} upload {stem!r}", "held", got)
            if (page, key, stem) in KNOWN_OPEN:
                if got == "held":
                    fixed.append((page, key, stem))
            elif got != "held":
                problems.append(f"{key} upload {name!r}: {got}")
    assert not problems, "\n".join(problems)
    assert not fixed, f"KNOWN_OPEN rows that now hold (take them off the list): {fixed}"


# --- in a real browser ---------------------------------------------------------------------------

TYPED = (
    '<img src="x" onerror="alert(1)"> [l](http://x.test/a) ![i](http://x.test/i.png) '
    '<style>body{display:none}</style> <a href="http://x.test/b">b</a> :red[colour]'
)
UPLOADED = "<img src=x onerror=alert(1)>[l](http://x.test/c).md"
#: Elements the typed or uploaded text would have made, had any of it become markup.
PRODUCED_JS = """() => [
    ...document.querySelectorAll('img[src="x"], img[src*="x.test"], a[href*="x.test"], a[href^="javascript"]'),
    ...[...document.querySelectorAll('style')].filter(s => s.textContent.includes('display:none')),
    ...[...document.querySelectorAll('[style]')].filter(e => e.textContent.trim() === 'colour'),
].map(e => e.outerHTML.slice(0, 200))"""


@pytest.fixture(scope="module")
def served_net(two_runs_net, tmp_path_factory):  # noqa: F811
    from serving import CHROMIUM, streamlit_app

    if CHROMIUM is None:
        pytest.skip("chromium is not installed (apt-get install chromium)")
    pytest.importorskip("playwright.sync_api", reason="the playwright package is not installed")
    import shutil

    folder = tmp_path_factory.mktemp("served-net")
    store = folder / "evalcore.duckdb"
    shutil.copy(two_runs_net["store"], store)
    with streamlit_app(store, folder / "streamlit.log") as url:
        yield url


@pytest.mark.browser
def test_typed_and_uploaded_text_never_becomes_an_element(served_net):
    from serving import healthy, settled, shared_chromium, watch

    url, produced = served_net, []
    with shared_chromium() as browser:
        try:
            tab = watch(browser.new_page(viewport={"width": 1400, "height": 1000}))
            # the Query screen's search echoes what was typed
            tab.goto(f"{url}/query", wait_until="domcontentloaded")
            settled(tab)
            box = tab.get_by_label("Search queries (text or id)")
            box.fill(TYPED)
            box.press("Enter")
            settled(tab)
            healthy(tab, "query search")
            produced += [("query search", e) for e in tab.evaluate(PRODUCED_JS)]
            # a saved decision's note is shown again on the Threshold screen
            tab.goto(f"{url}/threshold", wait_until="domcontentloaded")
            settled(tab)
            tab.locator('[data-testid="stTextArea"] textarea').fill(TYPED)
            anyway = tab.locator('[data-testid="stCheckbox"]').filter(has_text="Save it anyway")
            if anyway.count():  # a t outside the claim is saved once the PM says so (the Threshold screen asks)
                anyway.first.click()
            tab.locator('[data-testid="stFormSubmitButton"] button').filter(has_text="Save t =").click()
            tab.locator('[data-testid="stAlertContentSuccess"]').first.wait_for(timeout=60_000)
            settled(tab)
            tab.reload(wait_until="domcontentloaded")
            settled(tab)
            healthy(tab, "threshold note")
            produced += [("threshold note", e) for e in tab.evaluate(PRODUCED_JS)]
            # New run names each uploaded file it cannot use
            tab.goto(f"{url}/new_run", wait_until="domcontentloaded")
            settled(tab)
            inputs = tab.locator('[data-testid="stFileUploader"] input[type="file"]')
            inputs.nth(0).set_input_files(
                files=[{"name": UPLOADED, "mimeType": "text/markdown", "buffer": b"\xff\xfe"}]
            )
            settled(tab)
            inputs.nth(1).set_input_files(
                files=[{"name": "questions.jsonl", "mimeType": "application/octet-stream", "buffer": b'{"x": 1}\n'}]
            )
            settled(tab)
            tab.get_by_role("button", name="Validate").click()
            settled(tab)
            produced += [("new run upload", e) for e in tab.evaluate(PRODUCED_JS)]
        finally:
            browser.close()
    record(
        "browser: typed and uploaded markup never becomes an element",
        "none made",
        repr(produced) if produced else "none made",
    )
    assert not produced, produced
