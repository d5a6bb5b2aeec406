"""A node table kept in step with what an NRT cache serves, for front ends that ask the cache.

The caches (:mod:`rte.consumer.cache`) serve one :class:`~rte.consumer.cache.interface.Lookup`
per node. A scheduling cycle asks for the candidates' lookups, and the mirror rewrites only the
rows whose view or freshness changed since the last cycle (a view is immutable, so identity says
it all), then the kernel decides on those rows. One mirror per cache, made on first use; its
lock serialises the rows' rewriting and the decisions that read them.
"""

from __future__ import annotations

import threading
import weakref
from collections.abc import Sequence
from typing import Protocol

import numpy as np

from rte.consumer.cache.interface import Lookup
from rte.consumer.kernel.table import Ints, NodeTable
from rte.model.pod import Pod

_ONE_BY_ONE = 16
"""Up to this many changed rows are rewritten one by one; more at once (:meth:`NodeTable.put_many`)."""


class _Serves(Protocol):
    def get(self, node: str, pod: Pod | None = None) -> Lookup: ...


class CacheMirror:
    """One cache's views as a :class:`NodeTable`, by node name."""

    def __init__(self) -> None:
        self.table = NodeTable()
        self.lock = threading.Lock()
        """Held while syncing and deciding: the table is rewritten in place."""

    def sync(self, names: Sequence[str], cache: _Serves, pod: Pod | None) -> tuple[Ints, list[Lookup]]:
        """The rows of ``names``, each rewritten if the cache now serves another view for it (for
        ``pod``), and the lookups themselves. Call with :attr:`lock` held."""
        table = self.table
        index, tokens = table.index, table.tokens
        rows = np.empty(len(names), np.int64)
        lookups = []
        changed: list[int] = []
        for k, name in enumerate(names):
            lookup = cache.get(name, pod)
            lookups.append(lookup)
            row = index.get(name)
            if row is None:
                row = table.row(name)
            view, fresh = tokens[row]
            if view is not lookup.view or fresh != lookup.fresh:
                changed.append(k)
            rows[k] = row
        if len(changed) > _ONE_BY_ONE:
            table.put_many(
                [int(rows[k]) for k in changed],
                [lookups[k].view for k in changed],
                [lookups[k].fresh for k in changed],
            )
        else:
            for k in changed:
                table.put(int(rows[k]), lookups[k].view, lookups[k].fresh)
        return rows, lookups


_MIRRORS: weakref.WeakKeyDictionary[object, CacheMirror] = weakref.WeakKeyDictionary()
_MIRRORS_LOCK = threading.Lock()


def mirror_of(cache: object) -> CacheMirror:
    """The mirror of ``cache``, made on first use (and dropped with the cache)."""
    with _MIRRORS_LOCK:
        mirror = _MIRRORS.get(cache)
        if mirror is None:
            mirror = _MIRRORS[cache] = CacheMirror()
        return mirror
