"""Chunking strategies: blind, boundaries, header, overlap (METHODS.md "The words").

Offsets are code points into the document's canonical text. Every chunk satisfies

    canonical[start:end] == content
    text == header + canonical[evidence_start:end]
    evidence_start == max(0, start - overlap)      (== start without overlap)

``header`` is ``"[Title > Section]\\n"`` (``"[Title]\\n"`` when the section is ``""``)
with the header ingredient, else ``""``.

**blind** cuts the canonical text every ``size`` code points from 0: chunk i is
``[i*size, min((i+1)*size, len))``, not trimmed; a piece that is whitespace only is
skipped. Its section is the ``## `` heading in force at its start (``""`` before the
first heading).

**boundaries** is a line-by-line port of the seed's TypeScript ``chunkDocument``
(tests/oracle/chunk.ts), and agrees with it chunk for chunk. JavaScript semantics are
reproduced where they differ from Python's:

- ``\\s`` and ``String.prototype.trim`` use JavaScript's whitespace set
  (:data:`JS_WHITESPACE`: it includes U+FEFF and excludes U+001C..U+001F and U+0085,
  unlike Python's ``\\s`` and ``str.strip()``);
- ``^``/``$`` with the ``m`` flag and ``.`` treat ``\\n``, ``\\r``, U+2028 and U+2029 as
  line terminators;
- sizes are compared in code points (the seed counts UTF-16 code units; the two only
  differ on texts with characters outside the BMP, e.g. emoji).

Seed behaviour kept on purpose (the chapter's code is the reference): when a
document has ``## `` headings, the text before the first one (the ``# Title`` line
and any introduction) is not chunked by boundaries strategies; a ``## `` line inside a
fenced code block counts as a heading; a heading line at the very end of the document
(no newline after it) stays in its section's body.

**intro** (an ingredient for boundaries strategies, not in A-F): the text before the
first ``## `` heading becomes one more span, chunked by the same rule, with section
``""`` (header ``[Title]``) and its leading ``# Title`` line skipped the way a section
skips its ``## `` line. Its chunks are exactly what the seed's ``chunkDocument`` makes of
that introduction on its own; the other chunks are unchanged.
"""

from __future__ import annotations

import bisect
import logging
import re
from collections.abc import Iterable

from evalcore.errors import ConfigError
from evalcore.records import Chunk, Corpus, Document, Strategy

logger = logging.getLogger(__name__)

SIZE = 512
OVERLAP = 64

# ECMAScript WhiteSpace + LineTerminator: what JS `\s`, trim(), trimStart() use.
JS_WHITESPACE = (
    "\t\n\v\f\r \u00a0\u1680" + "".join(chr(c) for c in range(0x2000, 0x200B)) + "\u2028\u2029\u202f\u205f\u3000\ufeff"
)
_WS = "\\t\\n\\v\\f\\r \\u00a0\\u1680\\u2000-\\u200a\\u2028\\u2029\\u202f\\u205f\\u3000\\ufeff"
_LT = "\\n\\r\\u2028\\u2029"  # JS line terminators (for ^ $ . under the m flag)

# /^## (.+)$/gm
_HEADING = re.compile(f"(?<![^{_LT}])## ([^{_LT}]+)(?![^{_LT}])")
# /^## .+\n/ (no m flag: at the start of the section's slice only)
_HEADING_LINE = re.compile(f"## [^{_LT}]+\\n")
_TITLE_LINE = re.compile(f"# [^{_LT}]+\\n")  # a document's leading title line (intro ingredient)
# /[^\n]([^\n]|\n(?!\n))*/g, written with runs ([^\n]+) instead of single characters: the
# same matches, but Python's re keeps state per repetition, so the one-character form
# took ~100 bytes per character of a long paragraph (3.5 GB for a 30 MB line)
_PARAGRAPH = re.compile(r"[^\n](?:[^\n]+|\n(?!\n))*")
# /[^.!?]*[.!?]*\s*/g
_SENTENCE = re.compile(f"[^.!?]*[.!?]*[{_WS}]*")

STANDARD_STRATEGIES: dict[str, Strategy] = {
    "A": Strategy("A", boundaries=False, header=False, overlap=0, size=SIZE),
    "B": Strategy("B", boundaries=False, header=False, overlap=OVERLAP, size=SIZE),
    "C": Strategy("C", boundaries=True, header=False, overlap=0, size=SIZE),
    "D": Strategy("D", boundaries=True, header=False, overlap=OVERLAP, size=SIZE),
    "E": Strategy("E", boundaries=True, header=True, overlap=0, size=SIZE),
    "F": Strategy("F", boundaries=True, header=True, overlap=OVERLAP, size=SIZE),
}

#: Every strategy known by name: the chapter's six, and G, the reference chunker with our
#: ``intro`` ingredient (it also chunks the text before a document's first ``## `` heading).
NAMED_STRATEGIES: dict[str, Strategy] = {
    **STANDARD_STRATEGIES,
    "G": Strategy("G", boundaries=True, header=True, overlap=0, size=SIZE, intro=True),
}
#: The strategies a run uses unless told otherwise (``demo``, ``run``, the New run page):
#: A-F show what each ingredient does, G what chunking the introduction adds.
DEFAULT_STRATEGIES = ",".join(NAMED_STRATEGIES)

INGREDIENTS: dict[str, str] = {
    "blind": "cut every `size` characters without looking at the text",
    "boundaries": "pack whole paragraphs of a `## ` section up to `size` characters; "
    "cut a longer paragraph at sentence ends",
    "header": "embedded text starts with [Document title > Section]",
    "overlap": f"embedded text also carries the {OVERLAP} characters before the chunk (overlap=N for another length)",
    "size": f"target size in characters (size=N, default {SIZE})",
    "intro": "boundaries only: also chunk the text before the first `## ` heading "
    "(the seed's chunker, and so C-F, leave it out)",
}

SPEC_SYNTAX = (
    "a name (A-F, or G = boundaries+header+intro) or a recipe BASE[+INGREDIENT...], optionally named NAME:RECIPE; "
    "BASE is blind or boundaries, INGREDIENT is header, intro, overlap, overlap=N or size=N; "
    "e.g. 'A,C,E' or 'wide:boundaries+header+intro+overlap=64+size=800'"
)


def js_trim(s: str) -> str:
    """JavaScript ``s.trim()``: strip JS whitespace (incl. U+FEFF) from both ends."""
    return s.strip(JS_WHITESPACE)


def js_trim_start(s: str) -> str:
    """JavaScript ``s.trimStart()``."""
    return s.lstrip(JS_WHITESPACE)


# --------------------------------------------------------------------------- parsing


def _positive_int(value: str, what: str, item: str, *, zero_ok: bool = False) -> int:
    if not value.isdigit() or (int(value) == 0 and not zero_ok):
        raise ConfigError(
            f"strategy {item!r}: {what} must be a {'non-negative' if zero_ok else 'positive'} integer, got {value!r}"
        )
    return int(value)


def parse_recipe(recipe: str, name: str | None = None) -> Strategy:
    """Parse ``BASE[+INGREDIENT...]`` into a Strategy named ``name`` (default: the recipe).

    ``overlap`` alone means 64 characters; ``overlap=0`` means none. Overlap must be
    smaller than size. Raises ConfigError naming the bad part and the known ones.
    """
    parts = [p.strip() for p in recipe.strip().split("+")]
    base, rest = parts[0].lower(), parts[1:]
    if base not in ("blind", "boundaries"):
        raise ConfigError(
            f"unknown strategy {recipe!r}: known names are {', '.join(NAMED_STRATEGIES)}; or {SPEC_SYNTAX}"
        )
    header, intro, overlap, size = False, False, 0, SIZE
    seen: set[str] = set()
    for part in rest:
        key, _, value = part.partition("=")
        key = key.strip().lower()
        if key in seen:
            raise ConfigError(f"strategy {recipe!r}: ingredient {key!r} given twice")
        seen.add(key)
        if key == "header" and not value:
            header = True
        elif key == "intro" and not value:
            if base != "boundaries":
                raise ConfigError(f"strategy {recipe!r}: intro goes with boundaries (blind chunks everything)")
            intro = True
        elif key == "overlap":
            overlap = _positive_int(value.strip(), "overlap", recipe, zero_ok=True) if value else OVERLAP
        elif key == "size" and value:
            size = _positive_int(value.strip(), "size", recipe)
        else:
            raise ConfigError(
                f"strategy {recipe!r}: unknown ingredient {part!r}; known: header, intro, overlap, overlap=N, size=N"
            )
    if overlap >= size:
        raise ConfigError(f"strategy {recipe!r}: overlap {overlap} must be smaller than size {size}")
    return Strategy(
        name or recipe.strip(), boundaries=base == "boundaries", header=header, overlap=overlap, size=size, intro=intro
    )


def parse_strategies(spec: str | Iterable[str]) -> list[Strategy]:
    """Parse a comma list of strategies, e.g. ``"A,C,G"`` or ``"C,big:boundaries+size=800"``.

    Items are names of :data:`NAMED_STRATEGIES` (A-G, case ignored), or recipes (see
    :func:`parse_recipe`) optionally prefixed by ``NAME:``. A named strategy may be spelled
    out with its own recipe (``G:boundaries+header+intro``); a known name with another
    recipe is refused. An iterable of items is accepted too. Raises ConfigError for an
    empty list, an unknown name (listing the known ones) or a name used twice.
    """
    items = spec.split(",") if isinstance(spec, str) else list(spec)
    out: list[Strategy] = []
    for raw in items:
        item = raw.strip()
        if not item:
            continue
        if item.upper() in NAMED_STRATEGIES:
            strategy = NAMED_STRATEGIES[item.upper()]
        else:
            name, sep, recipe = item.partition(":")
            name = name.strip()
            if sep and not name:
                raise ConfigError(f"strategy {item!r}: the name before ':' is empty")
            strategy = parse_recipe(recipe, name) if sep else parse_recipe(item)
            known = NAMED_STRATEGIES.get(name.upper()) if sep else None
            if known is not None:
                if parse_recipe(recipe, known.name) != known:
                    raise ConfigError(
                        f"strategy {item!r}: {known.name} is a named strategy "
                        f"({known.describe()}); give yours another name"
                    )
                strategy = known
        if any(s.name == strategy.name for s in out):
            raise ConfigError(f"strategy {strategy.name!r} given twice in {spec!r}")
        out.append(strategy)
    if not out:
        raise ConfigError(f"no strategy given; known names are {', '.join(NAMED_STRATEGIES)}; or {SPEC_SYNTAX}")
    return out


# -------------------------------------------------------------------------- chunking


def headings(text: str) -> list[tuple[int, str]]:
    """``(offset, title)`` of every ``## `` heading (seed regex ``/^## (.+)$/gm``, title trimmed)."""
    return [(m.start(), js_trim(m.group(1))) for m in _HEADING.finditer(text)]


def boundary_ranges(text: str, target: int = SIZE, intro: bool = False) -> list[tuple[str, int, int]]:
    """Port of the seed's ``chunkDocument``: ``(section, from, to)`` for every chunk.

    The content of a chunk is ``text[from:to]`` (already trimmed). With ``intro`` the text
    before the first ``## `` heading is chunked too (see the module doc).
    """
    out: list[tuple[str, int, int]] = []
    heads = headings(text)
    if heads:
        spans = [
            (at, title, heads[i + 1][0] if i + 1 < len(heads) else len(text)) for i, (at, title) in enumerate(heads)
        ]
        if intro and heads[0][0] > 0:
            spans.insert(0, (0, "", heads[0][0]))
    else:
        spans = [(0, "", len(text))]

    for at, title, end in spans:
        m = (_TITLE_LINE if intro and at == 0 and heads else _HEADING_LINE).match(text, at, end)
        skip = m.end() - at if m else 0
        origin = at + skip
        body = text[origin:end]

        def emit(f: int, t: int, title: str = title, body: str = body, origin: int = origin) -> None:
            raw = body[f:t]
            lead = len(raw) - len(js_trim_start(raw))
            content = js_trim(raw)
            if not content:
                return
            out.append((title, origin + f + lead, origin + f + lead + len(content)))

        open_: tuple[int, int] | None = None
        for pm in _PARAGRAPH.finditer(body):
            pf, pt = pm.start(), pm.end()
            if pt - pf > target:  # one huge paragraph: cut at sentence ends
                if open_:
                    emit(*open_)
                    open_ = None
                cur: tuple[int, int] | None = None
                for sm in _SENTENCE.finditer(body, pf, pt):
                    if sm.start() == sm.end():
                        continue
                    sf, st = sm.start(), sm.end()
                    if cur and st - cur[0] > target:
                        emit(*cur)
                        cur = None
                    cur = (cur[0], st) if cur else (sf, st)
                if cur:
                    emit(*cur)
                continue
            if open_ and pt - open_[0] > target:
                emit(*open_)
                open_ = None
            open_ = (open_[0], pt) if open_ else (pf, pt)
        if open_:
            emit(*open_)
    return out


def blind_ranges(text: str, size: int = SIZE) -> list[tuple[str, int, int]]:
    """``(section, from, to)`` for ``[i*size, min((i+1)*size, len))``, whitespace-only pieces skipped.

    Section = title of the last ``## `` heading starting at or before ``from``, else "".
    """
    heads = headings(text)
    starts = [at for at, _ in heads]
    out = []
    for start in range(0, len(text), size):
        end = min(start + size, len(text))
        if not js_trim(text[start:end]):
            continue
        k = bisect.bisect_right(starts, start)
        out.append((heads[k - 1][1] if k else "", start, end))
    return out


def header_line(title: str, section: str) -> str:
    """``"[title > section]\\n"``, or ``"[title]\\n"`` when ``section`` is empty."""
    return f"[{title} > {section}]\n" if section else f"[{title}]\n"


def chunk_document(doc: Document, strategy: Strategy) -> list[Chunk]:
    """Chunks of one document, in document order (see module doc for the invariants)."""
    text = doc.text
    ranges = (
        boundary_ranges(text, strategy.size, strategy.intro)
        if strategy.boundaries
        else blind_ranges(text, strategy.size)
    )
    chunks = []
    for section, start, end in ranges:
        header = header_line(doc.title, section) if strategy.header else ""
        evidence_start = max(0, start - strategy.overlap)
        chunks.append(
            Chunk(
                doc_id=doc.doc_id,
                section=section,
                text=header + text[evidence_start:end],
                content=text[start:end],
                start=start,
                end=end,
                evidence_start=evidence_start,
                header=header,
            )
        )
    return chunks


def chunk_corpus(corpus: Corpus, strategy: Strategy) -> list[Chunk]:
    """All chunks, documents in corpus order; a chunk's list index is its ``chunk_id``."""
    out: list[Chunk] = []
    for doc in corpus.documents:
        out.extend(chunk_document(doc, strategy))
    logger.debug("strategy %s: %d chunks from %d documents", strategy.name, len(out), len(corpus.documents))
    return out
