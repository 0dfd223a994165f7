"""Move the imports that sit inside functions to the head of their module (ruff's PLC0415).

    python tools/hoist_imports.py [--check] [--no-ruff] [PATH ...]

PATH defaults to evalcore, evalcore_app, tools and examples. For every module the tool parses it
with ``ast`` and moves each ``import x`` / ``from x import y`` found inside a function to the
module's head, once (an import the head already holds is only deleted from the function). It
leaves alone:

- the modules that load inside functions by design: ``banned-module-level-imports`` in
  pyproject.toml (the heavy optional dependencies and the numeric stack; ruff's TID253 keeps
  them out of a module's head), read from there;
- ``from __future__``, imports under ``if TYPE_CHECKING:``, the lazy front door (``__getattr__``
  of a package ``__init__.py``), and a line marked noqa for PLC0415 (with its reason);
- the files for which pyproject.toml's ``per-file-ignores`` turn PLC0415 off (a package
  ``__init__`` that must stay light because every import of its modules runs it; tests/);
- the imports of :data:`MANUAL` (moved by hand, each with its reason).

It refuses, and reports, a move that would change what a name means: a hoisted name that the
module already binds to something else, or that some function binds locally (a parameter, an
assignment, a loop variable: F811/F823/F402-style); two imports binding one name to different
things (an alias clash); a relative or star import; an import inside a class body or inside a
``try`` that catches ImportError (an optional import); a ``from M import N`` whose ``M.N`` a test
monkeypatches (the function reads it at call time); a module whose head changes ``sys.path``
before its imports (a script).

Sorting and merging is left to ruff: the tool runs ``ruff check --fix --select I,F401`` and
``ruff format`` on the files it changed (``--no-ruff`` skips that). The tool is deterministic and
idempotent: a second run changes nothing. Exit status: 0 when nothing was refused, 1 when some
moves were refused (listed on stdout, to do by hand), and with ``--check`` 1 when anything would
move (nothing is written).
"""

from __future__ import annotations

import argparse
import ast
import fnmatch
import subprocess
import sys
import tomllib
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_PATHS = ("evalcore", "evalcore_app", "tools", "examples")

#: imports the tool must not move, done by hand: (file, module imported) -> why. The tool's other
#: refusals, done by hand in the same way (commit "imports: the hoists tools/hoist_imports.py
#: refuses, by hand"): a name clash gets an alias at the head (api/deployments.py's
#: get_deployment, read/traffic/stored.py's gate_values) or the head's existing alias
#: (read/queries.py's locator is cite); a script that puts the repository on sys.path imports
#: after it, marked noqa for E402 (tools/compare_runs.py).
MANUAL: dict[tuple[str, str], str] = {
    ("evalcore/inputs/extractors/bounded.py", "resource"): (
        "POSIX only: the head imports it behind `if sys.platform != 'win32'` (the child runs on POSIX only)"
    ),
}

FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)
SCOPES = (*FUNCTIONS, ast.ClassDef, ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)


def _lint(root: Path) -> dict[str, Any]:
    lint: dict[str, Any] = tomllib.loads((root / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["ruff"]["lint"]
    return lint


def banned_modules(root: Path = ROOT) -> tuple[str, ...]:
    """pyproject.toml's ``banned-module-level-imports``: the modules that load inside functions."""
    return tuple(_lint(root)["flake8-tidy-imports"]["banned-module-level-imports"])


def exempt_files(root: Path = ROOT) -> tuple[str, ...]:
    """The patterns of pyproject.toml's ``per-file-ignores`` that turn PLC0415 off (a lazy package
    ``__init__``, tests/): the tool leaves those files alone. A negated pattern (``!...``) is
    read as nothing."""
    ignores = _lint(root).get("per-file-ignores", {})
    return tuple(sorted(p for p, rules in ignores.items() if "PLC0415" in rules and not p.startswith("!")))


def is_exempt(rel: str, patterns: tuple[str, ...]) -> bool:
    """``rel`` matches a per-file-ignores pattern (``*`` and ``**`` match across folders here)."""
    return any(fnmatch.fnmatchcase(rel, p.replace("**", "*")) for p in patterns)


def is_banned(module: str, banned: tuple[str, ...]) -> bool:
    return any(module == b or module.startswith(b + ".") for b in banned)


def monkeypatched(root: Path = ROOT) -> set[str]:
    """``module.attr`` of every ``monkeypatch.setattr(X, "attr", ...)`` in tests/ whose X is a
    name the test file imported (or a dotted string target): a function that imports such an
    attribute reads it when called, so it stays where it is."""
    found: set[str] = set()
    for path in sorted((root / "tests").rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        names: dict[str, str] = {}
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                for a in node.names:
                    names[a.asname or a.name.split(".")[0]] = a.name if a.asname else a.name.split(".")[0]
            elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
                for a in node.names:
                    names[a.asname or a.name] = f"{node.module}.{a.name}"
        for node in ast.walk(tree):
            if not (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and node.func.attr == "setattr"
                and node.args
            ):
                continue
            first = node.args[0]
            if isinstance(first, ast.Constant) and isinstance(first.value, str):
                found.add(first.value)
            elif len(node.args) >= 2 and isinstance(node.args[1], ast.Constant) and isinstance(node.args[1].value, str):
                dotted = _dotted(first)
                if dotted:
                    head, _, rest = dotted.partition(".")
                    base = names.get(head, head) + (f".{rest}" if rest else "")
                    found.add(f"{base}.{node.args[1].value}")
    return found


def _dotted(node: ast.expr) -> str | None:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute) and (base := _dotted(node.value)):
        return f"{base}.{node.attr}"
    return None


@dataclass(frozen=True)
class Binding:
    """One name an import binds: ``name`` in the module, ``target`` what it means (the dotted
    path of the module or attribute), ``text`` the import statement of that one name."""

    name: str
    target: str
    text: str


def bindings(node: ast.Import | ast.ImportFrom) -> Iterator[tuple[ast.alias, Binding]]:
    if isinstance(node, ast.Import):
        for a in node.names:
            if a.asname:
                yield a, Binding(a.asname, a.name, f"import {a.name} as {a.asname}")
            else:
                yield a, Binding(a.name.split(".")[0], a.name.split(".")[0], f"import {a.name}")
    else:
        for a in node.names:
            text = f"from {node.module} import {a.name}" + (f" as {a.asname}" if a.asname else "")
            yield a, Binding(a.asname or a.name, f"{node.module}.{a.name}", text)


def _is_type_checking(node: ast.AST) -> bool:
    if not isinstance(node, ast.If):
        return False
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _catches_import_error(node: ast.Try) -> bool:
    for handler in node.handlers:
        caught = handler.type
        names = caught.elts if isinstance(caught, ast.Tuple) else [caught] if caught else []
        if not names or any(isinstance(n, ast.Name) and n.id in {"ImportError", "ModuleNotFoundError"} for n in names):
            return True
    return False


@dataclass
class Found:
    """What one module holds: its imports inside functions, and every other binding."""

    inner: list[tuple[ast.Import | ast.ImportFrom, list[str]]] = field(default_factory=list)  # (node, context)
    top_imports: dict[str, set[str]] = field(default_factory=dict)  # name -> targets (runtime)
    top_texts: set[str] = field(default_factory=set)  # the import statements at the head, one name each
    typing_imports: dict[str, list[tuple[ast.ImportFrom | ast.Import, ast.alias, str]]] = field(default_factory=dict)
    top_other: set[str] = field(default_factory=set)  # names the module binds otherwise
    local: set[str] = field(default_factory=set)  # names some function binds otherwise


class Collector(ast.NodeVisitor):
    def __init__(self, front_door: bool) -> None:
        self.found = Found()
        self.stack: list[ast.AST] = []  # the enclosing scopes
        self.context: list[str] = []  # why an import may not move (class body, optional import...)
        self.front_door = front_door
        self.typing = 0

    # -- where we are
    def _in_function(self) -> bool:
        return any(isinstance(s, FUNCTIONS) for s in self.stack)

    def _at_module(self) -> bool:
        return not self.stack

    def _bind(self, name: str) -> None:
        if self._at_module():
            self.found.top_other.add(name)
        elif self._in_function() or not isinstance(self.stack[-1], ast.ClassDef):
            self.found.local.add(name)  # a class body's names are attributes: no clash

    def _scope(self, node: ast.AST) -> None:
        self.stack.append(node)
        self.generic_visit(node)
        self.stack.pop()

    # -- scopes
    def visit_FunctionDef(self, node: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
        self._bind(node.name)
        for d in node.decorator_list:
            self.visit(d)
        for default in [*node.args.defaults, *node.args.kw_defaults]:
            if default is not None:
                self.visit(default)
        lazy = self.front_door and self._at_module() and node.name in {"__getattr__", "__dir__"}
        self.stack.append(node)
        for a in [*node.args.posonlyargs, *node.args.args, *node.args.kwonlyargs, node.args.vararg, node.args.kwarg]:
            if a is not None:
                self.found.local.add(a.arg)
        outer, self.context = self.context, ["in the lazy front door"] if lazy else []
        for stmt in node.body:
            self.visit(stmt)
        self.context = outer
        self.stack.pop()

    visit_AsyncFunctionDef = visit_FunctionDef

    def visit_Lambda(self, node: ast.Lambda) -> None:
        for a in [*node.args.posonlyargs, *node.args.args, *node.args.kwonlyargs, node.args.vararg, node.args.kwarg]:
            if a is not None:
                self.found.local.add(a.arg)
        self._scope(node)

    def visit_ClassDef(self, node: ast.ClassDef) -> None:
        self._bind(node.name)
        self.context.append("in a class body")
        self._scope(node)
        self.context.pop()

    def _comprehension(self, node: ast.AST) -> None:
        self._scope(node)

    visit_ListComp = visit_SetComp = visit_DictComp = visit_GeneratorExp = _comprehension

    def visit_comprehension(self, node: ast.comprehension) -> None:
        for name in ast.walk(node.target):
            if isinstance(name, ast.Name):
                self.found.local.add(name.id)  # a comprehension variable: its own scope, still a shadow
        self.visit(node.iter)
        for cond in node.ifs:
            self.visit(cond)

    # -- blocks that make an import special
    def visit_If(self, node: ast.If) -> None:
        if _is_type_checking(node):
            self.typing += 1
            for stmt in node.body:
                self.visit(stmt)
            self.typing -= 1
            for stmt in node.orelse:
                self.visit(stmt)
        else:
            self.generic_visit(node)

    def visit_Try(self, node: ast.Try) -> None:
        optional = _catches_import_error(node)
        if optional:
            self.context.append("in an optional import (try/except ImportError)")
        for stmt in node.body:
            self.visit(stmt)
        if optional:
            self.context.pop()
        for part in (*node.handlers, *node.orelse, *node.finalbody):
            self.visit(part)

    visit_TryStar = visit_Try  # type: ignore[assignment]

    # -- bindings
    def visit_Name(self, node: ast.Name) -> None:
        if isinstance(node.ctx, (ast.Store, ast.Del)):
            self._bind(node.id)

    def visit_ExceptHandler(self, node: ast.ExceptHandler) -> None:
        if node.name:
            self._bind(node.name)
        self.generic_visit(node)

    def visit_Global(self, node: ast.Global) -> None:
        for name in node.names:
            self.found.local.add(name)  # a function that rebinds a module name

    def visit_Nonlocal(self, node: ast.Nonlocal) -> None:
        for name in node.names:
            self.found.local.add(name)

    def visit_MatchAs(self, node: ast.MatchAs) -> None:
        if node.name:
            self._bind(node.name)
        self.generic_visit(node)

    def visit_MatchStar(self, node: ast.MatchStar) -> None:
        if node.name:
            self._bind(node.name)

    def _import(self, node: ast.Import | ast.ImportFrom) -> None:
        relative = isinstance(node, ast.ImportFrom) and (node.level > 0 or node.module == "__future__")
        if self.typing:  # names for the type checker only: one a hoist may replace
            if self._at_module() and not relative:
                for a, b in bindings(node):
                    self.found.typing_imports.setdefault(b.name, []).append((node, a, b.target))
        elif not self._at_module():
            self.found.inner.append((node, [*self.context]))
        elif relative:
            self.found.top_other.update(a.asname or a.name for a in node.names)
        else:
            for _, b in bindings(node):
                self.found.top_imports.setdefault(b.name, set()).add(b.target)
                self.found.top_texts.add(b.text)

    visit_Import = visit_ImportFrom = _import


@dataclass
class Plan:
    path: Path
    hoist: list[str] = field(default_factory=list)  # import statements for the head
    remove: dict[int, tuple[ast.Import | ast.ImportFrom, list[ast.alias]]] = field(default_factory=dict)
    typing_remove: list[tuple[ast.Import | ast.ImportFrom, ast.alias]] = field(default_factory=list)
    refused: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    kept: int = 0


def _noqa(lines: list[str], node: ast.stmt) -> bool:
    end = node.end_lineno or node.lineno
    return any("noqa: PLC0415" in lines[i - 1] for i in range(node.lineno, end + 1))


def _changes_sys_path(tree: ast.Module) -> bool:
    return any(
        isinstance(stmt, ast.Expr) and "sys.path" in ast.unparse(stmt) for stmt in tree.body
    )  # a script that puts the repository on sys.path before its imports


def plan(path: Path, rel: str, banned: tuple[str, ...], patched: set[str]) -> Plan:
    source = path.read_text(encoding="utf-8")
    lines = source.splitlines()
    tree = ast.parse(source)
    collector = Collector(front_door=path.name == "__init__.py")
    collector.visit(tree)
    found = collector.found
    result = Plan(path)

    candidates: list[tuple[ast.Import | ast.ImportFrom, ast.alias, Binding]] = []
    inner_targets: dict[str, set[str]] = {}
    for node, context in found.inner:
        if isinstance(node, ast.ImportFrom) and node.module == "__future__":
            continue
        for _, b in bindings(node) if not (isinstance(node, ast.ImportFrom) and node.level) else ():
            inner_targets.setdefault(b.name, set()).add(b.target)
        where = f"{rel}:{node.lineno}"
        module = node.module if isinstance(node, ast.ImportFrom) else None
        if "in the lazy front door" in context:
            continue
        if isinstance(node, ast.ImportFrom) and node.level:
            result.refused.append(f"{where}: relative import `{ast.unparse(node)}`")
            continue
        for a, b in bindings(node):
            imported = module or a.name
            if is_banned(imported, banned) or (module and is_banned(b.target, banned)):
                continue  # a heavy module, or one imported from its package (``from a import kernels``)
            if _noqa(lines, node):
                result.kept += 1
                continue
            why = MANUAL.get((rel, imported))
            if why:
                result.refused.append(f"{where}: `{b.text}`: manual ({why})")
            elif a.name == "*":
                result.refused.append(f"{where}: star import `{ast.unparse(node)}`")
            elif context:
                result.refused.append(f"{where}: `{b.text}` {context[-1]}")
            elif module and b.target in patched:
                result.refused.append(f"{where}: `{b.text}`: a test monkeypatches {b.target} (read at call time)")
            else:
                candidates.append((node, a, b))
    if candidates and _changes_sys_path(tree):
        result.refused += [f"{rel}:{n.lineno}: `{b.text}`: the head changes sys.path first" for n, _, b in candidates]
        candidates = []

    for node, a, b in candidates:
        where = f"{rel}:{node.lineno}"
        if inner_targets.get(b.name, set()) | found.top_imports.get(b.name, set()) != {b.target}:
            others = sorted((inner_targets.get(b.name, set()) | found.top_imports.get(b.name, set())) - {b.target})
            result.refused.append(f"{where}: `{b.text}`: `{b.name}` also imports {', '.join(others)} (alias clash)")
        elif b.name in found.top_other:
            result.refused.append(f"{where}: `{b.text}`: the module binds `{b.name}` to something else")
        elif b.name in found.local:
            result.refused.append(f"{where}: `{b.text}`: a function binds `{b.name}` locally")
        elif any(t != b.target for _, _, t in found.typing_imports.get(b.name, [])):
            result.refused.append(f"{where}: `{b.text}`: `{b.name}` means something else under TYPE_CHECKING")
        else:
            result.remove.setdefault(id(node), (node, []))[1].append(a)
            if b.text not in found.top_texts and b.text not in result.hoist:
                result.hoist.append(b.text)
            for typing_node, typing_alias, _ in found.typing_imports.get(b.name, []):
                if (typing_node, typing_alias) not in result.typing_remove:
                    result.typing_remove.append((typing_node, typing_alias))
    # a comment on the lines above a moved import may explain why it was inside: say so
    for node, _ in result.remove.values():
        above = lines[node.lineno - 2].strip() if node.lineno >= 2 else ""
        if above.startswith("#"):
            result.notes.append(f"{rel}:{node.lineno - 1}: a comment above a moved import: {above}")
    return result


def _statement_text(node: ast.Import | ast.ImportFrom, keep: list[ast.alias]) -> str:
    if isinstance(node, ast.Import):
        return ast.unparse(ast.Import(names=keep))
    return ast.unparse(ast.ImportFrom(module=node.module, names=keep, level=node.level))


def _is_docstring(stmt: ast.stmt) -> bool:
    return isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant) and isinstance(stmt.value.value, str)


def _head_line(tree: ast.Module, lines: list[str]) -> int:
    """The line after which the hoisted imports go: after the last import of the module's head
    (the docstring, ``from __future__``, imports, ``if TYPE_CHECKING:`` and optional-import
    blocks that open the module), or after the docstring when the head has no import."""
    after = 0
    for i, stmt in enumerate(tree.body):
        if i == 0 and isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant):
            after = stmt.end_lineno or stmt.lineno
        elif isinstance(stmt, (ast.Import, ast.ImportFrom)):
            after = stmt.end_lineno or stmt.lineno
        elif _is_type_checking(stmt) or (isinstance(stmt, ast.Try) and _catches_import_error(stmt)):
            continue
        else:
            break
    if not after:  # no docstring, no import: after the opening comments (a #! line)
        while after < len(lines) and lines[after].startswith("#"):
            after += 1
    return after


def apply(result: Plan) -> None:
    """Write the plan into its file."""
    source = result.path.read_text(encoding="utf-8")
    lines = source.splitlines(keepends=True)
    tree = ast.parse(source)
    parents = {id(child): parent for parent in ast.walk(tree) for child in ast.iter_child_nodes(parent)}
    at = {(n.lineno, n.col_offset): n for n in ast.walk(tree) if isinstance(n, (ast.Import, ast.ImportFrom))}
    # every statement that loses names: (line, column) -> the names it loses
    losing: dict[tuple[int, int], list[tuple[str, str | None]]] = {}
    for node, moved in result.remove.values():
        losing.setdefault((node.lineno, node.col_offset), []).extend((a.name, a.asname) for a in moved)
    for node, alias in result.typing_remove:
        losing.setdefault((node.lineno, node.col_offset), []).append((alias.name, alias.asname))
    edits: dict[int, tuple[int, list[str]]] = {}  # first line -> (last line, replacement), 1-based
    emptied: set[int] = set()  # the statements removed whole
    for key in sorted(losing):
        node = at[key]
        first, last = node.lineno, node.end_lineno or node.lineno
        if ";" in lines[first - 1][node.col_offset :] or lines[first - 1][: node.col_offset].strip():
            raise SystemExit(f"{result.path}:{first}: a statement shares its line: move it by hand")
        keep = [a for a in node.names if (a.name, a.asname) not in losing[key]]
        indent = lines[first - 1][: node.col_offset]
        edits[first] = (last, [f"{indent}{_statement_text(node, keep)}\n"] if keep else [])
        if not keep:
            emptied.add(id(node))
    # a block left empty keeps a `pass`; an `if TYPE_CHECKING:` left empty goes whole
    for parent in {id(parents[id(at[k])]): parents[id(at[k])] for k in losing}.values():
        for body_name in ("body", "orelse", "finalbody"):
            body = getattr(parent, body_name, None)
            if not isinstance(body, list) or not body or not all(id(s) in emptied for s in body):
                continue
            if isinstance(parent, ast.If) and _is_type_checking(parent) and body_name == "body" and not parent.orelse:
                for s in body:
                    edits.pop(s.lineno)
                edits[parent.lineno] = (parent.end_lineno or parent.lineno, [])
            else:
                indent = lines[body[0].lineno - 1][: body[0].col_offset]
                edits[body[0].lineno] = (edits[body[0].lineno][0], [f"{indent}pass\n"])
    # imports that opened a body (after its docstring) leave no blank line behind them
    for parent in {id(parents[id(at[k])]): parents[id(at[k])] for k in losing}.values():
        for body_name in ("body", "orelse", "finalbody"):
            body = getattr(parent, body_name, None)
            if not isinstance(body, list):
                continue
            i = 1 if body and _is_docstring(body[0]) and not isinstance(parent, ast.Module) else 0
            opening = []
            while i < len(body) and id(body[i]) in emptied:
                opening.append(body[i])
                i += 1
            if opening and i < len(body):
                end = opening[-1].end_lineno or opening[-1].lineno
                if end < len(lines) and not lines[end].strip() and end + 1 not in edits:
                    edits[opening[-1].lineno] = (end + 1, edits[opening[-1].lineno][1])
    head = _head_line(tree, lines)
    block = [f"{text}\n" for text in result.hoist]
    if block and not any(
        isinstance(s, (ast.Import, ast.ImportFrom)) and (s.end_lineno or s.lineno) == head for s in tree.body
    ):
        block = ["\n", *block, "\n"]  # after the docstring (or the opening comments)
    # from the bottom up, so that each edit's line numbers still hold; the head's block goes in
    # after the edits below it and before those above it (an `if TYPE_CHECKING:` among the imports)
    changes = [(first, 1, last, new) for first, (last, new) in edits.items()] + [(head + 1, 0, head, block)]
    for first, _, last, new in sorted(changes, reverse=True):
        lines[first - 1 : last] = new
    result.path.write_text("".join(lines), encoding="utf-8")


def files(paths: list[str]) -> list[tuple[Path, str]]:
    found = []
    for name in paths:
        path = (ROOT / name).resolve()
        for file in [path] if path.is_file() else sorted(path.rglob("*.py")):
            if "__pycache__" in file.parts or "fixtures" in file.parts:
                continue
            found.append((file, file.relative_to(ROOT).as_posix()))
    return sorted(set(found))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("paths", nargs="*", default=list(DEFAULT_PATHS))
    parser.add_argument("--check", action="store_true", help="write nothing; exit 1 when anything would move")
    parser.add_argument("--no-ruff", action="store_true", help="do not run ruff's import sorting and format")
    args = parser.parse_args(argv)
    banned, patched, exempt = banned_modules(), monkeypatched(), exempt_files()
    changed: list[str] = []
    refused: list[str] = []
    notes: list[str] = []
    moved = kept = 0
    for path, rel in files(args.paths):
        if is_exempt(rel, exempt):
            continue
        result = plan(path, rel, banned, patched)
        refused += result.refused
        notes += result.notes
        kept += result.kept
        count = sum(len(m) for _, m in result.remove.values())
        if count:
            moved += count
            changed.append(rel)
            if not args.check:
                apply(result)
    if changed and not args.check and not args.no_ruff:
        ruff = [sys.executable, "-m", "ruff"]
        subprocess.run([*ruff, "check", "--quiet", "--fix", "--select", "I,F401", *changed], cwd=ROOT, check=False)
        subprocess.run([*ruff, "format", "--quiet", *changed], cwd=ROOT, check=True)
    verb = "would move" if args.check else "moved"
    print(f"{verb} {moved} imports in {len(changed)} files; {kept} kept with a noqa; {len(refused)} refused")
    for line in notes:
        print(f"note: {line}")
    for line in refused:
        print(f"refused: {line}")
    return 1 if refused or (args.check and moved) else 0


if __name__ == "__main__":
    raise SystemExit(main())
