# The kernels are compiled by numba, which types their locals itself; numpy's stubs see the
# scalars they return as other types than the ones declared.
# mypy: disable-error-code="assignment,no-any-return"
"""The BM25 index build's passes, compiled (numba): each batch's words numbered from its bytes
(:func:`word_ids`, with an open-addressing table that compares the bytes of every match), an
analyzer's non-word characters blanked (:func:`word_characters`), and the postings written
term by term (:func:`bm25_postings`). See :mod:`evalcore.retrieval.engine.wordcount`; compiled once per
machine and cached, as :mod:`evalcore.retrieval.engine.kernels` is."""

from __future__ import annotations

from typing import Any

import numpy as np
from numba import njit

_JIT: dict[str, Any] = {"nogil": True, "cache": True, "boundscheck": False}


@njit(**_JIT)  # type: ignore[untyped-decorator]
def _word_hash(buf: Any, a: int, b: int) -> np.uint64:
    """FNV-1a of ``buf[a:b]`` (64 bits), its bits mixed (a Fibonacci multiply), so that a
    table slot taken from its top bits is spread evenly."""
    h = np.uint64(14695981039346656037)
    for i in range(a, b):
        h = (h ^ np.uint64(buf[i])) * np.uint64(1099511628211)
    return h * np.uint64(11400714819323198485)


@njit(**_JIT)  # type: ignore[untyped-decorator]
def _slot(h: Any, size: int) -> Any:
    """A hash's slot in a table of ``size`` (a power of two) slots: its top bits."""
    bits = 0
    while (1 << bits) < size:
        bits += 1
    return np.int64(h >> np.uint64(64 - bits)) if bits else np.int64(0)


@njit(**_JIT)  # type: ignore[untyped-decorator]
def word_ids(
    buf: Any,
    start: int,
    ids: Any,
    got: int,
    slots: Any,
    slot_hash: Any,
    offs: Any,
    lens: Any,
    hashes: Any,
    pool: Any,
    n_words: int,
    used: int,
) -> Any:
    """The id of every word of ``buf`` from ``start`` on, written to ``ids`` from ``got`` on
    (words: runs of bytes other than space; a NUL byte is a separator of its own, id -1); new
    words are numbered in order of first appearance.

    The vocabulary lives in arrays that persist between calls: ``slots``, an open-addressing
    table of word ids (-1: empty; a power of two, kept at most half full) with each slot's
    hash beside it (``slot_hash``: a probe reads no per-word array until the hashes match),
    and per word its bytes in ``pool`` (``offs``, ``lens``) and its hash. A word matches a slot only when its
    bytes equal the stored ones, so the numbering is exact whatever the hashes. When a new word
    does not fit, the pass stops before it; the caller grows the arrays and calls again.
    Returns (position reached, ids written, words, pool bytes used, 1 if stopped to grow)."""
    n = buf.shape[0]
    i = start
    space = np.uint8(32)
    nul = np.uint8(0)
    size_slots = slots.shape[0]
    mask = size_slots - 1
    while i < n:
        c = buf[i]
        if c == space:
            i += 1
            continue
        if c == nul:
            ids[got] = -1
            got += 1
            i += 1
            continue
        a = i
        while i < n and buf[i] != space and buf[i] != nul:
            i += 1
        size = i - a
        h = _word_hash(buf, a, i)
        s = _slot(h, size_slots)
        found = -1
        while slots[s] >= 0:
            w = slots[s]
            if slot_hash[s] == h and lens[w] == size:
                o = offs[w]
                k = 0
                while k < size and pool[o + k] == buf[a + k]:
                    k += 1
                if k == size:
                    found = w
                    break
            s = (s + 1) & mask
        if found < 0:
            if n_words == offs.shape[0] or used + size > pool.shape[0] or 2 * (n_words + 1) > size_slots:
                return a, got, n_words, used, 1
            for k in range(size):
                pool[used + k] = buf[a + k]
            offs[n_words] = used
            lens[n_words] = size
            hashes[n_words] = h
            used += size
            slots[s] = n_words
            slot_hash[s] = h
            found = n_words
            n_words += 1
        ids[got] = found
        got += 1
    return i, got, n_words, used, 0


@njit(**_JIT)  # type: ignore[untyped-decorator]
def word_slots(hashes: Any, n_words: int, size: int) -> Any:
    """A new open-addressing table of ``size`` slots holding words ``0 .. n_words - 1``, and
    each slot's hash."""
    slots = np.full(size, -1, dtype=np.int64)
    slot_hash = np.zeros(size, dtype=np.uint64)
    mask = size - 1
    for w in range(n_words):
        t = _slot(hashes[w], size)
        while slots[t] >= 0:
            t = (t + 1) & mask
        slots[t] = w
        slot_hash[t] = hashes[w]
    return slots, slot_hash


@njit(**_JIT)  # type: ignore[untyped-decorator]
def bm25_postings(
    terms: Any,
    freqs: Any,
    ptr: Any,
    idf: Any,
    doc_norm: Any,
    k1: float,
    n_terms: int,
    indptr: Any,
    indices: Any,
    data: Any,
) -> None:
    """A term's postings from each chunk's (term, count) pairs (chunk ``d``'s pairs at
    ``ptr[d]:ptr[d + 1]``): ``indptr`` (``n_terms + 1``) and, term after term, the chunks in
    order (``indices``) and their weights ``idf[t] * (f * (k1 + 1)) / (f + doc_norm[d])``
    (``data``), the float64 expression of ``BM25.build`` term by term. A counting sort: the
    chunk-major pairs are read twice and each posting written once, in place of a chunk-major
    matrix and its transpose."""
    indptr[0] = 0
    for t in range(n_terms):
        indptr[t + 1] = 0
    for p in range(terms.shape[0]):
        indptr[terms[p] + 1] += 1
    for t in range(n_terms):
        indptr[t + 1] += indptr[t]
    fill = indptr[:n_terms].copy()
    k = k1 + 1.0
    for d in range(ptr.shape[0] - 1):
        norm = doc_norm[d]
        for p in range(ptr[d], ptr[d + 1]):
            t = terms[p]
            f = np.float64(freqs[p])
            at = fill[t]
            indices[at] = d
            data[at] = idf[t] * (f * k) / (f + norm)
            fill[t] = at + 1


@njit(**_JIT)  # type: ignore[untyped-decorator]
def word_characters(buf: Any, is_word: Any) -> Any:
    """``buf`` (UTF-8, lone surrogates passed through) with every byte of a character that is
    no word character (``is_word[code point]`` false: not ``\\w``) made a space; NUL bytes stay.
    A word is then a run of bytes other than space, as :func:`word_ids` reads them."""
    n = buf.shape[0]
    out = np.empty(n, dtype=np.uint8)
    i = 0
    while i < n:
        b = np.int64(buf[i])
        if b < 0x80:
            size = 1
            cp = b
        elif b < 0xE0:
            size = 2
            cp = b & 0x1F
        elif b < 0xF0:
            size = 3
            cp = b & 0x0F
        else:
            size = 4
            cp = b & 0x07
        size = min(size, n - i)
        for k in range(1, size):
            cp = (cp << 6) | (np.int64(buf[i + k]) & 0x3F)
        keep = b == 0 or (cp < is_word.shape[0] and is_word[cp])
        for k in range(size):
            out[i + k] = buf[i + k] if keep else np.uint8(32)
        i += size
    return out


def warm_index_kernels() -> None:
    """Load these kernels with the argument types the build uses (see ``kernels.warm``)."""
    f64, i32, i64 = np.float64, np.int32, np.int64
    indptr32 = np.zeros(2, dtype=i32)
    bm25_postings(
        np.zeros(0, dtype=i32),
        np.zeros(0, dtype=i32),
        np.zeros(2, dtype=i64),
        np.zeros(1, dtype=f64),
        np.zeros(1, dtype=f64),
        1.2,
        1,
        indptr32,
        np.zeros(0, dtype=i32),
        np.zeros(0, dtype=f64),
    )
    word_characters(np.frombuffer(b"a b\x00", dtype=np.uint8), np.ones(0x80, dtype=np.bool_))
    slots, slot_hash = word_slots(np.zeros(1, dtype=np.uint64), 0, 4)
    word_ids(
        np.frombuffer(b"a b\x00", dtype=np.uint8),
        0,
        np.zeros(4, dtype=i64),
        0,
        slots,
        slot_hash,
        np.zeros(4, dtype=i64),
        np.zeros(4, dtype=i64),
        np.zeros(4, dtype=np.uint64),
        np.zeros(16, dtype=np.uint8),
        0,
        0,
    )
