"""Load a corpus folder into documents with canonical texts (SPEC section 1).

Files: ``*.md``, ``*.markdown`` (source type ``markdown``) and ``*.txt`` (``text``),
found recursively under the root, suffix case ignored, sorted by their relative path
(forward slashes). Files and folders whose name starts with ``.`` are skipped.
``doc_id`` = relative path without the extension, with forward slashes, so
``guide/intro.md`` -> ``guide/intro``.

A file that cannot be read, decoded or extracted, or whose id is already taken by an
earlier file (``a.md`` and ``a.txt``), becomes a :class:`FailedDocument` with the
reason; the other files go on.
"""
from __future__ import annotations

import logging
from pathlib import Path

from evalcore import extract
from evalcore.errors import InputError
from evalcore.records import Corpus, Document, FailedDocument

logger = logging.getLogger(__name__)

SOURCE_TYPES: dict[str, str] = {".md": "markdown", ".markdown": "markdown", ".txt": "text"}


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


def load_document(root: Path, path: Path) -> Document:
    """Read and extract one file; raises InputError with the reason when it cannot."""
    rel = path.relative_to(root).as_posix()
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise InputError(f"{rel}: cannot read ({exc.strerror or exc})") from None
    raw = extract.decode(data, rel)
    title, text = extract.extract_markdown(raw, path.name)
    return Document(
        doc_id=doc_id_for(root, path),
        title=title,
        source_type=SOURCE_TYPES[path.suffix.lower()],
        text=text,
        extractor=extract.NAME,
        extractor_version=extract.VERSION,
        path=rel,
    )


def load_corpus(root: str | Path) -> Corpus:
    """Load every corpus file under ``root``.

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
    for path in files:
        doc_id = doc_id_for(root_path, path)
        rel = path.relative_to(root_path).as_posix()
        if doc_id in seen:
            failed.append(FailedDocument(doc_id, rel, f"duplicate document id {doc_id!r} (also {seen[doc_id]})"))
            continue
        seen[doc_id] = rel
        try:
            documents.append(load_document(root_path, path))
        except InputError as exc:
            reason = str(exc).removeprefix(f"{rel}: ")
            logger.warning("document %s failed: %s", rel, reason)
            failed.append(FailedDocument(doc_id, rel, reason))
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
