"""``evalcore question-set ...`` (and its former name ``dataset``, kept as an alias): question sets
in the store (evalcore.inputs.question_sets) and candidate needles from a corpus
(evalcore.inputs.suggest). The author of a version is the OS user (evalcore.authors.os_author)."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from evalcore import authors
from evalcore.boundary.text import for_terminal
from evalcore.cli.shared.common import open_store
from evalcore.cli.shared.options import integer
from evalcore.errors import InputError
from evalcore.inputs import question_sets
from evalcore.inputs.corpus import load_corpus
from evalcore.inputs.suggest import CLOZE, save_drafts, suggest, write_candidates

MAX_CANDIDATES = 100_000  # question-set suggest -n: the most candidates one call writes
LARGE = 1_000_000  # bytes of a questions file from which an import prints progress lines on stderr


def cmd_question_set_import(args: argparse.Namespace) -> int:
    def said(line: str) -> None:
        print(for_terminal(line), file=sys.stderr, flush=True)

    saved, other = question_sets.import_folder(
        open_store(args),
        args.folder,
        args.name,
        author=authors.os_author(),
        note=args.note,
        said=said if _large(args.folder) else None,
    )
    v = saved.version
    who = for_terminal(authors.shown(v.author))
    print(f"{for_terminal(saved.message())}: {v.questions} questions, {v.ood} off-topic, by {who}")
    if other:
        print(
            f"note: {other} line(s) are not in evalcore's canonical form; export writes the same "
            "items in that form (see docs/QUESTION_SETS.md)"
        )
    return 0


def _large(folder: str) -> bool:
    """Whether the folder's questions file is large enough for progress lines."""
    try:
        return (Path(folder) / "questions.jsonl").stat().st_size > LARGE
    except OSError:
        return False


def cmd_question_set_export(args: argparse.Namespace) -> int:

    version, paths = question_sets.export_folder(open_store(args), args.ref, args.output)
    print(f"wrote {version.label} to " + ", ".join(for_terminal(p) for p in paths))
    return 0


def cmd_question_set_list(args: argparse.Namespace) -> int:
    found = question_sets.versions(open_store(args))
    if args.json:
        print(json.dumps([_row(v) for v in found], indent=2, ensure_ascii=False))
        return 0
    if not found:
        print("no question sets in the store (add one: evalcore question-set import DIR --name NAME)")
        return 0
    print(f"{'set':<28} {'parent':>6} {'questions':>9} {'off-topic':>9}  {'saved':<19}  author  note")
    for v in found:
        parent = str(v.parent) if v.parent else "-"
        when = str(v.created_at)[:19]
        who, note = for_terminal(authors.shown(v.author)), for_terminal(v.note)
        print(f"{v.label:<28} {parent:>6} {v.questions:>9} {v.ood:>9}  {when:<19}  {who}  {note}")
    return 0


def _row(v: Any) -> dict[str, Any]:
    return {
        "set": v.label,
        "name": v.name,
        "version": v.version,
        "parent": v.parent,
        "author": v.author,
        "created_at": str(v.created_at),
        "note": v.note,
        "origin": v.origin,
        "questions": v.questions,
        "ood": v.ood,
    }


def cmd_question_set_show(args: argparse.Namespace) -> int:

    qs = question_sets.load_question_set(open_store(args), args.ref)
    report = question_sets.describe_question_set(qs)
    if args.corpus:
        gt = qs.ground_truth(load_corpus(args.corpus))
        report["against"] = str(args.corpus)
        report["resolved"] = len(gt.spans)
        report["not_resolving"] = [
            {"group": i.group, "ids": list(i.query_ids), "line": i.line, "needle": i.needle, "reason": i.reason}
            for i in gt.invalid
        ]
    if args.json:
        print(json.dumps(report, indent=2, ensure_ascii=False, default=str))
        return 0
    for key, value in report.items():
        if isinstance(value, list):
            print(f"{key}: {len(value)}")
            for item in value:
                print(f"  - {for_terminal(item['group'])} (line {item['line']}): {for_terminal(item['reason'])}")
        elif isinstance(value, dict):
            print(f"{key}: " + ", ".join(f"{for_terminal(k)}={n}" for k, n in value.items()))
        else:
            print(f"{key}: {for_terminal(value)}")
    return 0


def cmd_question_set_suggest(args: argparse.Namespace) -> int:
    if args.output is None and args.save_as is None:
        raise InputError(
            f"{args.question_set_command_name} suggest needs -o FILE (the candidates) "
            "or --save-as NAME (their drafts as a set)"
        )
    corpus = load_corpus(args.corpus)
    found = suggest(corpus, args.n, seed=args.seed)
    docs = len({c.doc_id for c in found})
    if args.output is not None:
        write_candidates(found, args.output)
        print(f"wrote {len(found)} candidate(s) from {docs} of {len(corpus.documents)} documents to {args.output}")
    if args.save_as is not None:
        saved = save_drafts(open_store(args), args.save_as, found, author=authors.os_author())
        v = saved.version
        added = int(v.note.split()[0])
        print(
            f"{saved.message()}: {v.questions} questions, {added} of them new cloze pseudo-queries "
            f"(variant {CLOZE}), {v.ood} off-topic, by {authors.shown(v.author)}"
        )
        if added < len(found):
            print(f"note: {len(found) - added} candidate(s) left out: the set already has their needle")
    if len(found) < args.n:
        print(f"note: the corpus holds only {len(found)} valid candidate spans in the length band")
    return 0


def add_question_set(sub: Any) -> None:
    """The ``question-set`` command and its subcommands."""
    _add(
        sub,
        "question-set",
        "question sets in the store: import, export, list, show, suggest",
        "Question sets: named, versioned questions and off-topic queries kept in the store. "
        "Every save is a new version; versions are never rewritten.",
    )


def add_dataset(sub: Any) -> None:
    """``dataset``: the former name of ``question-set``, kept working (the same subcommands)."""
    _add(
        sub,
        "dataset",
        "the former name of question-set (the same subcommands)",
        "Question sets: named, versioned questions and off-topic queries kept in the store. "
        "Every save is a new version; versions are never rewritten. "
        "dataset is the former name of question-set and works the same.",
    )


def _add(sub: Any, command: str, help_text: str, description: str) -> None:
    """``command`` with the subcommands import, export, list, show and suggest (``question-set``
    and its alias ``dataset`` are built here alike, so that each prints its own name in usage)."""
    p = sub.add_parser(command, help=help_text, description=description)
    p.set_defaults(question_set_command_name=command)
    dsub = p.add_subparsers(
        dest="dataset_command", required=True, metavar="SUBCOMMAND", help="import, export, list, show or suggest"
    )

    sp = dsub.add_parser(
        "import",
        help="store a folder's questions.jsonl (+ ood.jsonl) as a set",
        description="Read DIR/questions.jsonl and, when present, DIR/ood.jsonl (checked as run reads them) "
        "and store them as a new set NAME, or as a new version of NAME when it exists.",
    )
    sp.add_argument("folder", metavar="DIR", help="folder holding questions.jsonl and optionally ood.jsonl")
    sp.add_argument("--name", required=True, help="the set's name (letters, digits, '.', '_', '-')")
    sp.add_argument("--note", default="", help="a note kept with the version")
    sp.set_defaults(func=cmd_question_set_import)

    sp = dsub.add_parser(
        "export",
        help="write a set version as questions.jsonl + ood.jsonl",
        description="Write NAME (its newest version) or NAME@VERSION into DIR as questions.jsonl and, "
        "when it has off-topic queries, ood.jsonl. Existing files are never replaced.",
    )
    sp.add_argument("ref", metavar="NAME[@VERSION]")
    sp.add_argument("-o", "--output", required=True, metavar="DIR", help="folder to write into (created)")
    sp.set_defaults(func=cmd_question_set_export)

    sp = dsub.add_parser("list", help="every set version", description="List every question-set version.")
    sp.add_argument("--json", action="store_true", help="print JSON")
    sp.set_defaults(func=cmd_question_set_list)

    sp = dsub.add_parser(
        "show",
        help="one set version's summary",
        description="Summarise NAME or NAME@VERSION; with --corpus, resolve it there and list the items "
        "that do not resolve (with the reason).",
    )
    sp.add_argument("ref", metavar="NAME[@VERSION]")
    sp.add_argument("--corpus", default=None, metavar="DIR", help="resolve the set against this corpus")
    sp.add_argument("--json", action="store_true", help="print JSON")
    sp.set_defaults(func=cmd_question_set_show)

    sp = dsub.add_parser(
        "suggest",
        help="candidate answer spans from a corpus, with cloze drafts",
        description="Write N candidate needles (valid: found once, outside headings; informative: a length "
        "band with content words), spread over the documents (every document before any gets a "
        "second) and their sections, each with a cloze draft as a hint for the question's author. "
        "One JSON object a line: document, start, end, needle, draft. With --save-as NAME, the drafts "
        "themselves are saved as pseudo-queries (in-domain items of variant 'cloze', so every figure can "
        "be split by it) in a new version of the question set NAME.",
    )
    sp.add_argument("--corpus", required=True, metavar="DIR", help="folder of .md / .txt / .pdf / .html documents")
    sp.add_argument(
        "-n", type=integer("-n", 1, MAX_CANDIDATES), default=50, metavar="N", help="how many candidates (default 50)"
    )
    sp.add_argument("--seed", type=integer("--seed", 0, 2**63 - 1), default=0, help="random seed (default 0)")
    sp.add_argument("-o", "--output", default=None, metavar="FILE", help="candidates.jsonl to write")
    sp.add_argument(
        "--save-as",
        default=None,
        metavar="NAME",
        help="save the cloze drafts as pseudo-queries of variant 'cloze' in a new version of the question set NAME",
    )
    sp.set_defaults(func=cmd_question_set_suggest)
