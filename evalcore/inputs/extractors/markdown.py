"""The Markdown/plain-text extractor (METHODS.md "The words").

Every offset in the product is a code point offset into the canonical text, so the
canonical text must be reproducible from the file and the extractor stamp
(``NAME``, ``VERSION``) that is stored with every document.

The Markdown/plain-text extractor (``markdown``, version ``1``) makes the canonical
text in this order:

1. decode the bytes as UTF-8 (:func:`decode`); undecodable, binary (NUL byte) or empty
   files raise :class:`~evalcore.errors.InputError` with the reason;
2. remove one leading BOM (U+FEFF);
3. normalise line endings: ``\\r\\n`` and a lone ``\\r`` both become ``\\n``;
4. remove a leading front matter block: the first line is ``---`` (trailing spaces or
   tabs allowed) and a later line is ``---`` (same rule); both lines and everything
   between go. Without a closing line nothing is removed. The blank lines directly
   after the block are removed too, so the canonical text starts with the first
   line of content (a choice: a file with and without front matter then has the same
   canonical text).

Nothing else is touched: no trimming of the end, no Unicode normalisation, tabs kept.
"""

from __future__ import annotations

import logging
import re
from pathlib import PurePath

from evalcore.errors import InputError
from evalcore.inputs.extractors import Extraction

logger = logging.getLogger(__name__)

NAME = "markdown"
VERSION = "1"

_FRONT_MATTER_LINE = re.compile(r"---[ \t]*")
_FENCE = re.compile(r" {0,3}(```|~~~)")
_LEADING_BLANK_LINES = re.compile(r"\A(?:[ \t]*\n)+")


def decode(data: bytes, filename: str) -> str:
    """Decode a file's bytes as UTF-8 text.

    Raises InputError naming ``filename`` for an empty file, a binary file (any NUL
    byte) and bytes that are not valid UTF-8 (with the offset of the first bad byte).
    A BOM is kept here; :func:`canonical_text` removes it.
    """
    if not data:
        raise InputError(f"{filename}: empty file")
    if b"\0" in data:
        raise InputError(f"{filename}: binary file (NUL byte at offset {data.index(0)})")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InputError(f"{filename}: not valid UTF-8 (byte offset {exc.start}: {exc.reason})") from None


def normalise_newlines(raw: str) -> str:
    """``\\r\\n`` -> ``\\n``, then any lone ``\\r`` -> ``\\n``."""
    return raw.replace("\r\n", "\n").replace("\r", "\n")


def strip_front_matter(text: str) -> str:
    """Remove a leading ``---`` ... ``---`` block and the blank lines that follow it.

    ``text`` must already have ``\\n`` line endings. The opening ``---`` must be the
    very first line; the block ends at the next line that is ``---`` (optionally with
    trailing spaces/tabs). No closing line: the text is returned unchanged. Blank
    lines = lines that are empty or hold only spaces/tabs.
    """
    lines = text.split("\n")
    if not lines or not _FRONT_MATTER_LINE.fullmatch(lines[0]):
        return text
    for i in range(1, len(lines)):
        if _FRONT_MATTER_LINE.fullmatch(lines[i]):
            rest = "\n".join(lines[i + 1 :])
            return _LEADING_BLANK_LINES.sub("", rest)
    return text


def canonical_text(raw: str) -> str:
    """BOM removed, line endings normalised, front matter removed (see module doc)."""
    if raw.startswith("\ufeff"):
        raw = raw[1:]
    return strip_front_matter(normalise_newlines(raw))


def find_title(text: str) -> str | None:
    """Text of the first ``# `` heading line outside fenced code blocks, stripped.

    ``None`` when there is no such heading or its text is empty. A heading is a line
    starting with exactly ``# `` (``## `` is a section, not the title).
    """
    in_fence: str | None = None
    for line in text.split("\n"):
        fence = _FENCE.match(line)
        if fence:
            marker = fence.group(1)
            if in_fence is None:
                in_fence = marker
            elif marker == in_fence:
                in_fence = None
            continue
        if in_fence is None and line.startswith("# "):
            title = line[2:].strip()
            if title:
                return title
    return None


def extract_markdown(raw: str, filename: str) -> tuple[str, str]:
    """Return ``(title, canonical_text)`` for a Markdown or plain-text file.

    Title = the first ``# `` heading's text, else the file name without its extension.
    Raises InputError when the canonical text is empty or whitespace only.
    """
    text = canonical_text(raw)
    if not text.strip():
        raise InputError(f"{filename}: empty after extraction")
    title = find_title(text) or PurePath(filename).stem
    return title, text


def extract(data: bytes, filename: str) -> Extraction:
    """The registry's entry point: :func:`decode` then :func:`extract_markdown`."""
    title, text = extract_markdown(decode(data, filename), PurePath(filename).name)
    return Extraction(title, text)


def check(data: bytes, filename: str) -> None:
    """InputError when the bytes cannot be a Markdown/text document (the upload check)."""
    text = decode(data, filename)
    if not text.lstrip("\ufeff").strip():
        raise InputError(f"{filename}: only whitespace")
