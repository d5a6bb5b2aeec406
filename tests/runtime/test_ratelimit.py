"""The client-side token bucket, on a fake clock."""

from __future__ import annotations

import pytest

from rte.runtime.ratelimit import TokenBucket
from tests.helpers.clock import FakeClock


def test_a_burst_passes_then_calls_are_spaced_at_the_rate() -> None:
    clock = FakeClock()
    bucket = TokenBucket(20, 5, clock=clock, sleep=clock.sleep)
    waits = [bucket.acquire() for _ in range(7)]
    assert waits[:5] == [0, 0, 0, 0, 0]
    assert waits[5:] == pytest.approx([0.05, 0.05])


def test_idle_time_refills_only_up_to_the_burst() -> None:
    clock = FakeClock()
    bucket = TokenBucket(10, 2, clock=clock, sleep=clock.sleep)
    clock.now += 60
    assert [bucket.try_acquire() for _ in range(3)] == [True, True, False]
    clock.now += 0.11  # one token per 0.1 s
    assert bucket.try_acquire() is True


def test_nonsense_rates_are_refused() -> None:
    with pytest.raises(ValueError, match="rate > 0"):
        TokenBucket(0, 1)
