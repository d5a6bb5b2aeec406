"""The units the Topology Manager admits one after the other, and what each asks every manager for.

``container`` scope (kubernetes/kubernetes ``pkg/kubelet/cm/topologymanager/scope_container.go``):
every init container in order (sidecars among them), then every app container, each hinted,
merged, admitted and allocated before the next. ``pod`` scope (``scope_pod.go``): the pod once,
hinted for its pod-level request, then every container allocated within the pod's mask. Policy
``none`` runs no Topology Manager scope: every container is just allocated (``scope_none.go``).

What a unit asks for:

* CPUs (cpumanager ``policy_static.go`` ``guaranteedCPUs``, ``podGuaranteedCPUs``): only in a
  Guaranteed pod and only whole CPUs; a fractional request gets no exclusive CPU and no hint. The
  pod's count is the larger of (every app container plus every sidecar) and (each regular init
  container plus the sidecars started before it), over containers with whole CPUs only;
* memory and hugepages (memorymanager ``policy_static.go`` ``getRequestedResources``,
  ``getPodRequestedResources``): only in a Guaranteed pod; the pod's request follows the same
  sidecar rule, over the types some app container requests;
* devices (devicemanager ``topology_hints.go`` ``getContainerDeviceRequest``,
  ``getPodDeviceRequest``): extended resources, for any QoS, from limits; the pod's request
  is ``PodLimits`` without the overhead.

Pod overhead is never aligned. A pod with pod-level resources (``spec.resources``, KEP-2837) gets
no CPU or memory hint unless the node runs KEP-5526 (``PodLevelResourceManagers``): then pod scope
aligns the pod-level budget and container scope aligns the containers whose own requests equal
their limits.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from rte.model.admission.node import NodeFacts, is_device, is_memory_type
from rte.model.pod import QOS_GUARANTEED, Container, Pod, requirements_qos_class
from rte.model.quantity import Amount, ceil_value, milli_value
from rte.model.topology_manager import POLICY_NONE, SCOPE_POD

KIND_INIT = "init"
KIND_SIDECAR = "sidecar"
KIND_APP = "app"
KIND_POD = "pod"


@dataclass(frozen=True, slots=True)
class AdmissionUnit:
    """One unit of admission (a container, or the whole pod) and its requests per manager."""

    name: str
    kind: str
    cpus: int = 0
    """Exclusive CPUs (0: the CPU manager gives no hint and allocates nothing)."""
    memory: Mapping[str, int] = field(default_factory=dict)
    """Memory-manager request per memory type (empty: no hint)."""
    devices: Mapping[str, int] = field(default_factory=dict)
    """Device requests."""
    parts: tuple[AdmissionUnit, ...] = ()
    """Pod scope: the containers allocated, in order, within the pod's merged mask."""
    shared_pool_error: str = ""
    """KEP-5526, pod scope: why the pod-level budget leaves its shared containers no CPU."""
    memory_items: tuple[tuple[str, int], ...] = field(init=False, repr=False, compare=False)
    """:attr:`memory` sorted by type, the order the hints and reasons list them in."""
    device_items: tuple[tuple[str, int], ...] = field(init=False, repr=False, compare=False)
    """:attr:`devices` sorted by resource."""

    def __post_init__(self) -> None:
        object.__setattr__(self, "memory_items", tuple(sorted(self.memory.items())))
        object.__setattr__(self, "device_items", tuple(sorted(self.devices.items())))

    @property
    def holds_for_pod(self) -> bool:
        """A regular init container: what it took is reusable by the containers after it."""
        return self.kind == KIND_INIT


def whole_cpus(quantity: Amount) -> int:
    """``isIntegralCPUAmount``: the CPU count when whole, else 0 (no exclusive CPUs)."""
    value = ceil_value(quantity)
    return value if value > 0 and value * 1000 == milli_value(quantity) else 0


class _Rules:
    """Everything about the pod that does not change from container to container."""

    def __init__(self, pod: Pod, facts: NodeFacts) -> None:
        self.pod = pod
        self.facts = facts
        self.guaranteed = pod.qos_class == QOS_GUARANTEED
        self.pod_level = facts.pod_level_resources and pod.resources is not None and pod.resources.is_set
        self.pod_level_managed = self.pod_level and facts.pod_level_resource_managers

    def eligible(self, c: Container) -> bool:
        """Whether the CPU and memory managers may give ``c`` exclusive resources at all."""
        if not self.guaranteed:
            return False
        if self.pod_level and not self.pod_level_managed:
            return False  # KEP-2837 without KEP-5526: the managers skip the pod
        # KEP-5526: a container of a pod with a pod-level budget needs requests equal to limits.
        return not self.pod_level_managed or requirements_qos_class(c.requests, c.limits) == QOS_GUARANTEED

    def cpus(self, c: Container) -> int:
        if not self.facts.cpu_manager_static or not self.eligible(c) or "cpu" not in c.requests:
            return 0
        return whole_cpus(c.requests["cpu"])

    def memory(self, c: Container) -> dict[str, int]:
        if not self.facts.memory_manager_static or not self.eligible(c):
            return {}
        return {r: ceil_value(q) for r, q in c.requests.items() if is_memory_type(r)}

    @staticmethod
    def devices(c: Container) -> dict[str, int]:
        amounts = {**c.requests, **c.limits}
        return {r: ceil_value(q) for r, q in amounts.items() if is_device(r)}

    def container(self, c: Container, kind: str) -> AdmissionUnit:
        return AdmissionUnit(c.name, kind, self.cpus(c), self.memory(c), self.devices(c))


def _kind(c: Container) -> str:
    return KIND_SIDECAR if c.is_sidecar else KIND_INIT


def container_units(pod: Pod, facts: NodeFacts) -> tuple[AdmissionUnit, ...]:
    """Every init container, then every app container, as units of their own."""
    rules = _Rules(pod, facts)
    return tuple(rules.container(c, _kind(c)) for c in pod.init_containers) + tuple(
        rules.container(c, KIND_APP) for c in pod.containers
    )


def pod_totals(
    inits: Iterable[tuple[Container, Mapping[str, int]]],
    apps: Iterable[tuple[Container, Mapping[str, int]]],
    keys_from_apps_only: bool = False,
) -> dict[str, int]:
    """Per resource: max(sum over app containers and sidecars, max over regular init containers of
    (that container + the sidecars started before it)).

    ``keys_from_apps_only``: the memory manager's ``getPodRequestedResources`` reports only the
    types some app container requests (an init- or sidecar-only type is dropped).
    """
    sidecars: dict[str, int] = {}
    by_inits: dict[str, int] = {}
    for c, amounts in inits:
        for r, q in amounts.items():
            if c.is_sidecar:
                sidecars[r] = sidecars.get(r, 0) + q
            else:
                by_inits[r] = max(by_inits.get(r, 0), sidecars.get(r, 0) + q)
    by_apps: dict[str, int] = {}
    for _, amounts in apps:
        for r, q in amounts.items():
            by_apps[r] = by_apps.get(r, 0) + q
    keys = set(by_apps) if keys_from_apps_only else set(by_apps) | set(sidecars) | set(by_inits)
    return {r: max(by_apps.get(r, 0) + sidecars.get(r, 0), by_inits.get(r, 0)) for r in keys}


def pod_unit(pod: Pod, facts: NodeFacts) -> AdmissionUnit:
    """Pod scope: the pod as one unit, its containers as the parts allocated within its mask."""
    rules = _Rules(pod, facts)
    parts = container_units(pod, facts)
    inits, apps = pod.init_containers, pod.containers
    devices = pod_totals(((c, rules.devices(c)) for c in inits), ((c, rules.devices(c)) for c in apps))
    if rules.pod_level_managed and rules.guaranteed:
        return _pod_level_unit(pod, facts, rules, devices)
    cpus = 0
    if facts.cpu_manager_static and rules.guaranteed and not rules.pod_level:
        cpus = pod_totals(
            ((c, {"cpu": rules.cpus(c)}) for c in inits if "cpu" in c.requests),
            ((c, {"cpu": rules.cpus(c)}) for c in apps if "cpu" in c.requests),
        ).get("cpu", 0)
    memory = pod_totals(
        ((c, rules.memory(c)) for c in inits), ((c, rules.memory(c)) for c in apps), keys_from_apps_only=True
    )
    return AdmissionUnit(pod.name, KIND_POD, cpus, memory, devices, parts)


def _pod_level_unit(pod: Pod, facts: NodeFacts, rules: _Rules, devices: dict[str, int]) -> AdmissionUnit:
    """KEP-5526, pod scope: the pod-level budget is aligned and allocated as one bubble
    (cpumanager ``policy_static.go`` ``podGuaranteedCPUs``, ``AllocatePod``)."""
    assert pod.resources is not None
    budget = pod.resources.requests
    cpus = whole_cpus(budget["cpu"]) if facts.cpu_manager_static and "cpu" in budget else 0
    memory = {}
    if facts.memory_manager_static:
        memory = {r: ceil_value(q) for r, q in budget.items() if is_memory_type(r)}
    error = _shared_pool_error(pod, rules, cpus) if cpus else ""
    bubble = AdmissionUnit(pod.name, KIND_APP, cpus, memory, devices)
    return AdmissionUnit(pod.name, KIND_POD, cpus, memory, devices, (bubble,), error)


def _shared_pool_error(pod: Pod, rules: _Rules, budget: int) -> str:
    """``validatePodScopeResources``: every container that needs the pod's shared pool must find
    CPUs left in it once the exclusive ones are carved out."""
    long_running = 0
    shared = False
    for c in pod.init_containers:
        exclusive = rules.cpus(c)
        if not c.is_sidecar:
            if exclusive and exclusive > budget - long_running:
                return f"init container {c.name!r} wants {exclusive} CPUs, {budget - long_running} left"
            if not exclusive and long_running >= budget:
                return f"init container {c.name!r} finds no CPU left in the pod's shared pool"
            continue
        if not exclusive:
            shared = True
        long_running += exclusive
    for c in pod.containers:
        exclusive = rules.cpus(c)
        if not exclusive:
            shared = True
        long_running += exclusive
    if shared and long_running >= budget:
        return f"exclusive containers take all {budget} CPUs of the pod, none is left for its shared pool"
    return ""


def pod_admission_units(pod: Pod, facts: NodeFacts) -> tuple[AdmissionUnit, ...]:
    """The units the kubelet admits ``pod`` by on a node with ``facts``."""
    if facts.scope == SCOPE_POD and facts.policy != POLICY_NONE:
        return (pod_unit(pod, facts),)
    return container_units(pod, facts)
