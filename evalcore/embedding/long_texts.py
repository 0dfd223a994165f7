"""Long texts in bounded memory: a text cut into segments only before a space or a line break
(whose word pieces are exactly the whole text's), a long text's word pieces counted a segment at
a time, and the shortest head of a text that holds the model's window.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from tokenizers import Tokenizer

SEGMENT = 100_000  # characters of a long text counted at a time


def segments(text: str, size: int = SEGMENT) -> Iterator[str]:
    """``text`` in consecutive pieces of at most ``size`` characters, cut only just before a
    space or a line break. BERT's word-piece tokenizer splits words at whitespace, and its
    normaliser works character by character, so the pieces of the segments are exactly the
    pieces of the whole text. A longer stretch without either character stays whole."""
    start, end = 0, len(text)
    while end - start > size:
        cut = max(text.rfind(" ", start + 1, start + size + 1), text.rfind("\n", start + 1, start + size + 1))
        if cut == -1:  # one very long word: up to the next space or line break
            ahead = [i for i in (text.find(" ", start + size), text.find("\n", start + size)) if i != -1]
            cut = min(ahead) if ahead else end
        yield text[start:cut]
        start = cut
    yield text[start:]


def window_head(text: str, count: Callable[[str], int], pieces: int, first: int = 4096) -> str:
    """The shortest head of ``text`` (cut before a space or line break, growing 4 times from
    ``first`` characters) that holds at least ``pieces`` word pieces (``count`` them without
    special tokens), or the whole text. Its first ``pieces`` pieces are the text's, so a
    model that reads only ``pieces`` pieces sees the same input."""
    size = first
    while len(text) > size:
        head = next(segments(text, size))
        if count(head) >= pieces:
            return head
        size *= 4
    return text


def count_long(tok: Tokenizer, text: str, batch: int = 16) -> int:
    """Word pieces of a long text without special tokens, ``batch`` segments at a time
    (``tok``: a ``tokenizers`` tokenizer without truncation)."""
    total, parts = 0, []
    for part in segments(text):
        parts.append(part)
        if len(parts) == batch:
            total += sum(len(e) for e in tok.encode_batch(parts, add_special_tokens=False))
            parts = []
    return total + sum(len(e) for e in tok.encode_batch(parts, add_special_tokens=False))
