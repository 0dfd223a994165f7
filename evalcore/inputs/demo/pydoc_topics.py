"""Demo extractor: the Python language reference as shipped in ``pydoc_data.topics``.

Every CPython install carries its language reference as help topics
(``pydoc_data.topics.topics``, a dict ``key -> text``; 79 topics, ~465,000 characters on
3.11). Each topic becomes one :class:`~evalcore.records.Document`.

The topic text is reStructuredText rendered as plain text. A heading is a line that

- starts at column 0 with a non-space character,
- is preceded by a blank line (or starts the text),
- and is followed by an underline: one punctuation character repeated, at least as long
  as the heading text.

As in reStructuredText, the heading level is the order in which each underline character
first appears in the topic (on 3.11: ``*`` first, then ``=``, then ``-``, then ``~``).
Level 1 becomes ``# `` (the document title), level 2 ``## `` (a section, what the
chunkers split on), level 3 ``### `` and level 4 ``#### ``; deeper levels stay ``#### ``.
The underline line is removed and the heading text has its trailing whitespace stripped.

Canonical text = that result, with ``\\r\\n``/``\\r`` turned into ``\\n`` and a leading BOM
removed. Nothing else changes: paragraphs, indentation, grammar blocks and trailing
whitespace are kept as they are, so a locator points at the reference's own words.
A line of ``=`` after a blank line (a transition, as in the ``debugger`` topic) is not a
heading and is kept. The title is the first heading, else the topic key.
"""

from __future__ import annotations

import logging
import re

from evalcore.errors import InputError
from evalcore.records import Corpus, Document

log = logging.getLogger(__name__)

NAME = "pydoc-topics"
VERSION = "1"
SOURCE_TYPE = "pydoc-topic"
ROOT = "pydoc_data.topics"

_UNDERLINE = re.compile(r"([!-/:-@\[-`{-~])\1*")  # one ASCII punctuation char, repeated
_MAX_LEVEL = 4


def _is_underline(line: str, heading: str) -> bool:
    """True when ``line`` underlines ``heading``: one repeated punctuation char, >= its length."""
    return bool(_UNDERLINE.fullmatch(line)) and len(line) >= len(heading.rstrip())


def _is_heading_text(lines: list[str], i: int) -> bool:
    """True when ``lines[i]`` can be a heading: non-blank, unindented, after a blank line."""
    line = lines[i]
    return bool(line.strip()) and not line[0].isspace() and (i == 0 or not lines[i - 1].strip())


def normalise(text: str) -> str:
    """Line endings to ``\\n`` and a leading BOM removed; nothing else."""
    if text.startswith("\ufeff"):
        text = text[1:]
    return text.replace("\r\n", "\n").replace("\r", "\n")


def topic_markdown(text: str) -> tuple[str, str | None]:
    """Return ``(canonical text, title)`` for one topic's text.

    Underlined headings become ``#``-headings by level of first appearance (see the module
    docstring); the title is the first heading's text, ``None`` when there is none.
    """
    lines = normalise(text).split("\n")
    levels: dict[str, int] = {}
    out: list[str] = []
    title: str | None = None
    i = 0
    while i < len(lines):
        line = lines[i]
        if i + 1 < len(lines) and _is_heading_text(lines, i) and _is_underline(lines[i + 1], line):
            char = lines[i + 1][0]
            level = levels.setdefault(char, len(levels) + 1)
            heading = line.rstrip()
            out.append("#" * min(level, _MAX_LEVEL) + " " + heading)
            if title is None:
                title = heading
            i += 2
            continue
        out.append(line)
        i += 1
    return "\n".join(out), title


def extract_topic(key: str, text: str) -> Document:
    """One help topic as a Document: doc_id = the key, path ``pydoc_data.topics:<key>``."""
    canonical, title = topic_markdown(text)
    return Document(
        doc_id=key,
        title=title or key,
        source_type=SOURCE_TYPE,
        text=canonical,
        extractor=NAME,
        extractor_version=VERSION,
        path=f"{ROOT}:{key}",
    )


def load_topics() -> dict[str, str]:
    """The raw ``pydoc_data.topics.topics`` dict; InputError when this Python lacks it."""
    try:
        from pydoc_data.topics import topics
    except ImportError as exc:  # some distributions strip pydoc_data
        raise InputError(
            "the demo corpus needs the 'pydoc_data' package of the standard library, "
            f"which this Python does not have ({exc}); install your distribution's full "
            "Python (e.g. the python3-doc or libpython3-stdlib package) or use your own corpus"
        ) from exc
    if not isinstance(topics, dict) or not topics:
        raise InputError(f"pydoc_data.topics.topics is empty or not a dict: {type(topics).__name__}")
    return topics


def load_pydoc_corpus() -> Corpus:
    """All help topics as a Corpus (root ``pydoc_data.topics``), in key order. Deterministic."""
    topics = load_topics()
    documents = tuple(extract_topic(key, topics[key]) for key in sorted(topics))
    log.debug("pydoc topics: %d documents, %d characters", len(documents), sum(len(d.text) for d in documents))
    return Corpus(root=ROOT, documents=documents)
