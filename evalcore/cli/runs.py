"""``evalcore list`` and ``evalcore show``: the runs in the store, and one run's summary."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from evalcore.cli import remote
from evalcore.cli.shared.common import open_store, print_json
from evalcore.cli.shared.options import json_option, run_ref
from evalcore.cli.text.summary import print_runs, print_summary
from evalcore.read.refs import find_run

if TYPE_CHECKING:
    from evalcore.cli.shared.options import Subparsers


def cmd_list(args: argparse.Namespace) -> int:
    if args.server:
        return remote.remote_list(args)
    runs = open_store(args).runs()
    if args.json:
        print_json(runs.drop(columns=["settings"]).to_dict("records"))
        return 0
    print_runs([{str(k): v for k, v in r.items()} for r in runs.to_dict("records")])
    return 0


def cmd_show(args: argparse.Namespace) -> int:
    if args.server:
        return remote.remote_show(args)
    store = open_store(args)
    run = find_run(store, args.run)
    if args.json:
        print_summary(store, run.run_id, as_json=True)
        return 0
    heading = [f"run {run.run_id}  {run.name}  status {run.status}"]
    if run.status != "complete":
        print(heading[0])
        print(f"reason: {run.reason or run.stage or '-'}")
        return 0
    s = run.settings
    heading += [
        f"corpus: {s.get('documents')} documents ({s.get('failed_documents')} failed), "
        f"{s.get('characters')} characters, {s.get('sections')} sections",
        f"queries: {s.get('queries_in')} in-domain, {s.get('queries_out')} out-of-domain; "
        f"{s.get('invalid_needles')} invalid needles",
        f"model: {run.model} ({run.model_dim} dims); embeddings {run.new_embeddings} new, "
        f"{run.cached_embeddings} cached",
    ]
    if run.rerank_note:
        heading.append(run.rerank_note)
    print_summary(store, run.run_id, as_json=False, heading=heading)
    return 0


def add_list(sub: Subparsers) -> None:
    sp = sub.add_parser("list", help="list the runs in the store", description="List stored runs.")
    json_option(sp)
    sp.set_defaults(func=cmd_list)


def add_show(sub: Subparsers) -> None:
    sp = sub.add_parser("show", help="one run's summary", description="Show one run's summary table.")
    run_ref(sp, "run id, a unique prefix of one, or a run name (its newest complete run, else its newest)")
    json_option(sp, "print a machine-readable summary")
    sp.set_defaults(func=cmd_show)
