"""The retrievers' names (METHODS.md "The words"): which retrievers there are (dense, bm25,
hybrid, rerank), the analyzer a name carries (``bm25:german``, ``hybrid:unicode``), and the
parsing, labels and settings every caller shares.

Every ranking is total and deterministic: ties are broken by chunk order (chunk_id).
A ranking is an array of chunk ids, best first; every hit also carries its cosine
distance to the query, whichever retriever ranked it.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from importlib.metadata import version

from evalcore.errors import ConfigError
from evalcore.retrieval.bm25 import ANALYZERS, UNICODE, check_analyzer

RETRIEVERS = {
    "dense": "cosine distance between normalised all-MiniLM-L6-v2 vectors (1 - dot)",
    "bm25": "Okapi BM25 over chunk text, k1=1.2, b=0.75, tokens = lowercase [a-z0-9]+ runs",
    "hybrid": "reciprocal rank fusion of dense and bm25 rankings, sum 1/(60 + rank) "
    "(bm25 ranks the chunks that share a term with the query)",
    "rerank": "cross-encoder rescoring of the hybrid top 25",
}
#: the retrievers that read a BM25 analyzer (``bm25:german``, ``hybrid:german``, ``rerank:german``)
ANALYZED = ("bm25", "hybrid", "rerank")


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

    stemmer = f"Snowball stemmer (PyStemmer {version('PyStemmer')})"
    return {
        "bm25_analyzers": {
            a: r"\w+ of casefold(NFC(text))" + ("" if a == UNICODE else f", {a} {stemmer}") for a in used
        }
    }
