"""``evalcore dashboard``: Streamlit on the installed dashboard (:mod:`evalcore_app`), private
by default.

A clone's ``streamlit run app.py`` reads its settings from ``.streamlit/config.toml``; a user
who starts the dashboard from any other folder has no such file, so the same settings
(:data:`SETTINGS`, kept equal to that file by a test) are passed on Streamlit's command line.
This module never imports Streamlit: the process is replaced by ``python -m streamlit run``,
so Ctrl-C and SIGTERM reach Streamlit itself.
"""

from __future__ import annotations

import argparse
import importlib.util
import ipaddress
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from evalcore.api.serving.rate import check_rates
from evalcore.api.serving.settings import body_deadline, connection_limits
from evalcore.cli.shared.options import integer
from evalcore.errors import InputError
from evalcore.jobs.queue import check_settings
from evalcore.store.connection import default_store_path

if TYPE_CHECKING:
    from evalcore.cli.shared.options import Subparsers

#: The settings of the clone's ``.streamlit/config.toml``, as Streamlit option names.
SETTINGS: dict[str, str] = {
    "server.address": "127.0.0.1",  # this machine only (docs/DEPLOY.md: a team's proxy)
    "server.maxUploadSize": "50",  # MB per upload; evalcore.inputs.uploads checks it too
    "browser.gatherUsageStats": "false",
    "runner.magicEnabled": "false",  # a bare expression in a page is never echoed
    "runner.postScriptGC": "false",  # no full collection after every rerun (docs/DECISIONS.md)
    "client.toolbarMode": "viewer",  # no Deploy button, no developer options
}
DEFAULT_ADDRESS = SETTINGS["server.address"]
DEFAULT_PORT = 8501


def app_path() -> Path:
    """The dashboard's main script, installed beside this package (or in the clone)."""
    spec = importlib.util.find_spec("evalcore_app")
    if spec is None or spec.origin is None:
        raise InputError(
            "the dashboard (package evalcore_app) is not installed beside evalcore; "
            "reinstall evalcore (pip install evalcore)"
        )
    return Path(spec.origin).resolve().parent / "app.py"


def is_loopback(address: str) -> bool:
    """True for ``localhost`` and loopback IP addresses (127.0.0.0/8, ::1)."""
    if address == "localhost":
        return True
    try:
        return ipaddress.ip_address(address).is_loopback
    except ValueError:
        return False


def command(port: int = DEFAULT_PORT, address: str = DEFAULT_ADDRESS, browser: bool = True) -> list[str]:
    """The Streamlit command line that serves the dashboard on ``address:port``.

    ``browser=False`` runs headless (no browser opened: a server, a container, a test).
    The file watcher is off: an installed dashboard's files do not change while it runs."""
    if not 1 <= port <= 65535:
        raise InputError(f"--port {port}: not a TCP port (1-65535)")
    options = dict(SETTINGS)
    options.update(
        {
            "server.address": address,
            "server.port": str(port),
            "server.headless": "false" if browser else "true",
            "server.showEmailPrompt": "false",  # never wait on stdin for an e-mail address
            "server.fileWatcherType": "none",
        }
    )
    argv = [sys.executable, "-m", "streamlit", "run", str(app_path())]
    for name, value in options.items():
        argv += [f"--{name}", value]
    return argv


def environment(store: str | None) -> dict[str, str]:
    """This process's environment with ``EVALCORE_STORE`` made absolute: ``store`` if given,
    else the store every command uses here (``$EVALCORE_STORE``, else ``runs/evalcore.duckdb``
    of the current folder)."""
    path = Path(store) if store else default_store_path()
    return dict(os.environ, EVALCORE_STORE=str(path.expanduser().resolve()))


def serve(port: int, address: str, store: str | None, browser: bool) -> None:
    """Replace this process with Streamlit serving the dashboard (does not return)."""
    argv = command(port, address, browser)
    env = environment(store)
    check_rates()  # the API's three rate variables: ConfigError, one line, before anything starts
    check_settings()  # EVALCORE_MAX_JOBS and the queue's caps (docs/DEPLOY.md, "Limits")
    connection_limits()
    body_deadline()
    if not is_loopback(address):
        print(
            f"warning: the dashboard listens on {address}, reachable from other machines, and has no "
            "login; put it behind an authenticating proxy (docs/DEPLOY.md)",
            file=sys.stderr,
        )
    print(f"evalcore dashboard: store {env['EVALCORE_STORE']}; Ctrl-C stops it", flush=True)
    sys.stderr.flush()
    os.execve(sys.executable, argv, env)


def cmd_dashboard(args: argparse.Namespace) -> int:
    serve(args.port, args.address, args.store, browser=not args.headless)
    return 0  # not reached: serve replaces this process with Streamlit


def add_dashboard(sub: Subparsers) -> None:
    sp = sub.add_parser(
        "dashboard",
        help="open the dashboard (Streamlit) on this machine",
        description="Serve the dashboard on ADDRESS:PORT (default 127.0.0.1: this machine only; it has no "
        "login, see docs/DEPLOY.md before serving a team) over the store (--store, "
        "$EVALCORE_STORE, else runs/evalcore.duckdb of the current folder). Ctrl-C stops it. "
        "Its limits are environment variables (docs/DEPLOY.md, Limits): $EVALCORE_MAX_JOBS, "
        "$EVALCORE_QUEUE_MAX, $EVALCORE_QUEUE_PER_KEY, $EVALCORE_MAX_CONNECTIONS, $EVALCORE_HEADER_SECONDS, "
        "$EVALCORE_API_BODY_SECONDS; a bad value stops it at its start.",
    )
    sp.add_argument(
        "--port", type=integer("--port", 1, 65535), default=DEFAULT_PORT, help=f"TCP port (default {DEFAULT_PORT})"
    )
    sp.add_argument(
        "--address",
        default=DEFAULT_ADDRESS,
        help=f"address to listen on (default {DEFAULT_ADDRESS}, this machine only)",
    )
    sp.add_argument(
        "--store",
        default=argparse.SUPPRESS,
        help="run store (DuckDB file) the dashboard shows; same as the global --store",
    )
    sp.add_argument("--headless", action="store_true", help="do not open a browser (a server, a container)")
    sp.set_defaults(func=cmd_dashboard)
