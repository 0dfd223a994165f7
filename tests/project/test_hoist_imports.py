"""tools/hoist_imports.py moves the imports inside functions to the module's head, once, and
refuses a move that would change what a name means."""

from __future__ import annotations

import ast
import importlib.util
import sys

from conftest import ROOT

_spec = importlib.util.spec_from_file_location("hoist_imports", ROOT / "tools" / "hoist_imports.py")
assert _spec and _spec.loader
hoist = sys.modules["hoist_imports"] = importlib.util.module_from_spec(_spec)  # its dataclasses look it up
_spec.loader.exec_module(hoist)

BANNED = ("numpy", "evalcore.retrieval.engine.kernels")

SOURCE = '''"""A module."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from evalcore.store import Store


def f(store: Store) -> object:
    """Doc."""
    import json

    from evalcore.read import queries as q
    from evalcore.store import Store

    return json, q, Store, os


def g() -> object:
    import json

    import numpy as np
    from evalcore.retrieval.engine import kernels

    return json, np, kernels


def h(replace: int) -> object:
    from dataclasses import replace

    return replace


def k() -> object:
    try:
        import zzz
    except ImportError:
        zzz = None
    return zzz
'''


def _run(path, rel="m.py", patched=frozenset()):
    result = hoist.plan(path, rel, BANNED, set(patched))
    if result.remove:
        hoist.apply(result)
    return result


def test_the_tool_moves_each_import_once_and_a_second_run_changes_nothing(tmp_path):
    path = tmp_path / "m.py"
    path.write_text(SOURCE, encoding="utf-8")
    first = _run(path)
    after = path.read_text(encoding="utf-8")
    tree = ast.parse(after)
    head = [ast.unparse(s) for s in tree.body if isinstance(s, (ast.Import, ast.ImportFrom))]
    assert head == [
        "from __future__ import annotations",
        "import os",
        "from typing import TYPE_CHECKING",
        "import json",
        "from evalcore.read import queries as q",
        "from evalcore.store import Store",
    ]
    assert "if TYPE_CHECKING" not in after  # the type checker's import became the real one
    functions = {n.name: n for n in tree.body if isinstance(n, ast.FunctionDef)}
    inside = {
        name: [ast.unparse(s) for s in ast.walk(fn) if isinstance(s, (ast.Import, ast.ImportFrom))]
        for name, fn in functions.items()
    }
    assert inside == {
        "f": [],
        "g": ["import numpy as np", "from evalcore.retrieval.engine import kernels"],  # heavy: they stay
        "h": ["from dataclasses import replace"],  # h's parameter is named replace
        "k": ["import zzz"],  # an optional import
    }
    assert ast.unparse(functions["f"].body[0]) == "'Doc.'" and len(functions["f"].body) == 2
    assert sorted(r.split(": ", 1)[1] for r in first.refused) == [
        "`from dataclasses import replace`: a function binds `replace` locally",
        "`import zzz` in an optional import (try/except ImportError)",
    ]
    again = _run(path)
    assert not again.remove and path.read_text(encoding="utf-8") == after
    assert len(again.refused) == 2


def test_the_tool_refuses_a_clash_a_relative_import_and_a_patched_name(tmp_path):
    path = tmp_path / "m.py"
    path.write_text(
        "def locator():\n    return 1\n\n\n"
        "def a():\n    from evalcore.read.citations import locator\n\n    return locator\n\n\n"
        "def b():\n    from evalcore.x import name\n\n    return name\n\n\n"
        "def c():\n    from evalcore.y import name\n\n    return name\n\n\n"
        "def d():\n    from . import sibling\n\n    return sibling\n\n\n"
        "def e():\n    from evalcore.embedding.onnx_runtime import export\n\n    return export\n",
        encoding="utf-8",
    )
    before = path.read_text(encoding="utf-8")
    result = _run(path, patched={"evalcore.embedding.onnx_runtime.export"})
    assert path.read_text(encoding="utf-8") == before
    reasons = sorted(r.split(": ", 1)[1] for r in result.refused)
    assert reasons == [
        "`from evalcore.embedding.onnx_runtime import export`: a test monkeypatches "
        "evalcore.embedding.onnx_runtime.export (read at call time)",
        "`from evalcore.read.citations import locator`: the module binds `locator` to something else",
        "`from evalcore.x import name`: `name` also imports evalcore.y.name (alias clash)",
        "`from evalcore.y import name`: `name` also imports evalcore.x.name (alias clash)",
        "relative import `from . import sibling`",
    ]


def test_the_tool_reads_the_banned_list_and_the_exempt_files_from_pyproject():
    banned = hoist.banned_modules()
    assert "torch" in banned and "numpy" in banned and "evalcore.retrieval.engine.kernels" in banned
    exempt = hoist.exempt_files()
    assert hoist.is_exempt("tests/read/test_runs.py", exempt)
    assert hoist.is_exempt("evalcore/api/__init__.py", exempt)
    assert not hoist.is_exempt("evalcore/api/app.py", exempt)
    assert "evalcore.embedding.onnx_runtime.export" in hoist.monkeypatched()
