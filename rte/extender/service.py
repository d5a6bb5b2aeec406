"""The extender's decisions: Filter and Prioritize over the watch-fed store and the reserve cache.

No HTTP and no Kubernetes client here: :mod:`rte.extender.server` speaks HTTP,
:mod:`rte.extender.watch` feeds NRTs, pods and Leases. Tests drive this with a store filled
from files.

**Reservations without a Reserve hook.** A kube-scheduler extender is told nothing about the
node the scheduler picks (only a binder is, and binding is left to the scheduler). So the pod
watch stands in for Reserve: a pod of one of our scheduler profiles that appears bound to a node
(``spec.nodeName`` set) while still *in flight* (not yet counted in any fingerprint, typically
``Pending``) is reserved on that node; a deleted or finished pod is forgotten. A pod first seen
already running is not reserved: the node's NRT is expected to reflect it, and the fingerprint
check catches the case where it does not. The window between the scheduler's bind and our
watch event (milliseconds) is not covered; the reference plugin has no such window.

Every pod event also goes to the cache's foreign-pod detection (as in the reference,
kubernetes-sigs/scheduler-plugins ``pkg/noderesourcetopology/cache/foreign_pods.go``), and a failed
filter on a node with usable data marks it "maybe over-reserved", so the periodic resync
checks its fingerprint (:mod:`rte.consumer.cycle`, shared with library users).

**Node allocatable.** Only a request carrying whole Node objects (``nodeCacheCapable: false``)
lets Filter check that a requested resource is in the node's allocatable; with node names only
the check passes, and kube-scheduler's NodeResourcesFit, which runs before any extender, has
already rejected such nodes.
"""

from __future__ import annotations

import gc
import logging
import threading
import time
from collections.abc import Callable, Collection, Mapping
from typing import Any

from rte import __version__
from rte.consumer.cache.interface import NRTCache, ResyncReport
from rte.consumer.cache.podindex import PodIndex
from rte.consumer.cache.resync import is_in_flight
from rte.consumer.cycle import filter_nodes, score_columns, score_nodes
from rte.consumer.kept import KeptByCost
from rte.consumer.preemption.placements import PlacementSource, default_placements
from rte.consumer.requests import PodShapes, PreparedPod, prepare_pod
from rte.consumer.score import Scorer, ScoringStrategy
from rte.consumer.store import ADDED, DELETED, MODIFIED, NRTStore
from rte.errors import InputError
from rte.extender.budgets import BudgetIndex
from rte.extender.gates import Gates
from rte.extender.metrics import ExtenderMetrics
from rte.extender.preempt import preempt_nodes
from rte.extender.preemptwire import PreemptionArgs, preemption_result
from rte.extender.priorities import PriorityEncoder
from rte.extender.wire import ExtenderArgs, filter_result, host_priorities
from rte.model.pod import Pod, PodKey, pod_from_manifest
from rte.model.quantity import quantity_text
from rte.model.vocabulary import Compat, InformerMode
from rte.runtime.httpwire import MiB

log = logging.getLogger(__name__)


_WARM_UP_POD = {
    "metadata": {"name": "rte-warm-up", "namespace": "rte", "uid": "rte-warm-up"},
    "spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": "1", "memory": "1Mi"}}}]},
}


_PODS_PREPARED_KEPT = 16
"""Prepared pods remembered (:meth:`ExtenderService._prepare`)."""
MAX_POD_KEPT = 16 * MiB
"""The largest prepared pod remembered (its JSON and its decoded objects, estimated at eleven
times the JSON): the apiserver stores objects of up to 1.5 MiB (etcd's request limit), so any
real pod fits; a bigger one in a request is prepared afresh each time."""


def _pod_key(pod: Mapping[str, Any]) -> PodKey:
    """A request's pod's key, as :func:`~rte.model.pod.pod_from_manifest` makes it (the prepared
    pod may be another pod of the same shape)."""
    metadata = pod.get("metadata")
    metadata = metadata if isinstance(metadata, Mapping) else {}
    return (str(metadata.get("namespace") or "default"), str(metadata.get("name") or ""))


class ExtenderService:
    """Filter / Prioritize / pod tracking / resync / state, all thread-safe."""

    def __init__(
        self,
        store: NRTStore,
        cache: NRTCache,
        strategy: ScoringStrategy,
        *,
        profiles: Collection[str],
        informer_mode: InformerMode = InformerMode.DEDICATED,
        compat: Compat = Compat.KUBELET,
        clock: Callable[[], float] = time.time,
        metrics: ExtenderMetrics | None = None,
        gates: Gates | None = None,
        placements: PlacementSource | None = None,
    ) -> None:
        self.store = store
        self.cache = cache
        self.strategy = strategy
        self.profiles = frozenset(profiles)
        self.informer_mode = informer_mode
        self.compat = compat
        """Whose rules decide: the kubelet's admission (default) or the reference plugin's."""
        self._clock = clock
        self.placements: PlacementSource = placements if placements is not None else default_placements(cache)
        """Where the pods of a node hold their resources, for the preempt verb: the decoded
        numaplacement of the adopted NRT, then the reserve cache's own knowledge
        (:func:`~rte.consumer.preemption.placements.default_placements`)."""
        self._lock = threading.Lock()
        self._pods = PodIndex()
        """Every pod the watch holds, grouped by node as events come: a resync reads it as it
        stands and looks only at the pods changed since the last one (issue #27)."""
        self.budgets = BudgetIndex()
        """The PodDisruptionBudgets the preempt verb counts (fed by the PDB watch)."""
        self._prepared: KeptByCost[bytes, PreparedPod] = KeptByCost(_PODS_PREPARED_KEPT, each=MAX_POD_KEPT)
        """The last few pods prepared, by their JSON as sent (see :meth:`_prepare`), bounded in
        bytes: a pod is some ten times its JSON once decoded and prepared."""
        self._shapes = PodShapes(compat)
        """Pods prepared by shape: a ReplicaSet's next pod is prepared and filtered as its last."""
        self._priorities = PriorityEncoder()
        """Prioritize's answers, each candidate list's text prepared once."""
        self._ours: dict[PodKey, str] = {}
        """Pods whose reservation the pod watch made: key -> node."""
        self.nrt_synced = threading.Event()
        self.pods_synced = threading.Event()
        self.gates = gates if gates is not None else Gates()
        self._counters = {"filter": 0, "prioritize": 0, "preempt": 0, "reservedFromWatch": 0, "resyncs": 0}
        self._last_resync: dict[str, Any] | None = None
        self.metrics = metrics if metrics is not None else ExtenderMetrics(__version__)
        """The HTTP front end records each call's duration here and serves it on ``/metrics``."""
        self.metrics.track(
            ready=self.ready,
            nodes=lambda: len(self.store),
            leader=self.is_leader,
            # the reserve cache counts its numaplacement decodes; other caches decode none
            placement=getattr(cache, "placement_outcomes", None),
            rejected=lambda: self.store.rejections,
        )

    # --- readiness -----------------------------------------------------------------------

    def synced(self) -> bool:
        """NRTs listed (and pods listed, when pods are tracked)."""
        return self.nrt_synced.is_set() and (self.pods_synced.is_set() or not self.gates.pods_tracked)

    def ready(self) -> bool:
        """Synced, and the first cache resync done when a timer runs them: decisions can be trusted."""
        first = self.gates.first_resync
        return self.synced() and (first is None or first.is_set())

    def not_ready_reason(self) -> str:
        if not self.nrt_synced.is_set():
            return "NodeResourceTopology list not synced yet" + self._last_error("nrt")
        if self.gates.pods_tracked and not self.pods_synced.is_set():
            return "pod list not synced yet" + self._last_error("pods")
        first = self.gates.first_resync
        if first is not None and not first.is_set():
            return "first reserve-cache resync not done yet"
        return ""

    def is_leader(self) -> bool:
        """Holds the leader Lease (always, without leader election)."""
        return self.gates.leadership is None or self.gates.leadership.is_leader()

    def serving(self) -> bool:
        """Answers the verbs: ready and, with leader election, the leader that has taken over."""
        return self.ready() and (self.gates.leadership is None or self.gates.leadership.serving())

    def not_serving_reason(self) -> str:
        if not self.ready():
            return f"extender not ready: {self.not_ready_reason()}"
        return self.gates.leadership.reason() if self.gates.leadership is not None else ""

    def _last_error(self, watch: str) -> str:
        # A list that keeps failing (RBAC missing, CRD not installed) should say why on /readyz.
        status = self.gates.watch_status() if self.gates.watch_status is not None else {}
        error = (status.get(watch) or {}).get("lastError")
        return f" (last error: {error})" if error else ""

    # --- warming -------------------------------------------------------------------------

    def warm(self) -> None:
        """Build every stored node's view and its row of the decision table now.

        Both are built on first use otherwise, and the first request after start would pay for
        every node at once (2 s at 5000 NRTs). Scoring a small pod on every node builds them
        without touching the cache's marks (Filter would reset failure streaks).
        """
        prep = prepare_pod(pod_from_manifest(_WARM_UP_POD, source="warm-up pod"), compat=self.compat)
        score_nodes(prep, self.store.nodes(), self.cache, Scorer(prep, self.strategy))

    def nrt_listed(self) -> None:
        """The NRT list is in the store: warm up (first list only), then report the NRTs synced.

        After the first warm-up, everything alive is moved out of the cyclic garbage collector's
        sight (``gc.freeze``): a full collection walks every object, 650 000 at 20 000 NRTs, which
        took 1.2 s, and would stall whichever request triggered it. Frozen objects are still
        freed by reference counting (topologies and views hold no cycles) when replaced.
        """
        if not self.nrt_synced.is_set():
            self.warm()
            gc.freeze()  # without a collection first: that would hold the interpreter as long
        self.nrt_synced.set()

    # --- decisions -----------------------------------------------------------------------

    def _prepare(self, args: ExtenderArgs) -> PreparedPod:
        """The request's pod, prepared; remembered by its JSON bytes when the decoder kept them.

        Filter and prioritize send the same pod, and a pod that failed to schedule comes back
        the same: the same bytes decode to the same pod, so its preparation (a third of a
        500-candidate request) is reused, scorers' tables included (:attr:`PreparedPod.memo`).
        A new pod of a shape seen before (a ReplicaSet's next pod) is prepared from that shape
        (:class:`~rte.consumer.requests.PodShapes`), and its Filter is a memo hit when no
        candidate's row changed, or decides again only the rows that did.
        """
        key = args.pod_json
        if key is not None:
            prep = self._prepared.values.get(key)
            if prep is not None:
                return prep
        pod = pod_from_manifest(args.pod, source="ExtenderArgs.Pod")
        with self._lock:
            prep = self._shapes.prepare(pod)
            if key is not None:
                self._prepared.keep(key, prep, 11 * len(key))
        return prep

    def filter(self, args: ExtenderArgs) -> dict[str, Any]:
        """An ``ExtenderFilterResult`` for ``args`` (nodes that fit, and why the others do not)."""
        prep = self._prepare(args)
        allocatable = args.allocatable_by_name()
        outcome = filter_nodes(prep, args.candidate_names(), self.cache, allocatable)
        with self._lock:
            self._counters["filter"] += 1
        if self.gates.answered is not None and outcome.passed:
            self.gates.answered.answered(_pod_key(args.pod))
        rejected = self.store.rejected()
        if not rejected:
            return filter_result(args, outcome.passed, outcome.failed)
        # A node whose NRT was refused as impossible is refused too, with the reason: passing it
        # as "no NRT" would send NUMA-sensitive pods to a node whose facts we cannot trust.
        failed = dict(outcome.failed)
        passed = []
        for name in outcome.passed:
            if name in rejected:
                failed[name] = rejected[name]
            else:
                passed.append(name)
        return filter_result(args, passed, failed)

    def prioritize(self, args: ExtenderArgs) -> list[dict[str, Any]]:
        """A ``HostPriorityList`` for ``args``: our 0..100 scores scaled to 0..10."""
        prep = self._prepare(args)
        scores = score_nodes(prep, args.candidate_names(), self.cache, Scorer(prep, self.strategy))
        with self._lock:
            self._counters["prioritize"] += 1
        if self.gates.answered is not None:
            self.gates.answered.answered(_pod_key(args.pod))
        return host_priorities(scores)

    def prioritize_json(self, args: ExtenderArgs) -> bytes:
        """:meth:`prioritize`'s answer as JSON, encoded straight from the scores' column
        (:mod:`rte.extender.priorities`)."""
        prep = self._prepare(args)
        names = args.candidate_names()
        scores = score_columns(prep, names, self.cache, Scorer(prep, self.strategy))
        with self._lock:
            self._counters["prioritize"] += 1
        if self.gates.answered is not None:
            self.gates.answered.answered(_pod_key(args.pod))
        return self._priorities.encode(names, scores)

    def preempt(self, args: PreemptionArgs) -> dict[str, Any]:
        """An ``ExtenderPreemptionResult``: the candidate nodes where evicting the victims (the
        scheduler's, plus lower-priority pods when needed) lets the kubelet admit the pod
        (:mod:`rte.extender.preempt`)."""
        pod = pod_from_manifest(args.pod, source="ExtenderPreemptionArgs.Pod")
        with self._lock:
            prep = self._shapes.prepare(pod)
        chosen = preempt_nodes(prep, args, self.cache, self.pods(), self.placements, self.budgets.snapshot())
        with self._lock:
            self._counters["preempt"] += 1
        return preemption_result(chosen)

    # --- pods ----------------------------------------------------------------------------

    def on_pod_event(self, event_type: str, obj: Mapping[str, Any] | Pod) -> None:
        """One pod watch event (``ADDED`` / ``MODIFIED`` / ``DELETED``); malformed pods are skipped."""
        pod = obj if isinstance(obj, Pod) else self._parse_pod(obj)
        if pod is None:
            return
        if self.gates.answered is not None:
            self.gates.answered.seen(pod.key, event_type == DELETED or bool(pod.node_name) or pod.is_terminal)
        with self._lock:
            if event_type == DELETED:
                self._pods.remove(pod.key)
            else:
                self._pods.put(pod)
            self._apply(event_type, pod)

    def replace_pods(self, objects: Collection[Mapping[str, Any] | Pod]) -> None:
        """A (re)list: make the pod index exactly ``objects``, as the missed events would have."""
        pods: dict[PodKey, Pod] = {}
        for obj in objects:
            pod = obj if isinstance(obj, Pod) else self._parse_pod(obj)
            if pod is not None:
                pods[pod.key] = pod
                if self.gates.answered is not None:
                    self.gates.answered.seen(pod.key, bool(pod.node_name) or pod.is_terminal)
        with self._lock:
            old = self._pods.known  # replace() makes a new dict: this one stays as it was
            self._pods.replace(pods.values())
            for key, pod in old.items():
                if key not in pods:
                    self._apply(DELETED, pod)
            for key, pod in pods.items():
                previous = old.get(key)
                if previous is None:
                    self._apply(ADDED, pod)
                elif previous != pod:
                    self._apply(MODIFIED, pod)
        self.pods_synced.set()

    def _parse_pod(self, obj: Mapping[str, Any]) -> Pod | None:
        try:
            return pod_from_manifest(obj, source="pod from the apiserver")
        except InputError as e:
            log.warning("ignoring a pod: %s", e)
            return None

    def _apply(self, event_type: str, pod: Pod) -> None:
        # Called with self._lock held; the cache takes its own lock (never the other way round).
        self.cache.on_pod_event(event_type, pod)
        key = pod.key
        if event_type == DELETED or pod.is_terminal:
            node = self._ours.pop(key, None) or pod.node_name
            if node:
                self.cache.unreserve(node, pod)
            return
        node = pod.node_name
        if not node or key in self._ours or pod.scheduler_name not in self.profiles:
            return
        if is_in_flight(pod, node, self.informer_mode):
            # We learn of the placement once the pod is bound: Reserve and PostBind at once.
            # OverReserve keeps the reservation until a flush; DiscardReserved, which blocks a
            # node only between the two, is therefore Passthrough behind an extender.
            self.cache.reserve(node, pod)
            self.cache.post_bind(node, pod)
            self._ours[key] = node
            self._counters["reservedFromWatch"] += 1

    def pods(self) -> list[Pod]:
        with self._lock:
            return list(self._pods.known.values())

    # --- resync --------------------------------------------------------------------------

    def resync(self) -> ResyncReport:
        """One reserve-cache resync over every pod we know (driven by the front end's timer)."""
        now = self._clock()
        report = self.cache.resync(self._pods, now)  # the index: only its changes are looked at
        summary = {
            "time": now,
            "flushed": list(report.flushed),
            "configFlushed": list(report.config_flushed),
            "stillDirty": list(report.still_dirty),
        }
        with self._lock:
            self._counters["resyncs"] += 1
            self._last_resync = summary
        self.metrics.record_resync(report)
        if report.flushed or report.config_flushed:
            log.info("resync flushed %s", ", ".join(report.flushed + report.config_flushed))
        return report

    # --- state dump ----------------------------------------------------------------------

    def state(self, node: str | None = None) -> dict[str, Any]:
        """A JSON-able picture for ``GET /state`` (one node with ``node``)."""
        dump = self.cache.state_dump(self._clock())
        nodes: dict[str, Any] = dump.get("nodes", {})
        # Caches without accounting keep no per-node state: show what they serve, from the store.
        for name, topology in self.store.snapshot().items():
            if name in nodes and "zones" in nodes[name]:
                continue
            lookup = self.cache.get(name)
            entry = dict(nodes.get(name, {}))
            entry.update(
                hasNRT=True,
                storeRevision=self.store.revision(name),
                fresh=lookup.fresh,
                reason=self.cache.unfresh_reason(name),
                zones={
                    z.name: {"available": {r.name: quantity_text(r.available) for r in z.resources}}
                    for z in topology.zones
                },
            )
            nodes[name] = entry
        if node is not None:
            nodes = {node: nodes[node]} if node in nodes else {}
        dump["nodes"] = nodes
        with self._lock:
            counters = dict(self._counters)
            tracked = len(self._pods.known)
            ours = len(self._ours)
            last = self._last_resync
        return {
            "ready": self.ready(),
            "notReadyReason": self.not_ready_reason(),
            "watches": dict(self.gates.watch_status()) if self.gates.watch_status is not None else None,
            "leadership": self.gates.leadership.state() if self.gates.leadership is not None else None,
            "strategy": {"type": self.strategy.type, "weights": dict(self.strategy.weights)},
            "profiles": sorted(self.profiles),
            "informerMode": self.informer_mode.value,
            "store": {
                "nodes": len(self.store),
                "generation": self.store.generation,
                "rejectedNRTs": self.store.rejections,
                "refusedNodes": self.store.rejected(),
            },
            "pods": {"tracked": tracked, "reservedByWatch": ours},
            "requests": counters,
            "lastResync": last,
            "cache": dump,
        }
