"""Expensive session fixtures made once per test session, not once per pytest-xdist worker.

Under xdist each worker has its own session, so a session fixture (a store made by the real
engine, PDFs printed by chromium) used to be made by both workers. :func:`built_once` makes
it once, in a folder both workers see (the session's temporary root): the first worker that
asks builds it while the other waits on a lock, and each worker then gets a private copy of
the folder (a DuckDB file copy takes milliseconds), so that a test writing into its store
changes nothing the other worker reads. Run without xdist (``-n 0``), it builds in place.
"""

from __future__ import annotations

import fcntl
import os
import shutil
from collections.abc import Callable
from pathlib import Path

#: The file that says a shared folder is complete (a build that failed leaves none).
DONE = ".built"


def built_once(tmp_path_factory, name: str, build: Callable[[Path], None], *, copy: bool = True) -> Path:
    """A folder filled by ``build(folder)``, made once per session: see the module's text.

    The build runs in the shared folder itself, so paths it records (a corpus a run read)
    stay valid in every copy. A build that raised leaves no :data:`DONE`; the next worker to
    ask builds again from an empty folder (and raises the same way). ``copy=False`` hands every
    worker the shared folder itself, for what no test writes and whose files name their own
    path (a PDF whose printed footer is its page's URL)."""
    if not os.environ.get("PYTEST_XDIST_WORKER"):
        folder = tmp_path_factory.mktemp(name)
        build(folder)
        return folder
    shared = tmp_path_factory.getbasetemp().parent / "built-once"
    shared.mkdir(exist_ok=True)
    folder = shared / name
    with open(shared / f"{name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            if not (folder / DONE).exists():
                shutil.rmtree(folder, ignore_errors=True)
                folder.mkdir()
                build(folder)
                (folder / DONE).touch()
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)
    if not copy:
        return folder
    private = tmp_path_factory.mktemp(name)
    shutil.copytree(folder, private, symlinks=True, dirs_exist_ok=True, ignore=shutil.ignore_patterns(DONE))
    return private
