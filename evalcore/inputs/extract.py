"""The extractor registry: which extractor reads which file, and their stamps (METHODS.md "The words").

=============================  ===========  =========================================
suffixes (case ignored)        source type  extractor (module)
=============================  ===========  =========================================
``.md``, ``.markdown``         markdown     ``markdown`` (:mod:`evalcore.inputs.extractors.markdown`)
``.txt``                       text         ``markdown``
``.pdf``                       pdf          ``pdf`` (:mod:`evalcore.inputs.extractors.pdf`)
``.html``, ``.htm``            html         ``html`` (:mod:`evalcore.inputs.extractors.html`)
=============================  ===========  =========================================

Every document stores its extractor's name and version; :func:`current_versions` is what
the stale check compares them with. ``NAME``, ``VERSION``, :func:`decode`,
:func:`canonical_text`, :func:`find_title` and :func:`extract_markdown` are the Markdown
extractor's, kept here for the code that used them before there were other formats.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import PurePath

from evalcore.errors import InputError
from evalcore.inputs.demo import pydoc_topics
from evalcore.inputs.extractors import Extraction, page_of
from evalcore.inputs.extractors import bounded as _bounded
from evalcore.inputs.extractors import html as _html
from evalcore.inputs.extractors import markdown as _markdown
from evalcore.inputs.extractors import pdf as _pdf
from evalcore.inputs.extractors.markdown import (
    NAME,
    VERSION,
    canonical_text,
    decode,
    extract_markdown,
    find_title,
    normalise_newlines,
    strip_front_matter,
)

__all__ = [
    "EXTRACTORS",
    "SOURCE_TYPES",
    "Extraction",
    "Extractor",
    "NAME",
    "VERSION",
    "canonical_text",
    "current_versions",
    "decode",
    "stale_reason",
    "extract_file",
    "extract_markdown",
    "extractor_for",
    "find_title",
    "normalise_newlines",
    "page_of",
    "strip_front_matter",
]


@dataclass(frozen=True, slots=True)
class Extractor:
    """One extractor: its stamp, the source type it gives documents, and whether its output is
    worth caching in the store (slow formats: PDF, HTML)."""

    name: str
    version: str
    source_type: str
    extract: Callable[[bytes, str], Extraction]
    check: Callable[[bytes, str], None]
    cached: bool = False


_MARKDOWN = Extractor(_markdown.NAME, _markdown.VERSION, "markdown", _markdown.extract, _markdown.check)
_TEXT = Extractor(_markdown.NAME, _markdown.VERSION, "text", _markdown.extract, _markdown.check)
_PDF = Extractor(_pdf.NAME, _pdf.VERSION, "pdf", _bounded.extract, _pdf.check, cached=True)
_HTML = Extractor(_html.NAME, _html.VERSION, "html", _html.extract, _html.check, cached=True)

EXTRACTORS: dict[str, Extractor] = {
    ".md": _MARKDOWN,
    ".markdown": _MARKDOWN,
    ".txt": _TEXT,
    ".pdf": _PDF,
    ".html": _HTML,
    ".htm": _HTML,
}
SOURCE_TYPES: dict[str, str] = {suffix: e.source_type for suffix, e in EXTRACTORS.items()}


def extractor_for(filename: str) -> Extractor:
    """The extractor for ``filename``'s suffix; InputError naming the known suffixes otherwise."""
    suffix = PurePath(filename).suffix.lower()
    if suffix not in EXTRACTORS:
        raise InputError(f"{filename}: not a corpus document ({', '.join(EXTRACTORS)})")
    return EXTRACTORS[suffix]


def extract_file(data: bytes, filename: str) -> tuple[Extractor, Extraction]:
    """Extract one file's bytes with the extractor for its suffix; InputError with the reason."""
    extractor = extractor_for(filename)
    return extractor, extractor.extract(data, filename)


def current_versions() -> dict[str, str]:
    """Extractor name -> the version this code would stamp (demo extractor included)."""
    versions = {e.name: e.version for e in EXTRACTORS.values()}
    versions[pydoc_topics.NAME] = pydoc_topics.VERSION
    return versions


def stale_reason(extractor: str | None, version: str | None) -> str | None:
    """Why a document stamped ``extractor``/``version`` is stale, or None when it is current
    (or its extractor is unknown to this code, e.g. a failed document without a stamp)."""
    now = current_versions().get(extractor) if extractor else None
    if now is None or str(version) == now:
        return None
    return f"extractor {extractor} {version} (now {now})"
