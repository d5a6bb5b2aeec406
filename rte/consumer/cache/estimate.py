"""Filter on the safe lower bound, Score on the best estimate: the reserve cache's score views.

The view the reserve cache serves (:meth:`NodeState.served_view
<rte.consumer.cache.nodestate.NodeState.served_view>`) never shows more than the kubelet has
(:mod:`rte.consumer.lowerbound`): a pod in flight is charged on *every* zone it may land on.
That is what keeps Filter from causing a TopologyAffinityError, but it makes a node with a pod in
flight look fuller on every zone than it will be, so Score ranks it lower than a scheduler that
knows the kubelets would (the simulator's oracle, :mod:`rte.sim.oracle`), the cluster fills in
another order and fragments differently: near saturation, more pods then fit on no node at all.

Score cannot cause a TopologyAffinityError: it only orders nodes that passed Filter, and Filter
keeps deciding on the lower bound. So Score may rate the *best estimate* of each node instead:
the adopted NRT (ended pods' holds given back, as in the served view), each admitted pod whose
zone the cache learnt charged on that zone only (:func:`~rte.consumer.cache.predict.chosen_zone`,
not on the zones the kubelet might prefer to it), then every other reserved pod charged, in the
order it was reserved (the order the kubelet admits them in), on the zone the admission model
picks on the estimate so far (:func:`~rte.consumer.cache.predict.estimated_charge`), or on every
zone when the model cannot tell (several units, a split the counts cannot pin down). When the
NRT is exact, that is the state the kubelet will reach: the oracle's view. A pod placed alone on
its way keeps the zone predicted when it was placed (:mod:`~rte.consumer.cache.predict`, on the
lower bound then): running the admission model again per pod and node costs about a millisecond
on 8-zone nodes, as much as the rest of a scheduling cycle over 5000 nodes; the kubelet may
still pick a zone before it, when admitted pods' charges hid room there.

The estimate shows at least what the served view shows on every zone (each pod is charged on
one of the zones the served view charges it on, or on the same ones), so a pod that passes Filter
fits the estimate too and gets a score from it. A node without reservations has one view for both.

Which nodes have a score view of their own is kept current from the change logs
(:class:`ScoreViewNodes`): every change of a node's reservations is noted in the cache's own log
(as for the kernel's mirror, :mod:`rte.consumer.cache.batched`), or comes with a new NRT in the
store's, so a front end asks for the few nodes with reservations, not for every node.
"""

from __future__ import annotations

import threading
from collections.abc import Collection, Iterable, Mapping
from typing import Protocol

from rte.consumer.cache.interface import Clock
from rte.consumer.cache.predict import ZoneCharge, chosen_zone, estimated_charge
from rte.consumer.cache.reservations import Reservation, subtract_all
from rte.consumer.changelog import ChangeLog
from rte.consumer.config import CacheConfig, LoadAwareConfig
from rte.consumer.numaview import NumaView
from rte.consumer.requests import shape_key
from rte.consumer.store import NRTStore
from rte.model.pod import Pod
from rte.model.quantity import Amount
from rte.model.topology import NodeTopology
from rte.model.vocabulary import Compat

MEMO_LIMIT = 64
"""Charges a node remembers (per pod shape and state) before starting over."""


def _charge(view: NumaView, pod: Pod, memo: dict[object, ZoneCharge | None]) -> ZoneCharge | None:
    """:func:`estimated_charge`, remembered per pod shape and zone amounts in ``memo`` (the
    node's: its other inputs change only with its NRT, which drops the memo): pods of one
    shape are placed again and again, and the model costs about a millisecond on 8 zones."""
    key = (shape_key(pod, Compat.KUBELET), tuple(tuple(sorted(zone.items())) for zone in view.zone_available))
    if key not in memo:
        if len(memo) >= MEMO_LIMIT:
            memo.clear()
        memo[key] = estimated_charge(view, pod)
    return memo[key]


def best_estimate(
    base: NumaView,
    admitted: Iterable[ZoneCharge],
    pending: Iterable[Reservation],
    memo: dict[object, ZoneCharge | None],
    given_back: Iterable[ZoneCharge] = (),
) -> NumaView:
    """``base`` with the ``given_back`` charges (negative: ended pods' credits) and each
    ``admitted`` pod charged on its chosen zone, then each ``pending`` one, in order, on the
    zone the admission model picks (every zone when it cannot tell).

    Charges are gathered and taken in one view, made only where the admission model must read
    the estimate so far or when done (issue #27): the same view as one per charge, since amounts
    are exact and a view keeps what its clamp hid (:func:`subtract_all`)."""
    view = base
    charges: list[Mapping[int, Mapping[str, Amount]]] = [*given_back]
    charges.extend({(z := chosen_zone(c)): c[z]} for c in admitted)
    for reservation in pending:
        if reservation.zones:  # predicted when it was placed: no second run of the admission model
            z = chosen_zone(reservation.zones)
            charges.append({z: reservation.zones[z]})
            continue
        pod = None if reservation.unpredictable else reservation.pod
        if pod is None:
            charges, view = [], subtract_all(view, charges, [reservation.request])
            continue
        charges, view = [], subtract_all(view, charges)
        charge = _charge(view, pod, memo)
        if charge is None:
            view = subtract_all(view, (), [reservation.request])
        else:
            charges.append(charge)
    return subtract_all(view, charges)


class ScoreViewNodes:
    """The nodes that may have reservations (so a score view of their own), kept from the store's
    change log and the cache's: a node gains a reservation only with a note in one of them."""

    def __init__(self) -> None:
        self.nodes: set[str] = set()
        self._cursor: tuple[int, int] | None = None

    def candidates(self, store: NRTStore, changes: ChangeLog, known: Iterable[str]) -> set[str]:
        """The nodes to check now: those kept, and those changed since the last call (every one
        of ``known`` and the store's on the first call, or when a log no longer reaches back)."""
        stored_at, own_at = (None, None) if self._cursor is None else self._cursor
        generation, stored = store.changed_since(stored_at)
        own = changes.since(own_at)
        self._cursor = (generation, changes.serial)
        if stored is None or own is None:
            self.nodes = {*known, *store.nodes()}
        else:
            self.nodes.update(stored)
            self.nodes.update(own)
        return self.nodes


class EstimatingNode(Protocol):
    """What :class:`ScoreViews` reads of a node's state
    (:class:`~rte.consumer.cache.nodestate.NodeState`, which builds its estimate with
    :func:`best_estimate`: this module sits below it and names only this protocol)."""

    @property
    def topology(self) -> NodeTopology | None: ...

    @property
    def reservations(self) -> Mapping[tuple[str, str], Reservation]: ...

    def estimated_view(self, load_config: LoadAwareConfig) -> NumaView: ...


class ScoreViews:
    """:meth:`score_views` for the reserve cache (:class:`~.interface.ScoreViewsCache`)."""

    _store: NRTStore
    _config: CacheConfig
    _clock: Clock
    _lock: threading.Lock | threading.RLock
    _changes: ChangeLog
    _nodes: Mapping[str, EstimatingNode]
    _predicts: bool
    _score_nodes: ScoreViewNodes

    def score_views(self, nodes: Collection[str] | None = None) -> dict[str, NumaView]:
        """Under one lock, the views Score rates where they differ from the view :meth:`get`
        serves: of ``nodes``, or of every node (None). See the module docstring.

        Read as the nodes stand: a node is not brought up to date with the store here (that is
        :meth:`get`'s business, and the caller scores what it filtered), and freshness is the
        caller's to check, on the lookup it decided on."""
        with self._lock:
            if not self._predicts:
                return {}  # no zone is ever predicted: both views are the served one
            if nodes is None:
                nodes = self._score_nodes.candidates(self._store, self._changes, self._nodes)
                keep = self._score_nodes.nodes
            else:
                keep = set()
            views: dict[str, NumaView] = {}
            dropped = 0
            for node in list(nodes):
                st = self._nodes.get(node)
                if st is None or not st.reservations:
                    keep.discard(node)
                    dropped += 1
                elif st.topology is not None:
                    views[node] = st.estimated_view(self._config.load)
            if nodes is keep and dropped > len(keep):
                # A set never shrinks its table: iterating the few left would walk the slots of
                # every node once held (80 µs per prioritize at 5000 nodes, issue #27).
                self._score_nodes.nodes = set(keep)
            return views
