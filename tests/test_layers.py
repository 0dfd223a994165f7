"""The layers stay apart: the library never imports Streamlit; screens hold no SQL and no
statistics; the schema lives in migration files."""

from __future__ import annotations

import ast
import pkgutil
import re
import subprocess
import sys

from conftest import ROOT

import evalcore

SCREENS = sorted((ROOT / "evalcore_app" / "screens").glob("*.py")) + [ROOT / "evalcore_app" / "app.py"]


def test_the_library_never_imports_streamlit():
    modules = [m.name for m in pkgutil.walk_packages(evalcore.__path__, "evalcore.") if m.name != "evalcore.__main__"]
    assert len(modules) > 40
    script = (
        "import importlib, sys\n"
        f"for name in {modules!r}:\n"
        "    try:\n"
        "        importlib.import_module(name)\n"
        "    except ImportError as e:\n"  # an optional extra that is not installed (e.g. ray)
        "        print('skipped', name, e, file=sys.stderr)\n"
        "print(sorted(m for m in sys.modules if m == 'streamlit' or m.startswith('streamlit.')))\n"
    )
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, cwd=ROOT, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip() == "[]", out.stdout


def _imports(path):
    """(module, names imported from it) of every import in a file."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            yield from ((a.name, ()) for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            yield node.module, tuple(a.name for a in node.names)


def test_screens_hold_no_sql_and_no_statistics():
    assert len(SCREENS) >= 9
    sql = re.compile(r"\b(SELECT|INSERT|UPDATE|DELETE|CREATE TABLE|ALTER TABLE)\b")
    for path in SCREENS:
        text = path.read_text(encoding="utf-8")
        assert not sql.search(text), f"{path.name}: SQL in a screen (it belongs in evalcore/read)"
        for forbidden in (".query(", ".execute("):
            assert forbidden not in text, f"{path.name}: {forbidden} in a screen (reads go through evalcore/read)"
        for module, names in _imports(path):
            top = module.split(".")[0]
            assert top not in {"scipy", "statsmodels", "duckdb"}, f"{path.name} imports {module}"
            if module in {"evalcore.measures.stats", "evalcore.measures.metrics", "evalcore.pipeline.scoring"}:
                # a constant (e.g. the k values offered) is fine; a function computing one is not
                assert names and all(n.isupper() for n in names), (
                    f"{path.name} imports {names} from {module}: statistics are computed in evalcore.read"
                )


def test_the_schema_lives_in_migration_files():
    # the one exception: the migration runner's own bookkeeping table, schema_migrations
    ddl = re.compile(r"\b(CREATE TABLE|ALTER TABLE|DROP TABLE)\b(?! IF NOT EXISTS schema_migrations)", re.I)
    for path in sorted((ROOT / "evalcore").rglob("*.py")):
        text = path.read_text(encoding="utf-8")
        assert not ddl.search(text), f"{path.relative_to(ROOT)}: schema outside evalcore/store/migrations"
    assert sorted(p.name for p in (ROOT / "evalcore" / "store" / "migrations").glob("*.sql"))[:1] == [
        "0001_initial.sql"
    ]
