"""Which nodes changed since a reader last looked: the store's and the caches' change logs.

A reader (the kernel's mirror of a cache, :mod:`rte.consumer.kernel.mirror`) remembers a serial
number and asks for the nodes noted after it, so an unchanged node costs it nothing. The log keeps
only recent entries: a reader whose serial is older than the oldest kept gets None ("anything may
have changed") and starts over, so memory stays bounded however long the process runs.
"""

from __future__ import annotations

from collections.abc import Iterable

MIN_KEPT = 4096
"""Entries always kept; beyond this, the log keeps about twice as many entries as distinct nodes."""


class ChangeLog:
    """Node names in the order they changed. Not thread-safe: the owner holds its own lock."""

    def __init__(self) -> None:
        self._names: list[str] = []
        self._base = 0
        """The serial of ``_names[0]`` (entries before it were dropped)."""
        self._distinct: dict[str, None] = {}
        """The names among ``_names``, counted for trimming: a dict, not a set, since a set of
        20 000 names takes 2 MiB (sets grow fourfold) and a dict 0.4 (issue #13's RSS budget)."""

    @property
    def serial(self) -> int:
        """The serial after the last entry: what a reader passes to :meth:`since` next time."""
        return self._base + len(self._names)

    def note(self, name: str) -> None:
        self._names.append(name)
        self._distinct[name] = None
        if len(self._names) > max(MIN_KEPT, 4 * len(self._distinct)):
            self._trim()

    def note_all(self, names: Iterable[str]) -> None:
        for name in names:
            self.note(name)

    def since(self, serial: int | None) -> list[str] | None:
        """The names noted at or after ``serial`` (repeats possible); None when ``serial`` is None or
        older than the log reaches."""
        if serial is None or serial < self._base:
            return None
        return self._names[serial - self._base :]

    def _trim(self) -> None:
        drop = len(self._names) // 2
        self._base += drop
        del self._names[:drop]
        self._distinct = dict.fromkeys(self._names)
