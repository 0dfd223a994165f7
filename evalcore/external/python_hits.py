"""What a retriever written in Python returned, read as hits (``evalcore.evaluate(retriever=fn)``).

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

from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import TYPE_CHECKING, Any

from evalcore.external.hits import BadHits, RawHit, finite_number, offset, text_or_none
from evalcore.external.record import Failure

if TYPE_CHECKING:
    from evalcore.external.live import Outcome
    from evalcore.records import Corpus

ID_KEYS = ("id", "chunk", "chunk_id", "_id")
TEXT_KEYS = ("text", "page_content", "content")
DOCUMENT_KEYS = ("document", "doc_id")


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
        finite_number(score, f"hit {i}: score"),
    )


def function_answers(
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
