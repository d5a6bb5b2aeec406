"""How much the memos of candidate lists may keep, in bytes.

A front end remembers the last few candidate lists (kube-scheduler sends the same list pod after
pod) and what it computed for them. Bounded by count alone, those memos let a client grow the
process by sending a few distinct, very long lists: a 1M-name ``NodeNames`` list cost some 50
times its 12.9 MB body per memo it entered, and one Deployment replica was OOM-killed by a
handful of them (issue #26, item 1). So every memo keyed by, or sized by, a candidate list is
bounded in bytes by the rules here:

* a list whose estimated cost exceeds :data:`LIST_BYTES_KEPT` is never remembered (it is
  decided afresh each time it comes, as a list never seen is);
* a memo's entries together stay under :data:`MEMO_BYTES_KEPT`: the oldest go first.

The costs are estimates of what CPython and NumPy hold (:func:`names_cost`); they need only be
of the right size, as they bound what a hostile client can make the process keep, and realistic
lists are far below the limits (5000 names of 30 characters cost ~0.5 MB).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Generic, TypeVar

K = TypeVar("K")
V = TypeVar("V")

_MiB = 1 << 20

LIST_BYTES_KEPT = 8 * _MiB
"""The largest candidate list a memo remembers: ~90 000 names of 30 characters, more than
four times the largest cluster the project measures (20 000 nodes)."""

MEMO_BYTES_KEPT = 32 * _MiB
"""What one memo may keep of its lists together."""

NAME_OVERHEAD = 64
"""Bytes a name costs besides its characters: a ``str`` object (49 bytes for ASCII) and the
pointer to it, rounded up."""

BYTES_PER_CANDIDATE = 64
"""Bytes per candidate of a kept decision's columns (rows, verdicts, reasons, zones, scores)."""

CANDIDATES_KEPT = LIST_BYTES_KEPT // BYTES_PER_CANDIDATE
"""The longest candidate list whose decisions are kept (131 072)."""


def names_cost(names: Sequence[str]) -> int:
    """What a list of names holds in memory, estimated: its characters and a fixed overhead each.

    ``str.__len__`` in C over the list: a few milliseconds per million names, paid only for a
    list not remembered yet."""
    return sum(map(len, names)) + NAME_OVERHEAD * len(names)


def too_long(names: Sequence[str]) -> bool:
    """Whether a list is over :data:`LIST_BYTES_KEPT`; a list too long by count alone is not
    summed (a 1M-name list is known too long without reading its names)."""
    if len(names) * NAME_OVERHEAD > LIST_BYTES_KEPT:
        return True
    return names_cost(names) > LIST_BYTES_KEPT


class KeptByCost(Generic[K, V]):
    """The last values kept, by key, at most ``count`` of them and :data:`MEMO_BYTES_KEPT`
    (``total``) of cost together; a value over :data:`LIST_BYTES_KEPT` (``each``) is not kept.
    Not thread-safe: the owner serialises :meth:`keep` (readers may call :meth:`get` freely)."""

    def __init__(self, count: int, total: int = MEMO_BYTES_KEPT, each: int = LIST_BYTES_KEPT) -> None:
        self.count = count
        self.total = total
        self.each = each
        self.values: dict[K, V] = {}
        self._costs: dict[K, int] = {}
        self.cost = 0
        """The cost of the values kept now."""

    def get(self, key: K) -> V | None:
        return self.values.get(key)

    def keep(self, key: K, value: V, cost: int) -> bool:
        """Keep ``value`` under ``key`` (the oldest go to make room); False when it costs too much."""
        if cost > self.each:
            return False
        self.cost += cost - self._costs.pop(key, 0)
        self.values.pop(key, None)
        self.values[key] = value
        self._costs[key] = cost
        while len(self.values) > self.count or self.cost > self.total:
            oldest = next(iter(self.values))
            del self.values[oldest]
            self.cost -= self._costs.pop(oldest)
        return True

    def clear(self) -> None:
        self.values.clear()
        self._costs.clear()
        self.cost = 0

    def __len__(self) -> int:
        return len(self.values)

    def __contains__(self, key: object) -> bool:
        return key in self.values
