"""What the reserve cache knows about one node, and how that node looks with its reservations."""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass, field
from typing import Any

from rte.consumer import load
from rte.consumer.cache.estimate import best_estimate
from rte.consumer.cache.placement import negated
from rte.consumer.cache.podlog import PodLog, owned, shared_empty
from rte.consumer.cache.predict import ZoneCharge
from rte.consumer.cache.reservations import (
    Reservation,
    subtract_all,
    subtract_from_every_zone,
    total_request,
)
from rte.consumer.cache.resync import Comparison
from rte.consumer.config import LoadAwareConfig
from rte.consumer.lowerbound import mark_lower_bound
from rte.consumer.numaview import NumaView, build_view
from rte.consumer.placement import NodePlacement, PinnedMemo
from rte.consumer.tmconfig import tm_config_from
from rte.model.pod import Pod, PodKey
from rte.model.quantity import Amount, quantity_text
from rte.model.topology import NodeTopology

NO_PODS: frozenset[PodKey] = frozenset()
SMALL_SET = 8
"""Up to how many accounted pods a node keeps as a tuple (``in`` on it compares at most this many
keys; a set beyond)."""
ENDED_LIMIT = 64
"""Ended pods whose spec a node keeps for decoding a later NRT's placement (more is unlikely
between two NRTs; a pod forgotten too early only makes that NRT's placement undecodable)."""


@dataclass(slots=True)
class NodeState:
    """Everything the cache knows about one node (slotted: one per node, 20 000 of them).

    Its containers start as the shared read-only :data:`~.podlog.EMPTY` (most nodes never write
    to them); write through the ``own_*`` methods, which give the node a dict of its own.
    """

    topology: NodeTopology | None = None
    revision: int = 0
    """Store revision of :attr:`topology` (0: none)."""
    checked_revision: int = 0
    """Store revision last examined for a Topology Manager config change."""
    reservations: Mapping[tuple[str, str], Reservation] = field(default_factory=shared_empty)
    failures: int = 0
    """Filter failures since the last flush (the reference's maybeOverReserved counter)."""
    streak: int = 0
    """Filter failures in a row (reset by a filter success)."""
    dirty: bool = False
    foreign: int = 0
    unverified: bool = False
    last_compare: Comparison | None = None
    log: PodLog = field(default_factory=PodLog)
    """Reconcile.HISTORY: the node's recent pod sets and their fingerprints."""
    live: Mapping[PodKey, Pod] = field(default_factory=shared_empty)
    """Reconcile.HISTORY: pods bound to the node that may hold resources (not terminal)."""
    accounted_pods: Collection[PodKey] = NO_PODS
    """Reconcile.HISTORY: the pods the adopted NRT accounts for (its fingerprinted set); read and
    set as :attr:`accounted`."""
    holds: Mapping[PodKey, ZoneCharge] = field(default_factory=shared_empty)
    """Reconcile.HISTORY: what pods hold on which zone, learnt from two NRTs (:mod:`.placement`)."""
    credits: Mapping[PodKey, ZoneCharge] = field(default_factory=shared_empty)
    """Reconcile.HISTORY: the holds of ended pods the adopted NRT still charges, given back."""
    ended: Mapping[PodKey, Pod] = field(default_factory=shared_empty)
    """Reconcile.HISTORY: the last live spec of pods that ended lately (at most
    :data:`ENDED_LIMIT`): an NRT adopted later may still count them, and decoding its
    numaplacement needs every counted pod's containers (:mod:`rte.consumer.placement`)."""
    pinned: PinnedMemo | None = None
    """The pinned containers of the pods the last decoded NRT counted (:mod:`rte.consumer.placement`)."""
    placement: NodePlacement | None = None
    """The numaplacement of the adopted NRT as decoded (its ``outcome`` says whether it was);
    None before the first verified adoption."""
    tried_revision: int = 0
    """Store revision of the last match attempt (:attr:`tried`)."""
    tried_version: int = 0
    """Log version of the last match attempt (:attr:`tried`)."""
    adoptions: int = 0
    """NRTs adopted on a fingerprint match with a recent pod set."""
    mismatches: int = 0
    """NRTs whose fingerprint matched none of the recent pod sets (when tried)."""
    last_flush: float | None = None
    base_view: NumaView | None = None
    """Memo of the view of :attr:`topology` alone; rebuilt only when the topology changes."""
    view: NumaView | None = None
    """Memo of the served view (reservations applied); rebuilt when reservations change."""
    estimate: NumaView | None = None
    """Memo of :meth:`estimated_view` (Score's view); rebuilt when the served view is."""
    charges: dict[object, ZoneCharge | None] | None = None
    """The admission model's zones for the estimate, by pod shape and state (:mod:`.estimate`);
    dropped with the NRT."""
    view_topology: NodeTopology | None = None
    """Memo of :meth:`reserved_topology`."""
    invalidations: int = 0
    """How many times the memos were dropped (:meth:`token`)."""

    @property
    def tried(self) -> tuple[int, int]:
        """(store revision, log version) of the last match attempt: retry only when one changes
        (two fields, not a tuple kept: 56 bytes a node less, issue #27)."""
        return self.tried_revision, self.tried_version

    @property
    def accounted(self) -> Collection[PodKey]:
        """Read with ``in`` and iteration only: a small set is kept as a tuple."""
        return self.accounted_pods

    @accounted.setter
    def accounted(self, pods: Collection[PodKey]) -> None:
        # An empty set is the one shared empty set, not 216 bytes per node; a node's few pods (an
        # agent pod alone, nearly always) a tuple of them: 64 bytes for one, a set's 216 (issue #27).
        if not pods:
            self.accounted_pods = NO_PODS
        elif len(pods) <= SMALL_SET:
            self.accounted_pods = tuple(pods)
        else:
            self.accounted_pods = frozenset(pods)

    # What to write to: the node's own dicts (issue #13: see the class docstring).
    def own_reservations(self) -> dict[tuple[str, str], Reservation]:
        self.reservations = mine = owned(self.reservations)
        return mine

    def own_live(self) -> dict[PodKey, Pod]:
        self.live = mine = owned(self.live)
        return mine

    def own_holds(self) -> dict[PodKey, ZoneCharge]:
        self.holds = mine = owned(self.holds)
        return mine

    def own_credits(self) -> dict[PodKey, ZoneCharge]:
        self.credits = mine = owned(self.credits)
        return mine

    def remember_ended(self, key: PodKey, pod: Pod) -> None:
        """Keep the last live spec of a pod that ended, the oldest forgotten past the limit."""
        ended = self.ended = owned(self.ended)
        ended.pop(key, None)
        ended[key] = pod
        if len(ended) > ENDED_LIMIT:
            del ended[next(iter(ended))]

    def invalidate(self, topology_changed: bool = False) -> None:
        self.invalidations += 1
        self.view = None
        self.estimate = None
        self.view_topology = None
        if topology_changed:
            self.base_view = None
            self.charges = None

    def token(self) -> tuple[int, bool, bool]:
        """Equal before and after a change only if the change left the node's lookup as it was
        (the cache's clock-dependent rules aside): the view is rebuilt only after
        :meth:`invalidate`, freshness reads only the foreign and unverified marks."""
        return self.invalidations, self.foreign > 0, self.unverified

    def served_view(self, load_config: LoadAwareConfig) -> NumaView:
        """The view the filter and scores see: load-filtered zones, reservations applied."""
        assert self.topology is not None
        if self.base_view is None:
            filtered = load.filter_view(self.topology, load_config)
            self.base_view = build_view(filtered, tm_config_from(self.topology))
        if self.view is None:
            everywhere = [r.request for key, r in self.reservations.items() if not self.narrowed(key, r)]
            placed = [r.zones for key, r in self.reservations.items() if r.zones and self.narrowed(key, r)]
            # Credits with the charges: the view keeps what a clamp hid, the order is immaterial.
            view = subtract_all(self.base_view, [*negated(self.credits), *placed], everywhere)
            self.view = mark_lower_bound(view)  # never more than the kubelet has: see .lowerbound
        return self.view

    def estimated_view(self, load_config: LoadAwareConfig) -> NumaView:
        """The view Score rates: the best estimate of the kubelet's state (:mod:`.estimate`)."""
        served = self.served_view(load_config)
        if not self.reservations:
            return served
        if self.estimate is None:
            assert self.base_view is not None
            admitted = [r.zones for key, r in self.reservations.items() if r.zones and self.narrowed(key, r)]
            pending = [r for key, r in self.reservations.items() if not self.narrowed(key, r)]
            if self.charges is None:
                self.charges = {}
            credits = negated(self.credits)
            self.estimate = best_estimate(self.base_view, admitted, pending, self.charges, credits)
        return self.estimate

    def narrowed(self, key: PodKey, reservation: Reservation) -> bool:
        """Whether the reservation is taken from its zones only: it has them, and its pod is
        admitted (:mod:`rte.consumer.cache.predict`); before that, from every zone."""
        return reservation.zones is not None and key in self.log.members

    def reserved_topology(self) -> NodeTopology:
        """The cached NRT with every reservation taken from every zone (pessimistic)."""
        assert self.topology is not None
        if self.view_topology is None:
            total = total_request(r.request for k, r in self.reservations.items() if not self.narrowed(k, r))
            placed: dict[int, dict[str, Amount]] = {}
            charges = [r.zones or {} for k, r in self.reservations.items() if self.narrowed(k, r)]
            for charge_by_zone in [*charges, *negated(self.credits)]:
                for numa_id, charge in charge_by_zone.items():
                    into = placed.setdefault(numa_id, {})
                    for res, qty in charge.items():
                        into[res] = into.get(res, 0) + qty
            self.view_topology = subtract_from_every_zone(self.topology, total, placed)
        return self.view_topology

    def dump(self) -> dict[str, Any]:
        """The node's own part of the cache's state dump (JSON-able)."""
        zones: dict[str, Any] = {}
        if self.topology is not None:
            for zone, after in zip(self.topology.zones, self.reserved_topology().zones, strict=True):
                zones[zone.name] = {
                    "available": {r.name: quantity_text(r.available) for r in zone.resources},
                    "availableAfterReservations": {
                        r.name: quantity_text(r.available) for r in after.resources
                    },
                }
        return {
            "hasNRT": self.topology is not None,
            "zones": zones,
            "reservations": [r.to_dict() for _, r in sorted(self.reservations.items())],
            "maybeOverReserved": self.failures,
            "failureStreak": self.streak,
            "dirty": self.dirty,
            "foreignPods": self.foreign,
            "lastFlush": self.last_flush,
            "lastCompare": self.last_compare.to_dict() if self.last_compare else None,
            "adoptions": self.adoptions,
            "historyMismatches": self.mismatches,
            "podSetChangesLogged": len(self.log.changes),
            "podHoldsKnown": len(self.holds),
            "numaPlacement": self.placement.outcome.value if self.placement is not None else None,
            "endedPodsGivenBack": sorted(f"{ns}/{name}" for ns, name in self.credits),
        }
