"""Counting a corpus's words for BM25 (:meth:`evalcore.retrieval.bm25.BM25.build`, a Ray
shard's count): each text's words, numbered in order of first appearance, and the BM25 weight
matrix written from the counts.

Texts are read a batch at a time, joined and lowered in one call and reduced to their words'
bytes; the words are numbered by a compiled pass over those bytes
(:func:`evalcore.retrieval.engine.index_kernels.word_ids`) with no Python object per word, and the weights are
written term by term by a counting sort (:func:`evalcore.retrieval.engine.index_kernels.bm25_postings`).
The result is what counting text by text gave, bit for bit.
"""

from __future__ import annotations

import itertools
import unicodedata
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import numpy as np
    from numpy.typing import NDArray
    from scipy import sparse

_SEP = "\x00"  # joins a batch of texts: matched by no token pattern, composed with nothing by NFC
# the chapter's tokens from bytes: a-z, 0-9 and the separator kept, every other byte a space
_ASCII_KEEP = bytes(c if (97 <= c <= 122 or 48 <= c <= 57 or c == 0) else 32 for c in range(256))
_BATCH_TEXTS = 2048  # texts tokenised in one call


def _batch_bytes(batch: list[str], unicode: bool) -> bytes:
    r"""The words of every text of ``batch`` as bytes separated by spaces (the chapter's
    ``[a-z0-9]+`` runs of :func:`tokens`, or the ``\w+`` runs of :func:`words` in UTF-8 when
    ``unicode``), each text's followed by one NUL byte.

    The texts are joined by that separator and lowered (or NFC-normalised and casefolded) in
    one call. The separator is no word character and composes with nothing, and lowering and
    casefolding map each character on its own (the Greek final sigma, the one rule that looks
    at its neighbours, gives no a-z letter), so a text's words are those of the text alone.
    The chapter's runs are read from the lowered text's ASCII bytes (any other character
    becomes a space); an analyzer's from the UTF-8 bytes, each character that is no word
    character made spaces by a compiled pass (:func:`evalcore.retrieval.engine.index_kernels.word_characters`);
    a non-ASCII character's UTF-8 bytes are never a space or a NUL."""

    if any(_SEP in t for t in batch):  # a NUL in a text only ever split words: make it a space
        batch = [t.replace(_SEP, " ") for t in batch]
    joined = _SEP.join(batch) + _SEP
    if unicode:
        import numpy as np

        from evalcore.retrieval.engine import index_kernels as kernels

        data = unicodedata.normalize("NFC", joined).casefold().encode("utf-8", "surrogatepass")
        kept: bytes = kernels.word_characters(np.frombuffer(data, dtype=np.uint8), _word_table()).tobytes()
        return kept
    return joined.lower().encode("ascii", "replace").translate(_ASCII_KEEP)


_WORD_TABLE: list[np.ndarray] = []


def _word_table() -> NDArray[np.bool_]:
    r"""Whether each code point is a word character (``\w`` of Python's ``re``: alphanumeric,
    or the underscore), made once (a fifth of a second)."""
    import numpy as np

    if not _WORD_TABLE:
        table = np.fromiter((chr(c).isalnum() for c in range(0x110000)), dtype=np.bool_, count=0x110000)
        table[ord("_")] = True
        _WORD_TABLE.append(table)
    out: NDArray[np.bool_] = _WORD_TABLE[0]
    return out


class _Words:
    """The vocabulary of a corpus in order of first appearance, numbered by a compiled pass over
    each batch's bytes (:func:`evalcore.retrieval.engine.index_kernels.word_ids`): no Python object per word
    read, one per distinct word."""

    def __init__(self) -> None:
        import numpy as np

        self.slots = np.full(1 << 16, -1, dtype=np.int64)
        self.slot_hash = np.zeros(1 << 16, dtype=np.uint64)
        self.ids_buffer = np.empty(0, dtype=np.int64)
        self.offs = np.zeros(1 << 14, dtype=np.int64)
        self.lens = np.zeros(1 << 14, dtype=np.int64)
        self.hashes = np.zeros(1 << 14, dtype=np.uint64)
        self.pool = np.zeros(1 << 20, dtype=np.uint8)
        self.n, self.used = 0, 0

    def ids(self, data: bytes) -> np.ndarray:
        """Every word's id (-1 for a text's end), numbering new words."""
        import numpy as np

        from evalcore.retrieval.engine import index_kernels as kernels

        buf = np.frombuffer(data, dtype=np.uint8)
        if len(self.ids_buffer) < len(buf):  # a word or a separator: one byte at least
            self.ids_buffer = np.empty(2 * len(buf), dtype=np.int64)
        ids = self.ids_buffer
        at, got = 0, 0
        while True:
            at, got, self.n, self.used, full = kernels.word_ids(
                buf,
                at,
                ids,
                got,
                self.slots,
                self.slot_hash,
                self.offs,
                self.lens,
                self.hashes,
                self.pool,
                self.n,
                self.used,
            )
            if not full:
                return ids[:got]
            if self.n == len(self.offs):
                self.offs, self.lens, self.hashes = (
                    np.concatenate([a, np.zeros_like(a)]) for a in (self.offs, self.lens, self.hashes)
                )
            if 2 * (self.n + 1) > len(self.slots):
                self.slots, self.slot_hash = kernels.word_slots(self.hashes, self.n, 2 * len(self.slots))
            if self.used + len(buf) > len(self.pool):
                self.pool = np.concatenate([self.pool, np.zeros(max(len(self.pool), len(buf)), dtype=np.uint8)])

    def vocabulary(self, encoding: str) -> dict[str, int]:
        pool = self.pool[: self.used].tobytes()
        return {
            pool[o : o + k].decode(encoding): i
            for i, (o, k) in enumerate(zip(self.offs[: self.n].tolist(), self.lens[: self.n].tolist(), strict=True))
        }


class _Pieces:
    """Arrays appended batch by batch, joined into blocks of at least 64 MB as they come (a
    block that large is its own memory map, returned to the system when freed; many small
    arrays would stay in the heap, which does not shrink)."""

    _BLOCK = 64 * 2**20

    def __init__(self, dtype: type) -> None:
        self.dtype = dtype
        self.blocks: list[np.ndarray] = []
        self.pending: list[np.ndarray] = []
        self.size = 0

    def add(self, part: np.ndarray) -> None:
        import numpy as np

        self.pending.append(part)
        self.size += part.nbytes
        if self.size >= self._BLOCK:
            self.blocks.append(np.concatenate(self.pending).astype(self.dtype, copy=False))
            self.pending, self.size = [], 0

    def join(self) -> np.ndarray:
        import numpy as np

        parts = [*self.blocks, *self.pending]
        out: np.ndarray = np.concatenate(parts).astype(self.dtype, copy=False) if parts else np.zeros(0, self.dtype)
        self.blocks, self.pending = [], []
        return out


def count_words(
    texts: Iterable[str], analyzer: str
) -> tuple[dict[str, int], np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Each text's words as the analyzer named ``analyzer`` reads them before stemming (``""``:
    the chapter's tokens; any other: Unicode words; ``Analyzer.words``), counted:
    (vocabulary in order of first appearance, term ids, their counts, CSR row pointers, words
    per text). A text's terms are in id order. BM25's build and a Ray shard's count both
    start here.

    Texts are read a batch at a time (:func:`_batch_bytes`); every word is numbered by a
    compiled pass (:class:`_Words`), and the (text, term) pairs are counted by one sort."""

    import numpy as np

    unicode = bool(analyzer)
    words = _Words()
    terms, freqs = _Pieces(np.int32), _Pieces(np.int32)
    per_text, lengths = _Pieces(np.int64), _Pieces(np.float64)  # distinct terms and words per text
    it = iter(texts)
    while batch := list(itertools.islice(it, _BATCH_TEXTS)):
        ids = words.ids(_batch_bytes(batch, unicode))
        ends = np.flatnonzero(ids < 0)  # one per text
        per = np.diff(ends, prepend=-1)  # words per text, and its end
        text_of = np.repeat(np.arange(len(batch), dtype=np.int64), per)
        word = ids >= 0
        size = max(words.n, 1)
        pairs, counts = np.unique(text_of[word] * size + ids[word], return_counts=True)
        del ids, text_of, word
        terms.add((pairs % size).astype(np.int32))
        freqs.add(counts.astype(np.int32))
        per_text.add(np.bincount(pairs // size, minlength=len(batch)))
        lengths.add((per - 1).astype(np.float64))
    distinct = per_text.join()
    indptr = np.zeros(1 + len(distinct), dtype=np.int64)
    np.cumsum(distinct, out=indptr[1:])
    return words.vocabulary("utf-8" if unicode else "ascii"), terms.join(), freqs.join(), indptr, lengths.join()


def postings(
    terms: np.ndarray,
    freqs: np.ndarray,
    ptr: np.ndarray,
    lengths: np.ndarray,
    idf: np.ndarray,
    avg: float,
    k1: float = 1.2,
    b: float = 0.75,
) -> sparse.csr_matrix[np.float64]:
    """The BM25 weight matrix (terms x chunks, CSR: a term's row lists its chunks in order) of
    chunks given by their (term, count) pairs (CSR rows ``ptr``), with ``idf`` and the average
    length ``avg`` (the whole corpus's: a Ray shard weights its chunks with the global ones):
    weight(t, d) = idf(t) * f * (k1 + 1) / (f + k1 * (1 - b + b * |d| / avg))."""
    import numpy as np
    from scipy import sparse

    from evalcore.retrieval.engine import index_kernels as kernels

    n = len(lengths)
    # the length norm of each chunk (the same expression per element as per posting)
    doc_norm = k1 * (1.0 - b + b * lengths / avg) if avg > 0 else np.full(n, k1)
    wide = len(terms) >= 2**31 or n >= 2**31
    index_dtype = np.int64 if wide else np.int32
    indptr: NDArray[np.integer[Any]] = np.empty(len(idf) + 1, dtype=index_dtype)
    indices: NDArray[np.integer[Any]] = np.empty(len(terms), dtype=index_dtype)
    data = np.empty(len(terms), dtype=np.float64)
    kernels.bm25_postings(
        np.asarray(terms), np.asarray(freqs), np.asarray(ptr), idf, doc_norm, float(k1), len(idf), indptr, indices, data
    )
    return sparse.csr_matrix((data, indices, indptr), shape=(len(idf), n), copy=False)
