"""One immutable object for many equal ones, in a bounded table.

At thousands of pods, most are alike (a Deployment's replicas, containers that hold nothing, pods
the fingerprint rule reads alike), and each kept its own equal tuples and records: a few hundred
bytes a pod in the agent and the extender. A :class:`SharedValues` hands back the first value seen
under an equal key. It stops taking new keys at its limit, so hostile input (every pod different)
costs a bounded table, never unbounded growth; values must be immutable for sharing to be safe.
"""

from __future__ import annotations

from collections.abc import Hashable
from typing import Generic, TypeVar

V = TypeVar("V")


class SharedValues(Generic[V]):
    """Values by key, the first one kept; at most ``limit`` keys."""

    __slots__ = ("_limit", "_table")

    def __init__(self, limit: int) -> None:
        self._table: dict[Hashable, V] = {}
        self._limit = limit

    def share(self, key: Hashable, value: V) -> V:
        """The value first seen under a key equal to ``key``, else ``value`` (kept if room)."""
        got = self._table.get(key)
        if got is None:
            got = value
            if len(self._table) < self._limit:
                self._table[key] = value
        return got

    def __len__(self) -> int:
        return len(self._table)
