"""``--server URL``: ``gate``, ``load-run``, ``traffic import``, ``list``, ``show`` and
``threshold`` against the evaluation service (``evalcore.Client``) instead of a local store,
printing what they print locally. The key comes from ``$EVALCORE_API_KEY`` only (an option
would show it in the process list and the shell's history)."""

from __future__ import annotations

import argparse
import json
import os
import sys
from datetime import datetime
from pathlib import Path
from typing import Any

from evalcore.boundary.text import for_terminal
from evalcore.cli.shared.common import print_json, write_text
from evalcore.cli.text.claims_text import print_claims
from evalcore.cli.text.summary import print_runs
from evalcore.client import Client
from evalcore.client.origin import sends_in_clear
from evalcore.errors import ConfigError
from evalcore.measures.metrics import DEFAULT_KS
from evalcore.read.refs import parse_ref
from evalcore.read.summary import format_table
from evalcore.regression.from_json import report_from_dict
from evalcore.regression.report import render, to_junit
from evalcore.traffic.log import LogFields, LogLine, LogProblem, infer_format, read_log
from evalcore.traffic.replay import Occurrences, line_key

KEY_ENV = "EVALCORE_API_KEY"
TIMEOUT = 900.0  #: seconds for one request, all of it: a gate or an upload is computed while the command waits
#: the commands --server works with
REMOTE = ("gate", "load-run", "traffic import", "list", "show", "threshold")


def command_of(args: argparse.Namespace) -> str:
    sub = getattr(args, "traffic_command", None)
    return f"{args.command} {sub}" if args.command == "traffic" and sub else str(args.command)


def check_remote(args: argparse.Namespace) -> None:
    """ConfigError when ``--server`` is given to a command that cannot use it, or with ``--store``,
    or is ``http://`` to a host other than this machine without ``--insecure`` (the key would
    cross the network in clear); with ``--insecure``, a warning. Before any connection."""
    server = getattr(args, "server", None)
    if server is None:
        if getattr(args, "insecure", False):
            raise ConfigError("--insecure goes with --server URL")
        return
    if command_of(args) not in REMOTE:
        raise ConfigError(f"--server works with {', '.join(REMOTE)}; not with {command_of(args)}")
    if getattr(args, "store", None):
        raise ConfigError("--server and --store name two places: give one")
    if sends_in_clear(server):
        if not getattr(args, "insecure", False):
            raise ConfigError(
                f"--server {server[:80]!r} is http:// to another machine: the API key would be sent in clear; "
                "use https:// (or give --insecure to go on anyway)"
            )
        print(
            for_terminal(f"warning: --server {server[:80]!r}: the API key is sent in clear (--insecure)"),
            file=sys.stderr,
        )


def client(args: argparse.Namespace) -> Client:
    key = os.environ.get(KEY_ENV, "").strip()
    if not key:
        raise ConfigError(f"--server needs the API key in ${KEY_ENV} (never on the command line)")
    return Client(args.server, key, timeout=TIMEOUT, allow_insecure=bool(getattr(args, "insecure", False)))


def _time(value: Any) -> Any:
    if isinstance(value, str):
        try:
            return datetime.fromisoformat(value[:-1] if value.endswith("Z") else value)
        except ValueError:
            return value
    return value


def remote_list(args: argparse.Namespace) -> int:
    with client(args) as c:
        rows = c.runs()
    if args.json:
        print_json(rows)
        return 0
    print_runs(
        [{**r, "created_at": _time(r.get("created_at")), "finished_at": _time(r.get("finished_at"))} for r in rows]
    )
    return 0


def remote_show(args: argparse.Namespace) -> int:
    with client(args) as c:
        summary = c.run(args.run)
    if args.json:
        print_json(summary)
        return 0
    print(f"run {summary['run_id']}  {summary['name']}  status {summary['status']}")
    if summary["status"] != "complete":
        print(f"reason: {summary.get('reason') or '-'}")
        return 0
    print(f"queries: {summary.get('queries_in')} in-domain, {summary.get('queries_out')} out-of-domain")
    if summary.get("rerank_note"):
        print(summary["rerank_note"])
    print()
    print(format_table(_table(summary["configurations"])))
    return 0


def _table(configs: list[dict[str, Any]]) -> Any:
    import pandas as pd

    rows = []
    for c in configs:
        row = {
            "config": f"{c['strategy']}/{c['retriever']}",
            "queries": c["queries"],
            "mrr": c["mrr"],
            "destroyed": c.get("destroyed"),
            "failed": c.get("failed", 0),
        }
        row.update({f"recall@{k}": c[f"recall@{k}"] for k in DEFAULT_KS})
        rows.append(row)
    table = pd.DataFrame(rows)
    if len(table):
        table["destroyed"] = table["destroyed"].astype("Int64")
    return table


def remote_gate(args: argparse.Namespace, alpha: float, min_effect: float | None) -> int:

    with client(args) as c:
        found = c.gate(
            args.baseline,
            args.candidate,
            metric=args.metric,
            min_effect=min_effect,
            threshold_from_decision=args.threshold_from_decision,
            alpha=alpha,
            holm=args.holm,
        )
    found.pop("passed", None)
    report = report_from_dict(found, holm=args.holm)
    if args.junit:
        write_text(Path(args.junit), to_junit(report), "--junit")
    print(render(report, args.format))
    return report.exit_code


def remote_load_run(args: argparse.Namespace) -> int:
    with client(args) as c:
        done = c.upload_run(args.file)
    where = args.server
    if not done.get("loaded"):
        print(f"run {done['run_id']} ({done['run_name']}) is already in {where}, identical; nothing loaded")
    else:
        rows = done.get("rows") or {}
        print(
            f"loaded run {done['run_id']} ({done['run_name']}) into {where}: {sum(rows.values())} rows in "
            f"{sum(1 for n in rows.values() if n)} tables"
        )
    for note in done.get("notes") or []:
        print(note)
    return 0


def remote_threshold(args: argparse.Namespace, alpha: float, beta: float, confidence: float) -> int:
    if args.splits is not None:
        raise ConfigError("--splits (the held-out check) runs only on a local store, not with --server")
    ref = parse_ref(args.run)
    with client(args) as c:
        found = c.claim(ref.run, ref.configuration, alpha, beta, confidence)
        summary = c.run(ref.run) if not args.json else {}
    if args.json:
        print_json([x.to_json() for x in found])
        return 0
    print_claims(summary["run_id"], summary["name"], found, alpha, beta, confidence, None)
    return 0


def cmd_traffic_import(args: argparse.Namespace) -> int:
    """Post the log's usable lines to deployment ``--deployment``: each line's id is its identity
    in the log (time, text, occurrence), so importing the log again posts only duplicates."""

    if args.run is not None:
        raise ConfigError("--run names a run of a local store; with --server give --deployment NAME")
    if not args.deployment:
        raise ConfigError("traffic import --server needs --deployment NAME (the deployment the queries go to)")
    if args.model or args.reranker or args.header:
        raise ConfigError("--model, --reranker and --header are the service's own with --server: leave them out")
    fmt = infer_format(args.log, args.format)
    fields = LogFields(args.query_field, args.time_field, args.label_field or None)
    occurrences = Occurrences()
    lines: list[bytes] = []
    problems: list[LogProblem] = []
    read = 0
    for part in read_log(args.log, fmt, fields):
        read += len(part)
        usable = [x for x in part if isinstance(x, LogLine)]
        problems += [x for x in part if isinstance(x, LogProblem)]
        keys = [line_key(x) for x in usable]
        for x, k, o in zip(usable, keys, occurrences.number(keys), strict=True):
            record = {"id": f"{k & 0xFFFFFFFFFFFFFFFF:016x}-{o}", "query": x.text, "time": x.at.isoformat() + "Z"}
            if x.label:
                record["label"] = x.label
            lines.append(json.dumps(record, ensure_ascii=False).encode("utf-8"))
    with client(args) as c:
        results = c.post_traffic(args.deployment, lines)
    for p in problems[:20]:
        print(f"warning: {args.log}: {p.describe()} (not imported)", file=sys.stderr)
    refused = [r for r in results if r.status == "problem"]
    for r in refused[:20]:
        print(f"warning: {args.log}: posted line {r.line}: {r.reason} (not imported)", file=sys.stderr)
    counts = {s: sum(1 for r in results if r.status == s) for s in ("stored", "duplicate", "problem")}
    if args.json:
        print_json({"deployment": args.deployment, "lines": read, **counts, "not_usable": len(problems)})
        return 0
    print(
        f"{os.path.basename(args.log)} -> deployment {args.deployment}: {read} lines read, {counts['stored']} "
        f"stored, {counts['duplicate']} already stored, {len(problems) + counts['problem']} not usable; "
        "the service replays them in its job runner (Traffic screen)"
    )
    return 0
