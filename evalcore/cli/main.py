"""Command line: ``evalcore COMMAND`` (installed) or ``python -m evalcore COMMAND``, one
:func:`main`: parse, dispatch to the command, and turn what ends it into the exit code.

Errors the user can fix end with one line on stderr and exit code 2, never a traceback; so does
an exception evalcore did not foresee. Every error line is escaped for the terminal
(:func:`evalcore.boundary.text.for_terminal`): an ESC sequence, a bidi override or a newline
from a name, a path or a file's content is shown as ``\x1b``, ``\u202e``, ``\n``, never acted on.
Exit code 1 is reserved for a regression found by ``gate``.
"""

from __future__ import annotations

import argparse
import logging
import sys
import traceback
from collections.abc import Callable, Sequence
from pathlib import Path

from evalcore import signals
from evalcore.boundary.text import for_terminal
from evalcore.cli.parser import build_parser
from evalcore.cli.remote import check_remote
from evalcore.embedding.model_env import NOTE
from evalcore.errors import EvalcoreError, Interrupted
from evalcore.store import reading

log = logging.getLogger("evalcore")

#: Short commands that only read the store: their reads share one connection (a long command
#: never does, as it would keep writers out while it runs).
READS_ONLY = frozenset({"list", "show", "threshold", "compare", "gate", "export-formats", "export-run"})


def unexpected(exc: BaseException) -> str:
    """The one line of an exception evalcore did not foresee: where it arose and what it says
    (the full traceback goes to the log with ``-v``)."""
    log.info("unexpected error", exc_info=exc)
    frames = traceback.extract_tb(exc.__traceback__)
    ours = [f for f in frames if "evalcore" in f.filename] or frames
    where = f" in {Path(ours[-1].filename).name}:{ours[-1].lineno}" if ours else ""
    text = " ".join(str(exc).split())[:300]
    return f"unexpected {type(exc).__name__}{where}: {text or '(no message)'}; please report this"


def cluster_failure(exc: BaseException) -> str | None:
    """The one line of a ``--ray`` command whose cluster lost what it needed (a worker process
    killed, a node gone, an object lost), or None for any other exception. A run ends failed
    with its reason either way; this is a failure of the cluster, not a bug to report. Ray's
    error of a task's own code (``RayTaskError``) is not one of them."""
    found = sys.modules.get("ray.exceptions")  # loaded once a command has used Ray, never imported here
    if found is None or not isinstance(exc, found.RayError) or isinstance(exc, found.RayTaskError):
        return None
    said = str(exc).strip().splitlines()
    first = " ".join(said[0].split())[:200] if said else "(no message)"
    return f"the Ray cluster lost a worker, a node or an object the command needed ({type(exc).__name__}): {first}"


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except EvalcoreError as exc:  # an option's value refused by evalcore.boundary (numbers): one line
        print(f"error: {for_terminal(exc)}", file=sys.stderr)
        return 2

    logging.basicConfig(level=logging.INFO if args.verbose else NOTE, format="%(levelname)s %(name)s: %(message)s")
    if args.command == "chunks" and not args.demo and not args.corpus:
        parser.error("chunks needs --corpus DIR or --demo")
    try:
        check_remote(args)
        with signals.handled():  # SIGTERM and SIGINT end any command with one line
            command: Callable[[argparse.Namespace], int] = args.func  # set by each subparser
            if args.command in READS_ONLY:  # one connection to the store for all its reads
                with reading():
                    return command(args)
            return command(args)
    except Interrupted as exc:
        print(f"error: {for_terminal(exc)}", file=sys.stderr)
        return 128 + exc.signum
    except EvalcoreError as exc:
        print(f"error: {for_terminal(exc)}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:  # outside the main thread
        print("error: interrupted", file=sys.stderr)
        return 130
    except Exception as exc:  # noqa: BLE001 - one line and exit 2, never a traceback (exit 1 is a regression)
        print(f"error: {for_terminal(cluster_failure(exc) or unexpected(exc))}", file=sys.stderr)
        return 2
