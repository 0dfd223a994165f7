"""The argument parser of ``evalcore``: the global options, then every command, added by the
module that runs it in the order ``--help`` lists them."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, NoReturn, cast

from evalcore import __version__
from evalcore.boundary.text import for_terminal
from evalcore.cli.compare import add_compare
from evalcore.cli.dashboard import add_dashboard
from evalcore.cli.exports import add_export_formats, add_export_run, add_load_run
from evalcore.cli.external import add_import_run, add_run_endpoint
from evalcore.cli.gate import add_gate
from evalcore.cli.inputs import add_chunks, add_import_squad, add_validate
from evalcore.cli.jobs import add_job
from evalcore.cli.keys import add_keys
from evalcore.cli.question_sets import add_dataset, add_question_set
from evalcore.cli.run import add_demo, add_run
from evalcore.cli.runs import add_list, add_show
from evalcore.cli.threshold import add_threshold
from evalcore.cli.traffic import add_parser as add_traffic

if TYPE_CHECKING:
    from evalcore.cli.shared.options import Subparsers

#: Every command, in the order of ``evalcore --help``.
COMMANDS: tuple[Callable[[Subparsers], None], ...] = (
    add_demo,
    add_run,
    add_question_set,
    add_dataset,
    add_validate,
    add_chunks,
    add_import_run,
    add_run_endpoint,
    add_export_formats,
    add_job,
    add_import_squad,
    add_list,
    add_show,
    add_gate,
    add_threshold,
    add_export_run,
    add_load_run,
    add_compare,
    add_dashboard,
    add_keys,
    add_traffic,
)


def _prog() -> str:
    """``evalcore`` when started by the console script, else ``python -m evalcore``."""
    return "evalcore" if Path(sys.argv[0]).stem == "evalcore" else "python -m evalcore"


class Parser(argparse.ArgumentParser):
    """argparse's parser whose error line (an unknown option, a bad choice, a value it could
    not read: each may quote what the user typed) is escaped for the terminal."""

    def error(self, message: str) -> NoReturn:
        super().error(for_terminal(message))


def build_parser() -> argparse.ArgumentParser:
    p = Parser(
        prog=_prog(),
        description="Evaluate the retrieval half of RAG: chunk, embed, retrieve, score, store.",
    )
    p.add_argument(
        "--version", action="version", version=f"evalcore {__version__}", help="print evalcore's version and exit"
    )
    p.add_argument(
        "--store", default=None, help="run store (DuckDB file); default $EVALCORE_STORE or runs/evalcore.duckdb"
    )
    p.add_argument(
        "--server",
        default=None,
        metavar="URL",
        help="the evaluation service to use instead of a local store (gate, load-run, traffic import, list, "
        "show, threshold); the key is read from $EVALCORE_API_KEY",
    )
    p.add_argument(
        "--insecure",
        action="store_true",
        help="with --server http:// to a host other than this machine: go on although the key is sent in clear",
    )
    p.add_argument("-v", "--verbose", action="store_true", help="log what happens")
    # every command's parser is a Parser too (argparse makes them of the type of p), typed as argparse's
    sub = cast("Subparsers", p.add_subparsers(dest="command", required=True, metavar="COMMAND"))
    for add in COMMANDS:
        add(sub)
    return p
