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

A recorded name is user text: it is stripped, refused when it holds control characters
and cut to ``MAX_AUTHOR`` characters.
"""

from __future__ import annotations

import getpass
import os
import unicodedata
from collections.abc import Mapping

USER_HEADER_ENV = "EVALCORE_USER_HEADER"
MAX_AUTHOR = 200
NOT_RECORDED = "not recorded"


def trusted_header() -> str | None:
    """The request header the operator named in ``EVALCORE_USER_HEADER``, or None."""
    name = os.environ.get(USER_HEADER_ENV, "").strip()
    return name or None


def clean_author(value: str | None) -> str | None:
    """``value`` stripped and cut to ``MAX_AUTHOR``; None when empty or holding control characters."""
    if value is None:
        return None
    value = value.strip()
    if not value or any(unicodedata.category(ch) == "Cc" for ch in value):
        return None
    return value[:MAX_AUTHOR]


def author_from_headers(headers: Mapping[str, str] | None) -> str | None:
    """The author a dashboard request names: the trusted header's value, or None.

    Header names compare case-insensitively (HTTP); only the header named by the operator is
    looked at.
    """
    name = trusted_header()
    if name is None or not headers:
        return None
    wanted = name.lower()
    for key, value in headers.items():
        if str(key).lower() == wanted:
            return clean_author(str(value))
    return None


def os_author() -> str | None:
    """The operating-system user running this process (what the CLI records)."""
    try:
        return clean_author(getpass.getuser())
    except (KeyError, OSError):  # no passwd entry, no LOGNAME/USER
        return None


def shown(author: str | None) -> str:
    """How an author reads on a screen or in a report."""
    return author if author else NOT_RECORDED
