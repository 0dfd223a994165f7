"""Who made a record: the author stored with a decision, a question-set version or a traffic import.

One rule, used by every writer that records an author:

- **The CLI** (and any library call without request headers) records the operating-system
  user running the process (``getpass.getuser()``).
- **The dashboard** records the value of the one request header the operator named in
  ``EVALCORE_USER_HEADER`` (for example ``X-Forwarded-Email``, set by an authenticating
  proxy in front of the dashboard). No other header is ever read: a header a visitor can
  set by hand is not an identity unless the operator said a proxy sets it. Without the
  variable, or when the named header is absent, the author is not recorded (``None``,
  shown as "not recorded").
- The header counts only when the request holds it **exactly once**. Twice (or more), no
  author is recorded and a warning is logged: a proxy that appends its header to the one a
  visitor sent, instead of replacing it, would otherwise let the visitor's value win (the
  first copy is what a plain lookup returns). docs/DEPLOY.md says the proxy must *set* it.
- The value is read as **UTF-8**: the HTTP server (starlette, under Streamlit) hands header bytes over as
  ISO-8859-1 characters, so an SSO display name "José Müller" sent as UTF-8 would read
  "JosÃ© MÃ¼ller"; its bytes are decoded again as UTF-8. Bytes that are not UTF-8 keep the
  ISO-8859-1 reading (what HTTP defines).

A recorded name is user text: NFC, stripped, refused when it holds control or format
(bidi, zero-width) characters, and cut to ``MAX_AUTHOR`` characters with a visible cut: the
last kept character is ``…``.
"""

from __future__ import annotations

import getpass
import logging
import os
import unicodedata
from collections.abc import Mapping
from typing import Any

from evalcore.errors import control_characters

logger = logging.getLogger(__name__)

USER_HEADER_ENV = "EVALCORE_USER_HEADER"
MAX_AUTHOR = 200
CUT = "…"
NOT_RECORDED = "not recorded"


def trusted_header() -> str | None:
    """The request header the operator named in ``EVALCORE_USER_HEADER``, or None."""
    name = os.environ.get(USER_HEADER_ENV, "").strip()
    return name or None


def clean_author(value: str | None) -> str | None:
    """``value`` in NFC, stripped and cut to ``MAX_AUTHOR`` characters (the cut shown as a
    final ``…``); None when empty or holding control or format characters."""
    if value is None:
        return None
    value = unicodedata.normalize("NFC", value).strip()
    if not value or control_characters(value):
        return None
    if len(value) > MAX_AUTHOR:
        return value[: MAX_AUTHOR - len(CUT)] + CUT
    return value


def header_text(value: str) -> str:
    """A header value as the sender wrote it: the ISO-8859-1 characters an HTTP server hands
    over decoded again as UTF-8 when they are UTF-8 bytes; unchanged otherwise."""
    try:
        return value.encode("latin-1").decode("utf-8")
    except UnicodeError:  # not latin-1 characters (already decoded), or bytes that are not UTF-8
        return value


def header_values(headers: Any, name: str) -> list[str]:
    """Every value of header ``name`` (case-insensitive) in ``headers``, repeats included.

    Streamlit's ``st.context.headers`` keeps each copy of a repeated header, but a lookup or
    ``items()`` returns only the first; its ``get_all(name)`` returns them all and is used
    when present. A plain mapping is searched key by key (keys that differ only in case are
    copies of one header)."""
    get_all = getattr(headers, "get_all", None)
    if callable(get_all):
        return [str(v) for v in get_all(name)]
    wanted = name.lower()
    return [str(value) for key, value in headers.items() if str(key).lower() == wanted]


def author_from_headers(headers: Mapping[str, str] | None) -> str | None:
    """The author a dashboard request names: the trusted header's value, or None.

    Header names compare case-insensitively (HTTP); only the header named by the operator is
    looked at, and only when the request holds it exactly once (see the module doc).
    """
    name = trusted_header()
    if name is None or not headers:
        return None
    values = header_values(headers, name)
    if len(values) > 1:
        logger.warning(
            "the trusted header %s arrived %d times in one request: no author recorded "
            "(the proxy must set the header, replacing any value the visitor sent, not append it)",
            name,
            len(values),
        )
        return None
    return clean_author(header_text(values[0])) if values else None


def os_author() -> str | None:
    """The operating-system user running this process (what the CLI records)."""
    try:
        return clean_author(getpass.getuser())
    except (KeyError, OSError):  # no passwd entry, no LOGNAME/USER
        return None


def shown(author: str | None) -> str:
    """How an author reads on a screen or in a report."""
    return author if author else NOT_RECORDED
