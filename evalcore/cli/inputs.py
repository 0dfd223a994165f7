"""Commands on inputs, before any run: ``validate`` (check corpus and questions), ``chunks``
(a strategy's chunks as JSON lines) and ``import-squad`` (a SQuAD-format file turned into
corpus and questions)."""

from __future__ import annotations

import argparse
import io
import json
import math
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, BinaryIO, TextIO

from evalcore.boundary.files import write_file_streamed
from evalcore.boundary.text import for_terminal
from evalcore.chunking import chunk_corpus, parse_strategies
from evalcore.cli.shared.common import print_json
from evalcore.cli.shared.options import CORPUS_HELP, integer, json_option
from evalcore.errors import EvalcoreError, InputError
from evalcore.inputs import sources as inputs
from evalcore.inputs.corpus import load_corpus
from evalcore.inputs.groundtruth import validation_report
from evalcore.inputs.language import detect_language, hint_line, language_hint
from evalcore.inputs.public_sets import import_squad, questions_from_csv
from evalcore.read.citations import locator, page_range
from evalcore.retrieval.names import parse_retrievers
from evalcore.run.spec import DEFAULT_RETRIEVERS

if TYPE_CHECKING:
    from collections.abc import Sequence

    from evalcore.cli.shared.options import Subparsers
    from evalcore.records import Corpus


def print_language_hint(corpus: Corpus, retrievers: Sequence[str], models: Sequence[str]) -> None:
    """One line on stderr when the corpus is not English and ``retrievers`` read it with the
    chapter's tokenizer or the packaged English model (evalcore.inputs.language); nothing
    otherwise. It changes nothing that is run."""
    hint = language_hint(detect_language(corpus), retrievers, models)
    if hint is not None:
        print(for_terminal(hint_line(hint)), file=sys.stderr)


def cmd_validate(args: argparse.Namespace) -> int:
    retrievers = parse_retrievers(args.retrievers)
    if args.demo:
        corpus, gt = inputs.load_demo()
    else:
        if not args.corpus or not args.questions:
            raise EvalcoreError("validate needs --corpus DIR and --questions FILE (or --demo)")
        corpus, gt = inputs.load_corpus_and_questions(args.corpus, args.questions, args.ood)
    report = validation_report(corpus, gt).to_json()
    if not args.demo:  # the demo is the Python reference, in English
        print_language_hint(corpus, retrievers, args.model or ())
    if args.json:
        print_json(report)
        return 0
    for key, value in report.items():
        if isinstance(value, list):
            print(f"{key}: {len(value)}")
            for item in value:
                print(f"  - {item}")
        elif isinstance(value, dict):
            print(f"{key}: " + ", ".join(f"{k}={v}" for k, v in value.items()))
        else:
            print(f"{key}: {value}")
    return 0


def _write_output(name: str, emit: Callable[[TextIO], None]) -> None:
    """What ``emit`` writes, as the file ``--output`` names: streamed into a temporary file in
    its folder and renamed into place (:func:`evalcore.boundary.files.write_file_streamed`):
    never half a file, never through a symbolic link, never into a FIFO, device or folder."""

    def write(fh: BinaryIO) -> None:
        text = io.TextIOWrapper(fh, encoding="utf-8", newline="")
        emit(text)
        text.flush()
        text.detach()  # the binary file stays open for the rename

    path = Path(name)
    try:
        write_file_streamed(path.parent, path.name, write)
    except InputError as exc:
        raise InputError(f"--output {exc}") from None


def cmd_chunks(args: argparse.Namespace) -> int:
    corpus = inputs.load_demo()[0] if args.demo else load_corpus(args.corpus)
    strategies = parse_strategies(args.strategy)
    if len(strategies) != 1:
        raise EvalcoreError(f"--strategy takes one strategy, got {args.strategy!r}")
    page_maps = {d.doc_id: d.page_starts for d in corpus.documents}

    def emit(out: TextIO) -> None:
        for c in chunk_corpus(corpus, strategies[0]):
            pages = page_range(page_maps[c.doc_id], c.start, c.end)
            out.write(
                json.dumps(
                    {
                        "document": c.doc_id,
                        "text": c.text,
                        "content": c.content,
                        "section": c.section,
                        "from": c.start,
                        "to": c.end,
                        "evidence_from": c.evidence_start,
                        "locator": locator(c.start, c.end, page_maps[c.doc_id]),
                        "pages": list(pages) if pages else None,
                    },
                    ensure_ascii=False,
                )
                + "\n"
            )

    if args.output:
        _write_output(args.output, emit)
    else:
        emit(sys.stdout)
    return 0


def cmd_import_squad(args: argparse.Namespace) -> int:
    ood = questions_from_csv(args.ood_csv, args.ood_column, args.ood_kind, args.ood_limit) if args.ood_csv else []
    report = import_squad(args.input, args.out, ood)
    out = Path(args.out)
    print(
        f"wrote {report.documents} documents to {out / 'corpus'}, {report.questions} questions "
        f"(exact spans; {report.relocated} answer offsets corrected) and {report.ood} out-of-domain queries"
    )
    for line in report.skipped[:10]:
        print(f"  skipped {line}")
    if len(report.skipped) > 10:
        print(f"  ... {len(report.skipped) - 10} more skipped")
    ood_arg = f" --ood {out / 'ood.jsonl'}" if report.ood else ""
    print(f"next: python -m evalcore run --corpus {out / 'corpus'} --questions {out / 'questions.jsonl'}{ood_arg}")
    return 0


def add_validate(sub: Subparsers) -> None:
    sp = sub.add_parser(
        "validate",
        help="check inputs without running",
        description="Check corpus, questions and ood files; report needles and counts.",
    )
    sp.add_argument("--corpus", metavar="DIR", help=CORPUS_HELP)
    sp.add_argument("--questions", metavar="FILE", help="questions.jsonl")
    sp.add_argument("--ood", metavar="FILE", help="ood.jsonl")
    sp.add_argument("--demo", action="store_true", help="validate the built-in demo dataset")
    sp.add_argument(
        "--retrievers",
        default=DEFAULT_RETRIEVERS,
        help="the retrievers the run will use (as run takes them; default "
        f"{DEFAULT_RETRIEVERS}): checked, and a corpus that is not English is told which analyzer reads it",
    )
    sp.add_argument(
        "--model",
        action="append",
        default=None,
        metavar="PATH",
        help="the model folder(s) the run will use (default: the packaged all-MiniLM-L6-v2, English-only)",
    )
    json_option(sp, "print the report as JSON")
    sp.set_defaults(func=cmd_validate)


def add_chunks(sub: Subparsers) -> None:
    sp = sub.add_parser(
        "chunks",
        help="write a strategy's chunks as JSON lines",
        description="Write chunks (document, text, content, section, from, to, "
        "evidence_from, locator, pages) as JSON lines. locator is #page=N "
        "(the page of the chunk's first character) for PDF documents and "
        "#char=from,to otherwise; pages is [first, last] for PDF, else null.",
    )
    sp.add_argument("--corpus", metavar="DIR", help=CORPUS_HELP)
    sp.add_argument("--demo", action="store_true", help="chunk the built-in demo corpus")
    sp.add_argument("--strategy", default="E", help="one strategy: A-F or a custom recipe (default E)")
    sp.add_argument("-o", "--output", default=None, metavar="FILE", help="write here instead of stdout")
    sp.set_defaults(func=cmd_chunks)


def add_import_squad(sub: Subparsers) -> None:
    sp = sub.add_parser(
        "import-squad",
        help="turn a SQuAD-format QA file into corpus and questions",
        description="Write corpus/*.md, questions.jsonl (exact spans) and, with --ood-csv, "
        "ood.jsonl from SQuAD-format JSON (SQuAD v1.1, XQuAD, COVID-QA).",
    )
    sp.add_argument("input", help="SQuAD-format JSON file")
    sp.add_argument("--out", required=True, metavar="DIR", help="empty folder to write into")
    sp.add_argument("--ood-csv", default=None, metavar="FILE", help="CSV whose questions become out-of-domain queries")
    sp.add_argument("--ood-column", default="question", help="the CSV column holding the questions")
    sp.add_argument("--ood-kind", default="far", choices=["near", "far"], help="kind of those queries")
    sp.add_argument(
        "--ood-limit",
        type=integer("--ood-limit", 1, math.inf),
        default=None,
        help="at most this many out-of-domain queries",
    )
    sp.set_defaults(func=cmd_import_squad)
