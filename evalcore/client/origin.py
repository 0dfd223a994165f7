"""Where the client may talk to: the service's URL checked once, when the client is made (before
any connection), and the origin (scheme, host, port) a redirect must keep to be followed."""

from __future__ import annotations

import ipaddress
from typing import NamedTuple
from urllib.parse import urlsplit

from evalcore.errors import ConfigError

DEFAULT_PORTS = {"http": 80, "https": 443}


class Origin(NamedTuple):
    """An URL's origin (RFC 6454): scheme, host (lower case, without IPv6 brackets) and port
    (the scheme's default when the URL names none)."""

    scheme: str
    host: str
    port: int

    def __str__(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{self.scheme}://{host}:{self.port}"


def origin_of(url: str) -> Origin | None:
    """The origin of an absolute http(s) URL; None for anything else (a relative URL, another
    scheme, no host, a port that is not a number)."""
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError:
        return None
    scheme = parts.scheme.lower()
    if scheme not in DEFAULT_PORTS or not parts.hostname:
        return None
    return Origin(scheme, parts.hostname.lower().rstrip("."), port if port is not None else DEFAULT_PORTS[scheme])


def names_this_machine(host: str) -> bool:
    """``localhost`` or a loopback address (127.0.0.0/8, ``::1``, ``::ffff:127.x.x.x``); a name
    is never resolved here (a name that resolves to a loopback address still counts as remote)."""
    host = host.lower().rstrip(".")
    if host == "localhost":
        return True
    try:
        address = ipaddress.ip_address(host.split("%", 1)[0])
    except ValueError:
        return False
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        address = address.ipv4_mapped
    return address.is_loopback


def sends_in_clear(url: str) -> bool:
    """True when ``url`` is ``http://`` to a host other than loopback: its key and its answers
    would cross the network unencrypted."""
    found = origin_of(url)
    return found is not None and found.scheme == "http" and not names_this_machine(found.host)


def service_url(url: str, key: str | None, *, allow_insecure: bool) -> tuple[str, Origin]:
    """The service's base URL (``scheme://host[:port][/base]``, no trailing slash) and its
    origin; ConfigError naming what is wrong with ``url`` (or the key) otherwise. Nothing is
    resolved or connected to."""
    text = str(url).strip()
    try:
        parts = urlsplit(text)
        parts.port  # noqa: B018 - parsed here so that a bad port is named, not raised later
    except ValueError:
        raise ConfigError(f"--server: not a URL with a valid port, got {text[:80]!r}") from None
    if parts.scheme.lower() not in DEFAULT_PORTS or not parts.hostname:
        raise ConfigError(f"--server must be an http:// or https:// URL, got {text[:80]!r}")
    if parts.username or parts.password:
        raise ConfigError("--server: give the key in EVALCORE_API_KEY, not in the URL")
    if parts.query or parts.fragment:
        raise ConfigError("--server: a URL without ?query or #fragment")
    if key is not None and (not key.isascii() or not key.isprintable() or not key.strip()):
        raise ConfigError("the API key holds characters a key never has (check EVALCORE_API_KEY)")
    origin = origin_of(text)
    assert origin is not None  # checked above
    if sends_in_clear(text) and not allow_insecure:
        raise ConfigError(
            f"--server {text[:80]!r}: http:// to a host other than this machine sends the key "
            "and the answers in clear; use https:// (or allow_insecure=True, --insecure, to go on anyway)"
        )
    return f"{parts.scheme.lower()}://{parts.netloc}{parts.path.rstrip('/')}", origin
