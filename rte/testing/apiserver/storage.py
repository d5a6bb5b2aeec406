"""In-memory object storage with one global resourceVersion and a bounded event history.

Like etcd behind the real apiserver, every change of any object takes the next revision, the
history of changes is kept for a while so watches can resume from a resourceVersion, and a
resourceVersion older than what is kept is answered with 410 Expired. A write whose result is
identical to what is stored is not a change: it keeps the resourceVersion and emits no event.
"""

from __future__ import annotations

import bisect
import copy
import json
import queue
import threading
from collections import deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

Obj = dict[str, Any]
Key = tuple[str, str]  # (namespace or "", name)


@dataclass(frozen=True)
class Change:
    """One stored change. ``new`` is the final state for DELETED (with the deletion's rv)."""

    rv: int
    resource: str
    type: str
    old: Obj | None
    new: Obj


def key_of(obj: Obj) -> Key:
    meta = obj.get("metadata", {})
    return (meta.get("namespace", ""), meta["name"])


@dataclass(eq=False)
class Watcher:
    """One open watch: which changes it wants and where they go."""

    resource: str
    namespace: str | None
    matches: Callable[[Obj], bool]
    events: queue.Queue[tuple[str, Obj]] = field(default_factory=queue.Queue)
    dropped: threading.Event = field(default_factory=threading.Event)
    abrupt: bool = False

    def wants(self, obj: Obj) -> bool:
        if self.namespace and obj.get("metadata", {}).get("namespace") != self.namespace:
            return False
        return self.matches(obj)

    def offer(self, change: Change) -> None:
        # A selector can make a MODIFIED look like an ADDED or DELETED to this watcher, as on the
        # real apiserver: an object entering the selection is added, one leaving it is deleted.
        was = change.old is not None and change.type != "ADDED" and self.wants(change.old)
        now = self.wants(change.new)
        if change.type == "ADDED" and now:
            self.events.put(("ADDED", change.new))
        elif change.type == "DELETED" and (was or now):
            self.events.put(("DELETED", change.new))
        elif change.type == "MODIFIED":
            if was and now:
                self.events.put(("MODIFIED", change.new))
            elif now:
                self.events.put(("ADDED", change.new))
            elif was:
                self.events.put(("DELETED", change.new))


class Storage:
    """Objects by resource (plural) and key. Callers hold ``lock`` across read-modify-write."""

    def __init__(self, history_limit: int = 1000, first_rv: int = 100) -> None:
        self.lock = threading.RLock()
        self.rv = first_rv
        # Watches from a resourceVersion below this cannot be served any more.
        self.compacted = first_rv
        self._objects: dict[str, dict[Key, Obj]] = {}
        self._history: deque[Change] = deque()
        self._history_limit = history_limit
        self._watchers: set[Watcher] = set()
        # For lists (pages of 500 of 20 000 NRTs): keys kept sorted per resource, and each stored
        # object's JSON per representation, dropped when the object changes. Without them every
        # page copied, sorted and encoded the whole collection again (over 600 s for 20 000).
        self._sorted: dict[str, list[Key]] = {}
        self._encoded: dict[str, dict[Key, dict[str, bytes]]] = {}

    # -- reads ---------------------------------------------------------------------------------

    def get(self, resource: str, key: Key) -> Obj | None:
        with self.lock:
            obj = self._objects.get(resource, {}).get(key)
            return copy.deepcopy(obj) if obj is not None else None

    def items(self, resource: str, namespace: str | None = None) -> list[Obj]:
        with self.lock:
            items = sorted(self._objects.get(resource, {}).items())
            return [copy.deepcopy(o) for (ns, _), o in items if not namespace or ns == namespace]

    def keys_after(self, resource: str, start: Key | None = None) -> list[Key]:
        """The keys of ``resource`` in order, only those after ``start`` if given."""
        with self.lock:
            keys = self._sorted.get(resource)
            if keys is None:
                keys = self._sorted[resource] = sorted(self._objects.get(resource, {}))
            return keys[bisect.bisect_right(keys, start) :] if start is not None else list(keys)

    def peek(self, resource: str, key: Key) -> Obj:
        """The stored object itself, not a copy: only for reading, with ``lock`` held."""
        return self._objects[resource][key]

    def encoded(self, resource: str, key: Key, variant: str, render: Callable[[Obj], Obj]) -> bytes:
        """``json.dumps(render(copy of the object))``, encoded once per object version and
        ``variant`` (what ``render`` does, e.g. the apiVersion shown) and kept until it changes."""
        with self.lock:
            kept = self._encoded.setdefault(resource, {}).setdefault(key, {})
            data = kept.get(variant)
            if data is None:
                shown = render(copy.deepcopy(self._objects[resource][key]))
                data = kept[variant] = json.dumps(shown).encode()
            return data

    def _changed(self, resource: str, key: Key, added_or_deleted: bool) -> None:
        self._encoded.get(resource, {}).pop(key, None)
        if added_or_deleted:
            self._sorted.pop(resource, None)

    # -- writes --------------------------------------------------------------------------------

    def _commit(self, resource: str, type_: str, old: Obj | None, new: Obj) -> Change:
        change = Change(self.rv, resource, type_, copy.deepcopy(old), copy.deepcopy(new))
        self._history.append(change)
        while len(self._history) > self._history_limit:
            self.compacted = self._history.popleft().rv
        for watcher in list(self._watchers):
            if watcher.resource == resource:
                watcher.offer(change)
        return change

    def create(self, resource: str, obj: Obj) -> Obj:
        """Store a new object; the caller has checked it does not exist."""
        with self.lock:
            self.rv += 1
            stored = copy.deepcopy(obj)
            stored["metadata"]["resourceVersion"] = str(self.rv)
            self._objects.setdefault(resource, {})[key_of(stored)] = stored
            self._changed(resource, key_of(stored), added_or_deleted=True)
            self._commit(resource, "ADDED", None, stored)
            return copy.deepcopy(stored)

    def update(self, resource: str, obj: Obj) -> tuple[Obj, bool]:
        """Store ``obj`` over the existing object; ``(stored, changed)``.

        Content equal to what is stored (resourceVersion aside) is a no-op, as in the apiserver,
        which skips the etcd write when the serialised object is byte-identical.
        """
        with self.lock:
            key = key_of(obj)
            current = self._objects[resource][key]
            candidate = copy.deepcopy(obj)
            candidate["metadata"]["resourceVersion"] = current["metadata"]["resourceVersion"]
            if candidate == current:
                return copy.deepcopy(current), False
            self.rv += 1
            candidate["metadata"]["resourceVersion"] = str(self.rv)
            self._objects[resource][key] = candidate
            self._changed(resource, key, added_or_deleted=False)
            self._commit(resource, "MODIFIED", current, candidate)
            return copy.deepcopy(candidate), True

    def delete(self, resource: str, key: Key) -> Obj:
        with self.lock:
            current = self._objects[resource].pop(key)
            self._changed(resource, key, added_or_deleted=True)
            self.rv += 1
            final = copy.deepcopy(current)
            final["metadata"]["resourceVersion"] = str(self.rv)
            self._commit(resource, "DELETED", current, final)
            return final

    def compact(self) -> None:
        """Forget the whole history, as an etcd compaction would."""
        with self.lock:
            self._history.clear()
            self.compacted = self.rv

    # -- watches -------------------------------------------------------------------------------

    def subscribe(self, watcher: Watcher, since: int | None) -> list[tuple[str, Obj]]:
        """Register ``watcher`` and return the events it starts with, atomically.

        ``since`` None: the current state as ADDED events. Otherwise the recorded changes after
        ``since``; the caller has checked ``since >= compacted``.
        """
        with self.lock:
            initial: list[tuple[str, Obj]] = []
            if since is None:
                for obj in self.items(watcher.resource):
                    if watcher.wants(obj):
                        initial.append(("ADDED", obj))
            else:
                replay = Watcher(watcher.resource, watcher.namespace, watcher.matches)
                for change in self._history:
                    if change.rv > since and change.resource == watcher.resource:
                        replay.offer(change)
                while not replay.events.empty():
                    initial.append(replay.events.get_nowait())
            self._watchers.add(watcher)
            return initial

    def unsubscribe(self, watcher: Watcher) -> None:
        with self.lock:
            self._watchers.discard(watcher)

    def watchers(self) -> Iterator[Watcher]:
        with self.lock:
            return iter(list(self._watchers))
