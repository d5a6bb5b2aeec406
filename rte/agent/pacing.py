"""Time-based decisions of the agent loop, pure and clock-injected so tests need no sleeping.

* :class:`Coalescer`: triggers arriving in a burst become one cycle. A cycle is due once the
  burst has been quiet for ``debounce``, or ``max_delay`` after its first trigger, whichever comes
  first, so a continuous stream of triggers cannot postpone publishing forever.
* :class:`NonBlockingTokenBucket`: a non-blocking token bucket (the loop never sleeps inside it; it asks
  when the next token comes and waits for that, still able to react to shutdown).
* :class:`Backoff`: exponential retry delays with jitter, so a fleet of agents that lost the
  apiserver at the same moment does not come back in lockstep.
"""

from __future__ import annotations

import random
from collections.abc import Callable

from rte.runtime.ratelimit import backoff_delay


class Coalescer:
    """Pending trigger reasons and when they should run."""

    def __init__(self, debounce: float, max_delay: float) -> None:
        self.debounce = debounce
        self.max_delay = max(max_delay, debounce)
        self._reasons: set[str] = set()
        self._first = 0.0
        self._last = 0.0
        self._not_before = 0.0

    def add(self, reason: str, now: float, *, not_before: float | None = None) -> None:
        """Record a trigger; ``not_before`` holds the burst back until then (a retry delay)."""
        if not self._reasons:
            self._first = now
            self._not_before = 0.0
        self._reasons.add(reason)
        self._last = now
        if not_before is not None:
            self._not_before = max(self._not_before, not_before)

    def release(self) -> None:
        """Drop a ``not_before`` hold: what it waited for (e.g. a peer coming back) happened."""
        self._not_before = 0.0

    @property
    def pending(self) -> bool:
        return bool(self._reasons)

    def due_at(self) -> float | None:
        """When the pending burst should run; None when nothing is pending."""
        if not self._reasons:
            return None
        return max(min(self._last + self.debounce, self._first + self.max_delay), self._not_before)

    def take(self) -> frozenset[str]:
        """The reasons of the burst, which is then cleared."""
        reasons = frozenset(self._reasons)
        self._reasons.clear()
        return reasons


class NonBlockingTokenBucket:
    """``rate`` tokens per second, at most ``burst`` banked; never blocks."""

    def __init__(self, rate: float, burst: int, now: float) -> None:
        if rate <= 0 or burst < 1:
            raise ValueError(f"token bucket needs rate > 0 and burst >= 1, got {rate}, {burst}")
        self.rate = rate
        self.burst = burst
        self._tokens = float(burst)
        self._stamp = now

    def _refill(self, now: float) -> None:
        if now > self._stamp:
            self._tokens = min(float(self.burst), self._tokens + (now - self._stamp) * self.rate)
            self._stamp = now

    def try_take(self, now: float) -> bool:
        self._refill(now)
        if self._tokens >= 1.0:
            self._tokens -= 1.0
            return True
        return False

    def next_at(self, now: float) -> float:
        """When a token will be available (``now`` if one is)."""
        self._refill(now)
        return now if self._tokens >= 1.0 else now + (1.0 - self._tokens) / self.rate


class Backoff:
    """Delays ``base``, ``2 base``, ... capped at ``cap``, each scaled by a random 0.5-1.0."""

    def __init__(self, base: float, cap: float, rng: Callable[[], float] = random.random) -> None:
        self.base = base
        self.cap = cap
        self._rng = rng
        self.failures = 0

    def next(self) -> float:
        """The delay before the next attempt; each call counts one more failure."""
        delay = backoff_delay(self.failures, self.base, self.cap, self._rng)
        self.failures += 1
        return delay

    def reset(self) -> None:
        self.failures = 0
