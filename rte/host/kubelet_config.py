"""The kubelet settings a NUMA agent needs, with the kubelet's own defaults applied.

Sources, auto-detected from the decoded document:

* a ``KubeletConfiguration`` file (YAML or JSON), the file the kubelet's ``--config`` names;
* a ``/configz`` body, ``{"kubeletconfig": {...}}``, with or without ``apiVersion``/``kind`` inside
  (kubelets before and after 1.36) and with any siblings (``kubeletflags``);
* an OpenShift ``KubeletConfig`` custom resource, whose ``spec.kubeletConfig`` is a partial
  KubeletConfiguration (the machine-config operator renders it over its own base, so the CR alone
  may not be the effective config; it is still the best file an operator has at hand).

Absent fields get the kubelet's defaults. The reference agent skips this and publishes ``""``
for an unset policy, which the consumer reads as ``none``; we publish what the kubelet runs.
This module only says what the configuration is; what the NRT object says about it (attribute
names and values, the deprecated ``topologyPolicies``) is decided in :mod:`rte.agent.compute.builder`.

Values the kubelet would refuse to start with (an unknown policy, a malformed cpuset or quantity)
raise :class:`~rte.errors.InputError` naming the file, the field and the value: the kubelet cannot
be running with them, so the file is not the one in force. Unknown fields are ignored, as newer
kubelets add fields all the time.

Reading files (and ``--config-dir`` drop-ins) is :mod:`rte.host.kubelet_config_files`.

Units: memory-like quantities are integers in base units (bytes, counts), rounded up as
Kubernetes ``Quantity.Value()`` does; ``cpu`` in ``kubeReserved``/``systemReserved`` is in
millicores (``"500m"`` -> 500, ``"2"`` -> 2000), so fractional CPUs stay exact.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

from rte.errors import InputError
from rte.model import attributes
from rte.model.cpuset import format_cpuset, parse_cpuset
from rte.model.quantity import ceil_value, milli_value, parse_quantity
from rte.model.topology_manager import DEFAULT_MAX_NUMA_NODES

TOPOLOGY_MANAGER_POLICIES = attributes.TOPOLOGY_POLICIES
TOPOLOGY_MANAGER_SCOPES = attributes.TOPOLOGY_SCOPES
CPU_MANAGER_POLICIES = ("none", "static")
# The memory manager's policy names are capitalised, unlike every other policy field.
MEMORY_MANAGER_POLICIES = ("None", "Static")

PREFER_CLOSEST_NUMA_NODES = "prefer-closest-numa-nodes"
MAX_ALLOWABLE_NUMA_NODES = "max-allowable-numa-nodes"
FULL_PCPUS_ONLY_OPTION = "full-pcpus-only"
DISTRIBUTE_CPUS_ACROSS_NUMA_OPTION = "distribute-cpus-across-numa"

ADMISSION_FEATURE_GATES: Mapping[str, bool] = {
    # KEP-2837: pod-level resources; beta and on by default since 1.34 (off in 1.32-1.33).
    "PodLevelResources": True,
    # KEP-5526: the CPU and memory managers honour pod-level resources; alpha in 1.36, beta but
    # still off by default in 1.37.
    "PodLevelResourceManagers": False,
}
"""The kubelet feature gates that change admission, with the kubelet's default (kubernetes/kubernetes
``pkg/features/kube_features.go``)."""

# The kubelet's hard eviction defaults (Linux). imagefs.inodesFree joined the set in kubelet 1.30
# (kubernetes/kubernetes#121834); only memory.available matters to memory allocatable.
DEFAULT_EVICTION_HARD: Mapping[str, str] = {
    "memory.available": "100Mi",
    "nodefs.available": "10%",
    "nodefs.inodesFree": "5%",
    "imagefs.available": "15%",
    "imagefs.inodesFree": "5%",
}

_CONFIG_API_GROUP = "kubelet.config.k8s.io/"
_OPENSHIFT_API_GROUP = "machineconfiguration.openshift.io/"

# Go strconv.ParseBool, which the kubelet uses for boolean policy options.
_GO_TRUE = frozenset({"1", "t", "T", "TRUE", "true", "True"})
_GO_FALSE = frozenset({"0", "f", "F", "FALSE", "false", "False"})


DEFAULT_MAX_PODS = 110
"""The kubelet's ``maxPods`` default (``SetDefaults_KubeletConfiguration`` in
pkg/kubelet/apis/config/v1beta1/defaults.go)."""


def default_eviction_hard() -> dict[str, str]:
    return dict(DEFAULT_EVICTION_HARD)


@dataclass(frozen=True)
class KubeletConfig:
    """The effective kubelet settings that shape NUMA accounting and the published attributes.

    Mapping fields are plain dicts: treat them as read-only (instances are not hashable).
    """

    topology_manager_policy: str = "none"
    topology_manager_scope: str = "container"
    topology_manager_policy_options: Mapping[str, str] = field(default_factory=dict)
    max_numa_nodes: int = DEFAULT_MAX_NUMA_NODES
    """From the ``max-allowable-numa-nodes`` option."""
    cpu_manager_policy: str = "none"
    cpu_manager_policy_options: Mapping[str, str] = field(default_factory=dict)
    reserved_system_cpus: frozenset[int] = frozenset()
    memory_manager_policy: str = "None"
    reserved_memory: Mapping[int, Mapping[str, int]] = field(default_factory=dict)
    """Per NUMA node id: resource name (``memory``, ``hugepages-<size>``) -> bytes."""
    kube_reserved: Mapping[str, int] = field(default_factory=dict)
    """Resource -> amount; ``cpu`` in millicores, everything else in base units."""
    system_reserved: Mapping[str, int] = field(default_factory=dict)
    """Resource -> amount; ``cpu`` in millicores, everything else in base units."""
    eviction_hard: Mapping[str, str] = field(default_factory=default_eviction_hard)
    """Signal -> threshold text (a quantity or a percentage), as the kubelet holds it."""
    feature_gates: Mapping[str, bool] = field(default_factory=dict)
    max_pods: int = DEFAULT_MAX_PODS
    """``maxPods``: how many pods the kubelet admits (the agent's List cap follows it)."""
    source: str = field(default="<defaults>", compare=False)
    """Where the settings came from, for messages."""

    def feature_gate(self, gate: str) -> bool:
        """Whether ``gate`` is on: the config's setting, else the kubelet's default (known gates only)."""
        return self.feature_gates.get(gate, ADMISSION_FEATURE_GATES.get(gate, False))

    def hard_eviction_memory(self, capacity: int) -> int:
        """Bytes the ``memory.available`` hard threshold holds back on a node of ``capacity`` bytes.

        A percentage is taken of ``capacity`` and truncated, as the kubelet does; ``0%`` and
        ``100%`` are ignored by the kubelet and give 0 here too.
        """
        text = self.eviction_hard.get("memory.available")
        if text is None:
            return 0
        threshold = _parse_threshold(text, f"{self.source}: evictionHard.memory.available")
        if isinstance(threshold, _Percent):
            return math.floor(capacity * threshold.fraction)
        return threshold


def check_against_machine(
    config: KubeletConfig, cpus: Iterable[int], numa_nodes: Iterable[int] | None = None
) -> None:
    """Refuse a config the kubelet could not be running with on this machine.

    ``reservedSystemCPUs`` naming CPUs the machine lacks makes the CPU manager fail to start
    (kubernetes/kubernetes ``pkg/kubelet/cm/cpumanager/policy_static.go``, ``NewStaticPolicy``),
    and ``reservedMemory`` naming a NUMA node the machine lacks makes the memory manager fail to
    start (memorymanager ``memory_manager.go`` ``getTotalMemoryTypeReserved``, which checks each
    reservation against ``machineInfo.Topology``), so the file is not the one in force.
    ``numa_nodes`` None: the NUMA nodes are not known, the memory check is skipped.
    """
    present = frozenset(cpus)
    missing = config.reserved_system_cpus - present
    if missing:
        raise InputError(
            f"{config.source}: reservedSystemCPUs",
            f"names CPUs {format_cpuset(missing)}, which this machine does not have"
            f" (its CPUs: {format_cpuset(present) or 'none'})",
        )
    if numa_nodes is None:
        return
    nodes = frozenset(numa_nodes)
    absent = sorted(set(config.reserved_memory) - nodes)
    if absent:
        raise InputError(
            f"{config.source}: reservedMemory",
            f"reserves memory on NUMA node {absent[0]}, which this machine does not have"
            f" (its NUMA nodes: {format_cpuset(nodes) or 'none'})",
        )


def go_bool(value: str) -> bool | None:
    """Go's ``strconv.ParseBool``, which the kubelet uses for boolean options; None when not one."""
    if value in _GO_TRUE:
        return True
    if value in _GO_FALSE:
        return False
    return None


# --- parsing decoded data -------------------------------------------------------------------


def _brief(value: object) -> str:
    """A value for a one-line message, shortened: a wrong sub-tree can be long."""
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


@dataclass(frozen=True)
class _Percent:
    fraction: Fraction


def _parse_threshold(value: object, where: str) -> int | _Percent:
    """An eviction threshold: a percentage in [0, 100] or a non-negative quantity in bytes/units."""
    if isinstance(value, str) and value.endswith("%"):
        try:
            percent = Fraction(value[:-1])
        except (ValueError, ZeroDivisionError):
            raise InputError(where, f"not a percentage: {value!r}") from None
        if not 0 <= percent <= 100:
            raise InputError(where, f"percentage out of range 0%..100%: {value!r}")
        if value in ("0%", "100%"):
            return 0  # the kubelet drops these thresholds entirely
        return _Percent(percent / 100)
    amount = _quantity(value, where)
    return ceil_value(amount)


def _quantity(value: object, where: str) -> int | Fraction:
    if not isinstance(value, str | int) or isinstance(value, bool):
        raise InputError(where, f"not a quantity: {value!r}")
    try:
        amount = parse_quantity(value)
    except ValueError:
        raise InputError(where, f"not a quantity: {value!r}") from None
    if amount < 0:
        raise InputError(where, f"negative quantity: {value!r}")
    return amount


class _Fields:
    """Typed access to one mapping, naming the source and field path in every error."""

    def __init__(self, data: Mapping[str, Any], source: str, prefix: str) -> None:
        self.data = data
        self.source = source
        self.prefix = prefix

    def where(self, name: str) -> str:
        return f"{self.source}: {self.prefix}{name}"

    def string(self, name: str, default: str) -> str:
        value = self.data.get(name)
        # null and "" both mean "unset": the kubelet's defaulting tests for the empty string.
        if value is None or value == "":
            return default
        if isinstance(value, bool) or not isinstance(value, str | int):
            raise InputError(self.where(name), f"expected a string, got {_brief(value)}")
        return str(value)

    def choice(self, name: str, default: str, allowed: tuple[str, ...]) -> str:
        value = self.string(name, default)
        if value not in allowed:
            raise InputError(
                self.where(name), f"unknown value {value!r} (expected one of {', '.join(allowed)})"
            )
        return value

    def mapping(self, name: str) -> Mapping[str, Any] | None:
        value = self.data.get(name)
        if value is None:
            return None
        if not isinstance(value, Mapping):
            raise InputError(self.where(name), f"expected a mapping, got {_brief(value)}")
        return value

    def string_map(self, name: str) -> dict[str, str]:
        raw = self.mapping(name) or {}
        result: dict[str, str] = {}
        for key, value in raw.items():
            # YAML turns unquoted true/5 into bool/int; the kubelet's map[string]string wants
            # strings, but the intent is unambiguous, so take it as the kubelet's text form.
            if isinstance(value, bool):
                result[str(key)] = "true" if value else "false"
            elif isinstance(value, str | int | float):
                result[str(key)] = str(value)
            else:
                raise InputError(self.where(f"{name}.{key}"), f"expected a string, got {_brief(value)}")
        return result


def _resource_amounts(fields: _Fields, name: str) -> dict[str, int]:
    result: dict[str, int] = {}
    for resource, value in (fields.mapping(name) or {}).items():
        amount = _quantity(value, fields.where(f"{name}.{resource}"))
        result[str(resource)] = milli_value(amount) if resource == "cpu" else ceil_value(amount)
    return result


def _reserved_memory(fields: _Fields) -> dict[int, dict[str, int]]:
    raw = fields.data.get("reservedMemory")
    if raw is None:
        return {}
    if not isinstance(raw, list):
        raise InputError(fields.where("reservedMemory"), f"expected a list, got {_brief(raw)}")
    result: dict[int, dict[str, int]] = {}
    for index, entry in enumerate(raw):
        item = f"reservedMemory[{index}]"
        if not isinstance(entry, Mapping):
            raise InputError(fields.where(item), f"expected a mapping, got {_brief(entry)}")
        node = entry.get("numaNode", 0)  # Go's zero value when absent
        if isinstance(node, bool) or not isinstance(node, int) or node < 0:
            raise InputError(fields.where(f"{item}.numaNode"), f"not a NUMA node id: {node!r}")
        limits = entry.get("limits") or {}
        if not isinstance(limits, Mapping):
            raise InputError(fields.where(f"{item}.limits"), f"expected a mapping, got {_brief(limits)}")
        per_node = result.setdefault(node, {})
        for resource, value in limits.items():
            where = fields.where(f"{item}.limits.{resource}")
            if resource in per_node:
                # The kubelet rejects a (NUMA node, resource) pair given twice.
                raise InputError(where, f"duplicate reservation for NUMA node {node}")
            per_node[str(resource)] = ceil_value(_quantity(value, where))
    return result


def _eviction_hard(fields: _Fields) -> dict[str, str]:
    given = fields.mapping("evictionHard")
    if given is None:
        return default_eviction_hard()
    result = fields.string_map("evictionHard")
    # Setting any threshold drops the other defaults, unless the (1.33+) merge switch is on.
    if fields.data.get("mergeDefaultEvictionSettings") is True:
        result = {**DEFAULT_EVICTION_HARD, **result}
    for signal, text in result.items():
        _parse_threshold(text, fields.where(f"evictionHard.{signal}"))
    return result


def _feature_gates(fields: _Fields) -> dict[str, bool]:
    result: dict[str, bool] = {}
    for gate, value in (fields.mapping("featureGates") or {}).items():
        flag = value if isinstance(value, bool) else go_bool(str(value))
        if flag is None:
            raise InputError(fields.where(f"featureGates.{gate}"), f"not a boolean: {value!r}")
        result[str(gate)] = flag
    return result


def _max_numa_nodes(options: Mapping[str, str], fields: _Fields) -> int:
    text = options.get(MAX_ALLOWABLE_NUMA_NODES)
    if text is None:
        return DEFAULT_MAX_NUMA_NODES
    where = fields.where(f"topologyManagerPolicyOptions.{MAX_ALLOWABLE_NUMA_NODES}")
    try:
        value = int(text.strip())
    except ValueError:
        raise InputError(where, f"not an integer: {text!r}") from None
    if value < 0:
        raise InputError(where, f"negative NUMA node limit: {text!r}")
    # The kubelet treats 0 as "not set".
    return value or DEFAULT_MAX_NUMA_NODES


def _max_pods(fields: _Fields) -> int:
    value = fields.data.get("maxPods")
    if value is None:
        return DEFAULT_MAX_PODS
    if isinstance(value, bool) or not isinstance(value, int):
        raise InputError(fields.where("maxPods"), f"expected an integer, got {_brief(value)}")
    if value < 0:  # the kubelet's validation refuses a negative maxPods
        raise InputError(fields.where("maxPods"), f"must not be negative, got {value}")
    return value or DEFAULT_MAX_PODS  # 0 is unset, defaulted to 110


def _check_options(options: Mapping[str, str], fields: _Fields) -> None:
    value = options.get(PREFER_CLOSEST_NUMA_NODES)
    if value is not None and go_bool(value) is None:
        where = fields.where(f"topologyManagerPolicyOptions.{PREFER_CLOSEST_NUMA_NODES}")
        raise InputError(where, f"not a boolean: {value!r}")


def _reserved_cpus(fields: _Fields) -> frozenset[int]:
    text = fields.string("reservedSystemCPUs", "")
    try:
        return parse_cpuset(text)
    except ValueError as e:
        raise InputError(fields.where("reservedSystemCPUs"), str(e)) from None


def unwrap_document(data: object, source: str) -> tuple[Mapping[str, Any], str]:
    """Find the KubeletConfiguration inside a document; return it and its field path prefix."""
    if not isinstance(data, Mapping):
        raise InputError(source, f"expected a KubeletConfiguration mapping, got {type(data).__name__}")
    if isinstance(data.get("kubeletconfig"), Mapping):  # /configz body
        return data["kubeletconfig"], "kubeletconfig."
    kind = data.get("kind")
    api_version = str(data.get("apiVersion") or "")
    if kind == "KubeletConfig" and api_version.startswith(_OPENSHIFT_API_GROUP):
        spec = data.get("spec")
        inner = spec.get("kubeletConfig") if isinstance(spec, Mapping) else None
        if not isinstance(inner, Mapping):
            raise InputError(f"{source}: spec.kubeletConfig", "missing or not a mapping")
        return inner, "spec.kubeletConfig."
    return data, ""


def check_kind(config: Mapping[str, Any], source: str, prefix: str) -> None:
    # Catch a wrong file (a Pod, a kubeconfig) early instead of silently publishing defaults.
    kind = config.get("kind")
    if kind is not None and kind != "KubeletConfiguration":
        raise InputError(f"{source}: {prefix}kind", f"not a KubeletConfiguration: {kind!r}")
    api_version = config.get("apiVersion")
    if api_version is not None and not str(api_version).startswith(_CONFIG_API_GROUP):
        raise InputError(f"{source}: {prefix}apiVersion", f"not a kubelet config API: {api_version!r}")


def parse_kubelet_config(data: object, source: str = "<kubelet config>") -> KubeletConfig:
    """Build a :class:`KubeletConfig` from decoded YAML/JSON of any supported shape."""
    config, prefix = unwrap_document(data, source)
    check_kind(config, source, prefix)
    fields = _Fields(config, source, prefix)
    tm_options = fields.string_map("topologyManagerPolicyOptions")
    _check_options(tm_options, fields)
    return KubeletConfig(
        topology_manager_policy=fields.choice("topologyManagerPolicy", "none", TOPOLOGY_MANAGER_POLICIES),
        topology_manager_scope=fields.choice("topologyManagerScope", "container", TOPOLOGY_MANAGER_SCOPES),
        topology_manager_policy_options=tm_options,
        max_numa_nodes=_max_numa_nodes(tm_options, fields),
        cpu_manager_policy=fields.choice("cpuManagerPolicy", "none", CPU_MANAGER_POLICIES),
        cpu_manager_policy_options=fields.string_map("cpuManagerPolicyOptions"),
        reserved_system_cpus=_reserved_cpus(fields),
        memory_manager_policy=fields.choice("memoryManagerPolicy", "None", MEMORY_MANAGER_POLICIES),
        reserved_memory=_reserved_memory(fields),
        kube_reserved=_resource_amounts(fields, "kubeReserved"),
        system_reserved=_resource_amounts(fields, "systemReserved"),
        eviction_hard=_eviction_hard(fields),
        feature_gates=_feature_gates(fields),
        max_pods=_max_pods(fields),
        source=source,
    )
