"""Writing user text into Markdown safely (no streamlit here).

Variants, query texts, document titles, sections, run names and notes are user text. Where
they go into Markdown (the dashboard's captions and labels, the review pack's summary), every
character Markdown or HTML would read as markup is escaped, so ``![x](http://host/p.png)``
shows as those characters and nothing is fetched.
"""

from __future__ import annotations

import re

# Characters that open or close inline markup anywhere, and "<"/">"/"&" for raw HTML.
# ("(" and ")" need no escape: a link or an image needs "](", and "[", "]" are escaped.)
_INLINE = re.compile(r"([\\`*_{}\[\]!|~$<>&])")
# Characters that make a block (heading, list, quote) only at the start of a line.
_BLOCK_START = re.compile(r"^(\s*)([#+\-]|\d+(?=[.)]))")
# Streamlit reads :shortcode: emoji and :material/name: icons.
_SHORTCODE = re.compile(r":([\w+\-]+):|(?<=material)/")
_AUTOLINK = re.compile(r"(?i)(://|www\.|@(?=[\w.\-]+\.\w))")
_ZERO_WIDTH_SPACE = "\u200b"


def escape(text: object) -> str:
    """``text`` for a Markdown context, shown as its characters: inline markup and raw HTML
    characters backslash-escaped (a lone ``~`` is left as it is: strikethrough needs two), a
    leading block marker (``#``, ``-``, ``1.``) escaped, line
    breaks flattened to spaces, Streamlit's ``:emoji:``/``:material/icon:`` codes broken, and
    a zero-width space inside ``://``, ``www.`` and ``@`` so GitHub-flavoured Markdown does
    not turn a URL or an address into a link (it finds them after escapes are read)."""
    flat = " ".join(str(text).split())
    flat = _AUTOLINK.sub(
        lambda m: (
            (m.group(0)[0] + _ZERO_WIDTH_SPACE + m.group(0)[1:])
            if len(m.group(0)) > 1
            else _ZERO_WIDTH_SPACE + m.group(0)
        ),
        flat,
    )
    flat = _INLINE.sub(lambda m: m.group(1) if m.group(1) == "~" and flat.count("~") < 2 else "\\" + m.group(1), flat)
    flat = _SHORTCODE.sub(lambda m: f"\\:{m.group(1)}\\:" if m.group(1) else "\\/", flat)
    return _BLOCK_START.sub(
        lambda m: (
            m.group(1)
            + (m.group(2) if m.group(2)[0].isdigit() else "\\" + m.group(2))
            + ("\\" if m.group(2)[0].isdigit() else "")
        ),
        flat,
    )


def code(text: object) -> str:
    """``text`` as inline code: a backtick fence longer than any run of backticks inside it."""
    body = " ".join(str(text).split())
    longest = max((len(m) for m in re.findall(r"`+", body)), default=0)
    fence = "`" * (longest + 1)
    pad = " " if body.startswith("`") or body.endswith("`") or not body else ""
    return f"{fence}{pad}{body}{pad}{fence}"
