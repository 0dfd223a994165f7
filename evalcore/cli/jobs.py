"""``evalcore job``: execute a job the dashboard queued."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from evalcore.cli.shared.common import open_store
from evalcore.jobs import run_job

if TYPE_CHECKING:
    from evalcore.cli.shared.options import Subparsers


def cmd_job(args: argparse.Namespace) -> int:
    status = run_job(open_store(args), args.job_id)
    print(f"job {args.job_id}: {status}")
    return {"complete": 0, "cancelled": 1}.get(status, 2)


def add_job(sub: Subparsers) -> None:
    sp = sub.add_parser(
        "job",
        help="execute a queued dashboard job (started by the dashboard)",
        description="Run the job JOB_ID and record its outcome, then start the next queued job. The "
        "runner starts this command when a slot is free; started by hand on a queued job, it waits for a "
        "free slot ($EVALCORE_MAX_JOBS, default: a slot per core, as far as 1.5 GiB of memory each allows). "
        "Exit 0 complete, 1 cancelled, 2 failed.",
    )
    sp.add_argument("job_id", metavar="JOB_ID", help="id of a queued job in the store")
    sp.set_defaults(func=cmd_job)
