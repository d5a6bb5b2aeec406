"""Names both halves must agree on: well-known NRT attributes and the freshness heartbeat.

Topology Manager attributes follow the scheduler-plugins convention (kubelet field name in
camelCase, kubelet value verbatim). The load attributes and the heartbeat Lease are rte's own
additions; consumers that do not know them ignore them.
"""

from __future__ import annotations

from rte.model.fingerprint import ANNOTATION as FINGERPRINT_ANNOTATION
from rte.model.fingerprint import ATTRIBUTE as FINGERPRINT
from rte.model.fingerprint import ATTRIBUTE_METHOD as FINGERPRINT_METHOD

__all__ = [
    "CPU_MANAGER_AVAILABLE_PHYSICAL_CPUS",
    "CPU_MANAGER_OPTION_PREFIX",
    "CPU_MANAGER_POLICY",
    "CPU_MANAGER_THREADS_PER_CORE",
    "FINGERPRINT",
    "FINGERPRINT_ANNOTATION",
    "FINGERPRINT_METHOD",
    "HEARTBEAT_LEASE_NAMESPACE",
    "KUBELET_FEATURE_GATE_PREFIX",
    "MEMORY_MANAGER_NUMA_GROUPS",
    "MEMORY_MANAGER_POLICY",
    "NON_NUMA_DEVICES",
    "TOPOLOGY_MANAGER_MAX_NUMA_NODES",
    "TOPOLOGY_MANAGER_OPTION_PREFIX",
    "TOPOLOGY_MANAGER_POLICY",
    "TOPOLOGY_MANAGER_SCOPE",
    "TOPOLOGY_POLICIES",
    "TOPOLOGY_SCOPES",
    "UNKNOWN_NUMA_DEVICES",
    "ZONE_CPU_UTILIZATION",
    "ZONE_MEMORY_PRESSURE",
]

TOPOLOGY_MANAGER_POLICY = "topologyManagerPolicy"
TOPOLOGY_MANAGER_SCOPE = "topologyManagerScope"
TOPOLOGY_MANAGER_MAX_NUMA_NODES = "topologyManagerMaxNUMANodes"
TOPOLOGY_MANAGER_OPTION_PREFIX = "topologyManagerOption"
CPU_MANAGER_POLICY = "cpuManagerPolicy"
MEMORY_MANAGER_POLICY = "memoryManagerPolicy"

TOPOLOGY_POLICIES = ("none", "best-effort", "restricted", "single-numa-node")
TOPOLOGY_SCOPES = ("container", "pod")

NON_NUMA_DEVICES = "nodeNonTopologyResources"
"""Node-level attribute: device resources whose devices report no NUMA locality (``name=count,...``)."""

# What kubelet-exact admission needs beyond the Topology Manager attributes (rte's additions;
# a consumer that does not know them ignores them).

CPU_MANAGER_OPTION_PREFIX = "cpuManagerOption"
"""Prefix of one ``true``/``false`` attribute per boolean CPU manager policy option, the option
camel-cased like the Topology Manager's (``full-pcpus-only`` -> ``cpuManagerOptionFullPcpusOnly``)."""
CPU_MANAGER_THREADS_PER_CORE = "cpuManagerThreadsPerCore"
"""Node-level attribute: logical CPUs per physical core (the CPU manager's ``CPUsPerCore()``)."""
CPU_MANAGER_AVAILABLE_PHYSICAL_CPUS = "cpuManagerAvailablePhysicalCPUs"
"""Node-level attribute, only with ``full-pcpus-only``: the count the kubelet's SMT check compares
a request against (free CPUs minus the core siblings of the reserved CPUs)."""
MEMORY_MANAGER_NUMA_GROUPS = "memoryManagerNUMAGroups"
"""Node-level attribute: NUMA ids the Static memory manager has bound together for multi-NUMA
allocations, ``;``-separated groups in cpuset list syntax (``0-1;2-3``); only groups of 2+ nodes."""
UNKNOWN_NUMA_DEVICES = "nodeUnknownNUMAResources"
"""Node-level attribute: devices reported with a topology whose NUMA node is unknown (-1),
``name=count,...``. They count toward no NUMA mask, so a request that needs them gets no hint."""
KUBELET_FEATURE_GATE_PREFIX = "kubeletFeatureGate"
"""Prefix of one ``true``/``false`` attribute per kubelet feature gate that changes admission
(``kubeletFeatureGatePodLevelResources``, ``kubeletFeatureGatePodLevelResourceManagers``), with
the kubelet's default when its config does not set the gate."""

ZONE_CPU_UTILIZATION = "cpuUtilizationPercent"
"""Zone attribute: integer percent of the zone's CPU time busy, published only when it leaves a band."""
ZONE_MEMORY_PRESSURE = "memoryPressurePercent"
"""Zone attribute: integer percent of the zone's memory in use, published only when it leaves a band."""

HEARTBEAT_LEASE_NAMESPACE = "rte"
"""The agent renews ``coordination.k8s.io/v1`` Lease ``<node name>`` in this namespace (by default)
as its freshness signal, so liveness never costs an NRT rewrite."""
