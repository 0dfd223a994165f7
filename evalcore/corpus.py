"""Load a corpus folder into documents with canonical texts (SPEC section 1).

Files: ``*.md``, ``*.markdown`` (source type ``markdown``), ``*.txt`` (``text``), ``*.pdf``
(``pdf``) and ``*.html``, ``*.htm`` (``html``) — the registry is :mod:`evalcore.extract` —
found recursively under the root, suffix case ignored, sorted by their relative path
(forward slashes). Files and folders whose name starts with ``.`` are skipped.
``doc_id`` = relative path without the extension, with forward slashes, so
``guide/intro.md`` -> ``guide/intro``.

A file that cannot be read, decoded or extracted, or whose id is already taken by an
earlier file (``a.md`` and ``a.txt``), becomes a :class:`FailedDocument` with the
reason; the other files go on.

With a ``cache`` (the run store), PDF and HTML extractions are looked up by the file's
sha256 and the extractor's name and version before extracting, and stored after: a
second run on the same files extracts nothing again, and a new extractor version
extracts anew.
"""
from __future__ import annotations

import hashlib
import logging
from pathlib import Path
from typing import Protocol

from evalcore import extract
from evalcore.errors import InputError
from evalcore.records import Corpus, Document, FailedDocument

logger = logging.getLogger(__name__)

SOURCE_TYPES: dict[str, str] = extract.SOURCE_TYPES

CacheKey = tuple[str, str, str]  # (file sha256, extractor name, extractor version)


class ExtractionCache(Protocol):
    """Where extractions are kept between runs (:class:`evalcore.store.Store` is one)."""

    def cached_extractions(self, keys: list[CacheKey]) -> dict[CacheKey, extract.Extraction]: ...

    def cache_extractions(self, items: dict[CacheKey, extract.Extraction]) -> None: ...


def find_files(root: Path) -> list[Path]:
    """Corpus files under ``root``, sorted by relative path (POSIX form)."""
    found = []
    for path in root.rglob("*"):
        rel = path.relative_to(root)
        if any(part.startswith(".") for part in rel.parts):
            continue
        if path.suffix.lower() in SOURCE_TYPES and path.is_file():
            found.append(path)
    return sorted(found, key=lambda p: p.relative_to(root).as_posix())


def doc_id_for(root: Path, path: Path) -> str:
    """Relative path without extension, forward slashes: ``a/b.md`` -> ``a/b``."""
    return path.relative_to(root).with_suffix("").as_posix()


def _read(root: Path, path: Path) -> bytes:
    rel = path.relative_to(root).as_posix()
    try:
        return path.read_bytes()
    except OSError as exc:
        raise InputError(f"{rel}: cannot read ({exc.strerror or exc})") from None


def _document(root: Path, path: Path, extractor: extract.Extractor,
              extraction: extract.Extraction, file_hash: str) -> Document:
    return Document(
        doc_id=doc_id_for(root, path),
        title=extraction.title,
        source_type=extractor.source_type,
        text=extraction.text,
        extractor=extractor.name,
        extractor_version=extractor.version,
        path=path.relative_to(root).as_posix(),
        page_starts=extraction.page_starts,
        notes=extraction.notes,
        file_hash=file_hash,
    )


def load_document(root: Path, path: Path) -> Document:
    """Read and extract one file; raises InputError with the reason when it cannot."""
    rel = path.relative_to(root).as_posix()
    data = _read(root, path)
    extractor, extraction = extract.extract_file(data, rel)
    return _document(root, path, extractor, extraction, hashlib.sha256(data).hexdigest())


def load_corpus(root: str | Path, cache: ExtractionCache | None = None) -> Corpus:
    """Load every corpus file under ``root`` (PDF and HTML extractions through ``cache``).

    Raises InputError naming the path when ``root`` does not exist, is not a folder,
    holds no corpus files, or none of its files could be loaded (the reasons of the
    first failures are in the message).
    """
    root_path = Path(root)
    if not root_path.exists():
        raise InputError(f"corpus folder not found: {root_path}")
    if not root_path.is_dir():
        raise InputError(f"corpus path is not a folder: {root_path}")
    files = find_files(root_path)
    if not files:
        kinds = ", ".join(f"*{s}" for s in SOURCE_TYPES)
        raise InputError(f"no documents ({kinds}) under {root_path}")
    documents: list[Document] = []
    failed: list[FailedDocument] = []
    seen: dict[str, str] = {}
    todo: list[tuple[Path, str, bytes, extract.Extractor, CacheKey]] = []
    for path in files:
        doc_id = doc_id_for(root_path, path)
        rel = path.relative_to(root_path).as_posix()
        if doc_id in seen:
            failed.append(FailedDocument(doc_id, rel, f"duplicate document id {doc_id!r} (also {seen[doc_id]})"))
            continue
        seen[doc_id] = rel
        try:
            data = _read(root_path, path)
        except InputError as exc:
            failed.append(FailedDocument(doc_id, rel, str(exc).removeprefix(f"{rel}: ")))
            continue
        extractor = extract.extractor_for(rel)
        todo.append((path, rel, data, extractor, (hashlib.sha256(data).hexdigest(), extractor.name, extractor.version)))
    wanted = [key for *_, extractor, key in todo if extractor.cached]
    hits = cache.cached_extractions(wanted) if cache is not None and wanted else {}
    fresh: dict[CacheKey, extract.Extraction] = {}
    for path, rel, data, extractor, key in todo:
        try:
            extraction = hits.get(key) or fresh.get(key) or extractor.extract(data, rel)
        except InputError as exc:
            reason = str(exc).removeprefix(f"{rel}: ")
            logger.warning("document %s failed: %s", rel, reason)
            failed.append(FailedDocument(doc_id_for(root_path, path), rel, reason))
            continue
        if extractor.cached and key not in hits:
            fresh[key] = extraction
        documents.append(_document(root_path, path, extractor, extraction, key[0]))
    if cache is not None and fresh:
        cache.cache_extractions(fresh)
    failed.sort(key=lambda f: f.path)
    if not documents:
        reasons = "; ".join(f"{f.path}: {f.reason}" for f in failed[:3])
        raise InputError(f"no readable documents under {root_path} ({reasons})")
    return Corpus(root=str(root_path), documents=tuple(documents), failed=tuple(failed))


def corpus_stats(corpus: Corpus) -> dict[str, int]:
    """Counts: ``documents`` (loaded), ``failed``, ``characters`` (code points of all
    canonical texts) and ``sections`` (``## `` heading lines in all)."""
    return {
        "documents": len(corpus.documents),
        "failed": len(corpus.failed),
        "characters": corpus.characters,
        "sections": sum(d.sections for d in corpus.documents),
    }
