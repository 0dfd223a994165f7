"""Text a user gives that comes back to a person: names, notes, labels, authors, shown queries.

Two kinds of text, two rules:

- **A name** (a question set's name, a run's name, a label) is an identifier a person reads
  and types: :func:`check_name` normalises it to NFC, strips it and refuses it when it is
  empty, longer than its cap, starts with ``-`` (a command line would read it as an option),
  or holds a control character, a bidirectional override or isolate, or a zero-width
  character (each would make the name read differently from what it is).
- **An identifier** (a deployment's name, a key's name: what a URL, a header or a
  configuration file names) follows a stricter rule, :func:`check_identifier`: NFC, 1 to 100
  characters (a caller may lower the cap), each a letter or a digit of any script (Unicode
  categories L and Nd), a combining mark after one (category M, as NFC leaves in many
  scripts), or one of ``-``, ``_`` and ``.``; the first a letter or a digit. Nothing is
  stripped: a space, a slash, an emoji, ``²`` or a control character is refused, naming the
  character, so the name stored is the name sent.
- **Free text** (a note, a question, a needle) may hold anything a person writes, HTML and
  formulas included, so it is kept as written: :func:`clean_text` normalises it to NFC and
  refuses only NUL and control characters other than tab and newline, and a text over its
  cap. Such text is escaped wherever it is shown instead: :func:`for_terminal` here, Markdown
  escaping in :mod:`evalcore.figures.markdown_text`, CSV cells in
  :mod:`evalcore.boundary.csvcells`.

Every refusal is an :class:`~evalcore.errors.InputError` naming the field and the character's
position, so the message says what to fix.
"""

from __future__ import annotations

import re
import unicodedata

from evalcore.errors import InputError

# Bidirectional embeddings, overrides and isolates: text after them reads in another order.
BIDI_CONTROLS = frozenset("\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069\u200e\u200f\u061c")
# Characters that take no width: a name holding one looks like another name.
ZERO_WIDTH = frozenset("\u200b\u200c\u200d\u2060\ufeff\u180e")
_ESCAPES = {"\n": "\\n", "\r": "\\r", "\t": "\\t", "\\": "\\\\"}
# Control characters (C0 but tab and newline, DEL, C1): the quick test before the exact one.
_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def _nfc(value: object, field: str) -> str:
    if not isinstance(value, str):
        raise InputError(f"{field}: expected text, got {type(value).__name__}")
    return value if unicodedata.is_normalized("NFC", value) else unicodedata.normalize("NFC", value)


def _describe(ch: str) -> str:
    name = unicodedata.name(ch, "")
    return f"U+{ord(ch):04X}" + (f" {name}" if name else "")


def _refused_in_name(ch: str) -> bool:
    return ch in BIDI_CONTROLS or ch in ZERO_WIDTH or unicodedata.category(ch) in ("Cc", "Cf", "Zl", "Zp", "Cs")


def check_name(value: str, *, field: str, max_len: int = 200) -> str:
    """``value`` as a name: NFC, stripped; InputError naming ``field`` when it is empty, over
    ``max_len`` characters, starts with ``-``, or holds a control, bidirectional or zero-width
    character."""
    text = _nfc(value, field).strip()
    if not text:
        raise InputError(f"{field}: is empty")
    if len(text) > max_len:
        raise InputError(f"{field}: {len(text):,} characters, more than the {max_len:,} allowed")
    if text.startswith("-"):
        raise InputError(f"{field}: {for_terminal(text)!s} starts with '-' (it would read as an option)")
    for pos, ch in enumerate(text, start=1):
        if _refused_in_name(ch):
            raise InputError(
                f"{field}: character {pos} is {_describe(ch)} (control, bidirectional and zero-width "
                "characters are not allowed in a name)"
            )
    return text


MAX_IDENTIFIER = 100  #: the most characters of an identifier (:func:`check_identifier`)
IDENTIFIER_PUNCTUATION = "-_."


def _word(ch: str) -> bool:
    category = unicodedata.category(ch)
    return category[0] == "L" or category == "Nd"


def check_identifier(value: str, *, field: str, max_len: int = MAX_IDENTIFIER) -> str:
    """``value`` as an identifier (see the module docstring): NFC, nothing stripped; InputError
    naming ``field`` (and the character and its position) when it is empty, longer than
    ``max_len``, does not start with a letter or a digit, or holds anything but letters, digits,
    combining marks after them, ``-``, ``_`` and ``.``."""
    text = _nfc(value, field)
    if not text:
        raise InputError(f"{field}: is empty")
    if len(text) > max_len:
        raise InputError(f"{field}: {len(text):,} characters, more than the {max_len:,} allowed")
    rule = "a name holds letters, digits, '-', '_' and '.', and starts with a letter or a digit"
    for pos, ch in enumerate(text, start=1):
        if _word(ch) or ch in IDENTIFIER_PUNCTUATION or (pos > 1 and unicodedata.category(ch)[0] == "M"):
            continue
        raise InputError(f"{field}: character {pos} is {_describe(ch)} ({rule})")
    if not _word(text[0]):
        raise InputError(f"{field}: {for_terminal(text)} starts with {text[0]!r} ({rule})")
    return text


MAX_RUN_NAME = 200  #: the most characters of a run's name


def check_run_name(value: str, *, field: str = "run name") -> str:
    """A run's name (``run --name``, ``import-run``, ``run-endpoint``, ``load-run``'s file, the
    New run screen): :func:`check_name` with the cap :data:`MAX_RUN_NAME`."""
    return check_name(value, field=field, max_len=MAX_RUN_NAME)


def clean_text(value: str, *, field: str, max_len: int) -> str:
    """``value`` as free text: NFC; InputError naming ``field`` when it holds NUL or a control
    character other than tab and newline (ESC, carriage return, DEL, C1), or is longer than
    ``max_len`` characters. Anything else (HTML, a formula, bidirectional marks) is kept as
    written and escaped where it is shown."""
    text = _nfc(value, field)
    if len(text) > max_len:
        raise InputError(f"{field}: {len(text):,} characters, more than the {max_len:,} allowed")
    found = _CONTROL.search(text)
    if found:
        raise InputError(
            f"{field}: character {found.start() + 1} is {_describe(found.group())} (control characters other "
            "than tab and newline are not allowed)"
        )
    return text


def is_plain(text: str) -> bool:
    """Whether ``text`` holds no control character other than tab and newline (what
    :func:`clean_text` refuses, but for length): a quick check for many texts at once."""
    return _CONTROL.search(text) is None


def _visible(ch: str) -> str:
    if ch in _ESCAPES:
        return _ESCAPES[ch]
    code = ord(ch)
    if code < 0x100:
        return f"\\x{code:02x}"
    if code < 0x10000:
        return f"\\u{code:04x}"
    return f"\\U{code:08x}"


def for_terminal(value: object) -> str:
    """``str(value)`` as one line that is safe to print: control characters (ESC, CR, LF, tab,
    DEL, C1), bidirectional controls, zero-width and other format characters, and line or
    paragraph separators are written as visible escapes (``\\x1b``, ``\\n``, ``\\u202e``);
    a backslash is doubled only where it would otherwise read as one of those escapes.
    Everything else is printed as it is."""
    text = str(value)
    if text.isprintable() or not any(_hidden(ch) for ch in text):
        return text
    out = []
    for ch in text:
        if _hidden(ch):
            out.append(_visible(ch))
        elif ch == "\\":
            out.append("\\\\")
        else:
            out.append(ch)
    return "".join(out)


def _hidden(ch: str) -> bool:
    if ch in BIDI_CONTROLS or ch in ZERO_WIDTH:
        return True
    return unicodedata.category(ch) in ("Cc", "Cf", "Zl", "Zp", "Cs")
