"""Per-key rate limits: a token bucket per API key, in this process's memory.

Each key may make `burst` requests at once and `rate_per_s` per second sustained; a request over it
gets 429 with `Retry-After` (the whole seconds until a token is back). Buckets live in the process,
so N replicas behind a load balancer allow each key N times the rate (docs/operations.md).
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Callable

from kernelgraph.core.errors import RateLimited

MAX_BUCKETS = 100_000  # beyond this many keys, full (idle) buckets are dropped: they hold nothing


class RateLimiter:
    """Token buckets keyed by API key id; `rate_per_s` 0 disables the limit."""

    def __init__(self, rate_per_s: float, burst: int, clock: Callable[[], float] = time.monotonic) -> None:
        self.rate_per_s = rate_per_s
        self.burst = max(1, burst)
        self.clock = clock
        self._buckets: dict[str, tuple[float, float]] = {}  # key id -> (tokens, at)
        self._lock = threading.Lock()

    @property
    def enabled(self) -> bool:
        return self.rate_per_s > 0

    def check(self, key_id: str) -> None:
        """Take one token from `key_id`'s bucket, or raise RateLimited saying when to retry."""
        if not self.enabled:
            return
        now = self.clock()
        with self._lock:
            tokens, at = self._buckets.get(key_id, (float(self.burst), now))
            tokens = min(float(self.burst), tokens + (now - at) * self.rate_per_s)
            if tokens < 1.0:
                self._buckets[key_id] = (tokens, now)
                wait = (1.0 - tokens) / self.rate_per_s
                raise RateLimited(
                    f"rate limit of this API key exceeded ({self.rate_per_s:g} requests/s, bursts of "
                    f"{self.burst}); retry after the Retry-After seconds",
                    field="authorization",
                    retry_after_s=max(1, math.ceil(wait)),
                    limit=math.ceil(self.rate_per_s),
                )
            self._buckets[key_id] = (tokens - 1.0, now)
            if len(self._buckets) > MAX_BUCKETS:
                self._forget_full(now)

    def _forget_full(self, now: float) -> None:
        full = [k for k, (t, at) in self._buckets.items() if t + (now - at) * self.rate_per_s >= self.burst]
        for key in full:
            del self._buckets[key]
