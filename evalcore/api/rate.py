"""How many requests a key may make: a token bucket per key, at the rate ``EVALCORE_API_RATE``
sets. Read by the API (:mod:`evalcore.api.auth`) and checked when a server starts (``evalcore
dashboard``, :mod:`evalcore_app.server`), so this module loads no web framework.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass

from evalcore.errors import ConfigError

RATE_ENV = "EVALCORE_API_RATE"
DEFAULT_RATE = "50/100"  # 50 requests a second per key, bursts of 100


@dataclass(frozen=True, slots=True)
class Rate:
    """``per_second`` requests a second on average, bursts of ``burst``."""

    per_second: float
    burst: float


def parse_rate(raw: str | None) -> Rate:
    """``EVALCORE_API_RATE``: ``R`` or ``R/B`` (R requests a second, bursts of B; B defaults
    to 2R, at least 1). ConfigError for anything else."""
    text = (raw or DEFAULT_RATE).strip()
    parts = text.split("/")
    try:
        numbers = [float(p) for p in parts]
    except ValueError:
        numbers = []
    if len(numbers) not in (1, 2) or not all(0 < n < 1e9 for n in numbers):
        raise ConfigError(f"{RATE_ENV} must be R or R/B (requests a second, burst), both positive; got {text!r}")
    per_second = numbers[0]
    burst = numbers[1] if len(numbers) == 2 else max(1.0, 2 * per_second)
    return Rate(per_second, max(burst, 1.0))


class RateLimiter:
    """A token bucket per key: each request takes a token; tokens come back at the rate."""

    def __init__(self, rate: Rate) -> None:
        self.rate = rate
        self._buckets: dict[str, tuple[float, float]] = {}
        self._lock = threading.Lock()

    def take(self, key_id: str) -> float:
        """Take a token for ``key_id``: 0.0 when granted, else the seconds until one is back."""
        now = time.monotonic()
        with self._lock:
            tokens, last = self._buckets.get(key_id, (self.rate.burst, now))
            tokens = min(self.rate.burst, tokens + (now - last) * self.rate.per_second)
            if tokens >= 1.0:
                self._buckets[key_id] = (tokens - 1.0, now)
                return 0.0
            self._buckets[key_id] = (tokens, now)
            return (1.0 - tokens) / self.rate.per_second
