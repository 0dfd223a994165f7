"""BM25 (METHODS.md "The words"): the index over chunk texts, the analyzers that read them (the
chapter's tokenizer, Unicode words, or words stemmed by a language's Snowball stemmer) and a
query's scores (:meth:`BM25.row`, :meth:`BM25.match`).

Okapi BM25, k1=1.2, b=0.75. The build's counting and the scoring pass are compiled behind this
module (:mod:`evalcore.retrieval.engine.wordcount`, :mod:`evalcore.retrieval.engine.index_kernels`,
:func:`evalcore.retrieval.engine.kernels.bm25_row`); one query's exact BM25 order is
:class:`evalcore.retrieval.engine.rank_rows.BM25Row`, and the same index on Ray shards is built
by :meth:`evalcore.retrieval.sharded.driver.Shards.build_bm25`.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import Stemmer

from evalcore.errors import ConfigError
from evalcore.retrieval.engine.wordcount import count_words, postings

if TYPE_CHECKING:
    import numpy as np
    from scipy import sparse

#: the analyzer without stemming: Unicode words, casefolded
UNICODE = "unicode"
ANALYZERS = {
    "": "the chapter's tokenizer: lowercase [a-z0-9]+ runs (a letter outside a-z splits a word)",
    UNICODE: "Unicode words (\\w+ of NFC, casefolded), not stemmed",
    "LANG": "Unicode words (\\w+ of NFC, casefolded), each stemmed by the Snowball stemmer of LANG",
}
_TOKEN = re.compile(r"[a-z0-9]+")
_WORD = re.compile(r"\w+")


def languages() -> list[str]:
    """The Snowball languages PyStemmer knows (``english``, ``german``, ...), sorted."""

    return sorted(str(a) for a in Stemmer.algorithms())


def check_analyzer(analyzer: str, name: str) -> None:
    """ConfigError (one line listing the known languages) unless ``analyzer`` is known."""
    if analyzer == "" or analyzer == UNICODE:
        return
    known = languages()
    if analyzer not in known:
        raise ConfigError(
            f"unknown language {analyzer!r} in retriever {name!r}; known: {UNICODE} (no stemming), {', '.join(known)}"
        )


def tokens(text: str) -> list[str]:
    """Lowercase ``[a-z0-9]+`` runs, as the seed's BM25."""
    return _TOKEN.findall(text.lower())


def words(text: str) -> list[str]:
    """``\\w+`` runs of the casefolded NFC text (the analyzers' words, before stemming)."""

    return _WORD.findall(unicodedata.normalize("NFC", text).casefold())


class Analyzer:
    """The tokens BM25 reads: the chapter's (``""``), ``unicode`` words, or words stemmed by
    the Snowball stemmer of a language. Each distinct word is stemmed once (a cache); an
    index build stems its vocabulary, not its tokens (:meth:`BM25.build`)."""

    def __init__(self, name: str = "") -> None:
        check_analyzer(name, f"bm25:{name}")
        self.name = name
        self._cache: dict[str, str] = {}
        self._stem_words: Callable[[list[str]], list[str]] | None = None
        if name and name != UNICODE:
            self._stem_words = Stemmer.Stemmer(name, 0).stemWords  # our own cache below

    @property
    def stems(self) -> bool:
        """Whether the analyzer stems its words (a language, not ``""`` or ``unicode``)."""
        return self._stem_words is not None

    def words(self, text: str) -> list[str]:
        """The text's words before stemming: the tokens of ``""`` and ``unicode``."""
        return words(text) if self.name else tokens(text)

    def stem(self, found: list[str]) -> list[str]:
        """Each word's stem (each distinct word stemmed once, then looked up)."""
        if self._stem_words is None:
            return found
        cache = self._cache
        missing = list(dict.fromkeys(w for w in found if w not in cache))
        if missing:
            cache.update(zip(missing, (str(s) for s in self._stem_words(missing)), strict=True))
        return [cache[w] for w in found]

    def __call__(self, text: str) -> list[str]:
        """The tokens BM25 matches: the words, stemmed."""
        return self.stem(self.words(text))


@dataclass
class BM25:
    """Okapi BM25 over chunk texts as a sparse term x chunk weight matrix.

    weight(t, d) = idf(t) * f(t,d) * (k1 + 1) / (f(t,d) + k1 * (1 - b + b * |d| / avg|d|)),
    idf(t) = ln(1 + (N - n(t) + 0.5) / (n(t) + 0.5)); a query's score for d is the sum of
    weight(t, d) over its tokens, repeated tokens counted each time (as the seed does).
    """

    vocab: dict[str, int]
    weights: sparse.csr_matrix[np.float64]  # terms x chunks
    n_chunks: int
    analyzer: Analyzer = field(default_factory=Analyzer)

    @classmethod
    def build(cls, texts: Iterable[str], k1: float = 1.2, b: float = 0.75, analyzer: str | Analyzer = "") -> BM25:
        """Index ``texts`` (any iterable, read once; nothing but the counts is kept), their
        tokens as ``analyzer`` reads them (``""``: the chapter's; ``"german"``: stemmed).

        Term ids are given in order of first appearance, so a query's terms are summed in
        the same order whatever the corpus size.
        """

        import numpy as np

        analyze = analyzer if isinstance(analyzer, Analyzer) else Analyzer(analyzer)
        # a stemming analyzer: words now, their stems once at the end
        vocab, r, freq, ptr, lengths_a = count_words(texts, analyze.name)
        n = len(lengths_a)
        avg = float(lengths_a.mean()) if n else 0.0
        if analyze.stems:
            vocab, r, freq, ptr = _merge_stems(analyze, vocab, r, freq, ptr)
        df = np.bincount(r, minlength=len(vocab)).astype(np.float64)
        idf = np.log(1.0 + (n - df + 0.5) / (df + 0.5))
        weights = postings(r, freq, ptr, lengths_a, idf, avg, k1, b)
        return cls(vocab=vocab, weights=weights, n_chunks=n, analyzer=analyze)

    def _query_matrix(self, queries: Sequence[str]) -> sparse.csr_matrix[np.float64]:
        """Term counts of each query (queries x terms), terms in index order."""
        import numpy as np
        from scipy import sparse

        rows: list[int] = []
        cols: list[int] = []
        vals: list[int] = []
        for qi, q in enumerate(queries):
            counts: dict[int, int] = {}
            for w in self.analyzer(q):
                j = self.vocab.get(w)
                if j is not None:
                    counts[j] = counts.get(j, 0) + 1
            rows.extend([qi] * len(counts))
            cols.extend(counts)
            vals.extend(counts.values())
        return sparse.csr_matrix(
            (np.asarray(vals, dtype=np.float64), (rows, cols)), shape=(len(queries), len(self.vocab))
        )

    def match(self, queries: Sequence[str]) -> sparse.csr_matrix[np.float64]:
        """BM25 scores of the chunks sharing a term with each query, as a sparse
        (queries x chunks) CSR matrix; every other chunk scores 0."""
        return self._query_matrix(queries) @ self.weights

    def row(self, query: str) -> np.ndarray:
        """BM25 score of every chunk for one query (float64, length n_chunks), summed term by
        term in index order: the same arithmetic, bit for bit, as :meth:`match` (one compiled
        pass over the query terms' postings)."""
        import numpy as np

        from evalcore.retrieval.engine import kernels

        qm = self._query_matrix([query])
        w = self.weights
        terms = qm.indices.astype(np.int64)
        out: np.ndarray = kernels.bm25_row(w.indptr, w.indices, w.data, terms, qm.data, self.n_chunks)
        return out

    def scores(self, queries: Sequence[str]) -> np.ndarray:
        """BM25 score of every chunk for every query; shape (queries, chunks)."""
        import numpy as np

        return np.asarray(self.match(queries).todense())


def _merge_stems(
    analyze: Analyzer, vocab: dict[str, int], r: np.ndarray, freq: np.ndarray, ptr: np.ndarray
) -> tuple[dict[str, int], np.ndarray, np.ndarray, np.ndarray]:
    """Word postings -> stem postings: each distinct word stemmed once, the counts of the
    words of a chunk that share a stem summed. Stem ids follow the words' first appearance,
    so they are in order of the stems' first appearance, as a word index's terms are."""
    import numpy as np
    from scipy import sparse

    stems: dict[str, int] = {}
    word_stem = np.fromiter(
        (stems.setdefault(s, len(stems)) for s in analyze.stem(list(vocab))), dtype=np.int32, count=len(vocab)
    )
    merged = sparse.csr_matrix((freq, word_stem[r], ptr), shape=(len(ptr) - 1, max(len(stems), 1)))
    merged.sum_duplicates()
    return stems, merged.indices.astype(np.int32, copy=False), merged.data, merged.indptr.astype(np.int64)
