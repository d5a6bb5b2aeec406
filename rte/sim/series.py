"""The time series a run samples, keeping the peaks between samples.

Each point is the peak since the previous point, not the value at the sampling instant, so a
burst shorter than the sample period still shows: ``pending`` (created, not yet admitted) only
rises when a pod arrives and ``refused`` (waiting to retry after a cycle found no node) only when
a cycle fails, so the engine reports those two moments and the peak is exact.
"""

from __future__ import annotations

NAMES = ("t", "pending", "running", "tae", "refused")


class Series:
    def __init__(self) -> None:
        self.data: dict[str, list[float]] = {k: [] for k in NAMES}
        self._peak_pending = 0
        self._peak_refused = 0

    def rose(self, pending: int | None = None, refused: int | None = None) -> None:
        """A value that only rises at this moment (see the module docstring) may have peaked."""
        if pending is not None and pending > self._peak_pending:
            self._peak_pending = pending
        if refused is not None and refused > self._peak_refused:
            self._peak_refused = refused

    def sample(self, t: float, pending: int, running: int, tae: int, refused: int) -> None:
        d = self.data
        d["t"].append(t)
        d["pending"].append(max(pending, self._peak_pending))
        d["running"].append(running)
        d["tae"].append(tae)
        d["refused"].append(max(refused, self._peak_refused))
        self._peak_pending = pending
        self._peak_refused = refused
