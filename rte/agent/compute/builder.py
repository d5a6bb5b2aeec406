"""Assemble the NodeTopology the agent publishes: every rule about what the object says.

* Topology Manager attributes follow the scheduler-plugins convention (the kubelet field name in
  camelCase, the kubelet value verbatim), with the kubelet's defaults applied, so an unset policy
  is published as ``none`` rather than ``""``. ``cpuManagerPolicy``, ``memoryManagerPolicy`` and
  ``reservedSystemCPUs`` are informational.
* Boolean Topology Manager policy options become ``topologyManagerOption<CamelCase>`` with
  ``true``/``false``; ``max-allowable-numa-nodes`` is ``topologyManagerMaxNUMANodes`` instead.
* The deprecated ``topologyPolicies`` is kept consistent with policy and scope for old consumers.
* Device resources without NUMA locality are listed in one node-level attribute, devices whose
  NUMA node is unknown (the device manager aligns their resource but matches them to no node) in
  another.
* What a consumer needs to decide admission exactly as the kubelet does, named like the Topology
  Manager attributes: boolean CPU manager options (``cpuManagerOption<CamelCase>``), threads per
  core, the free physical CPUs the ``full-pcpus-only`` check counts (only with that option on),
  the socket of every NUMA node with CPUs (``align-by-socket`` and the packed allocator's order),
  the memory manager's multi-NUMA groups, and the pod-level resources feature gates with the
  kubelet's defaults applied.
* The pod fingerprint, its method and the legacy annotation are published whenever pods were
  counted, also for an empty set.
* The numaplacement metadata, when :mod:`rte.agent.compute.placement` computed one (its vectors are zone
  attributes, added with the zones).

The attribute names are in :mod:`rte.model.attributes`, shared with the consumer.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from rte.agent.compute.accounting import Accounting
from rte.host.kubelet_config import (
    ADMISSION_FEATURE_GATES,
    FULL_PCPUS_ONLY_OPTION,
    MAX_ALLOWABLE_NUMA_NODES,
    KubeletConfig,
    go_bool,
)
from rte.model import attributes as names
from rte.model import fingerprint as fp
from rte.model import numaplacement as npl
from rte.model.cpuset import format_cpuset
from rte.model.shared_devices import MAX_GROUPS as MAX_SHARED_GROUPS
from rte.model.shared_devices import format_shared_devices
from rte.model.topology import Attribute, NodeTopology
from rte.model.topology_manager import LEGACY_TOPOLOGY_POLICIES, LEGACY_TOPOLOGY_POLICY_NONE
from rte.model.vocabulary import FingerprintMethod

# The deprecated NRT ``topologyPolicies`` value of each (policy, scope); old consumers read it.
_LEGACY_TOPOLOGY_POLICY_OF = {v: k for k, v in LEGACY_TOPOLOGY_POLICIES.items()}


def legacy_topology_policy(config: KubeletConfig) -> str:
    """The deprecated ``topologyPolicies`` value matching the config's policy and scope."""
    key = (config.topology_manager_policy, config.topology_manager_scope)
    return _LEGACY_TOPOLOGY_POLICY_OF.get(key, LEGACY_TOPOLOGY_POLICY_NONE)


def config_attributes(config: KubeletConfig) -> list[tuple[str, str]]:
    """The node-level attributes the kubelet config gives, sorted by name.

    Names follow the convention of kubernetes-sigs/scheduler-plugins
    ``pkg/noderesourcetopology/README.md`` ("Topology Manager configuration"): the kubelet config
    field in camelCase, its value verbatim.
    """
    attrs: dict[str, str] = {
        names.TOPOLOGY_MANAGER_POLICY: config.topology_manager_policy,
        names.TOPOLOGY_MANAGER_SCOPE: config.topology_manager_scope,
        names.TOPOLOGY_MANAGER_MAX_NUMA_NODES: str(config.max_numa_nodes),
        names.CPU_MANAGER_POLICY: config.cpu_manager_policy,
        names.MEMORY_MANAGER_POLICY: config.memory_manager_policy,
    }
    for option, value in config.topology_manager_policy_options.items():
        if option == MAX_ALLOWABLE_NUMA_NODES:
            continue  # published as topologyManagerMaxNUMANodes
        flag = go_bool(value)
        # The convention only defines true/false values; an option the kubelet might add later
        # with another kind of value has no attribute form, so it is left out.
        if flag is not None:
            attrs[names.TOPOLOGY_MANAGER_OPTION_PREFIX + _camel_case(option)] = "true" if flag else "false"
    for option, value in config.cpu_manager_policy_options.items():
        flag = go_bool(value)
        if flag is not None:  # every CPU manager option so far is boolean; others have no form
            attrs[names.CPU_MANAGER_OPTION_PREFIX + _camel_case(option)] = "true" if flag else "false"
    for gate in ADMISSION_FEATURE_GATES:
        attrs[names.KUBELET_FEATURE_GATE_PREFIX + gate] = "true" if config.feature_gate(gate) else "false"
    if config.reserved_system_cpus:
        attrs[names.RESERVED_SYSTEM_CPUS] = format_cpuset(config.reserved_system_cpus)
    return sorted(attrs.items())


def full_pcpus_only(config: KubeletConfig | None) -> bool:
    """Whether the CPU manager enforces whole physical cores (``full-pcpus-only``)."""
    if config is None or config.cpu_manager_policy != "static":
        return False
    return go_bool(config.cpu_manager_policy_options.get(FULL_PCPUS_ONLY_OPTION, "false")) is True


def accounting_attributes(accounting: Accounting, config: KubeletConfig | None) -> dict[str, str]:
    """The node-level attributes the accounting gives: devices outside zones, CPU and memory facts."""
    attrs: dict[str, str] = {}
    if accounting.non_numa_devices:
        attrs[names.NON_NUMA_DEVICES] = _counts(accounting.non_numa_devices)
    if accounting.unknown_numa_devices:
        attrs[names.UNKNOWN_NUMA_DEVICES] = _counts(accounting.unknown_numa_devices)
    if accounting.shared_devices and len(accounting.shared_devices) <= MAX_SHARED_GROUPS:
        attrs[names.MULTI_NUMA_DEVICES] = format_shared_devices(accounting.shared_devices)
    if accounting.threads_per_core is not None:
        attrs[names.CPU_MANAGER_THREADS_PER_CORE] = str(accounting.threads_per_core)
    if accounting.available_physical_cpus is not None and full_pcpus_only(config):
        attrs[names.CPU_MANAGER_AVAILABLE_PHYSICAL_CPUS] = str(accounting.available_physical_cpus)
    if accounting.numa_sockets:
        attrs[names.CPU_MANAGER_NUMA_SOCKETS] = numa_sockets_value(accounting.numa_sockets)
    if accounting.memory_numa_groups:
        groups = ";".join(format_cpuset(g) for g in accounting.memory_numa_groups)
        attrs[names.MEMORY_MANAGER_NUMA_GROUPS] = groups
    return attrs


def numa_sockets_value(sockets: Mapping[int, frozenset[int]]) -> str:
    """The value of :data:`~rte.model.attributes.CPU_MANAGER_NUMA_SOCKETS`: ``0=0;1=0;2=1``."""
    return ";".join(f"{numa}={format_cpuset(ids)}" for numa, ids in sorted(sockets.items()))


def _counts(counts: Mapping[str, int]) -> str:
    return ",".join(f"{k}={v}" for k, v in sorted(counts.items()))


def _camel_case(option: str) -> str:
    """``prefer-closest-numa-nodes`` -> ``PreferClosestNumaNodes``."""
    return "".join(part[:1].upper() + part[1:] for part in option.split("-") if part)


def build_topology(
    node_name: str,
    accounting: Accounting,
    *,
    config: KubeletConfig | None,
    fingerprint_pods: Sequence[tuple[str, str]] | None,
    fingerprint_method: FingerprintMethod,
    fingerprint: str | None = None,
    placement_metadata: str | None = None,
) -> NodeTopology:
    """The canonical object for this node.

    ``config`` None (no kubelet config known): no Topology Manager attributes, no
    ``topologyPolicies``. ``fingerprint_pods`` None: nothing was counted, so no fingerprint.
    ``fingerprint``: the fingerprint of ``fingerprint_pods`` when the caller has it already.
    ``placement_metadata``: the numaplacement node attribute, None for none.
    """
    attrs: dict[str, str] = {}
    annotations: dict[str, str] = {}
    policies: tuple[str, ...] = ()
    if config is not None:
        attrs.update(config_attributes(config))
        policies = (legacy_topology_policy(config),)
    attrs.update(accounting_attributes(accounting, config))
    if fingerprint_pods is not None:
        sign = fingerprint if fingerprint is not None else fp.compute(fingerprint_pods)
        attrs[fp.ATTRIBUTE] = sign
        attrs[fp.ATTRIBUTE_METHOD] = fingerprint_method.value
        annotations[fp.ANNOTATION] = sign
    if placement_metadata is not None:
        attrs[npl.METADATA_ATTRIBUTE] = placement_metadata
    return NodeTopology(
        name=node_name,
        zones=accounting.zones,
        attributes=tuple(Attribute(k, v) for k, v in attrs.items()),
        topology_policies=policies,
        annotations=annotations,
    ).canonical()
