"""Starting a job's process: ``python -m evalcore --store STORE job JOB_ID``, detached."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from evalcore.store import Store


def _wait_for(proc: subprocess.Popen[bytes]) -> None:
    threading.Thread(target=proc.wait, name=f"evalcore-job-{proc.pid}", daemon=True).start()


def spawn(store: Store, job_id: str) -> subprocess.Popen[bytes]:
    """Start the job's process detached (new session), output to ``runs/jobs/JOB_ID.log``.

    A daemon thread waits for it, so a job killed while this process lives does not stay
    a zombie (which would look alive to the reaper)."""
    root = Path(__file__).resolve().parents[2]
    env = dict(os.environ, HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1")
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(root), env.get("PYTHONPATH")) if p)
    logs = store.path.parent / "jobs"
    logs.mkdir(parents=True, exist_ok=True)
    with open(logs / f"{job_id}.log", "ab") as out:
        proc = subprocess.Popen(
            [sys.executable, "-m", "evalcore", "--store", str(store.path.resolve()), "job", job_id],
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
            env=env,
            start_new_session=True,
            close_fds=True,
        )
    _wait_for(proc)
    return proc
