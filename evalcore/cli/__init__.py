"""Command line: ``evalcore COMMAND`` (installed) or ``python -m evalcore COMMAND``."""

from evalcore.cli.main import build_parser, main

__all__ = ["build_parser", "main"]
