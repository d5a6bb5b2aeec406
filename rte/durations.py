"""Durations as every rte command reads them: Go's syntax (``500ms``, ``10s``, ``1m30s``, ``2h``).

One grammar for ``rte run`` settings, ``rte simulate`` and ``rte extender`` flags. Commands
whose reference counterpart takes plain seconds (the simulator's intervals, the scheduler
plugin's ``cacheResyncPeriodSeconds``) also accept a bare number as seconds; ``rte run``
settings do not, like the Go agents' duration flags.
"""

from __future__ import annotations

import math
import re

_UNITS = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0, "h": 3600.0}
_PART = re.compile(r"(\d+(?:\.\d*)?|\.\d+)(ns|us|µs|ms|s|m|h)")
_NUMBER = re.compile(r"\d+(?:\.\d*)?|\.\d+")


def parse_duration(text: str, *, bare_seconds: bool = False) -> float:
    """Seconds in ``text`` (``"1m30s"`` -> 90.0); :class:`ValueError` naming the text otherwise.

    No sign is accepted: every rte duration is a length of time. ``"0"`` is always zero.
    """
    s = text.strip()
    if s == "0":
        return 0.0
    if not s:
        raise ValueError("empty duration")
    if bare_seconds and _NUMBER.fullmatch(s):
        return float(s)
    total, pos = 0.0, 0
    while pos < len(s):
        m = _PART.match(s, pos)
        if m is None:
            raise ValueError(f"not a duration: {text!r}")
        total += float(m.group(1)) * _UNITS[m.group(2)]
        pos = m.end()
    return total


def format_duration(seconds: float) -> str:
    """The shortest exact spelling among ``h``, ``m``, ``s``, ``ms`` (``0.5`` -> ``500ms``)."""
    if seconds == 0:
        return "0"
    for unit, size in (("h", 3600.0), ("m", 60.0), ("s", 1.0), ("ms", 1e-3)):
        count = seconds / size
        if math.isclose(count, round(count), rel_tol=0, abs_tol=1e-9) and round(count) >= 1:
            return f"{round(count)}{unit}"
    return f"{seconds * 1000:g}ms"
