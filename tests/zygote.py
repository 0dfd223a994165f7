"""``python -m evalcore`` processes forked from an interpreter that has already imported the
command's numeric stack, instead of each importing it again (about 2 of the 3 CPU seconds of
a small run with the keyword embedder are imports: numba, pandas, pyarrow, duckdb, scipy).

:func:`start` returns a :class:`Forked`, which behaves as the ``subprocess.Popen`` of
``[sys.executable, "-m", "evalcore", *argv]`` would: a real process of its own (its own pid,
signals, exit code or the signal that ended it; stdin at /dev/null, stdout and stderr as pipes
read as text; the given environment and working folder), running ``evalcore/__main__.py`` as
``-m`` runs it (``runpy``, ``__main__``, ``sys.argv``, the path of ``-m`` with PYTHONPATH's
folders in front), and ending as an interpreter ends (exit code of SystemExit, a traceback and
exit 1, atexit handlers, Python's own end on an unhandled SIGINT). It is forked by a server
process (one per pytest process, started at its first use) that imported the modules in
:data:`PRELOAD` and nothing else: no model runtime, no connection, no thread.

What a fork cannot stand in for stays a ``python`` process of its own: a process's peak
memory (a fork starts with its parent's resident pages) and what happens while Python starts.
"""

from __future__ import annotations

import array
import atexit
import functools
import io
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import threading
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

#: What the server imports before it forks: the CLI and a run's numeric stack.
PRELOAD = (
    "numpy",
    "pandas",
    "pyarrow",
    "duckdb",
    "numba",
    "scipy.stats",
    "evalcore",
    "evalcore.cli.main",
    "evalcore.run.runner",
    "evalcore.retrieval.engine.kernels",
    "evalcore.store",
    "evalcore.jobs",
    "evalcore.run.execute",
    "evalcore.inputs.corpus",
    "evalcore.inputs.extract",
    "evalcore.read.runs",
    "evalcore.read.summary",
    "evalcore.measures.metrics",
    "evalcore.cli.remote",
    "evalcore.external.live",
    "keyword_embedder",
)

#: The server: imports PRELOAD and loads the compiled kernels, then forks one child per
#: connection on its socket. A request is one JSON line (argv, env, cwd) with the child's
#: stdin, stdout and stderr passed along (SCM_RIGHTS); the server answers the child's pid,
#: then its wait status and CPU seconds when it ends.
SERVER = r"""
import array, importlib, json, os, resource, selectors, socket, sys
listener = socket.socket(fileno=int(sys.argv[1]))
for name in json.loads(sys.argv[2]):
    importlib.import_module(name)
sys.modules["evalcore.retrieval.engine.kernels"].warm()  # numba's cached kernels, loaded once
import gc
gc.freeze()  # the collector leaves what is loaded alone: a child copies fewer pages
base_path = [p for p in sys.path[1:] if p not in os.environ.get("PYTHONPATH", "").split(os.pathsep)]
used = resource.getrusage(resource.RUSAGE_SELF)
os.write(1, f"ready {used.ru_utime + used.ru_stime}\n".encode())

def serve():
    sel = selectors.DefaultSelector()
    sel.register(listener, selectors.EVENT_READ, None)
    sel.register(0, selectors.EVENT_READ, "parent")  # end of stdin: the pytest process ended
    while True:
        for key, _ in sel.select():
            if key.data == "parent":
                return None
            if key.data is None:
                conn, _ = listener.accept()
                fds = array.array("i")
                msg, anc, _, _ = conn.recvmsg(1 << 20, socket.CMSG_SPACE(3 * fds.itemsize))
                for level, kind, data in anc:
                    fds.frombytes(data[: len(data) - len(data) % fds.itemsize])
                sys.stdout.flush(); sys.stderr.flush()
                pid = os.fork()
                if pid == 0:
                    sel.close()
                    listener.close()
                    return conn, list(fds), json.loads(msg)
                for fd in fds:
                    os.close(fd)
                conn.sendall(f"{pid}\n".encode())
                sel.register(os.pidfd_open(pid), selectors.EVENT_READ, (pid, conn))
            else:
                pid, conn = key.data
                sel.unregister(key.fileobj)
                os.close(key.fd)
                _, status, usage = os.wait4(pid, 0)
                try:
                    conn.sendall(f"{status} {usage.ru_utime + usage.ru_stime}\n".encode())
                finally:
                    conn.close()

got = serve()
if got is None:
    sys.exit(0)
conn, fds, req = got
conn.close()
for target, fd in enumerate(fds):
    os.dup2(fd, target)
os.closerange(3, 1 << 16)
os.chdir(req["cwd"])
os.environ.clear()
os.environ.update(req["env"])
extra = [p for p in req["env"].get("PYTHONPATH", "").split(os.pathsep) if p]
sys.path[:] = [os.getcwd(), *extra, *[p for p in base_path if p not in extra]]
sys.stdin = sys.__stdin__ = open(0, "r", closefd=False)
sys.stdout = sys.__stdout__ = open(1, "w", closefd=False)
sys.stderr = sys.__stderr__ = open(2, "w", closefd=False, errors="backslashreplace", buffering=1)
sys.argv = ["-m", *req["argv"]]
del array, importlib, json, selectors, socket, got, conn, fds, extra, base_path, listener, serve
import runpy
runpy.run_module("evalcore", run_name="__main__", alter_sys=True)
"""

_server: dict[str, object] = {}
#: CPU seconds spent by the server's start and by the processes it forked (ended ones), which
#: this process's own resource.getrusage(RUSAGE_CHILDREN) does not see: for measuring.
CPU = [0.0]
_lock = threading.Lock()


def _address() -> str:
    """The server's socket, started on first use (one per pytest process)."""
    with _lock:
        proc = _server.get("proc")
        if isinstance(proc, subprocess.Popen) and proc.poll() is None:
            return str(_server["path"])
        folder = Path(os.environ.get("TMPDIR", "/tmp")) / f"evalcore-zygote-{os.getpid()}"
        folder.mkdir(parents=True, exist_ok=True)
        path = folder / "s"
        path.unlink(missing_ok=True)
        listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        listener.bind(str(path))
        listener.listen(64)
        env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), str(ROOT / "tests")])}
        proc = subprocess.Popen(
            [sys.executable, "-c", SERVER, str(listener.fileno()), json.dumps(PRELOAD)],
            cwd=ROOT,
            env=env,
            pass_fds=[listener.fileno()],
            stdin=subprocess.PIPE,  # its end tells the server to end
            stdout=subprocess.PIPE,
        )
        listener.close()
        assert proc.stdout is not None
        said = proc.stdout.readline().split()
        if said[:1] != [b"ready"]:
            raise RuntimeError(f"the fork server did not start (exit {proc.wait()})")
        CPU[0] += float(said[1])
        _server.update(proc=proc, path=path)
        atexit.register(shutil.rmtree, folder, ignore_errors=True)
        return str(path)


class _Text:
    """A pipe read to its end in a thread (as ``communicate`` reads both at once)."""

    def __init__(self, fd: int) -> None:
        self._chunks: list[bytes] = []
        self._thread = threading.Thread(target=self._drain, args=(fd,), daemon=True)
        self._thread.start()

    def _drain(self, fd: int) -> None:
        with open(fd, "rb") as pipe:
            while chunk := pipe.read1(1 << 16):
                self._chunks.append(chunk)

    def read(self) -> str:
        self._thread.join()
        text = b"".join(self._chunks).decode("utf-8", errors="replace")
        self._chunks = []
        return io.StringIO(text, newline=None).read()


class Forked:
    """The ``Popen`` of one ``python -m evalcore`` process forked by the server."""

    def __init__(self, argv: list[str], env: dict[str, str], cwd: Path | str) -> None:
        self.args = [sys.executable, "-m", "evalcore", *argv]
        self.returncode: int | None = None
        out_r, out_w = os.pipe()
        err_r, err_w = os.pipe()
        null = os.open(os.devnull, os.O_RDONLY)
        conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        conn.connect(_address())
        request = json.dumps({"argv": list(argv), "env": dict(env), "cwd": str(cwd)}).encode()
        conn.sendmsg([request], [(socket.SOL_SOCKET, socket.SCM_RIGHTS, array.array("i", [null, out_w, err_w]))])
        for fd in (null, out_w, err_w):
            os.close(fd)
        self.stdout, self.stderr = _Text(out_r), _Text(err_r)
        self._reader = conn.makefile("rb")
        conn.close()  # the file keeps the socket open
        self.pid = int(self._reader.readline())
        self._ended = threading.Event()
        threading.Thread(target=self._watch, daemon=True).start()

    def _watch(self) -> None:
        with self._reader:
            status, seconds = self._reader.readline().split()
        CPU[0] += float(seconds)
        self.returncode = os.waitstatus_to_exitcode(int(status))
        self._ended.set()

    def poll(self) -> int | None:
        return self.returncode if self._ended.is_set() else None

    def wait(self, timeout: float | None = None) -> int:
        if not self._ended.wait(timeout):
            raise subprocess.TimeoutExpired(self.args, timeout or 0)
        assert self.returncode is not None
        return self.returncode

    def communicate(self, timeout: float | None = None) -> tuple[str, str]:
        self.wait(timeout)
        return self.stdout.read(), self.stderr.read()

    def send_signal(self, sig: int) -> None:
        if not self._ended.is_set():
            os.kill(self.pid, sig)

    def kill(self) -> None:
        self.send_signal(signal.SIGKILL)

    def terminate(self) -> None:
        self.send_signal(signal.SIGTERM)


#: set to 1 to start every process as a plain ``python -m evalcore`` (as where forking cannot work)
PLAIN_ENV = "EVALCORE_TEST_NO_FORK_SERVER"


@functools.cache
def _can_fork_here() -> bool:
    """Whether this system gives what the server needs (a pidfd to wait on each child: Linux
    5.3 or later); elsewhere every process is started the plain way, a little slower."""
    if os.environ.get(PLAIN_ENV) == "1" or not hasattr(os, "pidfd_open") or not hasattr(os, "fork"):
        return False
    try:
        os.close(os.pidfd_open(os.getpid()))
    except OSError:
        return False
    return True


def start(argv: list[str], env: dict[str, str] | None = None, cwd: Path | str = ROOT) -> Forked | subprocess.Popen[str]:
    """``python -m evalcore ARGV`` forked from the server, in ``cwd`` with exactly ``env``
    (default: this process's environment): see the module's text. Where the system cannot
    fork it that way, the same process started as a plain ``python -m evalcore``."""
    env = dict(os.environ) if env is None else env
    if not _can_fork_here():
        return subprocess.Popen(
            [sys.executable, "-m", "evalcore", *argv],
            env=env,
            cwd=cwd,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
    return Forked(argv, env, cwd)


def run(argv: list[str], env: dict[str, str] | None = None, cwd: Path | str = ROOT, timeout: float | None = None):
    """``subprocess.run``'s answer for :func:`start`'s process (killed at ``timeout``)."""
    proc = start(argv, env, cwd)
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
        raise
    return subprocess.CompletedProcess(proc.args, proc.returncode, out, err)
