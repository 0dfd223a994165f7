"""Options that several commands share, each defined once with its default and help text:
the built-in pipeline's options, an external run's inputs, the run reference, ``--json`` and
``--quiet``."""

from __future__ import annotations

import argparse
import math
import re
from collections.abc import Callable
from typing import TYPE_CHECKING

from evalcore.boundary.numbers import bounded_float, bounded_int
from evalcore.chunking import DEFAULT_STRATEGIES
from evalcore.configurations import EXTERNAL, SCORE_KINDS
from evalcore.inputs.demo import RETRIEVERS as DEMO_RETRIEVERS
from evalcore.run.spec import DEFAULT_DEVICE, SIMILARITY

if TYPE_CHECKING:
    #: What ``add_subparsers`` returns: each command module adds its commands to it.
    Subparsers = argparse._SubParsersAction[argparse.ArgumentParser]

__all__ = [
    "CORPUS_HELP",
    "DEFAULT_STRATEGIES",
    "DEMO_RETRIEVERS",
    "RUN_REF_HELP",
    "external_inputs",
    "integer",
    "number",
    "json_option",
    "pipeline_options",
    "quiet_option",
    "run_ref",
    "add_score_kind",
]

CORPUS_HELP = "folder of .md / .txt / .pdf / .html documents"
RUN_REF_HELP = "run id (a unique prefix is enough) or run name (its newest complete run)"


def json_option(sp: argparse.ArgumentParser, help: str = "print JSON") -> None:
    sp.add_argument("--json", action="store_true", help=help)


def quiet_option(sp: argparse.ArgumentParser, help: str = "no progress bar") -> None:
    sp.add_argument("-q", "--quiet", action="store_true", help=help)


def run_ref(sp: argparse.ArgumentParser, help: str = RUN_REF_HELP) -> None:
    """The positional ``run``: which stored run a command reads."""
    sp.add_argument("run", help=help)


def integer(option: str, low: float, high: float) -> Callable[[str], int]:
    """The ``type=`` of an integer option: plain decimal digits in ``[low, high]``, read by
    :func:`evalcore.boundary.numbers.bounded_int` (never ``int()``, which reads ``1_0`` as 10
    and digits of other scripts). A refusal is a ConfigError that ``main`` prints as one line."""

    def parse(text: str) -> int:
        return bounded_int(text, option=option, low=low, high=high)

    return parse


def number(
    option: str, low: float, high: float, *, low_open: bool = False, high_open: bool = False
) -> Callable[[str], float]:
    """The ``type=`` of a numeric option: plain decimal notation in the range, read by
    :func:`evalcore.boundary.numbers.bounded_float` (no ``nan``, ``inf``, ``1_0`` or hex)."""

    def parse(text: str) -> float:
        return bounded_float(text, option=option, low=low, high=high, low_open=low_open, high_open=high_open)

    return parse


def device(value: str) -> str:
    """``--device``: ``cpu``, ``cuda`` or ``cuda:N``, checked before anything loads (whether a
    CUDA GPU is there is checked when the model loads)."""
    if re.fullmatch(r"cpu|cuda(:[0-9]{1,3})?", value):
        return value
    raise argparse.ArgumentTypeError(f"unknown device {value[:40]!r} (use cpu, cuda or cuda:N)")


def pipeline_options(sp: argparse.ArgumentParser, strategies: str, retrievers: str) -> None:
    """The built-in pipeline's options (``demo``, ``run``): what to chunk, embed and retrieve
    with, where to embed, and how to report."""
    sp.add_argument(
        "--strategies", default=strategies, help=f"comma list of A-G or custom recipes (default {strategies})"
    )
    sp.add_argument(
        "--retrievers",
        default=retrievers,
        help=f"comma list of dense,bm25,hybrid,rerank; bm25:LANG, hybrid:LANG, rerank:LANG read "
        "the corpus with a language's analyzer (bm25:german; bm25:unicode: words not stemmed; "
        f"see docs/LANGUAGES.md) (default {retrievers})",
    )
    sp.add_argument(
        "--reranker",
        default=None,
        metavar="PATH",
        help="local sentence-transformers CrossEncoder folder; without it rerank is not run",
    )
    sp.add_argument(
        "--model",
        action="append",
        default=None,
        metavar="PATH",
        help="local sentence-transformers model folder (default: the packaged all-MiniLM-L6-v2); "
        "repeat it to compare models: each strategy is then stored as STRATEGY@FOLDER",
    )
    sp.add_argument(
        "--device",
        default=DEFAULT_DEVICE,
        type=device,
        help="cpu (default) or cuda (needs a CUDA GPU and torch with CUDA)",
    )
    sp.add_argument(
        "--ray",
        default=None,
        metavar="ADDRESS",
        help="embed and retrieve on a Ray cluster (ADDRESS, e.g. ray://head:10001 or auto) "
        "or on a local Ray runtime (local); see docs/SCALE.md",
    )
    sp.add_argument(
        "--shards",
        type=integer("--shards", 1, math.inf),
        default=None,
        metavar="N",
        help="with --ray: split each strategy's chunks (vectors and BM25 postings) into N shards, "
        "one Ray actor each (default: one per node, at least two); same figures as one machine",
    )
    json_option(sp, "print a machine-readable summary")
    quiet_option(sp, "no progress bars")


def add_score_kind(sp: argparse.ArgumentParser, flag: str) -> None:
    """How an external run's scores read (``--score`` of import-run, ``--score-kind`` of
    run-endpoint, whose ``--score`` is the hit field)."""
    sp.add_argument(
        flag,
        default=SIMILARITY,
        choices=list(SCORE_KINDS),
        help="similarity: higher is closer (default); distance: lower is closer",
    )


def external_inputs(sp: argparse.ArgumentParser) -> None:
    """An external run's inputs (``import-run``, ``run-endpoint``): corpus and questions, and
    the names its configuration is stored under."""
    sp.add_argument("--corpus", metavar="DIR", help=CORPUS_HELP)
    sp.add_argument("--questions", metavar="FILE", help="questions.jsonl")
    sp.add_argument("--ood", default=None, metavar="FILE", help="ood.jsonl (out-of-domain queries)")
    sp.add_argument("--demo", action="store_true", help="the built-in demo corpus and questions instead")
    sp.add_argument(
        "--chunker",
        default=EXTERNAL,
        help="name of the other system's chunker: the configuration's strategy (default external)",
    )
    sp.add_argument(
        "--retriever",
        default=EXTERNAL,
        help="name of the other system's retriever: the configuration's retriever (default external)",
    )
    json_option(sp, "print a machine-readable summary (as run --json)")
