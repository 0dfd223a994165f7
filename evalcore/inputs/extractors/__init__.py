"""Extractors turn one file's bytes into a title and a canonical text (METHODS.md "The words").

One module per format: :mod:`~evalcore.inputs.extractors.markdown` (``.md``, ``.markdown``,
``.txt``), :mod:`~evalcore.inputs.extractors.pdf` and :mod:`~evalcore.inputs.extractors.html`. Each has
``NAME``, ``VERSION`` and ``extract(data, filename) -> Extraction``; the registry that maps
file suffixes to them is :mod:`evalcore.inputs.extract`. An extractor raises
:class:`~evalcore.errors.InputError` with a one-line reason when a file cannot be used; the
corpus records the file as failed and goes on.
"""

from __future__ import annotations

import importlib
import re
from importlib import metadata
from types import ModuleType

from evalcore.errors import InputError
from evalcore.records import Extraction as Extraction  # the record lives below inputs/ and store/ both
from evalcore.records import check_page_starts as check_page_starts
from evalcore.records import page_of as page_of

# --- characters an extraction leaves behind ------------------------------------------------

#: PDFium's mark for a hyphen at a line end whose two lines it joined (its text gives U+FFFE
#: there and U+0002 as the character's own code); also what it gives for a glyph that has no
#: Unicode value at all.
PDFIUM_HYPHEN = "\ufffe"
#: C1 code points that a font without a Unicode map hands over for Windows-1252 bytes
#: (0x93 is a left double quote there, 0x96 an en dash): what they stand for.
_CP1252 = {cp: bytes([cp]).decode("cp1252") for cp in range(0x80, 0xA0) if cp not in (0x81, 0x8D, 0x8F, 0x90, 0x9D)}
_NON_CHARACTERS = "\ufdd0-\ufdef" + "".join(
    f"{chr(plane + 0xFFFE)}{chr(plane + 0xFFFF)}" for plane in range(0, 0x110000, 0x10000)
)
#: Removed: C0 controls but tab and newline, DEL, the C1 codes Windows-1252 leaves undefined,
#: lone surrogates and every Unicode non-character (U+FDD0..U+FDEF, U+xxFFFE, U+xxFFFF).
_ARTEFACTS = re.compile(f"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f\x81\x8d\x8f\x90\x9d\ud800-\udfff{_NON_CHARACTERS}]")


def plain_characters(text: str) -> str:
    """``text`` without the artefacts extraction leaves, the same in every extractor: line
    endings become ``\\n``; PDFium's line-end hyphen mark (U+FFFE) and its code U+0002 go (the
    word is already joined: ``manip-``/``ulation`` reads ``manipulation``); a C1 code point
    becomes the Windows-1252 character it stands for (U+0093 -> “); every other control
    character except tab and newline, lone surrogates and every non-character go. So extracted
    text never holds a non-character, and no control character but tab and newline."""
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    text = _ARTEFACTS.sub("", text)
    return text.translate(_CP1252) if any("\x80" <= ch <= "\x9f" for ch in text) else text


def library_version(distribution: str) -> str:
    """The installed version of the library an extractor is built on (part of its stamp)."""
    try:
        return metadata.version(distribution)
    except metadata.PackageNotFoundError:  # pragma: no cover - a requirement
        return "missing"


def require_library(module: str, extra: str, filename: str) -> ModuleType:
    """Import ``module``, the library an optional extractor is built on; when it is not
    installed, InputError saying which extra installs it (the corpus records ``filename`` as
    failed with that line and goes on)."""
    try:
        return importlib.import_module(module)
    except ModuleNotFoundError as exc:
        if exc.name is None or exc.name.split(".")[0] != module.split(".")[0]:
            raise  # the library is there; something it needs is not
        raise InputError(
            f"{filename}: reading {extra.upper()} needs {module.split('.')[0]}, which is not "
            f'installed: pip install "evalcore[{extra}]"'
        ) from None
