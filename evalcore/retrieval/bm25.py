"""Retrievers (METHODS.md "The words"): dense, bm25, hybrid (RRF), rerank.

Every ranking is total and deterministic: ties are broken by chunk order (chunk_id).
A ranking is an array of chunk ids, best first; every hit also carries its cosine
distance to the query, whichever retriever ranked it.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from evalcore.errors import ConfigError, ModelError

if TYPE_CHECKING:
    import numpy as np
    from numpy.typing import NDArray
    from scipy import sparse
    from sentence_transformers import CrossEncoder

log = logging.getLogger(__name__)

RETRIEVERS = {
    "dense": "cosine distance between normalised all-MiniLM-L6-v2 vectors (1 - dot)",
    "bm25": "Okapi BM25 over chunk text, k1=1.2, b=0.75, tokens = lowercase [a-z0-9]+ runs",
    "hybrid": "reciprocal rank fusion of dense and bm25 rankings, sum 1/(60 + rank) "
    "(bm25 ranks the chunks that share a term with the query)",
    "rerank": "cross-encoder rescoring of the hybrid top 25",
}
#: the retrievers that read a BM25 analyzer (``bm25:german``, ``hybrid:german``, ``rerank:german``)
ANALYZED = ("bm25", "hybrid", "rerank")
#: the analyzer without stemming: Unicode words, casefolded
UNICODE = "unicode"
ANALYZERS = {
    "": "the chapter's tokenizer: lowercase [a-z0-9]+ runs (a letter outside a-z splits a word)",
    UNICODE: "Unicode words (\\w+ of NFC, casefolded), not stemmed",
    "LANG": "Unicode words (\\w+ of NFC, casefolded), each stemmed by the Snowball stemmer of LANG",
}
RRF_K = 60
RERANK_DEPTH = 25
_TOKEN = re.compile(r"[a-z0-9]+")
_WORD = re.compile(r"\w+")


def languages() -> list[str]:
    """The Snowball languages PyStemmer knows (``english``, ``german``, ...), sorted."""
    import Stemmer

    return sorted(str(a) for a in Stemmer.algorithms())


def split_retriever(name: str) -> tuple[str, str]:
    """``"hybrid:german"`` -> ``("hybrid", "german")``; ``"bm25"`` -> ``("bm25", "")``
    (``""``: the chapter's tokenizer). No check: see :func:`parse_retrievers`."""
    base, _, analyzer = name.partition(":")
    return base, analyzer


def retriever_name(base: str, analyzer: str) -> str:
    """The inverse of :func:`split_retriever`: ``("bm25", "german")`` -> ``"bm25:german"``."""
    return f"{base}:{analyzer}" if analyzer else base


def describe(name: str) -> str:
    """One line on a retriever (the dashboard's tooltip and the CLI's help)."""
    base, analyzer = split_retriever(name)
    text = RETRIEVERS.get(base, name)
    if not analyzer:
        return text
    what = ANALYZERS[UNICODE] if analyzer == UNICODE else ANALYZERS["LANG"].replace("LANG", analyzer)
    return f"{text}; bm25 tokens: {what}"


def check_analyzer(analyzer: str, name: str) -> None:
    """ConfigError (one line listing the known languages) unless ``analyzer`` is known."""
    if analyzer == "" or analyzer == UNICODE:
        return
    known = languages()
    if analyzer not in known:
        raise ConfigError(
            f"unknown language {analyzer!r} in retriever {name!r}; known: {UNICODE} (no stemming), {', '.join(known)}"
        )


def parse_retrievers(spec: str | Sequence[str]) -> list[str]:
    """``"dense,bm25:german"`` -> ``["dense", "bm25:german"]``; ConfigError listing the known
    names (an unknown language: the known languages)."""
    names = [s.strip() for s in (spec.split(",") if isinstance(spec, str) else spec) if s.strip()]
    unknown = []
    for n in names:
        base, sep, analyzer = n.partition(":")
        if base not in RETRIEVERS or (sep and base not in ANALYZED) or (sep and not analyzer):
            unknown.append(n)
    if unknown or not names:
        known = ", ".join([*RETRIEVERS, *(f"{b}:LANG" for b in ANALYZED)])
        raise ConfigError(f"unknown retriever {', '.join(unknown) or '(none given)'}; known: {known}")
    for n in names:
        check_analyzer(split_retriever(n)[1], n)
    return list(dict.fromkeys(names))


def analyzer_label(analyzer: str) -> str:
    """How a picker names an analyzer: ``""`` -> the chapter's tokenizer, ``german`` -> itself."""
    if not analyzer:
        return "chapter's tokenizer (a-z0-9, no stemming)"
    return "unicode (Unicode words, no stemming)" if analyzer == UNICODE else analyzer


def with_analyzers(retrievers: Iterable[str], analyzers: Sequence[str]) -> list[str]:
    """Each retriever that reads BM25 once per analyzer (``["dense", "hybrid"]`` x
    ``["", "german"]`` -> ``["dense", "hybrid", "hybrid:german"]``); none given: the chapter's."""
    chosen = list(dict.fromkeys(analyzers)) or [""]
    out: list[str] = []
    for name in retrievers:
        base = split_retriever(name)[0]
        out += [retriever_name(base, a) for a in chosen] if base in ANALYZED else [name]
    return list(dict.fromkeys(out))


def analyzers_of(retrievers: Iterable[str]) -> list[str]:
    """The BM25 analyzers ``retrievers`` read, in order of first mention (``""``: the chapter's)."""
    out: dict[str, None] = {}
    for name in retrievers:
        base, analyzer = split_retriever(name)
        if base in ANALYZED:
            out[analyzer] = None
    return list(out)


def analyzer_settings(retrievers: Iterable[str]) -> dict[str, dict[str, str]]:
    """``{"bm25_analyzers": {"german": "..."}}`` for a run's settings when it uses an analyzer
    beyond the chapter's (with PyStemmer's version: a stemmer's rules change between
    releases); ``{}`` otherwise, so a run with ``bm25`` alone records what it always did."""
    used = [a for a in analyzers_of(retrievers) if a]
    if not used:
        return {}
    from importlib.metadata import version

    stemmer = f"Snowball stemmer (PyStemmer {version('PyStemmer')})"
    return {
        "bm25_analyzers": {
            a: r"\w+ of casefold(NFC(text))" + ("" if a == UNICODE else f", {a} {stemmer}") for a in used
        }
    }


def tokens(text: str) -> list[str]:
    """Lowercase ``[a-z0-9]+`` runs, as the seed's BM25."""
    return _TOKEN.findall(text.lower())


def words(text: str) -> list[str]:
    """``\\w+`` runs of the casefolded NFC text (the analyzers' words, before stemming)."""
    import unicodedata

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
            import Stemmer

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


def order_by(values: np.ndarray, descending: bool) -> np.ndarray:
    """Chunk ids sorted by value, ties broken by chunk id (stable sort)."""
    import numpy as np

    key = -values if descending else values
    return np.argsort(key, axis=-1, kind="stable")


# -- dense -------------------------------------------------------------------------
def cosine_distances(queries: np.ndarray, chunks: np.ndarray) -> np.ndarray:
    """``1 - q . c`` for L2-normalised vectors; shape (queries, chunks), float64."""
    import numpy as np

    if queries.shape[1] != chunks.shape[1]:
        raise ModelError(
            f"query vectors have size {queries.shape[1]} and chunk vectors {chunks.shape[1]}: "
            "vectors of two models are never compared"
        )
    return 1.0 - (queries.astype(np.float64) @ chunks.astype(np.float64).T)


# -- bm25 --------------------------------------------------------------------------


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

        from evalcore.retrieval.engine.wordcount import count_words, postings

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


# -- hybrid ------------------------------------------------------------------------
def rrf_scores(
    rankings: Sequence[np.ndarray], k: int = RRF_K, ranked: Sequence[np.ndarray | None] | None = None
) -> np.ndarray:
    """Reciprocal rank fusion: score(c) = sum over rankings of 1 / (k + rank(c)), rank from 1.

    Each ranking is a total order (array of chunk ids, best first); shape (queries, chunks)
    in and out. Scores are never mixed, only ranks. ``ranked[i]`` (a boolean array of the
    same shape, in chunk-id space) says which chunks ranking i really ranks: a chunk it
    does not rank adds nothing from that list. BM25 ranks only the chunks that share a
    term with the query; its order among the rest is a tie broken by corpus position and
    would otherwise leak corpus order into the fused score.
    """
    import numpy as np

    out: NDArray[np.float64] = np.zeros(rankings[0].shape, dtype=np.float64)
    rank_values = 1.0 / (k + np.arange(1, rankings[0].shape[-1] + 1, dtype=np.float64))
    rows = np.arange(out.shape[0])[:, None]
    for i, order in enumerate(rankings):
        contrib = np.empty_like(out)
        contrib[rows, order] = rank_values[None, :]
        mask = None if ranked is None else ranked[i]
        out += contrib if mask is None else np.where(mask, contrib, 0.0)
    return out


# -- rerank ------------------------------------------------------------------------
@dataclass
class Reranker:
    """A local sentence-transformers CrossEncoder; higher score = more relevant."""

    path: str
    model: CrossEncoder

    @classmethod
    def load(cls, path: str | Path) -> Reranker:
        import os

        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
        p = Path(path)
        if not p.is_dir():
            raise ModelError(f"{path}: no cross-encoder model folder there")
        from sentence_transformers import CrossEncoder

        try:
            model = CrossEncoder(str(p), device="cpu", local_files_only=True)
        except Exception as exc:
            raise ModelError(f"{path}: cannot load the cross-encoder: {exc}") from exc
        return cls(path=str(p), model=model)

    def score(self, query: str, texts: Sequence[str]) -> list[float]:
        import numpy as np

        if not texts:
            return []
        s = self.model.predict([(query, t) for t in texts], show_progress_bar=False)
        return [float(x) for x in np.asarray(s, dtype=np.float64).reshape(-1)]


def rerank_order(hybrid_order: np.ndarray, scores: Sequence[float], depth: int = RERANK_DEPTH) -> np.ndarray:
    """The hybrid top ``depth`` re-sorted by cross-encoder score (ties: chunk id), then the rest."""
    import numpy as np

    head = np.asarray(hybrid_order[:depth])
    s = np.asarray(scores, dtype=np.float64)
    idx = np.lexsort((head, -s))
    return np.concatenate([head[idx], np.asarray(hybrid_order[depth:])])
