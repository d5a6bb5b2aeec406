"""Coalescing, the write rate limit and retry backoff, with explicit timestamps (no sleeping)."""

from __future__ import annotations

import pytest

from rte.agent.pacing import Backoff, Coalescer, NonBlockingTokenBucket


def test_a_burst_of_triggers_becomes_one_cycle_after_the_quiet_time() -> None:
    c = Coalescer(debounce=0.1, max_delay=1.0)
    for i in range(5):
        c.add("kubelet" if i % 2 else "notify", now=10.0 + i * 0.05)
    assert c.due_at() == pytest.approx(10.2 + 0.1)
    assert c.take() == {"kubelet", "notify"}
    assert not c.pending
    assert c.due_at() is None


def test_a_continuous_stream_cannot_postpone_the_cycle_past_max_delay() -> None:
    c = Coalescer(debounce=0.1, max_delay=1.0)
    t = 0.0
    while t < 3.0:
        c.add("kubelet", now=t)
        t += 0.05
    assert c.due_at() == pytest.approx(1.0)


def test_a_retry_holds_the_burst_back_and_a_release_lets_it_go() -> None:
    c = Coalescer(debounce=0.1, max_delay=1.0)
    c.add("retry", now=0.0, not_before=8.0)
    c.add("kubelet", now=1.0)
    assert c.due_at() == 8.0
    c.release()
    assert c.due_at() == pytest.approx(1.0)  # max_delay after the first trigger


def test_a_new_burst_forgets_the_previous_hold() -> None:
    c = Coalescer(debounce=0.1, max_delay=1.0)
    c.add("retry", now=0.0, not_before=8.0)
    c.take()
    c.add("notify", now=9.0)
    assert c.due_at() == pytest.approx(9.1)


def test_the_token_bucket_allows_a_burst_then_the_rate() -> None:
    bucket = NonBlockingTokenBucket(rate=1.0, burst=3, now=0.0)
    assert [bucket.try_take(0.0) for _ in range(4)] == [True, True, True, False]
    assert bucket.next_at(0.0) == pytest.approx(1.0)
    assert not bucket.try_take(0.5)
    assert bucket.try_take(1.0)
    assert bucket.next_at(1.0) == pytest.approx(2.0)


def test_the_token_bucket_never_banks_more_than_the_burst() -> None:
    bucket = NonBlockingTokenBucket(rate=1.0, burst=2, now=0.0)
    assert sum(bucket.try_take(1000.0) for _ in range(10)) == 2


def test_writes_over_a_long_run_stay_within_rate_times_time_plus_burst() -> None:
    bucket = NonBlockingTokenBucket(rate=1.0, burst=3, now=0.0)
    taken = sum(bucket.try_take(i * 0.01) for i in range(6000))  # 60 s of attempts every 10 ms
    assert taken <= 60 + 3


def test_a_token_bucket_needs_a_positive_rate() -> None:
    with pytest.raises(ValueError):
        NonBlockingTokenBucket(rate=0, burst=1, now=0.0)


def test_backoff_doubles_up_to_the_cap_with_jitter_between_half_and_all() -> None:
    low = Backoff(0.5, 4.0, rng=lambda: 0.0)
    high = Backoff(0.5, 4.0, rng=lambda: 1.0)
    assert [low.next() for _ in range(6)] == [0.25, 0.5, 1.0, 2.0, 2.0, 2.0]
    assert [high.next() for _ in range(6)] == [0.5, 1.0, 2.0, 4.0, 4.0, 4.0]
    high.reset()
    assert high.next() == 0.5


def test_backoff_survives_very_many_failures() -> None:
    b = Backoff(0.5, 30.0, rng=lambda: 1.0)
    for _ in range(5000):
        delay = b.next()
    assert delay == 30.0
