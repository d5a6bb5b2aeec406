"""The one fake clock of the test suite: time moves only when a test moves it."""

from __future__ import annotations

from datetime import UTC, datetime


class FakeClock:
    """Seconds as a float, for code that takes ``clock: Callable[[], float]`` (and ``sleep``).

    ``advance`` moves it; ``sleep`` records the request and moves it (so code that sleeps
    returns at once); ``utc`` reads the same instant as an aware datetime, for code that takes
    a wall clock (the heartbeat's Lease times): start it at ``some_datetime.timestamp()``.
    """

    def __init__(self, now: float = 1_000_000.0) -> None:
        self.now = now
        self.slept: list[float] = []

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds

    def sleep(self, seconds: float) -> None:
        self.slept.append(seconds)
        self.now += seconds

    def utc(self) -> datetime:
        return datetime.fromtimestamp(self.now, UTC)
