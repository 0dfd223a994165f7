"""ranx, an independent oracle of recall@k (its ``hit_rate@k``), MRR, reciprocal rank fusion and
its own run and qrels files, asked in a process of its own that runs ranx's code with numba's
compiler off (``NUMBA_DISABLE_JIT=1``).

Why a process, and why uncompiled: ranx compiles its functions with numba at their first call,
once for each width of the ids it is handed (numpy's fixed-width strings), and caches them in
its installed folder. In a virtual environment where ranx has never run (CI makes a new one for
every run) the four test files that ask ranx took 95 CPU seconds, and 35 with that cache, where
they take 22 now: ranx's Python code answers in well under a second on these sizes.
Interpreted, ranx gives the same answers bit for bit (checked on the generated runs of
tests/measures/test_metrics.py: every metric, with and without ``make_comparable``, and RRF).
The switch is read once, when numba is imported, and holds for a whole process: the test
process cannot use it, since evalcore's own kernels are compiled by numba there, and they are
what the tests check.

One oracle process serves a test process (started at the first question, ended with it);
the files that ask ranx run in one test process (tests/conftest.py, ``SAME_WORKER``). Qrels
and runs go to it as JSON, which carries Python's floats exactly, or as the path of a file
ranx reads itself; a ranx error comes back as a :class:`RanxError` with ranx's message.
"""

from __future__ import annotations

import atexit
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

Scores = dict[str, dict[str, float]]


class RanxError(RuntimeError):
    """ranx raised: its exception's type and message."""


_ORACLE: list[subprocess.Popen] = []


def evaluate(qrels: Scores | Path, run: Scores | Path, metrics: list[str], make_comparable: bool = False) -> dict:
    """``ranx.evaluate(Qrels(qrels), Run(run), metrics, make_comparable=...)`` as {metric: value};
    a :class:`~pathlib.Path` is read by ``Qrels.from_file`` or ``Run.from_file``."""
    return _ask("evaluate", qrels=_source(qrels), run=_source(run), metrics=metrics, make_comparable=make_comparable)


def fuse(runs: list[Scores], method: str, params: dict[str, Any]) -> Scores:
    """``ranx.fuse([Run(r) for r in runs], method=..., params=...).to_dict()``."""
    return _ask("fuse", runs=runs, method=method, params=params)


def read_qrels(path: Path) -> dict[str, dict[str, int]]:
    """``ranx.Qrels.from_file(path).to_dict()``."""
    return _ask("read", kind="qrels", path=str(path))


def read_run(path: Path) -> Scores:
    """``ranx.Run.from_file(path).to_dict()``."""
    return _ask("read", kind="run", path=str(path))


def _source(value: Scores | Path) -> dict[str, Any]:
    return {"file": str(value)} if isinstance(value, Path) else {"scores": value}


def _ask(op: str, **request: Any) -> Any:
    if not _ORACLE or _ORACLE[0].poll() is not None:
        _ORACLE[:] = [
            subprocess.Popen(
                [sys.executable, __file__],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                text=True,
                env={**os.environ, "NUMBA_DISABLE_JIT": "1"},
            )
        ]
    proc = _ORACLE[0]
    assert proc.stdin is not None and proc.stdout is not None
    proc.stdin.write(json.dumps({"op": op, **request}) + "\n")
    proc.stdin.flush()
    line = proc.stdout.readline()
    if not line:
        raise RanxError(f"the ranx process ended (exit code {proc.wait()}); its traceback is on stderr")
    answer = json.loads(line)
    if "error" in answer:
        raise RanxError(answer["error"])
    return answer["result"]


@atexit.register
def _stop() -> None:
    for proc in _ORACLE:
        if proc.stdin is not None:
            proc.stdin.close()  # the loop below ends at the end of its input
        proc.wait(timeout=30)


# --- the oracle process ------------------------------------------------------------------------


def _plain(value: Any) -> Any:
    """numpy's scalars as Python's (JSON carries those)."""
    return value.item() if hasattr(value, "item") else value


def _serve() -> None:
    import warnings

    from ranx import Qrels, Run
    from ranx import evaluate as ranx_evaluate
    from ranx import fuse as ranx_fuse

    def load(kind: type, source: dict[str, Any]) -> Any:
        return kind.from_file(source["file"]) if "file" in source else kind(source["scores"])

    for line in sys.stdin:
        request = json.loads(line)
        op = request["op"]
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                if op == "evaluate":
                    metrics = request["metrics"]
                    qrels, run = load(Qrels, request["qrels"]), load(Run, request["run"])
                    got = ranx_evaluate(qrels, run, metrics, make_comparable=request["make_comparable"])
                    result = dict(got) if isinstance(got, dict) else {metrics[0]: got}  # one metric: a number
                elif op == "fuse":
                    runs = [Run(scores) for scores in request["runs"]]
                    result = ranx_fuse(runs=runs, method=request["method"], params=request["params"]).to_dict()
                elif op == "read":
                    kind = Qrels if request["kind"] == "qrels" else Run
                    result = kind.from_file(request["path"]).to_dict()
                else:
                    raise ValueError(f"no operation {op!r}")
            answer = {"result": result}
        except Exception as exc:  # noqa: BLE001 - every ranx error goes back to the test that asked
            answer = {"error": f"{type(exc).__name__}: {exc}"}
        print(json.dumps(answer, default=_plain), flush=True)


if __name__ == "__main__":
    _serve()
