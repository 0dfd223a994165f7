"""What every command does alike: open the store it was given, print JSON, warn about
excluded needles, write a report file the user named."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from evalcore.boundary.files import write_path_atomic
from evalcore.boundary.text import for_terminal
from evalcore.store import Store

if TYPE_CHECKING:
    from evalcore.records import GroundTruth


def open_store(args: argparse.Namespace) -> Store:
    """The store of the global ``--store`` (else ``$EVALCORE_STORE``, else the default path)."""
    return Store(args.store)


def print_json(obj: Any) -> None:
    print(json.dumps(obj, indent=2, default=str))


def report_invalid(gt: GroundTruth) -> None:
    """One warning on stderr per needle left out of the ground truth."""
    for inv in gt.invalid:
        group, reason = for_terminal(inv.group), for_terminal(inv.reason)
        print(f"warning: needle of group {group} (line {inv.line}) excluded: {reason}", file=sys.stderr)


def write_text(path: Path, text: str, option: str) -> None:
    """Write a report file the user named, whole or not at all, never through a symbolic link
    (:func:`evalcore.boundary.files.write_path_atomic`); one line naming it when that cannot be
    done."""
    write_path_atomic(path, text, option=option)
