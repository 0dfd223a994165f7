"""Chunks made elsewhere, located in the corpus (METHODS.md "Runs made elsewhere").

A chunk with offsets ``[start, end)`` into its document's canonical text has that evidence
range. A chunk with text only is located in its document as a needle is (any run of
whitespace matches any run of whitespace, nothing else is relaxed); found exactly once, its
evidence range is where it was found. A chunk found nowhere or more than once, whose
document is not in the corpus, or whose offsets lie outside its document, is kept with the
reason (``problem``) and is never correct.

The chunk file (``CHUNKS.jsonl``) has one JSON object a line: ``id`` (string or integer,
no whitespace: TREC run files split on it), ``document`` (the corpus document id, as
``python -m evalcore chunks`` prints it), ``text``, and optionally ``start`` and ``end``
(code point offsets, end exclusive). A BEIR ``corpus.jsonl`` reads too: ``_id`` for ``id``,
and ``document``/``start``/``end`` either at the top level or under ``metadata``.
A malformed line is an InputError naming the file and line; nothing is stored then.
"""

from __future__ import annotations

import bisect
import logging
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from evalcore.chunking import headings
from evalcore.errors import InputError
from evalcore.inputs.groundtruth import NeedleIndex, read_jsonl
from evalcore.records import Chunk, Corpus, Span
from evalcore.scoring import correct_sets, destroyed_cut

log = logging.getLogger(__name__)

_MAX_PLACES = 3


@dataclass(frozen=True, slots=True)
class ExternalChunk:
    """One chunk of a run made elsewhere. ``chunk_id`` is its position in the chunk set (the
    stored id), ``external_id`` its own id; ``[start, end)`` its evidence range (None when it
    could not be located, ``problem`` then says why). ``note`` is a warning about a located
    chunk (its offsets hold other words than its text). ``where`` names its origin (FILE:LINE)."""

    chunk_id: int
    external_id: str
    doc_id: str
    text: str
    start: int | None
    end: int | None
    section: str | None = None
    problem: str | None = None
    note: str | None = None
    where: str = ""

    @property
    def located(self) -> bool:
        return self.problem is None

    def as_chunk(self) -> Chunk:
        """The located chunk as a :class:`~evalcore.records.Chunk` (evidence = content range)."""
        if self.start is None or self.end is None:
            raise ValueError(f"chunk {self.external_id!r} is not located: {self.problem}")
        return Chunk(self.doc_id, self.section or "", self.text, self.text, self.start, self.end, self.start)


def _collapse(text: str) -> str:
    return " ".join(text.split())


class ChunkSet:
    """The chunks of one external strategy, located against ``corpus``.

    ``complete`` is True when the set holds every chunk of the other system (a chunk file);
    a set built from the chunks a service returned is not, and then no answer can be called
    destroyed (:meth:`destroyed` returns None).
    """

    def __init__(self, corpus: Corpus, complete: bool = True) -> None:
        self.corpus = corpus
        self.complete = complete
        self.chunks: list[ExternalChunk] = []
        self._by_id: dict[str, ExternalChunk] = {}
        self._by_place: dict[tuple[str | int | None, ...], ExternalChunk] = {}
        self._docs = corpus.by_id()
        self._indexes: dict[str | None, NeedleIndex] = {}
        self._headings: dict[str, tuple[list[int], list[str]]] = {}

    def __len__(self) -> int:
        return len(self.chunks)

    def get(self, external_id: str) -> ExternalChunk | None:
        return self._by_id.get(external_id)

    @property
    def unlocated(self) -> list[ExternalChunk]:
        return [c for c in self.chunks if not c.located]

    @property
    def notes(self) -> list[ExternalChunk]:
        return [c for c in self.chunks if c.note]

    # -- locating ----------------------------------------------------------------------
    def _index(self, doc_id: str | None) -> NeedleIndex:
        if doc_id not in self._indexes:
            docs = self.corpus.documents if doc_id is None else (self._docs[doc_id],)
            self._indexes[doc_id] = NeedleIndex(docs)
        return self._indexes[doc_id]

    def _section(self, doc_id: str, offset: int) -> str | None:
        """The ``## `` section holding ``offset`` (None before the first heading)."""
        if doc_id not in self._headings:
            found = headings(self._docs[doc_id].text)
            self._headings[doc_id] = ([o for o, _ in found], [t for _, t in found])
        offsets, titles = self._headings[doc_id]
        i = bisect.bisect_right(offsets, offset) - 1
        return titles[i] if i >= 0 else None

    def locate(
        self, doc_id: str | None, text: str, start: int | None, end: int | None
    ) -> tuple[str, int | None, int | None, str | None, str | None]:
        """``(doc_id, start, end, problem, note)`` of a chunk (see the module docstring).
        Without a document the text is looked for in the whole corpus."""
        if doc_id is not None and doc_id not in self._docs:
            return doc_id, None, None, f"document {doc_id!r} is not in the corpus", None
        if start is not None and end is not None:
            if doc_id is None:
                return "", None, None, "offsets without a document", None
            size = len(self._docs[doc_id].text)
            if not 0 <= start < end <= size:
                return (
                    doc_id,
                    None,
                    None,
                    (f"offsets [{start}, {end}) lie outside document {doc_id!r} ({size} characters)"),
                    None,
                )
            note = None
            held = _collapse(self._docs[doc_id].text[start:end])
            if text and held not in _collapse(text):
                note = (
                    f"the document's text at [{start}, {end}) is not the chunk's text "
                    "(offsets in bytes or in another extraction?)"
                )
            return doc_id, start, end, None, note
        found = self._index(doc_id).find(text)
        where = f"document {doc_id!r}" if doc_id is not None else "the corpus"
        if not found:
            return doc_id or "", None, None, f"text not found in {where}", None
        if len(found) > 1:
            places = ", ".join(f"{o.doc_id} #char={o.start},{o.end}" for o in found[:_MAX_PLACES])
            more = ", ..." if len(found) > _MAX_PLACES else ""
            return doc_id or "", None, None, f"text found {len(found)} times in {where} ({places}{more})", None
        return found[0].doc_id, found[0].start, found[0].end, None, None

    # -- building ----------------------------------------------------------------------
    def add(
        self,
        external_id: str,
        doc_id: str | None,
        text: str,
        start: int | None = None,
        end: int | None = None,
        where: str = "",
    ) -> ExternalChunk:
        """Locate and add one chunk; ValueError when ``external_id`` is already in the set."""
        if external_id in self._by_id:
            raise ValueError(f"duplicate chunk id {external_id!r} (first at {self._by_id[external_id].where})")
        doc, s, e, problem, note = self.locate(doc_id, text, start, end)
        section = self._section(doc, s) if s is not None else None
        chunk = ExternalChunk(len(self.chunks), external_id, doc, text, s, e, section, problem, note, where)
        self.chunks.append(chunk)
        self._by_id[external_id] = chunk
        return chunk

    def seen(
        self,
        external_id: str | None,
        doc_id: str | None,
        text: str | None,
        start: int | None = None,
        end: int | None = None,
        where: str = "",
    ) -> ExternalChunk:
        """The chunk a returned hit names: by its id when it has one (added on first sight),
        else by its place (document and offsets) or its document and text. ValueError when
        the hit says too little (no id, no text, no offsets) or an id comes back with other
        text than before."""
        if external_id is not None:
            known = self._by_id.get(external_id)
            if known is not None:
                if text is not None and known.text and _collapse(text) != _collapse(known.text):
                    raise ValueError(f"chunk {external_id!r} came back with another text than at {known.where}")
                return known
            if self.complete:
                raise ValueError(f"chunk {external_id!r} is not in the chunk file")
        if external_id is None:
            if start is not None and end is not None and doc_id is not None:
                key: tuple[str | int | None, ...] = ("place", doc_id, start, end)
            elif text:
                key = ("text", doc_id, _collapse(text))
            else:
                raise ValueError("a hit needs a chunk id, a text, or a document with offsets")
            if key in self._by_place:
                return self._by_place[key]
        if not text and (start is None or doc_id is None or doc_id not in self._docs):
            raise ValueError(f"chunk {external_id!r} has no text and no place in the corpus")
        if not text:
            text = self._docs[doc_id].text[start:end]  # type: ignore[index]
        new_id = external_id if external_id is not None else f"hit{len(self.chunks) + 1}"
        chunk = self.add(new_id, doc_id, text, start, end, where)
        if external_id is None:
            self._by_place[key] = chunk
        return chunk

    # -- scoring -----------------------------------------------------------------------
    def located_chunks(self) -> tuple[list[int], list[Chunk]]:
        """(chunk ids, :class:`Chunk` records) of the located chunks."""
        ids = [c.chunk_id for c in self.chunks if c.located]
        return ids, [self.chunks[i].as_chunk() for i in ids]

    def correct(self, spans: dict[str, Span]) -> dict[str, set[int]]:
        """{group: chunk ids whose evidence range holds the group's span} (METHODS.md "Correct hits")."""

        ids, chunks = self.located_chunks()
        return {g: {ids[i] for i in found} for g, found in correct_sets(chunks, spans).items()}

    def destroyed(self, spans: dict[str, Span], correct: dict[str, set[int]]) -> list[tuple[str, int | None]] | None:
        """(group, cut) of the ground truths no chunk holds; None when the set is not complete."""
        if not self.complete:
            return None

        _, chunks = self.located_chunks()
        return [(g, destroyed_cut(chunks, spans[g])) for g in sorted(spans) if not correct[g]]


# --- the chunk file -------------------------------------------------------------------------


def _id(value: Any, where: str, key: str) -> str:
    if isinstance(value, bool) or not isinstance(value, (str, int)):
        raise InputError(f"{where}: field {key!r} must be a string or an integer, got {value!r}")
    text = str(value)
    if not text.strip():
        raise InputError(f"{where}: field {key!r} is empty")
    if any(ch.isspace() for ch in text):
        raise InputError(f"{where}: chunk id {text!r} contains whitespace (TREC run files split on it)")
    return text


def _offset(obj: dict[str, Any], meta: dict[str, Any], key: str, where: str) -> int | None:
    value = obj.get(key, meta.get(key))
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        raise InputError(f"{where}: field {key!r} must be an integer offset, got {value!r}")
    return value


def chunk_file(path: str | Path) -> Path:
    """The chunk file ``path`` names: the file, or a BEIR folder's ``corpus.jsonl``."""
    path = Path(path)
    if path.is_dir():
        inner = path / "corpus.jsonl"
        if not inner.is_file():
            raise InputError(f"{path}: a folder of chunks must hold corpus.jsonl (BEIR layout)")
        return inner
    return path


def read_chunks(path: str | Path, corpus: Corpus) -> ChunkSet:
    """Read and locate every chunk of ``path`` (see the module docstring)."""

    path = chunk_file(path)
    chunks = ChunkSet(corpus, complete=True)
    for number, obj in read_jsonl(path):
        where = f"{path}:{number}"
        metadata = obj.get("metadata")
        meta: dict[str, Any] = metadata if isinstance(metadata, dict) else {}
        key = "id" if "id" in obj else "_id" if "_id" in obj else None
        if key is None:
            raise InputError(f"{where}: missing field 'id'")
        external_id = _id(obj[key], where, key)
        text = obj.get("text")
        if not isinstance(text, str) or not text.strip():
            raise InputError(f"{where}: field 'text' must be a non-empty string, got {text!r}")
        doc = obj.get("document", meta.get("document"))
        if doc is None:
            raise InputError(
                f"{where}: missing field 'document' (the corpus document id, as `python -m evalcore chunks` prints it)"
            )
        if not isinstance(doc, str) or not doc:
            raise InputError(f"{where}: field 'document' must be a non-empty string, got {doc!r}")
        start, end = _offset(obj, meta, "start", where), _offset(obj, meta, "end", where)
        if (start is None) != (end is None):
            raise InputError(f"{where}: give both 'start' and 'end', or neither")
        if start is not None and end is not None and not 0 <= start < end:  # both or neither (above)
            raise InputError(f"{where}: offsets must satisfy 0 <= start < end, got start={start}, end={end}")
        try:
            chunks.add(external_id, doc, text, start, end, where)
        except ValueError as exc:
            raise InputError(f"{where}: {exc}") from None
    if not chunks.chunks:
        raise InputError(f"{path}: no chunks")
    return chunks
