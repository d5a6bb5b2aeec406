"""Progress of a long simulation on stderr: a bar on a terminal, a line every few seconds otherwise.

The engine calls :meth:`Progress.update` every few thousand events with where the run is; the
reporter decides, by its own (injectable) wall clock, whether to draw. Output goes to stderr only,
so stdout keeps just the table or the JSON.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TextIO

BAR_WIDTH = 24
TERMINAL_PERIOD = 0.2
"""Seconds between redraws of the bar."""
LINE_PERIOD = 5.0
"""Seconds between lines when stderr is not a terminal (a log, CI)."""


@dataclass(frozen=True, slots=True)
class Point:
    """Where a run is."""

    sim_time: float
    max_time: float
    scheduled: int
    pods: int
    events: int


class Progress:
    """Draws :class:`Point` values on ``stream``."""

    def __init__(
        self,
        stream: TextIO,
        *,
        terminal: bool | None = None,
        clock: Callable[[], float] = time.monotonic,
        period: float | None = None,
    ) -> None:
        self.stream = stream
        self.terminal = stream.isatty() if terminal is None else terminal
        self.clock = clock
        self.period = period if period is not None else (TERMINAL_PERIOD if self.terminal else LINE_PERIOD)
        self.started = clock()
        self.last_draw = self.started
        self.drawn = False

    def update(self, point: Point, *, force: bool = False) -> None:
        now = self.clock()
        if not force and now - self.last_draw < self.period:
            return
        self.last_draw = now
        self.drawn = True
        text = self.describe(point, now - self.started)
        if self.terminal:
            self.stream.write("\r" + text + "\x1b[K")
        else:
            self.stream.write("rte: " + text + "\n")
        self.stream.flush()

    def done(self, point: Point) -> None:
        """The final state (always drawn), then a new line on a terminal."""
        self.update(point, force=True)
        if self.terminal:
            self.stream.write("\n")
            self.stream.flush()

    def describe(self, point: Point, wall: float) -> str:
        rate = point.events / wall if wall > 0 else 0.0
        pods = f"{point.scheduled}/{point.pods} pods scheduled"
        where = f"simulated {point.sim_time:,.0f} s"
        speed = f"{rate:,.0f} events/s"
        if not self.terminal:
            return f"{where}, {pods}, {speed}"
        fraction = point.scheduled / point.pods if point.pods else 1.0
        if point.max_time > 0:
            fraction = max(fraction, min(point.sim_time / point.max_time, 1.0))
        filled = round(fraction * BAR_WIDTH)
        bar = "#" * filled + "." * (BAR_WIDTH - filled)
        return f"[{bar}] {fraction:4.0%} {where}, {pods}, {speed}"
