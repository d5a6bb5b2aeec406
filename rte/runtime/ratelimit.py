"""A blocking token bucket: how rte paces its calls to the kubelet and to the apiserver.

The kubelet allows 100 QPS with a burst of 10 on its podresources socket, shared by every
client; going over makes calls fail with RESOURCE_EXHAUSTED. The apiserver throttles with 429.
Waiting a little on our side is cheaper than failing. (The agent loop's own scheduling uses
:class:`rte.agent.pacing.NonBlockingTokenBucket`, which takes the time as an argument.)
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable


class TokenBucket:
    """``rate`` tokens per second, at most ``burst`` banked; :meth:`acquire` waits for one."""

    def __init__(
        self,
        rate: float,
        burst: int,
        *,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        if rate <= 0 or burst < 1:
            raise ValueError(f"token bucket needs rate > 0 and burst >= 1, got {rate}, {burst}")
        self.rate = rate
        self.burst = burst
        self._clock = clock
        self._sleep = sleep
        self._tokens = float(burst)
        self._stamp = clock()
        self._lock = threading.Lock()

    def try_acquire(self) -> bool:
        """Take one token if one is available now, without waiting (the kubelet's behaviour)."""
        with self._lock:
            self._refill()
            if self._tokens < 1:
                return False
            self._tokens -= 1
            return True

    def acquire(self) -> float:
        """Take one token, sleeping until one is available; return the seconds waited."""
        with self._lock:
            self._refill()
            # Going negative reserves a future token, so concurrent callers queue up in order.
            self._tokens -= 1
            wait = -self._tokens / self.rate if self._tokens < 0 else 0.0
        if wait > 0:
            self._sleep(wait)
        return wait

    def _refill(self) -> None:
        now = self._clock()
        self._tokens = min(self.burst, self._tokens + (now - self._stamp) * self.rate)
        self._stamp = now


def backoff_delay(attempt: int, base: float, cap: float, rng: Callable[[], float]) -> float:
    """Exponential backoff with equal jitter: attempt ``n`` waits in ``[d/2, d]``,
    ``d = min(cap, base x 2^n)``.

    The jitter spreads the retries of a fleet that failed together (an apiserver or kubelet
    restart) instead of bringing everyone back in the same instant.
    """
    ceiling = min(cap, base * 2.0 ** min(attempt, 60))
    return ceiling / 2 + ceiling / 2 * rng()
