"""How many requests the API takes, as token buckets (each request takes a token; tokens come
back at a rate, up to a burst):

- per key, ``EVALCORE_API_RATE`` (default ``50/100``);
- for the whole service, every key and every caller without one together,
  ``EVALCORE_API_GLOBAL_RATE`` (default ``1000/2000``);
- failed authentications per client address (a missing, unknown or revoked key),
  ``EVALCORE_API_AUTH_FAILURES`` (default ``0.2/20``: 20 at once, then one every 5 s). An address
  past it is answered 429 before its key is even looked at, until a token is back.

Each is ``R`` or ``R/B`` (R a second, bursts of B). Read by the API (:mod:`evalcore.api.serving.auth`)
and checked when a server starts (``evalcore dashboard``, :mod:`evalcore_app.server`), so this
module loads no web framework.
"""

from __future__ import annotations

import os
import threading
import time
from dataclasses import dataclass

from evalcore.errors import ConfigError

RATE_ENV = "EVALCORE_API_RATE"
DEFAULT_RATE = "50/100"  # 50 requests a second per key, bursts of 100
GLOBAL_RATE_ENV = "EVALCORE_API_GLOBAL_RATE"
DEFAULT_GLOBAL_RATE = "1000/2000"  # every request of the service together
FAILURES_ENV = "EVALCORE_API_AUTH_FAILURES"
DEFAULT_FAILURES = "0.2/20"  # failed authentications per client address: 20, then one every 5 s
#: the most client addresses whose failures are remembered (beyond it the fullest buckets are forgotten)
MAX_ADDRESSES = 10_000


@dataclass(frozen=True, slots=True)
class Rate:
    """``per_second`` requests a second on average, bursts of ``burst``."""

    per_second: float
    burst: float


def parse_rate(raw: str | None, env: str = RATE_ENV, default: str = DEFAULT_RATE) -> Rate:
    """``EVALCORE_API_RATE`` (or the variable ``env``): ``R`` or ``R/B`` (R requests a second,
    bursts of B; B defaults to 2R, at least 1). ConfigError naming ``env`` for anything else."""
    text = (raw or default).strip()
    parts = text.split("/")
    try:
        numbers = [float(p) for p in parts]
    except ValueError:
        numbers = []
    if len(numbers) not in (1, 2) or not all(0 < n < 1e9 for n in numbers):
        raise ConfigError(f"{env} must be R or R/B (requests a second, burst), both positive; got {text!r}")
    per_second = numbers[0]
    burst = numbers[1] if len(numbers) == 2 else max(1.0, 2 * per_second)
    return Rate(per_second, max(burst, 1.0))


def global_rate() -> Rate:
    """``EVALCORE_API_GLOBAL_RATE`` (ConfigError naming it when bad)."""
    return parse_rate(os.environ.get(GLOBAL_RATE_ENV), GLOBAL_RATE_ENV, DEFAULT_GLOBAL_RATE)


def failure_rate() -> Rate:
    """``EVALCORE_API_AUTH_FAILURES`` (ConfigError naming it when bad)."""
    return parse_rate(os.environ.get(FAILURES_ENV), FAILURES_ENV, DEFAULT_FAILURES)


def check_rates() -> None:
    """Every rate variable read once: a bad one is a ConfigError naming it (a server checks them at its start)."""
    parse_rate(os.environ.get(RATE_ENV))
    global_rate()
    failure_rate()


class RateLimiter:
    """A token bucket per key (or per address): each request takes a token; tokens come back at
    the rate. At most ``max_keys`` buckets are kept: past it, the buckets that are full again
    (nothing to remember) are dropped, then, if still too many, all."""

    def __init__(self, rate: Rate, max_keys: int = MAX_ADDRESSES) -> None:
        self.rate = rate
        self.max_keys = max_keys
        self._buckets: dict[str, tuple[float, float]] = {}
        self._lock = threading.Lock()

    def _tokens(self, key: str, now: float) -> float:
        tokens, last = self._buckets.get(key, (self.rate.burst, now))
        return min(self.rate.burst, tokens + (now - last) * self.rate.per_second)

    def take(self, key_id: str) -> float:
        """Take a token for ``key_id``: 0.0 when granted, else the seconds until one is back."""
        now = time.monotonic()
        with self._lock:
            tokens = self._tokens(key_id, now)
            if tokens >= 1.0:
                self._keep(key_id, tokens - 1.0, now)
                return 0.0
            self._keep(key_id, tokens, now)
            return (1.0 - tokens) / self.rate.per_second

    def wait(self, key_id: str) -> float:
        """The seconds until ``key_id`` has a token (0.0: it has one now), taking none."""
        if key_id not in self._buckets:  # the usual case, read without the lock
            return 0.0
        now = time.monotonic()
        with self._lock:
            tokens = self._tokens(key_id, now)
        return 0.0 if tokens >= 1.0 else (1.0 - tokens) / self.rate.per_second

    def _keep(self, key: str, tokens: float, now: float) -> None:
        if key not in self._buckets and len(self._buckets) >= self.max_keys:
            full = [k for k in self._buckets if self._tokens(k, now) >= self.rate.burst]
            for k in full:
                del self._buckets[k]
            if len(self._buckets) >= self.max_keys:
                self._buckets.clear()
        self._buckets[key] = (tokens, now)
