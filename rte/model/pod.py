"""Pods as the NUMA decisions see them: container requests, QoS class, effective request.

Built from a Pod manifest or API object (a decoded JSON/YAML mapping). Only what the filter,
the scores, the reserve cache, the exclusivity rule and kubelet admission read is kept. Requests
are defaulted from limits the way the apiserver does on admission, so a manifest read from a file
behaves like the object the scheduler would see; that includes the pod-level ``spec.resources``
of KEP-2837 (:class:`PodLevelResources`).
"""

from __future__ import annotations

import sys
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, cast

from rte.errors import InputError
from rte.model.quantity import Amount, parse_quantity
from rte.model.sharing import SharedValues
from rte.model.vocabulary import InformerMode

QOS_GUARANTEED = "Guaranteed"
QOS_BURSTABLE = "Burstable"
QOS_BEST_EFFORT = "BestEffort"
_QOS_CLASSES = (QOS_GUARANTEED, QOS_BURSTABLE, QOS_BEST_EFFORT)
_QOS_RESOURCES = ("cpu", "memory")  # the only resources that decide the QoS class

PHASE_PENDING = "Pending"
PHASE_RUNNING = "Running"
TERMINAL_PHASES = frozenset({"Succeeded", "Failed"})

NO_QUANTITIES: Mapping[str, Amount] = {}
"""The one empty map every pod, container and resources object without a quantity shares (most
limits, nearly every overhead): an agent keeps a :class:`Pod` for each pod of its node, and a
fresh empty dict is 64 bytes a field. Typed read-only; nothing writes into it."""

_AMOUNTS: dict[str, Amount] = {}
"""Quantities by their text, so the thousand pods requesting ``100m`` share one Fraction
(parsing makes a new one each time, ~100 bytes). Bounded by :data:`_AMOUNTS_MAX`."""
_AMOUNTS_MAX = 4096
_SHAPES: SharedValues[Any] = SharedValues(4096)
"""Containers tuples and label maps by their contents, so that the pods of one workload (a
DaemonSet's agent pod on each of 50 000 nodes) share one of each: a pod's own were about 400
bytes (issue #27). Both are immutable once made (the first 4096 shapes seen are kept; a pod of a
later one keeps its own)."""

PodKey = tuple[str, str]
"""``(namespace, name)``: how pods are told apart (the fingerprint hashes the same pair)."""


@dataclass(frozen=True, slots=True)
class Container:
    """One container's name, requests and limits (requests already defaulted from limits)."""

    name: str
    requests: Mapping[str, Amount] = field(default_factory=dict)
    limits: Mapping[str, Amount] = field(default_factory=dict)
    restart_policy: str | None = None

    @property
    def is_sidecar(self) -> bool:
        """A restartable init container: it keeps running beside the app containers."""
        return self.restart_policy == "Always"


@dataclass(frozen=True, slots=True)
class PodLevelResources:
    """``spec.resources`` (KEP-2837, beta and on by default since Kubernetes 1.34): the pod's
    own requests and limits, requests defaulted from limits like a container's."""

    requests: Mapping[str, Amount] = field(default_factory=dict)
    limits: Mapping[str, Amount] = field(default_factory=dict)

    @property
    def is_set(self) -> bool:
        """``IsPodLevelResourcesSet`` (kubernetes/kubernetes
        ``staging/src/k8s.io/component-helpers/resource/helpers.go``): a request or limit of a
        resource pod-level resources support (cpu, memory, hugepages)."""
        return any(_pod_level_supported(r) for r in (*self.requests, *self.limits))


def _pod_level_supported(resource: str) -> bool:
    return resource in _QOS_RESOURCES or resource.startswith("hugepages-")


@dataclass(frozen=True, slots=True)
class Pod:
    """The parts of a pod that NUMA-aware placement and accounting need."""

    namespace: str
    name: str
    uid: str = ""
    node_name: str = ""
    phase: str = ""
    scheduler_name: str = "default-scheduler"
    containers: tuple[Container, ...] = ()
    init_containers: tuple[Container, ...] = ()
    overhead: Mapping[str, Amount] = field(default_factory=dict)
    status_qos_class: str = ""
    resources: PodLevelResources | None = None
    """Pod-level requests and limits (``spec.resources``), when the pod sets them."""
    priority: int = 0
    """``spec.priority``, which the priority admission plugin resolves from the pod's priority
    class (0 without one, as kube-scheduler reads it: ``corev1helpers.PodPriority``); only
    preemption reads it."""
    labels: Mapping[str, str] = field(default_factory=dict, compare=False)
    """``metadata.labels``: preemption matches them against PodDisruptionBudgets. Not part of a
    pod's value (equality): a label change alters no accounting, and the agent's pod watch must
    not wake for one (tests/agent/test_podwatch.py)."""
    key: PodKey = field(init=False, repr=False, compare=False)
    """``(namespace, name)``, made once: every index and set of the reserve cache keys the pod by
    it, and a tuple made for each of them was one more 64 bytes per pod kept (issue #27)."""

    def __post_init__(self) -> None:
        object.__setattr__(self, "key", (self.namespace, self.name))

    @property
    def sidecars(self) -> tuple[Container, ...]:
        return tuple(c for c in self.init_containers if c.is_sidecar)

    @property
    def qos_class(self) -> str:
        """The QoS class: ``status.qosClass`` when the apiserver set it, else computed."""
        if self.status_qos_class in _QOS_CLASSES:
            return self.status_qos_class
        if self.resources is not None:
            # kubernetes/kubernetes pkg/apis/core/v1/helper/qos/qos.go ComputePodQOS: with
            # pod-level resources they alone decide the class (PodLevelResources is on by default).
            return requirements_qos_class(self.resources.requests, self.resources.limits)
        return compute_qos_class(self.containers + self.init_containers)

    @property
    def is_terminal(self) -> bool:
        return self.phase in TERMINAL_PHASES


def counts_for_fingerprint(pod: Pod, mode: InformerMode) -> bool:
    """Whether the scheduler's fingerprint of ``pod``'s node counts it.

    The rule of the scheduler's pod informer (kubernetes-sigs/scheduler-plugins
    ``pkg/noderesourcetopology/podprovider/podprovider.go``): the dedicated one counts every
    bound pod that left ``Pending`` (terminal pods included); the shared one only ``Running``
    pods. The agent applies the same rule to publish a fingerprint the scheduler can match.
    """
    if not pod.node_name:
        return False
    if mode is InformerMode.SHARED:
        return pod.phase == PHASE_RUNNING
    return pod.phase != PHASE_PENDING


def compute_qos_class(containers: Iterable[Container]) -> str:
    """Kubernetes' QoS rule over all (init and app) containers.

    BestEffort: no cpu/memory request or limit anywhere. Guaranteed: every container limits both
    cpu and memory, and the summed requests equal the summed limits. Burstable otherwise.
    """
    requests: dict[str, Amount] = {}
    limits: dict[str, Amount] = {}
    guaranteed = True
    for c in containers:
        for res in _QOS_RESOURCES:
            req = c.requests.get(res, 0)
            if req > 0:
                requests[res] = requests.get(res, 0) + req
            lim = c.limits.get(res, 0)
            if lim > 0:
                limits[res] = limits.get(res, 0) + lim
        if not all(c.limits.get(res, 0) > 0 for res in _QOS_RESOURCES):
            guaranteed = False
    if not requests and not limits:
        return QOS_BEST_EFFORT
    if guaranteed and requests == limits:
        return QOS_GUARANTEED
    return QOS_BURSTABLE


def requirements_qos_class(requests: Mapping[str, Amount], limits: Mapping[str, Amount]) -> str:
    """The QoS class of one set of requests and limits (kubernetes/kubernetes
    ``pkg/apis/core/v1/helper/qos/qos.go`` ``resourceQOS``): Guaranteed when cpu and memory are
    both set with requests equal to limits, BestEffort when neither is set, Burstable otherwise."""
    if not requests and not limits:
        return QOS_BEST_EFFORT
    qos = ""
    for res in _QOS_RESOURCES:
        req, lim = requests.get(res, 0), limits.get(res, 0)
        if req != lim:
            return QOS_BURSTABLE
        best_effort = req == 0
        if not qos:
            qos = QOS_BEST_EFFORT if best_effort else QOS_GUARANTEED
        elif best_effort != (qos == QOS_BEST_EFFORT):
            return QOS_BURSTABLE
    return qos


def add_requests(total: dict[str, Amount], requests: Mapping[str, Amount]) -> None:
    for res, qty in requests.items():
        total[res] = total.get(res, 0) + qty


def effective_request(pod: Pod) -> dict[str, Amount]:
    """The pod's request as the reference scheduler plugin computes it.

    Per resource: the larger of (the sum over app containers) and (the largest init container),
    plus ``spec.overhead``. Sidecars count as plain init containers here, exactly like the
    reference (the kubelet accumulates them; see :func:`kubelet_pod_request`).
    """
    total: dict[str, Amount] = {}
    for c in pod.containers:
        add_requests(total, c.requests)
    for c in pod.init_containers:
        for res, qty in c.requests.items():
            if qty > total.get(res, 0):
                total[res] = qty
    add_requests(total, pod.overhead)
    return total


def kubelet_pod_request(pod: Pod, *, overhead: bool = True) -> dict[str, Amount]:
    """The pod's request as the kubelet sums its containers, sidecars included.

    Sidecars run for the pod's whole life, so they add to the app containers; each regular init
    container runs alone, on top of the sidecars started before it (kubernetes/kubernetes
    ``staging/src/k8s.io/component-helpers/resource/helpers.go`` ``PodRequests``). The resource
    managers align the pod without its overhead (``overhead=False``; the device manager's
    ``getPodDeviceRequest`` in ``pkg/kubelet/cm/devicemanager/topology_hints.go``).
    """
    total: dict[str, Amount] = {}
    running_sidecars: dict[str, Amount] = {}
    init_peak: dict[str, Amount] = {}
    for c in pod.init_containers:
        if c.is_sidecar:
            add_requests(running_sidecars, c.requests)
            candidate = dict(running_sidecars)
        else:
            candidate = dict(running_sidecars)
            add_requests(candidate, c.requests)
        for res, qty in candidate.items():
            if qty > init_peak.get(res, 0):
                init_peak[res] = qty
    add_requests(total, running_sidecars)
    for c in pod.containers:
        add_requests(total, c.requests)
    for res, qty in init_peak.items():
        if qty > total.get(res, 0):
            total[res] = qty
    if overhead:
        add_requests(total, pod.overhead)
    return total


# --- reading manifests -------------------------------------------------------------------------


def resource_quantities(value: Any, where: str) -> dict[str, Amount]:
    """A map of resource name -> quantity (requests, limits, overhead, allocatable); None is empty."""
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise InputError(where, f"expected a map of resource quantities, got {value!r}")
    out: dict[str, Amount] = {}
    for res, raw in value.items():
        try:
            out[sys.intern(str(res))] = _amount(raw)
        except ValueError as e:
            raise InputError(f"{where}.{res}", str(e)) from e
    return out


def _amount(raw: Any) -> Amount:
    """:func:`parse_quantity`, the same value shared between equal texts (Amounts are immutable)."""
    if type(raw) is not str:
        return parse_quantity(raw)
    amount = _AMOUNTS.get(raw)
    if amount is None:
        amount = parse_quantity(raw)
        if len(_AMOUNTS) < _AMOUNTS_MAX:
            _AMOUNTS[raw] = amount
    return amount


def _shared_if_empty(quantities: dict[str, Amount]) -> Mapping[str, Amount]:
    return quantities or NO_QUANTITIES


def _text(value: Any) -> str:
    """A field's text, interned: namespaces, phases, scheduler and container names repeat across
    the pods of a node, and each decoded JSON document brings its own copy otherwise."""
    return sys.intern(str(value))


def nonnegative_quantities(value: Any, where: str) -> dict[str, Amount]:
    """Quantities the apiserver refuses when negative (a pod's requests, limits and overhead, a
    Node's allocatable: kubernetes/kubernetes ``pkg/apis/core/validation/validation.go``,
    ``ValidateResourceQuantityValue``), so a file with one is bad input, never a pod that frees
    resources or a node with less than nothing."""
    out = resource_quantities(value, where)
    for res, raw in (value or {}).items():
        if out[str(res)] < 0:
            raise InputError(f"{where}.{res}", f"must not be negative, got {raw!r}")
    return out


def _requirements(value: Any, where: str) -> tuple[dict[str, Amount], dict[str, Amount]]:
    """(requests, limits) of a ``resources`` object, requests defaulted from limits."""
    if not isinstance(value, Mapping):
        raise InputError(where, f"expected an object, got {value!r}")
    limits = nonnegative_quantities(value.get("limits"), f"{where}.limits")
    requests = nonnegative_quantities(value.get("requests"), f"{where}.requests")
    # API defaulting: a resource with a limit and no request requests its limit.
    for res, qty in limits.items():
        requests.setdefault(res, qty)
    return requests, limits


def _container(value: Any, where: str) -> Container:
    if not isinstance(value, Mapping):
        raise InputError(where, f"expected a container object, got {value!r}")
    requests, limits = _requirements(value.get("resources") or {}, f"{where}.resources")
    policy = value.get("restartPolicy")
    return Container(
        name=_text(value.get("name", "")),
        requests=_shared_if_empty(requests),
        limits=_shared_if_empty(limits),
        restart_policy=_text(policy) if policy else None,
    )


def _containers(value: Any, where: str) -> tuple[Container, ...]:
    if value is None:
        return ()
    if not isinstance(value, list):
        raise InputError(where, f"expected a list, got {type(value).__name__}")
    containers = tuple(_container(c, f"{where}[{i}]") for i, c in enumerate(value))
    key = ("containers", *((c.name, _typed(c.requests), _typed(c.limits), c.restart_policy)
                           for c in containers))  # fmt: skip
    return cast(tuple[Container, ...], _SHAPES.share(key, containers))


def _typed(amounts: Mapping[str, Amount]) -> tuple[tuple[str, type, Amount], ...]:
    """A key of ``amounts`` that tells ``1`` from ``Fraction(1)``, which compare equal."""
    return tuple((name, type(a), a) for name, a in amounts.items())


def pod_from_manifest(obj: Mapping[str, Any], source: str = "pod") -> Pod:
    """Build a :class:`Pod` from a Pod object; errors name ``source`` and the field."""
    if not isinstance(obj, Mapping):
        raise InputError(source, f"expected a Pod object, got {type(obj).__name__}")
    kind = obj.get("kind", "Pod")
    if kind != "Pod":
        raise InputError(f"{source}: kind", f"expected Pod, got {kind!r}")
    metadata = obj.get("metadata") or {}
    spec = obj.get("spec") or {}
    status = obj.get("status") or {}
    if not isinstance(metadata, Mapping) or not isinstance(spec, Mapping) or not isinstance(status, Mapping):
        raise InputError(source, "metadata, spec and status must be objects")
    name = metadata.get("name") or metadata.get("generateName") or ""
    if not name:
        raise InputError(f"{source}: metadata.name", "a pod needs a name")
    containers = _containers(spec.get("containers"), f"{source}: spec.containers")
    if not containers:
        # The apiserver refuses such a pod too: there would be nothing to request or admit.
        raise InputError(f"{source}: spec.containers", "a pod needs at least one container")
    return Pod(
        namespace=_text(metadata.get("namespace") or "default"),
        name=str(name),
        uid=str(metadata.get("uid") or ""),
        node_name=_text(spec.get("nodeName") or ""),
        phase=_text(status.get("phase") or ""),
        scheduler_name=_text(spec.get("schedulerName") or "default-scheduler"),
        containers=containers,
        init_containers=_containers(spec.get("initContainers"), f"{source}: spec.initContainers"),
        overhead=_shared_if_empty(nonnegative_quantities(spec.get("overhead"), f"{source}: spec.overhead")),
        status_qos_class=_text(status.get("qosClass") or ""),
        resources=_pod_level(spec.get("resources"), f"{source}: spec.resources"),
        priority=_priority(spec.get("priority"), f"{source}: spec.priority"),
        labels=_labels(metadata.get("labels"), f"{source}: metadata.labels"),
    )


NO_LABELS: Mapping[str, str] = {}
"""The labels of every pod without any, shared."""


def _labels(value: Any, where: str) -> Mapping[str, str]:
    """``metadata.labels``, interned: the same keys and values repeat across a workload's pods."""
    if not value:
        return NO_LABELS
    if not isinstance(value, Mapping) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in value.items()
    ):
        raise InputError(where, "expected an object of strings")
    labels = {sys.intern(k): sys.intern(v) for k, v in value.items()}
    return cast(Mapping[str, str], _SHAPES.share(("labels", *labels.items()), labels))


def _priority(value: Any, where: str) -> int:
    """``spec.priority``: an int32, 0 when absent."""
    if value is None:
        return 0
    if isinstance(value, bool) or not isinstance(value, int) or not -(2**31) <= value < 2**31:
        raise InputError(where, f"expected a 32-bit integer, got {value!r}")
    return value


def _pod_level(value: Any, where: str) -> PodLevelResources | None:
    """``spec.resources``; None when absent or without any request or limit."""
    if value is None:
        return None
    requests, limits = _requirements(value, where)
    if not requests and not limits:
        return None
    return PodLevelResources(requests=requests, limits=limits)
