"""One shard of a strategy's chunks, as a Ray actor holds it (see :mod:`evalcore.retrieval.sharded.driver`).

A shard is a contiguous range ``[offset, offset + size)`` of the chunk ids: its float32 vectors
and its BM25 postings, weighted with the *global* statistics (document frequencies, number of
chunks, average length) so that every score is the float the one-machine index gives. Ids
going in and out are global chunk ids.

Per block of queries the shard answers three kinds of question, each from its own chunks:

- :meth:`Shard.scan`: its top ``depth`` chunks in the dense order and in each BM25 order (ids,
  exact float64 distances, BM25 scores), its number of BM25-matched chunks, and the distance
  and scores of the correct chunks it holds. The block's screening scores and BM25 rows stay
  here for the next two questions.
- :meth:`Shard.count`: for probes ``(value, chunk id)``, how many of its chunks beat each
  probe in the dense order (smaller distance, or equal and a smaller id) or in a BM25 order
  (higher score, or equal and a smaller id; a chunk sharing no term with the query scores 0).
- :meth:`Shard.dump`: the exact distance of every chunk and the scores of its matched chunks,
  for the rare query whose first correct hybrid rank lies below every candidate list.

Dense scores are screened in float32 and decided in float64 as in
:mod:`evalcore.retrieval.ranking` (:class:`~evalcore.retrieval.engine.rank_rows.DenseRow`); the float64
similarity of a pair is :func:`~evalcore.retrieval.engine.rank_rows.exact_similarities`, the same bits
whichever shard or machine computes it.
"""

from __future__ import annotations

import resource
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from evalcore.retrieval.bm25 import BM25, Analyzer
from evalcore.retrieval.dense import max_norm, screen_scores, screening_error
from evalcore.retrieval.engine.rank_rows import BM25Row, DenseRow, exact_similarities
from evalcore.retrieval.engine.wordcount import count_words, postings

if TYPE_CHECKING:
    import numpy as np


_DELTA = 1e-12  # as rank_rows: separates two float64 similarities enough to order their distances
_SORT_FROM = 12  # probes of one query above which one sort beats a pass per probe


class Shard:
    """A contiguous range of chunk ids: vectors, BM25 postings, and one block's state."""

    def __init__(self, offset: int, size: int, dim: int) -> None:
        import numpy as np

        self.offset, self.size = offset, size
        self.vectors = np.zeros((size, dim), dtype=np.float32)
        self.texts: list[str] = []
        self.index: dict[str, BM25] = {}
        self._words: dict[str, tuple[Any, ...]] = {}
        self._terms: dict[str, tuple[Any, ...]] = {}
        self._block: dict[str, Any] = {}

    # -- loading -------------------------------------------------------------------
    def put_vectors(self, start: int, block: np.ndarray) -> int:
        """Copy ``block`` to local rows ``[start, start + len(block))``."""
        self.vectors[start : start + len(block)] = block
        return len(block)

    def put_texts(self, texts: Sequence[str]) -> int:
        self.texts.extend(texts)
        return len(self.texts)

    def max_norm(self) -> float:

        return max_norm(self.vectors)

    def words(self, analyzer: str) -> list[str]:
        """Count the words of the shard's texts as ``analyzer`` reads them (before stemming);
        returns the shard's words in order of first appearance (the driver orders them
        globally, as :meth:`BM25.build` numbers terms over the whole corpus)."""

        vocab, terms, freqs, ptr, lengths = count_words(self.texts, analyzer)
        self._words[analyzer] = (terms, freqs, ptr, lengths)
        return list(vocab)

    def terms(self, analyzer: str, to_term: np.ndarray, n_terms: int, stems: bool) -> tuple[np.ndarray, np.ndarray]:
        """Map the shard's words to global term ids (``to_term[local word id]``; a stemming
        analyzer's words sharing a stem in a chunk have their counts summed). Returns the
        shard's document frequency of every global term and its chunks' lengths."""
        import numpy as np
        from scipy import sparse

        r, freq, ptr, lengths = self._words.pop(analyzer)
        r = np.asarray(to_term, dtype=np.int32)[r] if len(r) else r
        if stems:  # as BM25.build's merge of stems: a chunk's counts of one stem summed
            merged = sparse.csr_matrix((freq, r, ptr), shape=(len(ptr) - 1, max(n_terms, 1)))
            merged.sum_duplicates()
            r, freq, ptr = merged.indices.astype(np.int32, copy=False), merged.data, merged.indptr.astype(np.int64)
        self._terms[analyzer] = (r, freq, ptr, lengths)
        return np.bincount(r, minlength=n_terms).astype(np.int64), lengths

    def build(self, analyzer: str, vocab: dict[str, int], idf: np.ndarray, avg: float, k1: float, b: float) -> int:
        """The shard's BM25 index with the global ``idf`` and average length: weights are the
        expression of :meth:`BM25.build`, element by element, so each is the same float."""

        r, freq, ptr, lengths = self._terms.pop(analyzer)
        n = self.size
        weights = postings(r, freq, ptr, lengths, idf, avg, k1, b)
        self.index[analyzer] = BM25(vocab=vocab, weights=weights, n_chunks=n, analyzer=Analyzer(analyzer))
        return len(r)

    def drop_texts(self) -> None:
        self.texts = []

    def peak_rss_mb(self) -> float:
        """This actor process's peak resident memory (MB)."""
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024

    # -- a block of queries ----------------------------------------------------------
    def scan(
        self,
        qvec: np.ndarray,
        qtexts: Sequence[str],
        correct: Sequence[np.ndarray],
        dense_depth: int,
        bm25_depth: dict[str, int],
        cmax: float,
    ) -> dict[str, Any]:
        """The shard's top chunks of each order for a block of queries (module docstring)."""
        import numpy as np

        off, n = self.offset, self.size
        q32 = np.asarray(qvec, dtype=np.float32)
        q64 = q32.astype(np.float64)
        eps = screening_error(q32, cmax)
        scores32 = screen_scores(q32, self.vectors)
        rows = {a: [self.index[a].row(t) for t in qtexts] for a in bm25_depth}
        self._block = {"scores32": scores32, "q64": q64, "eps": eps, "rows": rows, "sorted": {}}
        nb = len(q32)
        ld = min(dense_depth, n)
        out: dict[str, Any] = {
            "d_ids": np.zeros((nb, ld), dtype=np.int64),
            "d_dist": np.zeros((nb, ld)),
            "d_score": {a: np.zeros((nb, ld)) for a in bm25_depth},
            "b": {},
            "c_ids": [],
            "c_dist": [],
            "c_score": {a: [] for a in bm25_depth},
        }
        for a, depth in bm25_depth.items():
            lb = min(depth, n)
            out["b"][a] = {
                "ids": np.zeros((nb, lb), dtype=np.int64),
                "score": np.zeros((nb, lb)),
                "dist": np.zeros((nb, lb)),
                "m": np.zeros(nb, dtype=np.int64),
            }
        for i in range(nb):
            row = DenseRow(scores32[i], q64[i], self.vectors, float(eps[i]))
            ids, d = row.top(ld)
            out["d_ids"][i], out["d_dist"][i] = ids + off, d
            ci = np.asarray(correct[i], dtype=np.int64)
            local = ci[(ci >= off) & (ci < off + n)] - off
            out["c_ids"].append(local + off)
            out["c_dist"].append(row.dist(local))
            for a in bm25_depth:
                bm = BM25Row(rows[a][i])
                out["d_score"][a][i] = bm.score(ids)
                part = out["b"][a]
                b_ids = bm.top(part["ids"].shape[1])
                part["ids"][i], part["score"][i], part["dist"][i] = b_ids + off, bm.score(b_ids), row.dist(b_ids)
                part["m"][i] = bm.m
                out["c_score"][a].append(bm.score(local))
        return out

    def count(
        self, dense: Sequence[tuple[np.ndarray, np.ndarray]], bm25: dict[str, Sequence[tuple[np.ndarray, np.ndarray]]]
    ) -> dict[str, Any]:
        """For each query of the block and each probe ``(value, global chunk id)``: how many
        of the shard's chunks beat it (dense: by distance; BM25 ``bm25[analyzer]``: by score)."""
        import numpy as np

        out: dict[str, Any] = {"dense": [], "bm25": {}}
        for i, (d, c) in enumerate(dense):
            out["dense"].append(self._dense_beats(i, np.asarray(d), np.asarray(c, dtype=np.int64)))
        for a, probes in bm25.items():
            out["bm25"][a] = [
                self._bm25_beats(a, i, np.asarray(s), np.asarray(c, dtype=np.int64)) for i, (s, c) in enumerate(probes)
            ]
        return out

    def _exact_dist(self, i: int, ids: np.ndarray) -> np.ndarray:

        return 1.0 - exact_similarities(self._block["q64"][i], self.vectors, ids)

    def _dense_beats(self, i: int, d: np.ndarray, c: np.ndarray) -> np.ndarray:
        """Chunks with a smaller distance than ``d[j]``, or the same and an id below ``c[j]``;
        chunks whose float32 similarity is outside the screening band of ``1 - d[j]`` are
        counted from it, the band's are decided in float64 (as DenseRow.rank)."""
        import numpy as np

        out = np.zeros(len(d), dtype=np.int64)
        if not len(d) or not self.size:
            return out
        row = self._block["scores32"][i]
        wide = float(self._block["eps"][i]) + _DELTA
        c_local = c - self.offset
        sims = 1.0 - d
        lo = np.nextafter((sims - wide).astype(np.float32), np.float32(-np.inf))
        hi = np.nextafter((sims + wide).astype(np.float32), np.float32(np.inf))
        if len(d) >= _SORT_FROM:
            order = np.argsort(row, kind="stable")
            asc = row[order]
            top = self.size - np.searchsorted(asc, hi, side="right")
            a0 = np.searchsorted(asc, lo, side="left")
            a1 = np.searchsorted(asc, hi, side="right")
            bands = [order[x:y] for x, y in zip(a0, a1, strict=True)]
        else:
            top = np.array([np.count_nonzero(row > h) for h in hi], dtype=np.int64)
            bands = [np.flatnonzero((row >= x) & (row <= y)) for x, y in zip(lo, hi, strict=True)]
        for j, band in enumerate(bands):
            db = self._exact_dist(i, band)
            out[j] = int(top[j]) + int(np.count_nonzero((db < d[j]) | ((db == d[j]) & (band < c_local[j]))))
        return out

    def _bm25_beats(self, analyzer: str, i: int, s: np.ndarray, c: np.ndarray) -> np.ndarray:
        """Chunks with a higher BM25 score than ``s[j]``, or the same and an id below ``c[j]``."""
        import numpy as np

        row = self._block["rows"][analyzer][i]
        c_local = np.clip(c - self.offset, 0, self.size)
        if len(s) < _SORT_FROM:
            return np.array(
                [np.count_nonzero(row > x) + np.count_nonzero(row[:y] == x) for x, y in zip(s, c_local, strict=True)],
                dtype=np.int64,
            )
        key = (analyzer, i)
        if key not in self._block["sorted"]:
            order = np.lexsort((np.arange(self.size), -row))
            self._block["sorted"] = {key: (-row[order], order)}
        neg, ids = self._block["sorted"][key]
        a0 = np.searchsorted(neg, -s, side="left")
        a1 = np.searchsorted(neg, -s, side="right")
        return np.array(
            [x + int(np.searchsorted(ids[x:y], z)) for x, y, z in zip(a0, a1, c_local, strict=True)], dtype=np.int64
        )

    def dump(self, queries: Sequence[int], analyzer: str) -> list[tuple[np.ndarray, np.ndarray, np.ndarray]]:
        """For each query of the block: the exact distance of every chunk (chunk order), and
        the ids (global) and scores of the chunks sharing a term with it."""
        import numpy as np

        out = []
        for i in queries:
            dist = np.empty(self.size)
            for a in range(0, self.size, 32768):
                dist[a : a + 32768] = self._exact_dist(i, np.arange(a, min(self.size, a + 32768)))
            row = self._block["rows"][analyzer][i]
            ids = np.flatnonzero(row > 0)
            out.append((dist, ids + self.offset, row[ids]))
        return out
