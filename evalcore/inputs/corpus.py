"""Load a corpus folder into documents with canonical texts (METHODS.md "The words").

Files: ``*.md``, ``*.markdown`` (source type ``markdown``), ``*.txt`` (``text``), ``*.pdf``
(``pdf``) and ``*.html``, ``*.htm`` (``html``) — the registry is :mod:`evalcore.inputs.extract` —
found recursively under the root, suffix case ignored, sorted by their relative path
(forward slashes). Files and folders whose name starts with ``.`` are skipped.
``doc_id`` = relative path without the extension, with forward slashes, so
``guide/intro.md`` -> ``guide/intro``.

A file that cannot be read, decoded or extracted, or whose id is already taken by an
earlier file (``a.md`` and ``a.txt``), becomes a :class:`FailedDocument` with the
reason; the other files go on. Discovery never leaves the corpus folder and never
loses an entry silently (:func:`discover`): a symbolic link is followed only when its
real target lies inside the folder (a link out of it is refused, without saying where it
points); a link loop, a broken link and a folder that cannot be read become failed
documents with their reason.

With a ``cache`` (the run store), PDF and HTML extractions are looked up by the file's
sha256 and the extractor's name and version before extracting, and stored after: a
second run on the same files extracts nothing again, and a new extractor version
extracts anew.
"""

from __future__ import annotations

import hashlib
import logging
import os
import stat
import unicodedata
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Protocol

from evalcore.errors import InputError
from evalcore.inputs import extract
from evalcore.records import Corpus, Document, FailedDocument

logger = logging.getLogger(__name__)

SOURCE_TYPES: dict[str, str] = extract.SOURCE_TYPES
OUTSIDE = "a symbolic link to a place outside the corpus folder; not followed"

CacheKey = tuple[str, str, str]  # (file sha256, extractor name, extractor version)


class ExtractionCache(Protocol):
    """Where extractions are kept between runs (:class:`evalcore.store.Store` is one)."""

    def cached_extractions(self, keys: list[CacheKey]) -> dict[CacheKey, extract.Extraction]: ...

    def cache_extractions(self, items: dict[CacheKey, extract.Extraction]) -> None: ...


@dataclass(frozen=True, slots=True)
class Found:
    """A corpus file: its path relative to the root as the user sees it (POSIX form), and
    the real path to read (symbolic links resolved; always inside the root)."""

    rel: str
    path: Path


def _wanted(name: str) -> bool:
    """A link named so could be a document or a folder (a corpus suffix, or none)."""
    suffix = PurePosixPath(name).suffix.lower()
    return suffix in SOURCE_TYPES or suffix == ""


def discover(root: Path) -> tuple[list[Found], list[FailedDocument]]:
    """Corpus files under ``root``, sorted by relative path, and what could not be followed
    (see the module doc) as failed documents. A failed folder's id ends with ``/``."""
    top = Path(os.path.realpath(root))
    found: list[Found] = []
    failed: list[FailedDocument] = []

    def fail(rel: PurePosixPath, reason: str, folder: bool = False) -> None:
        name = rel.as_posix() + ("/" if folder else "")
        doc_id = name if folder or rel.suffix.lower() not in SOURCE_TYPES else doc_id_for(rel.as_posix())
        logger.warning("corpus entry %s failed: %s", name, reason)
        failed.append(FailedDocument(doc_id, name, reason))

    def walk(folder: Path, rel: PurePosixPath, chain: tuple[Path, ...]) -> None:
        try:
            with os.scandir(folder) as it:
                entries = sorted(it, key=lambda e: e.name)
        except OSError as exc:
            fail(rel, f"folder cannot be read ({exc.strerror or exc})", folder=True)
            return
        for entry in entries:
            if entry.name.startswith("."):
                continue
            sub = rel / entry.name
            path = Path(entry.path)
            try:
                is_link = entry.is_symlink()
                if is_link:
                    if not _wanted(entry.name):
                        continue
                    try:
                        path = Path(os.path.realpath(path, strict=True))
                    except OSError as exc:
                        loop = "loop" in str(exc).lower() or getattr(exc, "errno", None) == 40
                        fail(sub, "a symbolic link loop" if loop else "a broken symbolic link")
                        continue
                    if path != top and not path.is_relative_to(top):
                        fail(sub, OUTSIDE)
                        continue
                mode = path.stat().st_mode if is_link else entry.stat(follow_symlinks=False).st_mode
            except OSError as exc:
                fail(sub, f"cannot be read ({exc.strerror or exc})")
                continue
            if stat.S_ISDIR(mode):
                if path in chain:
                    fail(sub, "a symbolic link loop (it leads back to a folder that holds it)", folder=True)
                else:
                    walk(path, sub, (*chain, path))
            elif PurePosixPath(entry.name).suffix.lower() in SOURCE_TYPES:
                if stat.S_ISREG(mode):
                    found.append(Found(sub.as_posix(), path))
                else:
                    fail(sub, "not a regular file")

    walk(top, PurePosixPath(), (top,))
    found.sort(key=lambda f: f.rel)
    failed.sort(key=lambda f: f.path)
    return found, failed


def doc_id_for(rel: str) -> str:
    """Relative path without extension, forward slashes: ``a/b.md`` -> ``a/b``."""
    return PurePosixPath(rel).with_suffix("").as_posix()


def _read(file: Found) -> bytes:
    """The file's bytes, opened without following a link (its real path is already checked)."""
    try:
        fd = os.open(file.path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
        with os.fdopen(fd, "rb") as fh:
            return fh.read()
    except OSError as exc:
        raise InputError(f"{file.rel}: cannot read ({exc.strerror or exc})") from None


def _document(file: Found, extractor: extract.Extractor, extraction: extract.Extraction, file_hash: str) -> Document:
    return Document(
        doc_id=doc_id_for(file.rel),
        title=extraction.title,
        source_type=extractor.source_type,
        text=extraction.text,
        extractor=extractor.name,
        extractor_version=extractor.version,
        path=file.rel,
        page_starts=extraction.page_starts,
        notes=extraction.notes,
        file_hash=file_hash,
    )


def load_document(file: Found) -> Document:
    """Read and extract one file; raises InputError with the reason when it cannot."""
    data = _read(file)
    extractor, extraction = extract.extract_file(data, file.rel)
    return _document(file, extractor, extraction, hashlib.sha256(data).hexdigest())


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
    files, failed = discover(root_path)
    if not files:
        kinds = ", ".join(f"*{s}" for s in SOURCE_TYPES)
        raise InputError(
            f"no documents ({kinds}) under {root_path}"
            + (f" ({'; '.join(f'{f.path}: {f.reason}' for f in failed[:3])})" if failed else "")
        )
    documents: list[Document] = []
    seen: dict[str, str] = {}
    todo: list[tuple[Found, bytes, extract.Extractor, CacheKey]] = []
    composed: dict[str, str] = {}  # the NFC form of each file's path -> that path
    for file in files:
        doc_id = doc_id_for(file.rel)
        if doc_id in seen:
            failed.append(FailedDocument(doc_id, file.rel, f"duplicate document id {doc_id!r} (also {seen[doc_id]})"))
            continue
        twin = composed.get(unicodedata.normalize("NFC", file.rel))
        if twin is not None:  # one name in two Unicode forms (NFC and NFD): two copies of one document
            failed.append(
                FailedDocument(
                    doc_id,
                    file.rel,
                    f"the same name as {twin!r} in another Unicode form (NFC/NFD); one document is kept",
                )
            )
            continue
        composed[unicodedata.normalize("NFC", file.rel)] = file.rel
        seen[doc_id] = file.rel
        try:
            data = _read(file)
        except InputError as exc:
            failed.append(FailedDocument(doc_id, file.rel, str(exc).removeprefix(f"{file.rel}: ")))
            continue
        extractor = extract.extractor_for(file.rel)
        todo.append((file, data, extractor, (hashlib.sha256(data).hexdigest(), extractor.name, extractor.version)))
    wanted = [key for *_, extractor, key in todo if extractor.cached]
    hits = cache.cached_extractions(wanted) if cache is not None and wanted else {}
    fresh: dict[CacheKey, extract.Extraction] = {}
    for file, data, extractor, key in todo:
        try:
            extraction = hits.get(key) or fresh.get(key) or extractor.extract(data, file.rel)
        except InputError as exc:
            reason = str(exc).removeprefix(f"{file.rel}: ")
            logger.warning("document %s failed: %s", file.rel, reason)
            failed.append(FailedDocument(doc_id_for(file.rel), file.rel, reason))
            continue
        if extractor.cached and key not in hits:
            fresh[key] = extraction
        documents.append(_document(file, extractor, extraction, key[0]))
    if cache is not None and fresh:
        cache.cache_extractions(fresh)
    failed.sort(key=lambda f: f.path)
    if not documents:
        reasons = "; ".join(f"{f.path}: {f.reason}" for f in failed[:3])
        raise InputError(f"no readable documents under {root_path} ({reasons})")
    return Corpus(root=str(root_path), documents=tuple(documents), failed=_unique_ids(documents, failed))


def _unique_ids(documents: list[Document], failed: list[FailedDocument]) -> tuple[FailedDocument, ...]:
    """Failed documents with ids no other document has (a run stores one row per id): a
    taken id becomes the file's relative path, then gets ``#2``, ``#3``..."""
    used = {d.doc_id for d in documents}
    out = []
    for f in failed:
        doc_id = f.doc_id if f.doc_id not in used else f.path
        n = 2
        while doc_id in used:
            doc_id, n = f"{f.path}#{n}", n + 1
        used.add(doc_id)
        out.append(FailedDocument(doc_id, f.path, f.reason))
    return tuple(out)


def corpus_stats(corpus: Corpus) -> dict[str, int]:
    """Counts: ``documents`` (loaded), ``failed``, ``characters`` (code points of all
    canonical texts) and ``sections`` (``## `` heading lines in all)."""
    return {
        "documents": len(corpus.documents),
        "failed": len(corpus.failed),
        "characters": corpus.characters,
        "sections": sum(d.sections for d in corpus.documents),
    }
