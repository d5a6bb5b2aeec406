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

**Names the cache never heard of** (no NRT, no heartbeat, no state: a cache that can tell,
:class:`~rte.consumer.cache.interface.TrackingCache`) all get the same answer, so they share one
row (:attr:`CacheMirror.untracked_row`) and cost nothing that stays: a client sending a list of a
million made-up names once grew the table by a million rows for good (issue #26, item 1). A name
turning tracked is reported by the cache as changed; the remembered lists that mapped some name
to the shared row are then resolved again. The remembered lists are bounded in bytes
(:mod:`rte.consumer.kept`).

One mirror per cache, made on first use; its lock serialises the rows' rewriting and the
decisions that read them.
"""

from __future__ import annotations

import threading
import weakref
from collections.abc import Collection, Iterable, Sequence
from typing import Protocol, TypeGuard, cast

import numpy as np

from rte.consumer.cache.interface import BatchedCache, Cursor, Lookup, TrackingCache, implements
from rte.consumer.kept import KeptByCost, names_cost, too_long
from rte.consumer.kernel.memo import DecisionMemo
from rte.consumer.kernel.table import Bools, Ints, NodeTable
from rte.consumer.numaview import NumaView
from rte.model.pod import Pod

_ONE_BY_ONE = 16
"""Up to this many changed rows are rewritten one by one; more at once (:meth:`NodeTable.put_many`)."""
_LISTS_KEPT = 8
"""Candidate lists whose rows are remembered (and at most :data:`~rte.consumer.kept.MEMO_BYTES_KEPT`)."""
UNTRACKED = "\x00untracked"
"""The label (:attr:`NodeTable.names`) of the row shared by untracked names; no Kubernetes
object can be named so (a NUL is no DNS-subdomain character), and a request sending it gets the
answer of any untracked name, which it is."""
_ALWAYS = -1
"""The epoch of remembered rows that map no name to the shared row: valid whatever changes."""

_Known = tuple[Ints, bool, int]
"""A list's rows, whether they are the table's first rows in order, and the untracked epoch
they were resolved at (:data:`_ALWAYS`: no name was untracked)."""


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
        self._lists: KeptByCost[tuple[str, ...], _Known] = KeptByCost(_LISTS_KEPT)
        self._tuples: KeptByCost[int, tuple[tuple[str, ...], _Known]] = KeptByCost(_LISTS_KEPT)
        """The same, by identity, for candidate lists given as tuples (immutable: the same
        object always holds the same names), so that reusing one costs no look at its names."""
        self.untracked_row: int | None = None
        """The row every untracked name maps to (made on first need)."""
        self._epoch = 0
        """Incremented when a name may have turned tracked: rows resolved before are stale
        where they map a name to :attr:`untracked_row`."""
        self.whole = False
        """Whether the rows of the last :meth:`sync` are the whole table in order (a decision
        may then read whole columns, ``rows=None``, without gathering)."""

    def rows(self, names: Sequence[str], cache: object = None) -> Ints:
        """The rows of ``names`` (added on first sight), in order; a row's index never changes.
        With a :class:`TrackingCache`, the names it does not track all map to
        :attr:`untracked_row` (call under the cache's changes: :meth:`sync`).

        The rows of the last few lists are remembered: by content (a list equal to one seen costs
        a comparison of names), and for a tuple by identity (no cost per name at all).
        """
        same = self._tuples.values.get(id(names)) if isinstance(names, tuple) else None
        if same is not None and same[0] is names and self._valid(same[1]):
            known = same[1]
        else:
            key = names if isinstance(names, tuple) else tuple(names)
            known_or_none = self._lists.values.get(key)
            if known_or_none is None or not self._valid(known_or_none):
                known_or_none = self._rows_of(key, cache)
                if not too_long(key):
                    cost = names_cost(key) + known_or_none[0].nbytes
                    self._lists.keep(key, known_or_none, cost)
                    if isinstance(names, tuple):
                        self._tuples.keep(id(names), (names, known_or_none), cost)
            elif isinstance(names, tuple):
                self._tuples.keep(id(names), (names, known_or_none), names_cost(key))
            known = known_or_none
        rows, in_order, _ = known
        self.whole = in_order and len(rows) == self.table.size
        return rows

    def _valid(self, known: _Known) -> bool:
        return known[2] == _ALWAYS or known[2] == self._epoch

    def _rows_of(self, names: tuple[str, ...], cache: object) -> _Known:
        index = self.table.index
        found = list(map(index.get, names))
        epoch = _ALWAYS
        if None in found:  # new names: add rows for those the cache tracks
            new = [name for name, at in zip(names, found, strict=True) if at is None]
            if implements(cache, TrackingCache):
                tracked = dict(zip(new, cast(TrackingCache, cache).tracked(new), strict=True))
            else:
                tracked = dict.fromkeys(new, True)
            row = self.table.row
            shared = -1 if all(tracked.values()) else self._untracked()
            found = [
                at if at is not None else row(name) if tracked[name] else shared
                for name, at in zip(names, found, strict=True)
            ]
            if not all(tracked.values()):
                epoch = self._epoch
        rows = np.array(found, np.int64)
        return rows, bool((rows == np.arange(len(rows))).all()), epoch

    def _untracked(self) -> int:
        if self.untracked_row is None:
            self.untracked_row = self.table.unindexed_row(UNTRACKED)
        return self.untracked_row

    def sync(self, names: Sequence[str], cache: _Serves, pod: Pod | None = None) -> Ints:
        """The rows of ``names``, each holding what the cache now serves for it. Call with
        :attr:`lock` held."""
        if is_batched(cache):
            return self._sync_changed(names, cache)
        rows = self.rows(names)
        self._sync_each(rows, cache, pod)
        return rows

    def _sync_changed(self, names: Sequence[str], cache: BatchedCache) -> Ints:
        table = self.table
        resolved: list[Ints] = []

        def select(changed: Collection[str] | None) -> list[str]:
            # Under the cache's lock: which names it tracks cannot change before the lookups.
            index = table.index
            if changed is None or not all(n in index for n in changed):
                self._epoch += 1  # a name may have turned tracked
            rows = self.rows(names, cache)
            resolved.append(rows)
            current = self._grown_current()
            if changed is None:
                current[:] = False
            elif changed:
                current[[index[n] for n in changed if n in index]] = False
            stale = rows[~current[rows]]
            if not len(stale):
                return []
            label = table.names
            return [label[r] for r in np.unique(stale).tolist()]

        snapshot = cache.lookup_changed(self.cursor, select)
        self.cursor = snapshot.cursor
        if snapshot.lookups:
            current = self._current
            index = table.index
            untracked = -1 if self.untracked_row is None else self.untracked_row
            # Every name looked up has a row: its own, or the untracked names' (its label).
            looked = [(index.get(name, untracked), lookup) for name, lookup in snapshot.lookups]
            current[[row for row, _ in looked]] = True
            self._write(looked)
        return resolved[0]

    def _grown_current(self) -> Bools:
        if len(self._current) < self.table.capacity:
            grown = np.zeros(self.table.capacity, np.bool_)
            grown[: len(self._current)] = self._current
            self._current = grown
        return self._current

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


_MIRRORS: weakref.WeakKeyDictionary[object, CacheMirror] = weakref.WeakKeyDictionary()
_MIRRORS_LOCK = threading.Lock()


def mirror_of(cache: object) -> CacheMirror:
    """The mirror of ``cache``, made on first use (and dropped with the cache)."""
    with _MIRRORS_LOCK:
        mirror = _MIRRORS.get(cache)
        if mirror is None:
            mirror = _MIRRORS[cache] = CacheMirror()
        return mirror
