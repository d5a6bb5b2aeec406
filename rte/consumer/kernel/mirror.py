"""A node table kept in step with what an NRT cache serves, for front ends that ask the cache.

The caches (:mod:`rte.consumer.cache`) serve one :class:`~rte.consumer.cache.interface.Lookup`
per node. A scheduling cycle needs the candidates' rows to hold those lookups. The mirror keeps,
per row, whether the row still holds the cache's current answer; per request it asks the cache,
under the cache's lock once (:meth:`~rte.consumer.cache.interface.BatchedCache.lookup_changed`),
which nodes changed since the last request, and has only the candidates among them (and the
candidates it never saw) looked up and rewritten in place. A request in which nothing changed
costs no Python work per node: the candidates' names map to rows through a memo of the last few
candidate lists (kube-scheduler sends the same list again and again), and the kernel decides on
those rows. A cache without the batched interface is asked node by node, and a row is rewritten
when its view (immutable, so identity says it all) or freshness differs.

One mirror per cache, made on first use; its lock serialises the rows' rewriting and the
decisions that read them.
"""

from __future__ import annotations

import threading
import weakref
from collections.abc import Collection, Iterable, Sequence
from typing import Any, Protocol, TypeGuard

import numpy as np

from rte.consumer.cache.interface import BatchedCache, Cursor, Lookup, implements
from rte.consumer.kernel.memo import DecisionMemo
from rte.consumer.kernel.table import Bools, Ints, NodeTable
from rte.consumer.numaview import NumaView
from rte.model.pod import Pod

_ONE_BY_ONE = 16
"""Up to this many changed rows are rewritten one by one; more at once (:meth:`NodeTable.put_many`)."""
_LISTS_KEPT = 8
"""Candidate lists whose rows are remembered."""


class _Serves(Protocol):
    def get(self, node: str, pod: Pod | None = None) -> Lookup: ...


class CacheMirror:
    """One cache's views as a :class:`NodeTable`, by node name."""

    def __init__(self) -> None:
        self.table = NodeTable()
        self.memo = DecisionMemo(self.table)
        """Filter's half of the last decisions on :attr:`table` (prioritize after filter)."""
        self.lock = threading.Lock()
        """Held while syncing and deciding: the table is rewritten in place."""
        self.cursor: Cursor | None = None
        """Where the table stands in the cache's changes (None: nothing read yet)."""
        self.lookups = 0
        """Nodes looked up so far (for tests and benchmarks: an unchanged node costs none)."""
        self._current: Bools = np.zeros(self.table.capacity, np.bool_)
        """Per row: it holds the cache's answer as of :attr:`cursor`."""
        self._lists: dict[tuple[str, ...], tuple[Ints, bool]] = {}
        self._tuples: dict[int, tuple[tuple[str, ...], Ints, bool]] = {}
        """The same, by identity, for candidate lists given as tuples (immutable: the same
        object always holds the same names), so that reusing one costs no look at its names."""
        self.whole = False
        """Whether the rows of the last :meth:`sync` are the whole table in order (a decision
        may then read whole columns, ``rows=None``, without gathering)."""

    def rows(self, names: Sequence[str]) -> Ints:
        """The rows of ``names`` (added on first sight), in order; a row's index never changes.

        The rows of the last few lists are remembered: by content (a list equal to one seen costs
        a comparison of names), and for a tuple by identity (no cost per name at all).
        """
        same = self._tuples.get(id(names)) if isinstance(names, tuple) else None
        if same is not None and same[0] is names:
            rows, in_order = same[1], same[2]
        else:
            key = names if isinstance(names, tuple) else tuple(names)
            known = self._lists.get(key)
            if known is None:
                known = self._lists[key] = self._rows_of(key)
                _keep_few(self._lists)
            rows, in_order = known
            if isinstance(names, tuple):
                self._tuples[id(names)] = (names, rows, in_order)
                _keep_few(self._tuples)
        self.whole = in_order and len(rows) == self.table.size
        return rows

    def _rows_of(self, names: tuple[str, ...]) -> tuple[Ints, bool]:
        found = list(map(self.table.index.get, names))
        if None in found:  # new names: add their rows
            row = self.table.row
            found = [row(name) if at is None else at for name, at in zip(names, found, strict=True)]
        rows = np.array(found, np.int64)
        return rows, bool((rows == np.arange(len(rows))).all())

    def sync(self, names: Sequence[str], cache: _Serves, pod: Pod | None = None) -> Ints:
        """The rows of ``names``, each holding what the cache now serves for it. Call with
        :attr:`lock` held."""
        rows = self.rows(names)
        if is_batched(cache):
            self._sync_changed(rows, cache)
        else:
            self._sync_each(rows, cache, pod)
        return rows

    def _sync_changed(self, rows: Ints, cache: BatchedCache) -> None:
        table = self.table
        if len(self._current) < table.capacity:
            grown = np.zeros(table.capacity, np.bool_)
            grown[: len(self._current)] = self._current
            self._current = grown
        current = self._current

        def select(changed: Collection[str] | None) -> list[str]:
            if changed is None:
                current[:] = False
            elif changed:
                index = table.index
                current[[index[n] for n in changed if n in index]] = False
            stale = rows[~current[rows]]
            if not len(stale):
                return []
            names = table.names
            return [names[r] for r in np.unique(stale).tolist()]

        snapshot = cache.lookup_changed(self.cursor, select)
        self.cursor = snapshot.cursor
        if snapshot.lookups:
            index = table.index
            looked = [(index[name], lookup) for name, lookup in snapshot.lookups]
            current[[row for row, _ in looked]] = True
            self._write(looked)

    def _sync_each(self, rows: Ints, cache: _Serves, pod: Pod | None) -> None:
        names = self.table.names
        self._write([(row, cache.get(names[row], pod)) for row in rows.tolist()])

    def _write(self, looked: Iterable[tuple[int, Lookup]]) -> None:
        """Rewrite the rows whose lookup differs from what they were written from."""
        table = self.table
        tokens = table.tokens
        changed: list[int] = []
        views: list[NumaView | None] = []
        fresh: list[bool] = []
        for row, lookup in looked:
            self.lookups += 1
            view, was_fresh = tokens[row]
            if view is not lookup.view or was_fresh != lookup.fresh:
                changed.append(row)
                views.append(lookup.view)
                fresh.append(lookup.fresh)
        if len(changed) > _ONE_BY_ONE:
            table.put_many(changed, views, fresh)
        else:
            for row, view, flag in zip(changed, views, fresh, strict=True):
                table.put(row, view, flag)


def is_batched(cache: object) -> TypeGuard[BatchedCache]:
    """``isinstance(cache, BatchedCache)``, answered by the cache's class where it can be
    (:func:`~rte.consumer.cache.interface.implements`)."""
    return implements(cache, BatchedCache)


def _keep_few(memo: dict[Any, Any]) -> None:
    if len(memo) > _LISTS_KEPT:
        del memo[next(iter(memo))]


_MIRRORS: weakref.WeakKeyDictionary[object, CacheMirror] = weakref.WeakKeyDictionary()
_MIRRORS_LOCK = threading.Lock()


def mirror_of(cache: object) -> CacheMirror:
    """The mirror of ``cache``, made on first use (and dropped with the cache)."""
    with _MIRRORS_LOCK:
        mirror = _MIRRORS.get(cache)
        if mirror is None:
            mirror = _MIRRORS[cache] = CacheMirror()
        return mirror
