"""Sentence embeddings through an ONNX runtime (OpenVINO or ONNX Runtime): the same
vectors as sentence-transformers, several times faster on a CPU, and without importing
torch once the model is exported.

The first use of a model folder exports it (``torch.onnx.export`` of the whole
sentence-transformers module chain: transformer, pooling, normalisation) together with the
exact tokenizer sentence-transformers uses, checks the export against sentence-transformers
on probe texts, and stores both in the cache, under a hash of the folder's contents::

    $EVALCORE_CACHE/onnx/<sha256 of the model folder>-v<FORMAT>/{model.onnx, tokenizer.json, meta.json}

``$EVALCORE_CACHE`` defaults to the platform's cache folder (``$XDG_CACHE_HOME/evalcore``
or ``~/.cache/evalcore`` on Linux, ``~/Library/Caches/evalcore`` on macOS,
``%LOCALAPPDATA%\\evalcore\\Cache`` on Windows); it is never a folder the user merely named
on the command line. Later uses load the cached model in about a second.

Encoding: texts are tokenised in a producer thread (a window of texts at a time) while the
model runs, sorted by length and cut into batches of about ``TOKEN_BUDGET`` padded tokens,
so a batch pads little and its matrices stay in cache; ONNX Runtime runs with all graph
optimisations and one thread per available core (OpenVINO: float32 precision,
latency mode, one thread per core).
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import logging
import os
import queue
import shutil
import sys
import tempfile
import threading
import warnings
from collections.abc import Callable, Generator, Iterator, Sequence
from contextlib import closing, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tokenizers import Tokenizer

from evalcore.embedding.model_env import NOTE, offline
from evalcore.errors import ModelError

if sys.platform != "win32":
    import fcntl

if TYPE_CHECKING:
    import numpy as np

log = logging.getLogger(__name__)
Feeds = dict[str, "np.ndarray"]  # the model's named int64 input matrices

FORMAT = "1"  # bump when the export or its files change
TOKEN_BUDGET = 4096  # tokens per batch (padded)
STREAM_TOKEN_BUDGET = 1024  # tokens per batch when each core runs its own batch (OpenVINO streams)
WINDOW_TEXTS = 2048  # texts tokenised at a time (in a thread, while the model runs)
FIRST_WINDOW = 256  # texts in the first window
AHEAD = 2  # batches tokenised and padded ahead of the model
PROBES = [
    "What is a generator expression?",
    "  Leading and trailing spaces, UPPER case, naïve café, 東京, emoji 🙂.  ",
    "[Document > Section]\nA header line, then a paragraph. " * 40,  # over the 256-piece window
    "",
    "x",
]


def cache_root() -> Path:
    """``$EVALCORE_CACHE``, else the platform's per-user cache folder + ``evalcore``."""
    env = os.environ.get("EVALCORE_CACHE")
    if env:
        return Path(env).expanduser()
    if sys.platform == "darwin":
        return Path.home() / "Library" / "Caches" / "evalcore"
    if os.name == "nt":
        base = os.environ.get("LOCALAPPDATA") or str(Path.home() / "AppData" / "Local")
        return Path(base) / "evalcore" / "Cache"
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "evalcore"


def _files(folder: Path) -> list[Path]:
    return sorted(p for p in folder.rglob("*") if p.is_file() and ".git" not in p.parts)


def folder_digest(folder: str | Path) -> str:
    """sha256 over the relative paths and contents of every file in a model folder.

    Hashing 90 MB of weights takes a fraction of a second; the result is remembered in the
    cache under the files' (path, size, mtime) so a repeated run does not read them again.
    """
    folder = Path(folder).resolve()
    files = _files(folder)
    stamp = hashlib.sha256()
    for p in files:
        st = p.stat()
        stamp.update(f"{p.relative_to(folder)}\0{st.st_size}\0{st.st_mtime_ns}\0".encode())
    memo = cache_root() / "digests" / stamp.hexdigest()
    try:
        return memo.read_text().strip()
    except OSError:
        pass
    h = hashlib.sha256()
    for p in files:
        h.update(str(p.relative_to(folder)).encode() + b"\0")
        with open(p, "rb") as fh:
            for block in iter(lambda: fh.read(1 << 20), b""):
                h.update(block)
        h.update(b"\0")
    digest = h.hexdigest()
    try:
        memo.parent.mkdir(parents=True, exist_ok=True)
        memo.write_text(digest)
    except OSError:  # a read-only cache only costs the hashing next time
        log.debug("cannot remember the digest of %s", folder, exc_info=True)
    return digest


def export_dir(model_folder: str | Path) -> Path:
    return cache_root() / "onnx" / f"{folder_digest(model_folder)}-v{FORMAT}"


def export(model_folder: str | Path, dest: Path) -> Path:
    """Export a sentence-transformers folder to ``dest`` (model.onnx, tokenizer.json,
    meta.json), checked against sentence-transformers on :data:`PROBES`."""
    import numpy as np
    import torch
    from sentence_transformers import SentenceTransformer

    offline()
    folder = str(Path(model_folder))
    st = SentenceTransformer(folder, device="cpu", local_files_only=True)
    st.eval()
    tok = st.tokenizer
    if not getattr(tok, "is_fast", False):
        raise ModelError(f"{folder}: the tokenizer has no fast (Rust) form; ONNX export skipped")
    prompt_name = getattr(st, "default_prompt_name", None)
    prompt = (getattr(st, "prompts", None) or {}).get(prompt_name, "") if prompt_name else ""
    max_len, dim = st.max_seq_length, st.get_embedding_dimension()
    if max_len is None or dim is None:
        raise ModelError(f"{folder}: the model states no maximum sequence length or no embedding size")
    sample = tok(
        ["a probe", "a longer probe text"], padding=True, truncation=True, max_length=max_len, return_tensors="pt"
    )
    names = [n for n in ("input_ids", "attention_mask", "token_type_ids") if n in sample]

    class Wrapped(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.st = st

        def forward(self, *inputs: torch.Tensor) -> torch.Tensor:
            embedding: torch.Tensor = self.st(dict(zip(names, inputs, strict=True)))["sentence_embedding"]
            return embedding

    tmp = Path(tempfile.mkdtemp(prefix=".export-", dir=dest.parent))
    try:
        with torch.no_grad(), warnings.catch_warnings():
            # the tracer's notes on shape checks it freezes; the probe comparison below is the check
            warnings.simplefilter("ignore")
            torch.onnx.export(
                Wrapped().eval(),
                tuple(sample[n] for n in names),
                str(tmp / "model.onnx"),
                input_names=names,
                output_names=["embedding"],
                opset_version=17,
                dynamo=False,
                dynamic_axes={**{n: {0: "batch", 1: "tokens"} for n in names}, "embedding": {0: "batch"}},
            )
        tok.backend_tokenizer.save(str(tmp / "tokenizer.json"))
        meta = {
            "format": FORMAT,
            "inputs": names,
            "max_seq_length": max_len,
            "prompt": prompt,
            "dim": dim,
            "source": folder,
            "torch": torch.__version__,
        }
        (tmp / "meta.json").write_text(json.dumps(meta, indent=1))
        reference = st.encode(PROBES, normalize_embeddings=True, convert_to_numpy=True, batch_size=8)
        got = OnnxModel(tmp).encode(PROBES)
        cos = np.sum(reference.astype(np.float64) * got, axis=1)
        if not np.all(cos >= 0.99999):
            raise ModelError(
                f"{folder}: the ONNX export differs from sentence-transformers "
                f"(cosine {float(cos.min()):.6f} on a probe text)"
            )
        try:
            os.replace(tmp, dest)
        except OSError:  # another process finished first
            if not (dest / "meta.json").exists():
                raise
            shutil.rmtree(tmp, ignore_errors=True)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return dest


def exported(model_folder: str | Path) -> Path:
    """The cached export of ``model_folder``, made now if missing (needs torch once). One
    process exports it; another that needs it meanwhile waits and loads that export."""
    dest = export_dir(model_folder)
    if (dest / "meta.json").exists():
        return dest
    dest.parent.mkdir(parents=True, exist_ok=True)
    with _one_exporter(dest):
        if (dest / "meta.json").exists():  # exported by another process while this one waited
            return dest
        note = "preparing the embedding model %s for fast CPU inference, once (cached in %s)"
        log.log(NOTE, note, model_folder, dest)
        return export(model_folder, dest)


@contextmanager
def _one_exporter(dest: Path) -> Iterator[None]:
    """Held while this process exports ``dest``, so that processes started at once on a machine
    whose cache is empty (a dashboard and its first job, a CI run's workers) export the model
    once, not each (an export imports torch and traces the model: several CPU seconds). An
    exclusive ``flock`` on ``<dest>.lock`` beside the export, released when this process closes
    the file or ends; where there is no ``flock`` (Windows) or the file cannot be made, nothing
    is held and each process exports on its own, as before (the first complete export is kept)."""
    if sys.platform == "win32":
        yield
        return
    try:
        fd = os.open(dest.parent / f"{dest.name}.lock", os.O_RDWR | os.O_CREAT, 0o644)
    except OSError:
        log.debug("no lock for exporting %s", dest, exc_info=True)
        yield
        return
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


def _cores() -> int:
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not Linux
        return max(1, os.cpu_count() or 1)


BACKENDS = ("openvino", "onnxruntime")  # fastest first (measured: docs/SCALE.md)


def available_backend(preferred: str | None = None) -> str:
    """``preferred`` if given, else the first of :data:`BACKENDS` that is installed."""

    for name in [preferred] if preferred else list(BACKENDS):
        if importlib.util.find_spec(name) is not None:
            return name
    raise ModuleNotFoundError(f"no ONNX runtime installed (tried {preferred or ', '.join(BACKENDS)})")


@dataclass
class OnnxModel:
    """An exported model folder loaded in OpenVINO or ONNX Runtime (both run the same
    ONNX file in float32; OpenVINO is told so, since it would use bfloat16 where the
    processor has it)."""

    folder: Path
    threads: int = 0  # 0: one per available core
    token_budget: int = TOKEN_BUDGET
    backend: str = ""  # "" : the fastest installed
    meta: dict[str, Any] = field(init=False)

    def __post_init__(self) -> None:

        self.folder = Path(self.folder)
        self.meta = json.loads((self.folder / "meta.json").read_text())
        self.backend = available_backend(self.backend or None)
        threads = self.threads or _cores()
        # the runtimes are untyped: a feed of named int64 matrices in, the embedding matrix out
        self._run: Callable[[dict[str, np.ndarray]], np.ndarray]
        self._streams: Any = None  # OpenVINO's queue of infer requests, one per stream
        if self.backend == "openvino":
            import openvino as ov

            core = ov.Core()
            try:  # OpenVINO keeps its compiled form beside the export: later loads are faster
                core.set_property({"CACHE_DIR": str(self.folder / "openvino")})
            except Exception:
                log.debug("no OpenVINO model cache", exc_info=True)
            # one stream per core, each a batch at a time on one thread: small matrices keep a
            # core busier than one batch split over every core (measured: docs/SCALE.md)
            compiled = core.compile_model(
                str(self.folder / "model.onnx"),
                "CPU",
                {
                    "INFERENCE_PRECISION_HINT": "f32",
                    "INFERENCE_NUM_THREADS": threads,
                    "PERFORMANCE_HINT": "THROUGHPUT",
                    "NUM_STREAMS": threads,
                },
            )
            request = compiled.create_infer_request()
            self._run = lambda feeds: request.infer(feeds)[0]
            if threads > 1:
                self._streams = ov.AsyncInferQueue(compiled, threads)
                if self.token_budget == TOKEN_BUDGET:
                    self.token_budget = STREAM_TOKEN_BUDGET
        else:
            import onnxruntime as ort

            opts = ort.SessionOptions()
            opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
            opts.intra_op_num_threads = threads
            opts.inter_op_num_threads = 1
            opts.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
            opts.log_severity_level = 3
            session = ort.InferenceSession(str(self.folder / "model.onnx"), opts, providers=["CPUExecutionProvider"])
            self._run = lambda feeds: session.run(None, feeds)[0]
        self.tokenizer = Tokenizer.from_file(str(self.folder / "tokenizer.json"))
        self.tokenizer.no_padding()
        self.tokenizer.enable_truncation(self.meta["max_seq_length"])
        self.counter = Tokenizer.from_file(str(self.folder / "tokenizer.json"))
        self.counter.no_padding()
        self.counter.no_truncation()

    @property
    def dim(self) -> int:
        return int(self.meta["dim"])

    def _prepare(self, texts: Sequence[str]) -> list[str]:
        """What sentence-transformers tokenises: the text, after the model's default prompt
        if it has one (lower-casing, if configured, is in the saved tokenizer)."""
        prompt = self.meta.get("prompt") or ""
        return [prompt + t for t in texts] if prompt else list(texts)

    def _batches(self, texts: Sequence[str], stop: threading.Event) -> Iterator[tuple[np.ndarray, Feeds]]:
        """(positions in ``texts``, model feeds) per batch: a window of :data:`WINDOW_TEXTS`
        texts tokenised at once, sorted by length (longest first), cut into batches of at most
        ``token_budget`` padded tokens; a short query (~12 pieces) batches by the hundred."""
        import numpy as np

        names = self.meta["inputs"]
        start, size = 0, FIRST_WINDOW  # a small first window: the model starts sooner
        while start < len(texts):
            enc = self.tokenizer.encode_batch(self._prepare(texts[start : start + size]))
            lengths = np.fromiter((len(e.ids) for e in enc), dtype=np.int64, count=len(enc))
            order = np.argsort(-lengths, kind="stable")
            i = 0
            while i < len(order):
                if stop.is_set():
                    return
                longest = int(lengths[order[i]])
                take = order[i : i + max(1, self.token_budget // max(longest, 1))]
                i += len(take)
                ids = np.zeros((len(take), longest), dtype=np.int64)
                mask = np.zeros((len(take), longest), dtype=np.int64)
                for r, j in enumerate(take):
                    e = enc[j].ids
                    ids[r, : len(e)] = e
                    mask[r, : len(e)] = 1
                feeds = {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)}
                yield start + take, {n: feeds[n] for n in names}
            start, size = start + size, WINDOW_TEXTS

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        """L2-normalised float32 vectors, in the order of ``texts``."""
        import numpy as np

        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        with closing(self.embedded(texts)) as batches:
            for where, vecs in batches:
                out[where] = vecs
        return out

    def embedded(self, texts: Sequence[str]) -> Generator[tuple[np.ndarray, np.ndarray]]:
        """(positions in ``texts``, their L2-normalised float32 vectors) per batch, as the
        model makes them. A producer thread tokenises and pads the next batches while the
        model runs this one (the tokenizers library and both runtimes release the GIL), at
        most :data:`AHEAD` batches ahead; with OpenVINO's streams each core runs a batch of its
        own, and a batch is yielded when it completes (not always in order). Closing the
        iterator stops it."""

        import numpy as np

        if not texts:
            return
        ready: queue.Queue[tuple[np.ndarray, Feeds] | BaseException | None] = queue.Queue(AHEAD)
        stop = threading.Event()

        def put(item: tuple[np.ndarray, Feeds] | BaseException | None) -> None:
            while not stop.is_set():
                try:
                    ready.put(item, timeout=0.1)
                    return
                except queue.Full:
                    continue

        def produce() -> None:
            try:
                for batch in self._batches(texts, stop):
                    put(batch)
                put(None)
            except BaseException as exc:  # noqa: BLE001 - handed to the consumer, raised there
                put(exc)

        producer = threading.Thread(target=produce, name="evalcore-tokenise", daemon=True)
        producer.start()
        streams = self._streams
        finished: queue.SimpleQueue[tuple[np.ndarray, np.ndarray]] = queue.SimpleQueue()
        if streams is not None:  # each request's output is copied out as it completes
            streams.set_callback(lambda req, where: finished.put((where, req.get_output_tensor(0).data.copy())))

        def normalised(where: np.ndarray, out: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
            vecs = np.asarray(out, dtype=np.float32)
            norms = np.linalg.norm(vecs, axis=1, keepdims=True)
            np.divide(vecs, np.maximum(norms, 1e-12), out=vecs)
            return where, vecs

        try:
            while True:
                item = ready.get()
                if item is None:
                    break
                if isinstance(item, BaseException):
                    raise item
                where, feeds = item
                if streams is None:
                    yield normalised(where, self._run(feeds))
                    continue
                streams.start_async(feeds, where)  # waits for an idle stream
                while not finished.empty():
                    yield normalised(*finished.get())
            if streams is not None:
                streams.wait_all()
                while not finished.empty():
                    yield normalised(*finished.get())
        finally:
            stop.set()
            if streams is not None:
                streams.wait_all()  # no request left running on a buffer of this call
            producer.join()

    def count_pieces(self, texts: Sequence[str]) -> list[int]:
        """Untruncated word pieces of each text, special tokens included."""
        return [len(e.ids) for e in self.counter.encode_batch(self._prepare(texts))]


_LOCK = threading.Lock()


def load(model_folder: str | Path, threads: int = 0, backend: str = "") -> OnnxModel:
    """The ONNX model of a sentence-transformers folder (exported and cached on first use)."""
    with _LOCK:
        return OnnxModel(exported(model_folder), threads=threads, backend=backend)
