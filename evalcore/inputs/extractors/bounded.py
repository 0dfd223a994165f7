"""PDF extraction in a child process with a memory cap and a deadline.

A PDF is a program: a 1 MB file whose content stream inflates to 1 GiB, or a 100 KB page of
1.4 million text objects, makes PDFium use gigabytes while it reads the page. Extracting in
the process that asked (the dashboard, a CLI run) would let one document exhaust it, so
:func:`extract` runs :func:`evalcore.inputs.extractors.pdf.extract` in a child interpreter
(``python -m evalcore.inputs.extractors.bounded``: the bytes on stdin, the pickled result on
stdout). The child caps its own address space (``RLIMIT_AS``) at what it holds after start
plus ``$EVALCORE_PDF_MEMORY_MB`` (default 1024) and is killed after ``$EVALCORE_PDF_SECONDS``
(default 300). A document that needs more fails with the reason, like any unreadable
document; the caller's memory does not grow with it. A child costs a fraction of a second;
extractions are cached in the store, so each PDF pays it once.
"""

from __future__ import annotations

import os
import pickle
import subprocess
import sys

from evalcore.errors import InputError
from evalcore.inputs.extractors import Extraction, pdf, require_library

if sys.platform != "win32":  # POSIX only: the child that caps its memory never runs on Windows
    import resource

MEMORY_ENV = "EVALCORE_PDF_MEMORY_MB"
SECONDS_ENV = "EVALCORE_PDF_SECONDS"
DEFAULT_MEMORY_MB = 1024
DEFAULT_SECONDS = 300.0


def _limit(name: str, default: float) -> float:
    raw = os.environ.get(name, "").strip()
    if not raw:
        return default
    try:
        value = float(raw)
    except ValueError:
        value = -1.0
    if not value > 0:
        raise InputError(f"{name} must be a positive number, got {raw!r}")
    return value


def _vm_bytes() -> int:
    try:
        with open("/proc/self/status") as fh:
            for line in fh:
                if line.startswith("VmSize:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0


def extract(data: bytes, filename: str) -> Extraction:
    """:func:`evalcore.inputs.extractors.pdf.extract` in a capped child process (see the module doc);
    InputError naming ``filename`` when it fails, needs more memory than allowed or runs out
    of time."""
    if not data or b"%PDF-" not in data[:1024] or sys.platform == "win32":
        return pdf.extract(data, filename)  # the cheap refusals need no child (Windows has no RLIMIT_AS)
    try:
        import pypdfium2  # noqa: F401
    except ImportError:  # the extra is not installed: the in-process extractor says which one
        return pdf.extract(data, filename)
    memory_mb = _limit(MEMORY_ENV, DEFAULT_MEMORY_MB)
    seconds = _limit(SECONDS_ENV, DEFAULT_SECONDS)
    proc = subprocess.Popen(
        [sys.executable, "-m", "evalcore.inputs.extractors.bounded", filename, str(int(memory_mb * 2**20))],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
    )
    try:
        out, _ = proc.communicate(data, timeout=seconds)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.communicate()
        raise InputError(
            f"{filename}: extraction took longer than {seconds:g} s (${SECONDS_ENV}); not extracted"
        ) from None
    try:
        kind, value = pickle.loads(out)
    except Exception:  # noqa: BLE001 - a child that died (killed at its memory cap, or crashed) sent nothing
        raise InputError(
            f"{filename}: extraction stopped (exit {proc.returncode}); the PDF likely needs more than "
            f"{memory_mb:g} MB (${MEMORY_ENV}); not extracted"
        ) from None
    if kind == "ok" and isinstance(value, Extraction):
        return value
    if kind == "memory":
        raise InputError(f"{filename}: extracting it needs more than {memory_mb:g} MB (${MEMORY_ENV}); not extracted")
    raise InputError(str(value))


def _main(filename: str, budget: int) -> int:
    data = sys.stdin.buffer.read()

    require_library("pypdfium2", "pdf", filename)  # import it before the cap is set
    held = _vm_bytes()
    if held:
        resource.setrlimit(resource.RLIMIT_AS, (held + budget, held + budget))
    try:
        result: tuple[str, object] = ("ok", pdf.extract(data, filename))
    except InputError as exc:
        result = ("error", str(exc))
    except MemoryError:
        result = ("memory", "")
    except Exception as exc:  # noqa: BLE001 - any failure of one document is that document's reason
        result = ("error", f"{filename}: not a readable PDF ({type(exc).__name__}: {exc})")
    sys.stdout.buffer.write(pickle.dumps(result))
    sys.stdout.buffer.flush()
    return 0


if __name__ == "__main__":
    raise SystemExit(_main(sys.argv[1], int(sys.argv[2])))
