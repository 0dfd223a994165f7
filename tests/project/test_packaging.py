"""evalcore as a package: the lock and the ranges agree, one version, the dashboard's settings,
extras that are missing say so, and the wheel installed into a fresh environment works from
another folder (the command, the demo, the dashboard, the import).

The installed-wheel test builds the wheel from this tree with pip (as ``pip install <repo>``
does), installs it into a fresh virtual environment that sees the packages of the
interpreter running the tests (a ``.pth`` file naming its site folders, so the locked
dependencies already installed are reused: nothing is downloaded, ``--no-index``), and runs
everything from a temporary folder with no PYTHONPATH, so only the installed copy can answer.
The running interpreter may itself be a virtual environment, a conda env or a system
Python: ``--system-site-packages`` would see only the base interpreter's packages of a
virtual environment, not the ones installed into it.
"""

from __future__ import annotations

import importlib.util
import ipaddress
import json
import os
import re
import subprocess
import sys
import sysconfig
import tomllib
import urllib.request
from pathlib import Path

import pytest
from conftest import ROOT
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name
from serving import CHROMIUM, free_port, healthy, settled, shared_chromium, stop, wait_healthy, watch

import evalcore
from evalcore.cli import main
from evalcore.cli.dashboard import SETTINGS, command
from evalcore.inputs import corpus
from evalcore.store.migrate import schema_version

PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))


def locked() -> dict[str, str]:
    """requirements.txt: canonical name -> the exact version pinned."""
    out = {}
    for n, line in enumerate((ROOT / "requirements.txt").read_text(encoding="utf-8").splitlines(), 1):
        line = line.split("#", 1)[0].strip()
        if not line:
            continue
        req = Requirement(line)
        pins = [s for s in req.specifier if s.operator == "=="]
        assert len(pins) == 1 and len(req.specifier) == 1, f"requirements.txt line {n}: {line!r} is not an exact pin"
        out[canonicalize_name(req.name)] = pins[0].version
    return out


def declared() -> dict[str, list[Requirement]]:
    """pyproject.toml: where ("dependencies", an extra, "build-system") -> its requirements,
    without the extras that only name evalcore's own extras."""
    project = PYPROJECT["project"]
    groups = {"dependencies": project["dependencies"], "build-system": PYPROJECT["build-system"]["requires"]}
    groups.update(project["optional-dependencies"])
    return {
        where: [r for r in map(Requirement, reqs) if canonicalize_name(r.name) != "evalcore"]
        for where, reqs in groups.items()
    }


def test_every_range_admits_its_locked_version_and_every_dependency_is_locked():
    lock = locked()
    problems = []
    for where, reqs in declared().items():
        for req in reqs:
            name = canonicalize_name(req.name)
            if name not in lock:
                problems.append(f"{where}: {req} is not pinned in requirements.txt")
            elif not req.specifier.contains(lock[name], prereleases=True):
                problems.append(f"{where}: {req} does not admit the locked {name}=={lock[name]}")
            elif not req.specifier or all(s.operator in (">=", ">") for s in req.specifier):
                problems.append(f"{where}: {req} has no upper bound")
    assert not problems, "\n".join(problems)
    # the torch range admits the CPU wheel the README and CI install first
    torch = next(r for r in declared()["dependencies"] if r.name == "torch")
    assert torch.specifier.contains("2.13.0")


def test_every_locked_package_is_declared_and_runtime_dependencies_stay_lean():
    where = {canonicalize_name(r.name): group for group, reqs in declared().items() for r in reqs}
    assert not sorted(set(locked()) - set(where)), "locked in requirements.txt but declared nowhere in pyproject.toml"
    # a plain install carries no test runner, browser driver, linter or optional engine
    optional = {
        "pypdfium2",
        "lxml",
        "ray",
        "openvino",
        "onnxruntime",
        "onnx",
        "onnxscript",
        "pytest",
        "playwright",
        "ruff",
        "mypy",
        "hypothesis",
        "ranx",
    }
    assert not optional & {canonicalize_name(r.name) for r in declared()["dependencies"]}


def test_the_version_has_one_source_and_the_changelog_names_it(capsys):
    project = PYPROJECT["project"]
    assert "version" not in project and "version" in project["dynamic"]
    assert PYPROJECT["tool"]["hatch"]["version"]["path"] == "evalcore/__init__.py"
    with pytest.raises(SystemExit) as exc:
        main(["--version"])
    assert exc.value.code == 0
    assert capsys.readouterr().out.strip() == f"evalcore {evalcore.__version__}"
    changelog = (ROOT / "CHANGELOG.md").read_text(encoding="utf-8")
    newest = re.search(r"^## (\d+\.\d+\.\d+)\n+Store schema version (\d+)", changelog, re.M)
    assert newest, "CHANGELOG.md's newest entry does not start with its store schema version"
    assert newest.group(1) == evalcore.__version__, "CHANGELOG.md's newest entry is not this version"
    # changes not released yet may raise the schema: the Unreleased entry then names it first
    unreleased = re.search(r"^## Unreleased\n+Store schema version (\d+)", changelog, re.M)
    named = int(unreleased.group(1)) if unreleased else int(newest.group(2))
    assert named == schema_version(), "CHANGELOG.md names another schema version than the store writes"


def test_the_dashboard_command_passes_the_clones_streamlit_settings():
    config = tomllib.loads((ROOT / ".streamlit" / "config.toml").read_text(encoding="utf-8"))
    flat = {
        f"{section}.{key}": str(value).lower() if isinstance(value, bool) else str(value)
        for section, values in config.items()
        for key, value in values.items()
    }
    assert flat == SETTINGS
    argv = command(port=8600, address="127.0.0.1", browser=False)
    options = dict(zip(argv[5::2], argv[6::2], strict=True))
    assert argv[1:4] == ["-m", "streamlit", "run"] and Path(argv[4]) == ROOT / "evalcore_app" / "app.py"
    for name, value in SETTINGS.items():
        assert options[f"--{name}"] == value
    assert options["--server.port"] == "8600" and options["--server.headless"] == "true"


def test_a_bad_port_is_one_line_and_exit_2(capsys):
    assert main(["dashboard", "--port", "70000", "--headless"]) == 2
    err = capsys.readouterr().err
    assert err == "error: --port must be an integer in [1, 65535]; got '70000'\n"


@pytest.mark.parametrize("module, suffix, extra", [("pypdfium2", ".pdf", "pdf"), ("lxml", ".html", "html")])
def test_a_document_whose_extra_is_not_installed_fails_saying_which_extra(module, suffix, extra, tmp_path, monkeypatch):
    """The library really cannot be imported (None in sys.modules makes ``import`` raise
    ModuleNotFoundError); the file becomes a failed document, the rest of the corpus loads."""
    (tmp_path / "guide.md").write_text("# Guide\n\n## Install\n\nRun the installer.\n", encoding="utf-8")
    (tmp_path / f"manual{suffix}").write_bytes(b"%PDF-1.4\n" if suffix == ".pdf" else b"<html><p>hi</p></html>")
    for name in [m for m in sys.modules if m == module or m.startswith(module + ".")] + [module]:
        monkeypatch.setitem(sys.modules, name, None)
    loaded = corpus.load_corpus(tmp_path)
    assert [d.doc_id for d in loaded.documents] == ["guide"]
    (failed,) = loaded.failed
    assert failed.path == f"manual{suffix}"
    assert failed.reason == (
        f'reading {extra.upper()} needs {module}, which is not installed: pip install "evalcore[{extra}]"'
    )


# ----------------------------------------------------------------------- the installed wheel


def _listening(port: int) -> set[str]:
    """The local addresses of the sockets listening on TCP ``port`` (Linux /proc/net)."""
    found = set()
    for table in ("tcp", "tcp6"):
        path = Path("/proc/net") / table
        if not path.exists():
            continue
        for line in path.read_text().splitlines()[1:]:
            local, state = line.split()[1], line.split()[3]
            address, hex_port = local.split(":")
            if int(hex_port, 16) != port or state != "0A":  # 0A: LISTEN
                continue
            raw = bytes.fromhex(address)
            words = b"".join(raw[i : i + 4][::-1] for i in range(0, len(raw), 4))  # host byte order per word
            found.add(str(ipaddress.ip_address(words)))
    return found


def _package_folders() -> list[str]:
    """The folders the running interpreter imports third-party packages from (a venv's, a
    conda env's or a system Python's site folders, the user site, PYTHONPATH), in its order:
    sys.path without the standard library and without this repository's folders (pytest's
    ``pythonpath``); a venv made inside the clone (``.venv``) is kept."""
    paths = sysconfig.get_paths()
    stdlib = {Path(paths[key]).resolve() for key in ("stdlib", "platstdlib")}
    folders = []
    for entry in sys.path:
        if not entry or not Path(entry).is_dir():
            continue  # '' (the current folder) and zipped standard libraries
        folder = Path(entry).resolve()
        if folder in stdlib or folder.parent in stdlib and folder.name == "lib-dynload":
            continue
        if folder in (ROOT, ROOT / "tests") or str(folder) in folders:
            continue
        folders.append(str(folder))
    return folders


@pytest.fixture(scope="module")
def installed(tmp_path_factory):
    """(venv python, venv bin folder, a working folder outside the repository, env)."""
    base = tmp_path_factory.mktemp("installed")
    build = subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--no-build-isolation",
            "--no-deps",
            "--no-index",
            "--disable-pip-version-check",
            "-q",
            "-w",
            str(base / "dist"),
            str(ROOT),
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert build.returncode == 0, build.stderr
    (wheel,) = (base / "dist").glob("evalcore-*.whl")
    assert wheel.name == f"evalcore-{evalcore.__version__}-py3-none-any.whl"
    venv = base / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=120)
    bin_dir = venv / ("Scripts" if os.name == "nt" else "bin")
    python = bin_dir / ("python.exe" if os.name == "nt" else "python")
    # the venv sees the running interpreter's packages (pip included, which then installs
    # into the venv), after its own site folder, so the installed wheel is found first
    site_dir = subprocess.run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    ).stdout.strip()
    Path(site_dir, "_running_interpreter.pth").write_text(
        "".join(f"{folder}\n" for folder in _package_folders()), encoding="utf-8"
    )
    pip = [str(python), "-m", "pip", "install", "--no-index", "--disable-pip-version-check", "-q"]
    # into the venv even when the running interpreter has an evalcore of this version (an
    # editable install, say), which pip would otherwise call already installed
    wheel_only = subprocess.run(
        [*pip, "--no-deps", "--force-reinstall", str(wheel)], capture_output=True, text=True, timeout=300
    )
    assert wheel_only.returncode == 0, wheel_only.stderr
    install = subprocess.run([*pip, str(wheel)], capture_output=True, text=True, timeout=300)
    assert install.returncode == 0, install.stderr  # --no-index: every range is met by what is installed
    work = base / "elsewhere"
    work.mkdir()
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "EVALCORE_STORE", "VIRTUAL_ENV")}
    env.update(PATH=os.pathsep.join([str(bin_dir), env.get("PATH", "")]), HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1")
    return python, bin_dir, work, env


def _run(args: list[str], work: Path, env: dict[str, str], timeout: float = 300) -> subprocess.CompletedProcess:
    done = subprocess.run(args, cwd=work, env=env, capture_output=True, text=True, timeout=timeout)
    print(f"$ {' '.join(Path(args[0]).name if i == 0 else a for i, a in enumerate(args))}\n{done.stdout}{done.stderr}")
    return done


@pytest.mark.browser
def test_the_installed_wheel_works_from_another_folder(installed):
    python, bin_dir, work, env = installed
    evalcore_cmd = str(bin_dir / "evalcore")

    version = _run([evalcore_cmd, "--version"], work, env)
    assert version.returncode == 0 and version.stdout.strip() == f"evalcore {evalcore.__version__}"
    assert "usage: evalcore " in _run([evalcore_cmd, "--help"], work, env).stdout

    imported = _run(
        [
            str(python),
            "-c",
            "import json, evalcore, evalcore_app; print(json.dumps("
            "[evalcore.__version__, evalcore.__file__, str(evalcore_app.APP)]))",
        ],
        work,
        env,
    )
    assert imported.returncode == 0, imported.stderr
    version_seen, module_file, app = json.loads(imported.stdout)
    venv = bin_dir.parent
    assert version_seen == evalcore.__version__
    assert Path(module_file).is_relative_to(venv) and Path(app).is_relative_to(venv), "imported from the repository"
    assert (Path(module_file).parent / "py.typed").exists()
    assert (Path(app).parent / "METHODS.md").read_text(encoding="utf-8") == (ROOT / "docs" / "METHODS.md").read_text(
        encoding="utf-8"
    )

    # a small demo: the demo data, migrations and model come from the installed packages
    demo = _run(
        [evalcore_cmd, "demo", "--strategies", "E", "--retrievers", "bm25,dense", "-q", "--json"],
        work,
        env,
        timeout=600,
    )
    assert demo.returncode == 0, demo.stderr
    summary = json.loads(demo.stdout)
    store = work / "runs" / "evalcore.duckdb"
    assert store.is_file(), "the store is not ./runs/evalcore.duckdb of the current folder"
    listed = _run([evalcore_cmd, "list", "--json"], work, env)
    (run,) = json.loads(listed.stdout)
    assert run["status"] == "complete" and run["run_id"] == summary["run_id"]
    print(f"demo in the installed wheel: {summary['wall_seconds']} s")

    port = free_port()
    log = work / "dashboard.log"
    with open(log, "wb") as out:
        proc = subprocess.Popen(
            [evalcore_cmd, "dashboard", "--port", str(port), "--headless"],
            cwd=work,
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    url = f"http://127.0.0.1:{port}"
    try:
        wait_healthy(url, proc)
        if Path("/proc/net/tcp").exists():
            assert _listening(port) == {"127.0.0.1"}, "the dashboard listens beyond 127.0.0.1"
        with urllib.request.urlopen(url + "/", timeout=10) as response:
            assert response.status == 200 and b'<div id="root">' in response.read()
        _walk_installed_dashboard(url, summary["run_id"])
    finally:
        stop(proc)
        print(log.read_text(errors="replace"))
    assert f"store {store}" in log.read_text()


def _walk_installed_dashboard(url: str, run_id: str) -> None:
    """The Runs screen lists the demo run, and Methods shows the packaged METHODS.md."""
    if CHROMIUM is None or importlib.util.find_spec("playwright") is None:
        print("chromium or playwright is not installed: the installed dashboard was fetched, not drawn")
        return

    with shared_chromium() as browser:
        try:
            page = watch(browser.new_page(viewport={"width": 1400, "height": 1000}))
            page.goto(url + "/", wait_until="domcontentloaded")
            settled(page)
            healthy(page, "installed: runs")
            assert run_id in page.locator("body").inner_text()
            page.goto(url + "/methods", wait_until="domcontentloaded")
            settled(page)
            healthy(page, "installed: methods")
            assert "Recall@k, hit@k and MRR" in page.locator("body").inner_text()
        finally:
            browser.close()
