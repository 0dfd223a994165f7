"""Collect the dashboard's message ids from the code and bring the catalogs up to date.

    python tools/i18n_catalog.py            # update evalcore/i18n/locales/*/LC_MESSAGES/evalcore.po
    python tools/i18n_catalog.py --check    # exit 1 when a catalog lacks, or has extra, msgids
                                            # or an entry is empty or fuzzy (nothing written)

A message id is the first string argument of ``_("...")``, ``N_("...")`` or ``gettext("...")``,
and the first two of ``ngettext("one", "many", n)`` (a name or an attribute, ``tr.gettext``),
in every ``.py`` file under ``evalcore/`` and ``evalcore_app/`` (read with ``ast``: an f-string
is not a message id and is reported). Translations already written are kept; a new id gets
an empty entry for a translator; an id no longer in the code is dropped. Run it after a
merge that brought new screen text, translate the empty entries, and run ``--check``.
"""

from __future__ import annotations

import argparse
import ast
import datetime
import sys
from collections.abc import Iterator
from pathlib import Path

from babel.messages.catalog import Catalog
from babel.messages.pofile import read_po, write_po

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from evalcore.i18n import DEFAULT, DOMAIN, LANGUAGES, LOCALES, po_path  # noqa: E402

SOURCES = ("evalcore", "evalcore_app")
SINGLE = {"_", "N_", "gettext"}
PLURAL = {"ngettext"}
Key = str | tuple[str, str]
STAMP = datetime.datetime(2026, 12, 4, tzinfo=datetime.UTC)  # fixed: a re-run changes no header


def _name(func: ast.expr) -> str | None:
    if isinstance(func, ast.Name):
        return func.id
    if isinstance(func, ast.Attribute):
        return func.attr
    return None


def _calls(path: Path) -> Iterator[tuple[Key | None, int]]:
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        name = _name(node.func)
        count = 1 if name in SINGLE else 2 if name in PLURAL else 0
        if not count:
            continue
        args = node.args[:count]
        if len(args) == count and all(isinstance(a, ast.Constant) and isinstance(a.value, str) for a in args):
            values = [a.value for a in args]  # type: ignore[attr-defined]
            yield (values[0] if count == 1 else (values[0], values[1])), node.lineno
        elif any(isinstance(a, ast.JoinedStr | ast.BinOp) for a in args):  # a wrapper passing a name is fine
            yield None, node.lineno


def extract(root: Path = ROOT) -> tuple[dict[Key, list[tuple[str, int]]], list[str]]:
    """The message ids in the code with where each is used, and the calls whose arguments are
    not plain strings (``_(f"...")``: no message id can be read from them)."""
    found: dict[Key, list[tuple[str, int]]] = {}
    problems: list[str] = []
    for source in SOURCES:
        for path in sorted((root / source).rglob("*.py")):
            rel = path.relative_to(root).as_posix()
            for key, line in _calls(path):
                if key is None:
                    problems.append(f"{rel}:{line}: the message is not a plain string literal")
                elif key:
                    found.setdefault(key, []).append((rel, line))
    return found, problems


def template(found: dict[Key, list[tuple[str, int]]]) -> Catalog:
    cat = Catalog(domain=DOMAIN, project="evalcore", fuzzy=False, creation_date=STAMP)
    for key, where in sorted(found.items(), key=lambda kv: (kv[1][0], str(kv[0]))):
        cat.add(key, locations=where)
    return cat


def read(lang: str) -> Catalog:
    path = po_path(lang)
    if path.is_file():
        with path.open("rb") as handle:
            return read_po(handle, locale=lang, domain=DOMAIN)
    return Catalog(locale=lang, domain=DOMAIN, project="evalcore", fuzzy=False, creation_date=STAMP)


def problems_of(cat: Catalog, found: dict[Key, list[tuple[str, int]]], lang: str) -> list[str]:
    """What keeps ``lang``'s catalog from matching the code: missing, extra, empty or fuzzy."""
    have = {m.id for m in cat if m.id}
    out = [f"{lang}: missing msgid {k!r}" for k in found if k not in have]
    out += [f"{lang}: msgid {k!r} is no longer in the code" for k in have if k not in found]
    for m in cat:
        if not m.id:
            continue
        strings = m.string if isinstance(m.string, tuple | list) else (m.string,)
        if m.fuzzy or not all(strings):
            out.append(f"{lang}: msgid {m.id!r} is {'fuzzy' if m.fuzzy else 'untranslated'}")
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true", help="check only; write nothing")
    args = parser.parse_args(argv)
    found, problems = extract()
    for problem in problems:
        print(problem, file=sys.stderr)
    langs = [lang for lang in LANGUAGES if lang != DEFAULT]
    if args.check:
        bad = [p for lang in langs for p in problems_of(read(lang), found, lang)] + problems
        for line in bad:
            print(line)
        print(f"{len(found)} msgids; {len(bad)} problems")
        return 1 if bad else 0
    pot = template(found)
    LOCALES.mkdir(parents=True, exist_ok=True)
    with (LOCALES / f"{DOMAIN}.pot").open("wb") as handle:
        write_po(handle, pot, width=100, omit_header=False, include_lineno=False)
    for lang in langs:
        cat = read(lang)
        cat.update(pot, no_fuzzy_matching=True, update_header_comment=False)
        path = po_path(lang)
        path.parent.mkdir(parents=True, exist_ok=True)
        with path.open("wb") as handle:
            write_po(handle, cat, width=100, ignore_obsolete=True, include_previous=False, include_lineno=False)
        left = sum(1 for m in cat if m.id and not all(m.string if isinstance(m.string, tuple) else (m.string,)))
        print(f"{path.relative_to(ROOT)}: {len(found)} msgids, {left} to translate")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
