"""Which nodes a reserve-cache resync must visit: those whose inputs may have changed (issue #13).

The resync's step for one node (:mod:`rte.consumer.cache.resyncpass`) depends only on that node's
state in the cache, its NRT in the store, the pods bound to it or named by its reservations, and
the time; and run twice with the same inputs, the second run changes nothing. So a node needs a
visit only when one of those changed since its last visit:

* the cache's own state of the node (a reservation, a pod event, a filter failure, an NRT adopted
  at a lookup): the cache *touches* the node each time;
* its NRT: the store's change log (:meth:`~rte.consumer.store.NRTStore.changed_since`);
* a pod bound to it, or one a reservation of it names: the informer's pod list, compared by
  identity with the last one (a changed pod is a new object), and an index from pod key to the
  nodes that held a reservation for it at their last visit;
* the time: a reservation whose pod is not listed goes ``absent_pod_grace`` after it was made, so
  the earliest such instant of each node is kept, ordered (a node seen a little early is only
  visited once more; rounding must never make it late, hence :data:`MARGIN`).

And some nodes are checked at every resync by rule, whatever changed: the *marked* ones (foreign;
unverified during the startup grace; dirty too with the exact reconciliation), whose every check
is a fingerprint comparison and counts a mismatch. A node whose NRT waits for a matching pod set
(``Reconcile.HISTORY``) is reported still dirty at every resync without a visit.

When a change log is out of reach, the index grows past its bound or a new startup grace begins
for every node, the next resync visits every node, as the full pass always does.
"""

from __future__ import annotations

import heapq
from collections.abc import Iterable, Mapping, Sequence
from operator import is_

# MARGIN: seconds by which a node's expiry is visited early, since ``now - reserved_at < grace``
# and ``reserved_at + grace <= now`` may disagree by a rounding. MIN_KEPT: entries the index and
# the expiry heap may always hold before they are rebuilt.
from rte.consumer.cache.batched import MARGIN
from rte.consumer.cache.nodestate import NodeState
from rte.consumer.cache.podindex import PodIndex
from rte.consumer.cache.resync import PodsInput, group_pods
from rte.consumer.changelog import MIN_KEPT
from rte.model.pod import Pod, PodKey


class ResyncPlan:
    """The bookkeeping behind an incremental resync. Not thread-safe: its owner holds the
    cache's lock for :meth:`touch` and the visits, and a resync lock around :meth:`pods_changed`."""

    def __init__(self) -> None:
        self.full = True
        """The next resync visits every node (the first one, or something was lost track of)."""
        self.store_generation: int | None = None
        """The store's generation when the last resync began."""
        self.touched: set[str] = set()
        self.marked: set[str] = set()
        """Nodes checked at every resync (marked at their last visit)."""
        self.waiting: set[str] = set()
        """Nodes whose NRT was not adopted at their last visit (History: reported still dirty)."""
        self._pods: Mapping[PodKey, Pod] = {}
        self._list: list[Pod] = []
        self._grouped: tuple[Mapping[str, Sequence[Pod]], dict[PodKey, Pod]] = {}, {}
        self._indexed = False
        """The last pods came as a :class:`PodIndex` (whose changes it drained), not a list."""
        self._reserved: dict[PodKey, set[str]] = {}
        self._expiry: dict[str, float] = {}
        self._heap: list[tuple[float, str]] = []

    def touch(self, node: str) -> None:
        self.touched.add(node)

    def grouped(self, pods: PodsInput) -> tuple[Mapping[str, Sequence[Pod]], dict[PodKey, Pod], set[str]]:
        """``pods`` grouped (:func:`~.resync.group_pods`), and the nodes a pod changed for since
        the last call. The usual list of the same pod objects in the same order as last time
        (an informer without events in between) is recognised by one C loop and not grouped again.
        """
        if isinstance(pods, PodIndex):
            return self._indexed_changes(pods)
        if self._indexed:  # what the index changed since it was drained is unknown here
            self._indexed, self.full, self._list, self._pods = False, True, [], {}
        if isinstance(pods, list) and len(pods) == len(self._list) and all(map(is_, pods, self._list)):
            by_node, known = self._grouped
            return by_node, known, set()
        by_node, known = group_pods(pods)
        self._list = list(pods) if isinstance(pods, list) else []  # a copy: the caller may reuse it
        self._grouped = by_node, known
        return by_node, known, self.pods_changed(known)

    def _indexed_changes(
        self, index: PodIndex
    ) -> tuple[Mapping[str, Sequence[Pod]], dict[PodKey, Pod], set[str]]:
        """:meth:`grouped` for a pod index (its lock held): the nodes its events touched since it
        was last drained, and those holding a reservation for a pod that changed. O(changes)."""
        keys, nodes, reset = index.drain()
        if reset or not self._indexed:  # a relist, or the first index: compare everything
            self._indexed = True
            self._list, self._grouped = [], ({}, {})
            self._pods = {}
            self.full = True
        if self.full:
            return index.by_node, index.known, set()  # every node is visited (the index rebuilt)
        for key in keys:
            nodes.update(self._reserved.pop(key, ()))  # their visits index them again if still held
        return index.by_node, index.known, nodes

    def pods_changed(self, known: Mapping[PodKey, Pod]) -> set[str]:
        """The nodes a pod changed for since the last call (``known``: every pod by key, a dict
        the caller does not change afterwards); remembers ``known`` for the next call."""
        old, self._pods = self._pods, known
        if self.full:
            return set()  # every node is visited anyway (and the index rebuilt)
        get = old.get
        changed = [key for key, pod in known.items() if get(key) is not pod]  # new or replaced
        gone = old.keys() - known.keys()
        nodes = {known[key].node_name for key in changed}
        nodes.update(old[key].node_name for key in gone)
        nodes.update(pod.node_name for pod in map(get, changed) if pod is not None)
        nodes.discard("")  # not bound
        for key in (*changed, *gone):
            # Their nodes' visits index them again if they still hold the reservation.
            nodes.update(self._reserved.pop(key, ()))
        return nodes

    def due(self, now: float) -> list[str]:
        """The nodes one of whose reservations may expire by ``now``."""
        heap, out = self._heap, []
        while heap and heap[0][0] <= now + MARGIN:
            when, node = heapq.heappop(heap)
            if self._expiry.get(node) == when:
                del self._expiry[node]
                out.append(node)
        return out

    def to_visit(self, stored: Iterable[str], pods: Iterable[str], now: float) -> set[str]:
        """Every node to visit this time (the touched ones are taken)."""
        visit, self.touched = self.touched, set()
        visit.update(stored)
        visit.update(pods)
        visit.update(self.due(now))
        visit.update(self.marked)
        return visit

    def restart(self) -> None:
        """Before a visit of every node: forget what the last visits left."""
        self.full = False
        self.touched.clear()
        self.marked.clear()
        self.waiting.clear()
        self._reserved.clear()
        self._expiry.clear()
        self._heap.clear()

    def settle(
        self, node: str, st: NodeState | None, known: Mapping[PodKey, Pod], grace: float, *flags: bool
    ) -> None:
        """Record what the visit of ``node`` left: ``st`` (None: forgotten), and whether it is
        marked and whether its NRT waits (``flags``)."""
        marked, waiting = flags if st is not None else (False, False)
        (self.marked.add if marked else self.marked.discard)(node)
        (self.waiting.add if waiting else self.waiting.discard)(node)
        expiry = None
        if st is not None:
            for key, reservation in st.reservations.items():
                self._reserved.setdefault(key, set()).add(node)
                pod = known.get(key)
                if pod is None or (reservation.uid and pod.uid and pod.uid != reservation.uid):
                    when = reservation.reserved_at + grace
                    expiry = when if expiry is None else min(expiry, when)
        if expiry is None:
            self._expiry.pop(node, None)
        elif self._expiry.get(node) != expiry:
            self._expiry[node] = expiry
            heapq.heappush(self._heap, (expiry, node))

    def bound(self, nodes: int) -> None:
        """Keep memory bounded: compact the heap, and rebuild the index at the next resync when
        it holds many keys no reservation names any more (a full pass rebuilds it)."""
        if len(self._heap) > MIN_KEPT + 2 * len(self._expiry):
            self._heap = [(when, node) for node, when in self._expiry.items()]
            heapq.heapify(self._heap)
        if len(self._reserved) > MIN_KEPT + 8 * nodes:
            self.full = True
