"""Command line: ``evalcore COMMAND`` (installed) or ``python -m evalcore COMMAND``."""

from evalcore.cli.main import main
from evalcore.cli.parser import build_parser

__all__ = ["build_parser", "main"]
