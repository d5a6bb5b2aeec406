"""A pod's requests, prepared once per pod for the per-node hot loops of Filter and Score.

Scheduling one pod evaluates it against thousands of nodes, so everything that depends only on
the pod (QoS class, per-container request tuples, the pod-scope request, resource classes,
rounded-up values, the kubelet's admission units per kind of node) is computed here once and
reused for every node. The pod is prepared for one :class:`~rte.model.vocabulary.Compat` mode:
the kubelet's admission (the default) or the reference plugin's decisions.
"""

from __future__ import annotations

import threading
from collections.abc import Hashable, Mapping
from dataclasses import dataclass, field, replace
from typing import NamedTuple

from rte.model.admission.node import NodeFacts
from rte.model.admission.units import (
    KIND_APP,
    KIND_INIT,
    KIND_POD,
    KIND_SIDECAR,
    AdmissionUnit,
    pod_admission_units,
)
from rte.model.exclusive import is_native_resource, is_numa_affine
from rte.model.pod import (
    QOS_BEST_EFFORT,
    QOS_GUARANTEED,
    Container,
    Pod,
    effective_request,
    kubelet_pod_request,
)
from rte.model.quantity import Amount, ceil_value
from rte.model.topology_manager import POLICY_NONE
from rte.model.vocabulary import Compat

# Resources that may have no NUMA affinity at all: generic storage and every non-native
# (device plugin, extended) resource. Absent from every zone, they are satisfied at host level.
_HOST_LEVEL_NATIVE = frozenset({"ephemeral-storage", "storage"})
# The scheduler framework's NodeInfo always carries these in its allocatable, even at 0.
ALWAYS_ALLOCATABLE = frozenset({"cpu", "memory", "pods", "ephemeral-storage"})


def is_host_level(name: str) -> bool:
    """True for resources that are fine to find in no NUMA zone (storage, devices)."""
    return name in _HOST_LEVEL_NATIVE or not is_native_resource(name)


class Item(NamedTuple):
    """One requested resource with everything the loops need precomputed."""

    name: str
    amount: Amount
    ceil: int
    """``Quantity.Value()``: the amount rounded up to an integer (what Score arithmetic uses)."""
    affine: bool
    """cpu, memory or hugepages: aligned through the CPU and Memory managers."""
    host_level: bool
    always_allocatable: bool
    """Counts as present in any node's allocatable (see :data:`ALWAYS_ALLOCATABLE`)."""


@dataclass(frozen=True, slots=True)
class Request:
    """The request of one container (or of the whole pod, kind ``pod``)."""

    name: str
    kind: str
    items: tuple[Item, ...]
    """Every requested resource, zero quantities included, sorted by name."""
    nonzero: tuple[Item, ...]
    """The items with a non-zero amount: the only ones that constrain placement."""
    names: frozenset[str]
    """Every requested resource name (zero quantities included)."""


def make_request(name: str, kind: str, requests: Mapping[str, Amount]) -> Request:
    items = tuple(
        Item(res, qty, ceil_value(qty), is_numa_affine(res), is_host_level(res), res in ALWAYS_ALLOCATABLE)
        for res, qty in sorted(requests.items())
    )
    return Request(name, kind, items, tuple(i for i in items if i.amount != 0), frozenset(requests))


@dataclass(frozen=True, slots=True)
class PreparedPod:
    """A pod ready to be evaluated against many nodes."""

    pod: Pod
    qos: str
    init: tuple[Request, ...]
    """Init containers in spec order; sidecars (restartable init containers) have kind ``sidecar``."""
    app: tuple[Request, ...]
    pod_request: Request
    """The pod-scope request: the reference's effective request (overhead included, sidecars as
    plain init containers), or the kubelet's (sidecars summed, overhead excluded)."""
    compat: Compat
    requests_non_native: bool
    """Some (init or app) container requests a non-native resource (keeps BestEffort pods in Filter)."""
    memo: dict[object, object] = field(default_factory=dict, compare=False, repr=False)
    """Per-pod tables the scorers derive once (e.g. weighted items per strategy)."""
    guaranteed: bool = field(init=False)
    """The pod's QoS class is Guaranteed (a field, not a property: the per-node loops read it)."""
    reference: bool = field(init=False)
    """Prepared for the reference plugin's decisions (``Compat.REFERENCE``)."""
    best_effort: bool = field(init=False)
    no_alignment_needed: bool = field(init=False)
    """BestEffort and requesting no non-native resource: Filter passes it without the node."""

    def __post_init__(self) -> None:
        object.__setattr__(self, "guaranteed", self.qos == QOS_GUARANTEED)
        object.__setattr__(self, "reference", self.compat is Compat.REFERENCE)
        object.__setattr__(self, "best_effort", self.qos == QOS_BEST_EFFORT)
        object.__setattr__(self, "no_alignment_needed", self.best_effort and not self.requests_non_native)


def _container_request(c: Container, default_kind: str) -> Request:
    kind = KIND_SIDECAR if default_kind == KIND_INIT and c.is_sidecar else default_kind
    return make_request(c.name, kind, c.requests)


def prepare_pod(pod: Pod, *, compat: Compat = Compat.KUBELET) -> PreparedPod:
    """Prepare ``pod`` once; pass the result to Filter and Score for every node.

    ``compat`` chooses whose decisions to reproduce: the kubelet's admission (the default) or
    the reference plugin's (``Compat.REFERENCE``; see :mod:`rte.consumer.filter`).
    """
    compat = Compat.parse(compat, "compat")
    reference = compat is Compat.REFERENCE
    pod_req = effective_request(pod) if reference else kubelet_pod_request(pod, overhead=False)
    containers = pod.init_containers + pod.containers
    return PreparedPod(
        pod=pod,
        qos=pod.qos_class,
        init=tuple(_container_request(c, KIND_INIT) for c in pod.init_containers),
        app=tuple(_container_request(c, KIND_APP) for c in pod.containers),
        pod_request=make_request(pod.name, KIND_POD, pod_req),
        compat=compat,
        requests_non_native=any(not is_native_resource(r) for c in containers for r in c.requests),
    )


def _requests_key(requests: Mapping[str, Amount]) -> tuple[tuple[str, type, Amount], ...]:
    # The type too: 4 and Fraction(4) are equal, and the pod model never makes the second, but
    # sharing must not rest on that.
    return tuple(sorted((name, type(q), q) for name, q in requests.items()))


def _container_key(c: Container) -> tuple[object, ...]:
    return (c.name, _requests_key(c.requests), _requests_key(c.limits), c.restart_policy)


def shape_key(pod: Pod, compat: Compat) -> Hashable:
    """Everything of ``pod`` that Filter and Score (their verdicts, zones, scores and reasons)
    read, hashable: pods with equal keys decide alike on every node.

    Left out are the pod's identity (namespace, uid), its place in its life (node, phase), its
    scheduler, priority and labels, which no Filter or Score decision reads (preemption alone
    reads the last two). The name is in the key only with pod-level resources:
    it names the admission unit that then stands for the app containers (a reason may quote it);
    otherwise it names only the pod-scope unit, whose reasons say "the pod", and the pod-scope
    request, which no reason quotes. A test holds this: pods that differ in anything else never
    share, and sharing pods decide as if prepared alone (``tests/consumer/test_pod_shapes.py``).
    """
    resources = pod.resources
    return (
        compat,
        pod.status_qos_class,
        tuple(map(_container_key, pod.containers)),
        tuple(map(_container_key, pod.init_containers)),
        _requests_key(pod.overhead),
        None
        if resources is None
        else (pod.name, _requests_key(resources.requests), _requests_key(resources.limits)),
    )


def shape_of(prep: PreparedPod) -> Hashable:
    """The :func:`shape_key` of a prepared pod, made once (the very key object of the pods
    prepared through one :class:`PodShapes`, which the decision memo then matches by identity)."""
    key = prep.memo.get(_SHAPE_KEY)
    if key is None:
        key = prep.memo[_SHAPE_KEY] = shape_key(prep.pod, prep.compat)
    return key


_SHAPE_KEY = "shape-key"
_SHAPES_KEPT = 64
"""Shapes a :class:`PodShapes` remembers (the least recently used is forgotten first)."""


class PodShapes:
    """Pods prepared by shape: the pods of a ReplicaSet (one spec under many names) share one
    shape key (:func:`shape_of`), so a decision made for one is a memo hit for the next
    (:class:`rte.consumer.kernel.memo.DecisionMemo`), and their requests are prepared once.

    Each pod still gets its own :class:`PreparedPod`: its own pod (the caches are asked about
    that pod), its own pod-scope request name and its own :attr:`PreparedPod.memo` (whose
    admission units and scalar verdicts name the pod). Not thread-safe: the caller serialises.
    """

    def __init__(self, compat: Compat = Compat.KUBELET, kept: int = _SHAPES_KEPT) -> None:
        self.compat = Compat.parse(compat, "compat")
        self.kept = kept
        self._shapes: dict[Hashable, PreparedPod] = {}
        self.hits = 0

    def __len__(self) -> int:
        return len(self._shapes)

    def prepare(self, pod: Pod) -> PreparedPod:
        """``prepare_pod(pod)``, sharing the shape of an earlier pod that decides alike."""
        key = shape_key(pod, self.compat)
        first = self._shapes.pop(key, None)
        if first is None:
            prep = first = prepare_pod(pod, compat=self.compat)
            prep.memo[_SHAPE_KEY] = key
            if len(self._shapes) >= self.kept:
                del self._shapes[next(iter(self._shapes))]
        else:
            self.hits += 1
            request = replace(first.pod_request, name=pod.name)
            prep = replace(first, pod=pod, pod_request=request, memo={_SHAPE_KEY: shape_of(first)})
        self._shapes[key] = first  # most recently used last
        return prep


class RecentPods:
    """The last few pods prepared, each handed back while it is the same pod unchanged: a
    library scheduler that evaluates one pod object on several tables, or again after a
    retry, prepares it (and finds its admission units) once. The pod's requests and admission
    units were some 20 µs of a 0.28 ms whole-table decision (issue #27).

    A pod counts as unchanged when it is the very object prepared and its :func:`shape_key`
    is still equal (its containers' request mappings could have been changed in place). What a
    prepared pod memoises grows with the views the scalar path decided on (each such view is
    kept by its entry), so one that holds more than ``memo_limit`` entries is prepared afresh.
    Thread-safe: the entries change under a lock; two threads deciding with one prepared pod
    at once only add equal entries to its memo.
    """

    def __init__(self, kept: int = 8, memo_limit: int = 64) -> None:
        self.kept, self.memo_limit = kept, memo_limit
        self._pods: dict[tuple[int, Compat], tuple[Hashable, PreparedPod]] = {}
        self._lock = threading.Lock()
        self.hits = 0

    def prepare(self, pod: Pod, compat: Compat = Compat.KUBELET) -> PreparedPod:
        """``prepare_pod(pod, compat=compat)``, or the one made for this pod before."""
        slot = (id(pod), compat)
        key = shape_key(pod, compat)
        entry = self._pods.get(slot)
        if entry is not None:
            known, prep = entry
            if prep.pod is pod and known == key and len(prep.memo) <= self.memo_limit:
                self.hits += 1
                return prep
        prep = prepare_pod(pod, compat=compat)
        prep.memo[_SHAPE_KEY] = key
        with self._lock:
            self._pods.pop(slot, None)
            while len(self._pods) >= self.kept:
                del self._pods[next(iter(self._pods))]  # the oldest first
            self._pods[slot] = (key, prep)  # holds the pod: its id stays its own meanwhile
        return prep


def units_key(facts: NodeFacts) -> tuple[object, ...]:
    """What of ``facts`` decides the units of a pod."""
    return (
        "units",
        facts.scope,
        facts.policy == POLICY_NONE,
        facts.cpu_manager_static,
        facts.memory_manager_static,
        facts.pod_level_resources,
        facts.pod_level_resource_managers,
    )


def kubelet_units(
    prep: PreparedPod, facts: NodeFacts, key: tuple[object, ...] | None = None
) -> tuple[AdmissionUnit, ...]:
    """The kubelet's admission units of the pod on a node with ``facts``, memoised on the pod:
    they depend only on the facts that decide what each manager is asked for (``key``, which
    the caller may have memoised: :func:`units_key`)."""
    key = key or units_key(facts)
    units = prep.memo.get(key)
    if units is None:
        units = prep.memo[key] = pod_admission_units(prep.pod, facts)
    return units  # type: ignore[return-value]


def as_prepared(pod: Pod | PreparedPod) -> PreparedPod:
    return pod if isinstance(pod, PreparedPod) else prepare_pod(pod)
