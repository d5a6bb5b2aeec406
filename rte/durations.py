"""Durations as every rte command reads them: Go's syntax (``500ms``, ``10s``, ``1m30s``, ``2h``).

One grammar for every command's durations (settings, flags, variables, files): Go's units, or
a bare number meaning seconds (``bare_seconds=True``). Without ``bare_seconds`` the grammar is
Go's ``time.ParseDuration`` exactly, for values read from kubelet files.
"""

from __future__ import annotations

import re

_UNITS = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0, "h": 3600.0}
_PART = re.compile(r"(\d+(?:\.\d*)?|\.\d+)(ns|us|µs|ms|s|m|h)")
_NUMBER = re.compile(r"\d+(?:\.\d*)?|\.\d+")
# Go's time.Duration is int64 nanoseconds, and its ParseDuration refuses anything longer (about
# 292 years); so do we, which also keeps "9999...h" from becoming an infinite float.
MAX_SECONDS = (2**63 - 1) / 1e9


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
        return _bounded(float(s), text)
    total, pos = 0.0, 0
    while pos < len(s):
        m = _PART.match(s, pos)
        if m is None:
            raise ValueError(f"not a duration: {text[:80]!r}")
        total += float(m.group(1)) * _UNITS[m.group(2)]
        pos = m.end()
    return _bounded(total, text)


def _bounded(seconds: float, text: str) -> float:
    if seconds > MAX_SECONDS:
        raise ValueError(f"duration out of range (at most about 292 years): {text[:80]!r}")
    return seconds


def format_duration(seconds: float) -> str:
    """The shortest spelling among ``h``, ``m``, ``s``, ``ms`` that reads back as exactly ``seconds``.

    ``0.5`` -> ``500ms``, ``90`` -> ``90s``. A value no whole count of a unit gives back exactly
    (``0.7``, since 700 x 0.001 is not 0.7 in binary) is written as decimal seconds (``0.7s``),
    so that a dumped setting loads back bit for bit.
    """
    if seconds == 0:
        return "0"
    for unit, size in (("h", 3600.0), ("m", 60.0), ("s", 1.0), ("ms", 1e-3)):
        count = round(seconds / size)
        if count >= 1 and count * _UNITS[unit] == seconds:
            return f"{count}{unit}"
    from decimal import Decimal  # only for the rare value no unit gives back exactly

    return f"{format(Decimal(repr(float(seconds))), 'f')}s"
