"""``evalcore.evaluate(..., retriever=fn)``: evaluate a retriever written in Python.

``fn(query: str, k: int)`` returns the query's hits, best first. A hit may be

- a dict with a ``score`` and any of ``id`` (or ``chunk``, ``chunk_id``, ``_id``), ``text``
  (or ``page_content``, ``content``), ``document`` (or ``doc_id``), ``start`` and ``end``;
  keys missing at the top level are looked for in a ``metadata`` dict, where ``source`` may
  name the document as a file path inside the corpus folder;
- an object with those attributes, e.g. a LangChain ``Document`` (``page_content``,
  ``metadata``, ``id``) or a LlamaIndex ``NodeWithScore`` (``node``, ``score``);
- a pair ``(hit, score)``, as LangChain's ``similarity_search_with_score`` returns.

A score is required (the refusal gate reads it). Character offsets of other libraries
(LangChain's ``start_index``, LlamaIndex's ``start_char_idx``) count in *their* text of the
document, which need not be our canonical text, so they are not read: such chunks are
located by their text. The result is a stored run like any other; a call that raises fails
that query with the exception as the reason.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from evalcore.errors import ConfigError
from evalcore.external.hits import BadHits, RawHit, number, offset, text_or_none
from evalcore.external.record import DEFAULT_MAX_FAILURES, Failure
from evalcore.pipeline.configurations import EXTERNAL

if TYPE_CHECKING:
    import pandas as pd

    from evalcore.external.live import Outcome
    from evalcore.records import Corpus, GroundTruth

log = logging.getLogger(__name__)

ID_KEYS = ("id", "chunk", "chunk_id", "_id")
TEXT_KEYS = ("text", "page_content", "content")
DOCUMENT_KEYS = ("document", "doc_id")


@dataclass(frozen=True, slots=True)
class Evaluation:
    """A stored evaluation: its run id and name, the store it is in, the summary table (one row,
    as ``python -m evalcore show`` prints it), and the queries that failed ({id: reason})."""

    run_id: str
    name: str
    store: str
    summary: pd.DataFrame
    failures: dict[str, str]

    def __str__(self) -> str:
        from evalcore.read.summary import format_table

        failed = f"; {len(self.failures)} queries failed" if self.failures else ""
        return f"run {self.run_id} ({self.name}) in {self.store}{failed}\n{format_table(self.summary)}"


def _get(obj: Any, keys: tuple[str, ...]) -> Any:
    for key in keys:
        if isinstance(obj, dict):
            if obj.get(key) is not None:
                return obj[key]
        elif getattr(obj, key, None) is not None:
            return getattr(obj, key)
    return None


def _document(value: Any, corpus: Corpus) -> str | None:
    """A corpus document id from an id or from a file path inside the corpus folder."""
    if value is None:
        return None
    text = str(value)
    ids = {d.doc_id for d in corpus.documents}
    if text in ids:
        return text
    root = Path(corpus.root).resolve()
    path = Path(text)
    path = (path if path.is_absolute() else root / path).resolve()
    try:
        candidate = path.relative_to(root).with_suffix("").as_posix()
    except ValueError:
        return text
    return candidate if candidate in ids else text


def to_hit(item: Any, corpus: Corpus, i: int) -> RawHit:
    """One returned item as a :class:`RawHit` (see the module docstring); BadHits otherwise."""
    score = None
    if isinstance(item, (tuple, list)) and len(item) == 2:
        item, score = item
    node = getattr(item, "node", None)  # LlamaIndex NodeWithScore
    if node is not None:
        score = getattr(item, "score", None) if score is None else score
        text = node.get_content() if callable(getattr(node, "get_content", None)) else getattr(node, "text", None)
        meta = getattr(node, "metadata", None) or {}
        chunk_id, source = getattr(node, "node_id", None), item
    else:
        text = _get(item, TEXT_KEYS)
        meta = _get(item, ("metadata",)) or {}
        chunk_id, source = _get(item, ID_KEYS), item
    if score is None:
        score = _get(source, ("score",))
    if score is None:
        score = _get(meta, ("score",))
    if score is None:
        raise BadHits(
            f"hit {i} has no score (return dicts with 'score', (hit, score) pairs or LlamaIndex NodeWithScore)"
        )
    document = _get(source, DOCUMENT_KEYS) or _get(meta, (*DOCUMENT_KEYS, "source"))
    start = _get(source, ("start",)) if isinstance(source, dict) else getattr(source, "start", None)
    end = _get(source, ("end",)) if isinstance(source, dict) else getattr(source, "end", None)
    if chunk_id is None:
        chunk_id = _get(meta, ID_KEYS)
    return RawHit(
        text_or_none(chunk_id, f"hit {i}: chunk id"),
        text_or_none(text, f"hit {i}: text"),
        _document(document, corpus),
        offset(start, f"hit {i}: start"),
        offset(end, f"hit {i}: end"),
        number(score, f"hit {i}: score"),
    )


def answers(
    fn: Callable[[str, int], Any], k: int, corpus: Corpus, queries: list[tuple[str, str]], concurrency: int = 1
) -> Iterator[Outcome]:
    """Each query's hits from ``fn`` (or its failure), in query order."""

    def ask(item: tuple[str, str]) -> Outcome:
        qid, text = item
        try:
            returned = fn(text, k)
            if returned is None or isinstance(returned, (str, bytes, dict)):
                raise BadHits(f"the retriever returned {type(returned).__name__}, not a list of hits")
            return qid, [to_hit(h, corpus, i) for i, h in enumerate(list(returned), start=1)]
        except BadHits as exc:
            return qid, Failure(str(exc), 1)
        except Exception as exc:  # noqa: BLE001 - the user's retriever failed: this query fails
            return qid, Failure(f"{type(exc).__name__}: {exc}", 1)

    if concurrency <= 1:
        for item in queries:
            yield ask(item)
        return
    with ThreadPoolExecutor(max_workers=concurrency, thread_name_prefix="evalcore-retriever") as pool:
        yield from pool.map(ask, queries)


def _inputs(corpus: Any, questions: Any, ood: Any) -> tuple[Corpus, GroundTruth]:
    from evalcore.inputs import sources as inputs
    from evalcore.inputs.groundtruth import load_ground_truth
    from evalcore.records import Corpus as CorpusRecord

    if isinstance(corpus, CorpusRecord):
        return corpus, load_ground_truth(corpus, questions, ood)
    return inputs.load(corpus, questions, ood)


def evaluate(
    corpus: str | Path | Corpus,
    questions: str | Path,
    ood: str | Path | None = None,
    *,
    retriever: Callable[[str, int], Any],
    k: int = 20,
    name: str = "python",
    chunker: str = EXTERNAL,
    retriever_name: str = EXTERNAL,
    score: str = "similarity",
    chunks: str | Path | None = None,
    store: Any = None,
    max_failures: float = DEFAULT_MAX_FAILURES,
    concurrency: int = 1,
    progress: bool = False,
) -> Evaluation:
    """Evaluate ``retriever`` on a corpus folder and its questions; store it as a run.

    ``retriever(query, k)`` returns hits best first (see the module docstring). ``score``
    says how its scores read (``similarity``: higher = closer; ``distance``). ``chunks``
    (optional) is the retriever's whole chunk set as a chunk file, so destroyed answers can
    be counted. ``store`` is a path or a :class:`~evalcore.store.Store` (default
    ``$EVALCORE_STORE`` or ``runs/evalcore.duckdb``). ``concurrency`` > 1 calls the retriever
    from that many threads (only for thread-safe retrievers). Returns an :class:`Evaluation`;
    the run shows on every page of the dashboard.
    """
    from evalcore.external.chunks import ChunkSet, read_chunks
    from evalcore.external.importer import _check_name
    from evalcore.external.live import run_live
    from evalcore.pipeline.configurations import external
    from evalcore.read.summary import summary_table
    from evalcore.store import Store

    if not callable(retriever):
        raise ConfigError(f"retriever must be a function (query, k) -> hits, got {type(retriever).__name__}")
    if not isinstance(k, int) or k < 1:
        raise ConfigError(f"k must be an integer >= 1, got {k!r}")
    _check_name(chunker, "chunker")
    _check_name(retriever_name, "retriever_name")
    the_store = store if isinstance(store, Store) else Store(store)
    loaded, gt = _inputs(corpus, questions, ood)
    if not gt.valid_questions:
        raise ConfigError("no valid in-domain question to score (every needle is invalid)")
    chunk_set = read_chunks(chunks, loaded) if chunks else ChunkSet(loaded, complete=False)
    function = getattr(retriever, "__qualname__", type(retriever).__name__)
    config = external(chunker, retriever_name, "python", score, {"function": function, "k": k})
    bar = None
    if progress:
        from evalcore.progress import BarProgress

        bar = BarProgress()
    done = run_live(
        the_store,
        loaded,
        gt,
        config,
        chunk_set,
        lambda queries: answers(retriever, k, loaded, queries, concurrency),
        name,
        {"function": function, "k": k, "chunks_path": str(chunks) if chunks else None},
        max_failures=max_failures,
        progress=bar,
    )
    return Evaluation(
        done.run_id,
        name,
        str(the_store.path),
        summary_table(the_store, done.run_id),
        {q: f.reason for q, f in done.failures.items()},
    )
