"""The reserve cache ("OverReserve"): accounting between NRT updates, fingerprint reconciliation.

The design of kubernetes-sigs/scheduler-plugins
``pkg/noderesourcetopology/cache/docs/NUMA-aware-scheduler-side-reserve-plugin.md``. By default
(``Reconcile.HISTORY``) a node adopts every NRT whose fingerprint matches one of its recent pod
sets and reserves a pod on the zones the kubelet will use whenever it knows the node exactly;
:mod:`rte.consumer.cache.reconcile` states the rules and why they never admit more than the
kubelet can. ``Reconcile.EXACT`` keeps the reference plugin's semantics
(``pkg/noderesourcetopology/cache/overreserve.go``), with its gaps fixed, as described here:

* **State per node**: the cached NRT (replaced only by a flush, see below), the reservations of
  pods placed since, and marks: *dirty* (filter failures; the first one, or only after
  ``dirty_after_failures`` in a row), *foreign* (a pod bound by another scheduler) and, with the
  startup rule, *unverified*.
* **get** serves the cached NRT with every reservation taken from *every* zone, clamped at 0.
  A foreign or (startup) unverified node is not fresh: the filter rejects it, it scores 0.
* **resync** (:mod:`rte.consumer.cache.resyncpass`), driven periodically by the front end, visits
  the nodes whose inputs changed since the last one (:mod:`rte.consumer.cache.resyncplan`) and
  compares the fingerprint of the store's latest NRT with the pods we believe the node runs (for
  dirty, foreign and unverified nodes).
  On a match the node is *flushed*: the NRT is adopted and the marks cleared. A mismatch is
  routine (logged at debug); a malformed or incompatible fingerprint is logged as a warning.
  Either way the node stays marked and is retried next time.
* A change of Topology Manager policy/scope/maxNUMANodes flushes the node without a check.

Where rte differs from the reference's reconciliation: :mod:`rte.consumer.cache.reconcile`;
the staleness rule (off by default): :mod:`rte.consumer.cache.freshness`.

**Startup rule** (``startup_grace`` > 0; off by default because it makes every node unusable
until the first resync; the idea is the startup "buffer" of neondatabase/autoscaling
``pkg/plugin/ARCHITECTURE.md``). A restarted scheduler does not know what its
previous incarnation reserved. Such a reservation protected a pod bound to the node that the NRT
does not reflect yet. Pods bound but not started are easy: they are in flight, and the first
flush reserves them (above). Pods already running that the agent has not published yet cannot be
singled out (pods carry no bind time here, and a fingerprint cannot be inverted), but their
existence shows: the node's fingerprint does not match. So every node starts *unverified*:
resync checks it, and until its first fingerprint match, for at most the grace period, it is not
fresh. After the grace, agents have had time to catch up (they publish every 10-60 s), and a node
that still does not match falls back to normal over-reserve behaviour, so the fingerprint
mismatch trap (docs/fingerprint-agreement.md) cannot black a node out forever. The front end should run
:meth:`OverReserveCache.resync` once as soon as its pod informer has synced.

The cache starts no thread and reads time only from the injected ``clock`` (seconds since the
epoch, the time base of Lease renewals). Every public method takes one lock.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Container, Iterable, Mapping
from dataclasses import replace

from rte.consumer.cache import reconcile
from rte.consumer.cache.batched import BatchedLookups, Deadlines
from rte.consumer.cache.estimate import ScoreViewNodes, ScoreViews
from rte.consumer.cache.freshness import stale_verdict
from rte.consumer.cache.interface import NO_NRT, NOT_FRESH, Clock, Lookup
from rte.consumer.cache.nodestate import NodeState
from rte.consumer.cache.podlog import PodLog
from rte.consumer.cache.predict import ZoneCharge, predicted_charge
from rte.consumer.cache.reservations import Reservation
from rte.consumer.cache.resyncpass import ResyncPass
from rte.consumer.cache.resyncplan import ResyncPlan
from rte.consumer.cache.statedump import ReserveStateDump
from rte.consumer.changelog import ChangeLog
from rte.consumer.config import CacheConfig, ForeignPodsDetect, LoadMode, Reconcile
from rte.consumer.placement import NodePlacement
from rte.consumer.store import DELETED, NRTStore, resource_names_of
from rte.model.exclusive import is_exclusive
from rte.model.pod import Pod, PodKey
from rte.model.topology import NodeTopology

log = logging.getLogger(__name__)


class OverReserveCache(BatchedLookups, ReserveStateDump, ScoreViews, ResyncPass):
    """The reserve cache; see the module docstring for the rules."""

    mode = "OverReserve"

    def __init__(self, store: NRTStore, config: CacheConfig | None = None, clock: Clock = time.time) -> None:
        self._store = store
        self._config = config or CacheConfig()
        self._clock = clock
        self._lock = threading.RLock()
        self._nodes: dict[str, NodeState] = {}
        self._generation = 0
        self._changes = ChangeLog()  # whatever may change a node's lookup, but its store revision
        self._streaking: set[str] = set()  # nodes that may have a failure streak
        self._deadlines = Deadlines()
        self._started_at = clock()
        self._history = self._config.reconcile is Reconcile.HISTORY
        # Zone-wise reservations need the whole view: not with load-filtered zones.
        self._predicts = self._history and self._config.load.mode is LoadMode.OFF
        self._score_nodes = ScoreViewNodes()
        self._plan = ResyncPlan()  # which nodes the next resync visits (see .resyncplan)
        self._resync_lock = threading.Lock()
        self._placement_tally: dict[str, int] = {}  # numaplacement decodes by outcome

    # --- reading -------------------------------------------------------------------------

    @property
    def generation(self) -> int:
        """Incremented whenever any node's cached NRT is replaced."""
        with self._lock:
            return self._generation

    @property
    def config(self) -> CacheConfig:
        return self._config

    def get(self, node: str, pod: Pod | None = None) -> Lookup:
        """The view the filter and score must use for ``node`` (``pod`` is for the caller's logs).

        The view carries every reservation, subtracted from every zone (its ``source`` is the
        cached NRT without them).
        """
        del pod  # the reference only logs it; reservations are node-wide
        with self._lock:
            return self._lookup(node, self._clock())

    def _lookup(self, node: str, now: float) -> Lookup:
        forced = stale_verdict(self._store, self._config, node, now)
        if forced is not None:
            return forced
        st = self._current(node, now)
        if st is None:
            return NO_NRT
        if st.foreign or self._blocked_at_startup(st, now):
            return NOT_FRESH
        if st.topology is None:
            return NO_NRT
        return Lookup(st.served_view(self._config.load), True)

    def placement(self, node: str) -> NodePlacement | None:
        """Where the kubelet put each pinned container of ``node``, as the adopted NRT's
        numaplacement says (:mod:`rte.consumer.placement`): None without a verified adoption;
        ``outcome`` DECODED when ``containers`` holds the answer."""
        with self._lock:
            st = self._nodes.get(node)
            return None if st is None else st.placement

    def placement_outcomes(self) -> dict[str, int]:
        """How many adopted NRTs' numaplacement decoded, was absent, mismatched or was malformed."""
        with self._lock:
            return dict(self._placement_tally)

    def get_topology(self, node: str) -> NodeTopology | None:
        """The cached NRT with reservations applied, as a plain topology (marks ignored)."""
        with self._lock:
            st = self._current(node, self._clock())
            if st is None or st.topology is None:
                return None
            return st.reserved_topology()

    def known_zones(self, node: str) -> dict[PodKey, ZoneCharge]:
        """What the cache knows each pod of ``node`` holds, per zone, where it knows it exactly:
        the hold learnt from two NRTs (:mod:`.placement`), else a reservation predicted on one
        zone (:mod:`.predict`). What NUMA-aware preemption may give back when the pod is evicted
        (:mod:`rte.consumer.preemption`); pods already given back are left out."""
        with self._lock:
            st = self._nodes.get(node)
            if st is None:
                return {}
            out: dict[PodKey, ZoneCharge] = {k: c for k, c in st.holds.items() if k not in st.credits}
            for key, reservation in st.reservations.items():
                if key not in out and reservation.zones is not None and len(reservation.zones) == 1:
                    out[key] = reservation.zones
            return out

    def learn_zones(self, node: str, charges: Mapping[PodKey, ZoneCharge]) -> None:
        """Remember what running pods of ``node`` hold per zone, learnt elsewhere (decoded
        numaplacement, the simulator's kubelets), so that their end gives it back at once as a
        learnt hold would (:func:`.placement.released`): preemption teaches its victims' zones
        before they are deleted. A hold already known is kept."""
        with self._lock:
            st = self._nodes.get(node)
            if st is None:
                return
            fresh = {k: c for k, c in charges.items() if k in st.live and k not in st.holds}
            if fresh:
                st.own_holds().update(fresh)

    def unfresh_reason(self, node: str) -> str:
        """Why :meth:`get` says not fresh right now ("" when it is fresh)."""
        with self._lock:
            return self._reason(node, self._clock())

    def _reason(self, node: str, now: float) -> str:
        if stale_verdict(self._store, self._config, node, now) == NOT_FRESH:
            return "node topology agent heartbeat is stale"
        st = self._nodes.get(node)
        if st is None:
            return ""
        if st.foreign:
            return "node has pods bound by other schedulers not yet reflected in its topology"
        if self._blocked_at_startup(st, now):
            return "node topology not yet confirmed after scheduler start"
        return ""

    # --- scheduling-cycle hooks ----------------------------------------------------------

    def reserve(self, node: str, pod: Pod) -> None:
        """Account ``pod`` on ``node`` until an adopted NRT accounts for it (never fails).

        History mode: on the zones the kubelet may use once it admitted the pod, when that is
        knowable (:mod:`rte.consumer.cache.predict`), else on every zone. Unlike the reference, a
        node without an NRT keeps the reservation too: its NRT may come before it reflects the pod.
        """
        with self._lock:
            now = self._clock()
            st = self._current(node, now)
            if st is None:
                st = self._nodes[node] = NodeState(log=PodLog(self._config.history_limit))
            zones = None
            if st.own_reservations().pop(pod.key, None) is not None:
                st.invalidate()  # only then does the served view change (issue #27: one rebuild, not two)
            spread = reconcile.in_flight(st)
            if spread:
                reconcile.spread_in_flight(st)
            elif self._predicts and st.topology is not None:
                zones = predicted_charge(st.served_view(self._config.load), pod)
            reservation = Reservation.for_pod(pod, now, zones=zones)
            if zones is None and self._predicts and st.topology is not None and not spread:
                reservation = replace(reservation, unpredictable=True)
            st.own_reservations()[pod.key] = reservation
            st.invalidate()
            self._note(node)

    def unreserve(self, node: str, pod: Pod) -> None:
        """Undo :meth:`reserve` (the binding failed or the pod was rejected later in the cycle)."""
        with self._lock:
            st = self._nodes.get(node)
            if st is None or pod.key not in st.reservations:
                return
            del st.own_reservations()[pod.key]
            st.invalidate()
            self._note(node)
            self._forget_if_empty(node, st)

    def post_bind(self, node: str, pod: Pod) -> None:
        """No-op, like the reference: the reservation lasts until a flush proves it unneeded."""

    def mark_maybe_over_reserved(self, node: str) -> None:
        """A filter failure on ``node``: maybe only our pessimism rejected it; resync it.

        With ``dirty_after_failures`` = N, the node is marked only after N failures in a row.
        """
        with self._lock:
            self._mark(node, self._clock())

    def _mark(self, node: str, now: float) -> None:
        st = self._current(node, now)
        if st is None:
            return
        st.failures += 1
        st.streak += 1
        self._streaking.add(node)
        if st.streak >= self._config.dirty_after_failures:
            if not st.dirty:
                self._plan.touch(node)  # the exact reconciliation checks it at the next resync
            st.dirty = True

    def note_filter_success(self, node: str) -> None:
        """A filter success on ``node`` breaks its failure streak (it is not full after all)."""
        with self._lock:
            self._successes((node,))

    def _successes(self, nodes: Iterable[str]) -> None:
        if not self._streaking:
            return  # the usual case: no node is failing, nothing to reset (nor to look at)
        for node in self._streaking.intersection(nodes):
            self._streaking.discard(node)
            st = self._nodes.get(node)
            if st is not None:
                st.streak = 0

    def on_pod_event(self, event_type: str, pod: Pod) -> None:
        """Feed every pod informer event here (ADDED / MODIFIED / DELETED) for foreign-pod detection.

        A bound pod of another scheduler changes the node behind our back: the node is marked
        foreign (not fresh) until a fingerprint match. With ``OnlyExclusiveResources`` only
        pods holding exclusive resources count. A deleted or finished foreign pod only frees
        resources, so it just marks the node dirty.
        """
        if self._history and pod.node_name:
            with self._lock:
                self._track(event_type, pod, self._clock())
        detect = self._config.foreign_pods_detect
        if detect is ForeignPodsDetect.NONE or not pod.node_name:
            return
        if pod.scheduler_name in self._config.profiles:
            return
        with self._lock:
            node = pod.node_name
            st = self._current(node, self._clock())
            if st is None or st.topology is None:
                return  # without an NRT there is nothing the pod could make stale
            if detect is ForeignPodsDetect.ONLY_EXCLUSIVE_RESOURCES:
                names = self._store.resource_names(node) | resource_names_of(st.topology)
                if not is_exclusive(pod, names):
                    return
            if event_type == DELETED or pod.is_terminal:
                st.dirty = True
                self._plan.touch(node)
            else:
                st.foreign += 1
                self._note(node)

    def _track(self, event_type: str, pod: Pod, now: float) -> None:
        node = pod.node_name
        st = self._current(node, now)
        if st is None:
            st = self._nodes[node] = NodeState(log=PodLog(self._config.history_limit))
        before = st.token()
        self._plan.touch(node)  # its pod set may have changed: the next resync retries the match
        if reconcile.track(st, event_type, pod, self._config, self._store.resource_names(node), now):
            self._current(node, now)  # the NRT waiting for a match may describe this pod set
        if st.token() != before:
            self._note(node)  # its reservations narrowed or went

    # --- node state ----------------------------------------------------------------------

    def _current(self, node: str, now: float) -> NodeState | None:
        """The node's state, brought up to date with the store where the rules allow it."""
        st = self._nodes.get(node)
        topology, revision = self._store.get_with_revision(node)
        if st is None:
            if topology is None:
                return None
            if self._history:
                st = self._nodes[node] = NodeState(log=PodLog(self._config.history_limit))
                st.unverified = self._in_startup(now)
            else:
                st = self._nodes[node] = NodeState(
                    topology=topology, revision=revision, checked_revision=revision
                )
                st.unverified = self._in_startup(now)
                self._bump(node)
                return st
        if topology is None:
            if st.topology is not None:
                # The NRT was deleted: serve "no NRT", keep reservations for when it comes back.
                st.topology = None
                st.revision = st.checked_revision = revision
                st.invalidate(topology_changed=True)
                self._bump(node)
            return st
        if revision == st.revision:
            return st
        if self._history and (st.tried_revision != revision or st.tried_version != st.log.version):
            if reconcile.try_history(st, topology, revision, self._config, now, self._placement_tally):
                self._bump(node)
                return st
            if st.topology is None:
                # A first NRT matching no known pod set: it may lack every pod on the node.
                reconcile.adopt(st, topology, revision, set(), now, verified=False)
                self._bump(node)
                return st
        if st.topology is None or (self._config.follow_clean_nodes and self._is_clean(st, now)):
            st.topology = topology
            st.revision = st.checked_revision = revision
            st.invalidate(topology_changed=True)
            self._bump(node)
        return st

    def _bump(self, node: str) -> None:
        self._generation += 1
        self._note(node)

    def _note(self, node: str) -> None:
        """The node's lookup may have changed: tell readers, and visit it at the next resync."""
        self._changes.note(node)
        self._plan.touch(node)

    def _is_clean(self, st: NodeState, now: float) -> bool:
        return not (st.reservations or st.dirty or st.foreign or self._blocked_at_startup(st, now))

    def restart_startup_grace(self, now: float | None = None) -> None:
        """Apply the startup rule again from ``now``, to every node: for a new extender leader,
        which cannot know what the previous one placed (see rte/extender/leadership.py)."""
        with self._lock:
            self._started_at = self._clock() if now is None else now
            self._plan.full = True  # every node is marked: the next resync checks them all
            for st in self._nodes.values():
                st.unverified = True

    def _volatile(self, now: float) -> bool:
        return self._in_startup(now)

    def _in_startup(self, now: float) -> bool:
        return self._config.startup_grace > 0 and now < self._started_at + self._config.startup_grace

    def _own_nodes(self) -> Container[str]:
        return self._nodes

    def _blocked_at_startup(self, st: NodeState, now: float) -> bool:
        return st.unverified and self._in_startup(now)

    def _forget_if_empty(self, node: str, st: NodeState) -> None:
        if st.topology is None and not st.reservations and not self._store.revision(node):
            del self._nodes[node]
