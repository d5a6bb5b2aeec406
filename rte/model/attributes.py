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
    "CPU_MANAGER_POLICY",
    "FINGERPRINT",
    "FINGERPRINT_ANNOTATION",
    "FINGERPRINT_METHOD",
    "HEARTBEAT_LEASE_NAMESPACE",
    "MEMORY_MANAGER_POLICY",
    "NON_NUMA_DEVICES",
    "RESERVED_SYSTEM_CPUS",
    "TOPOLOGY_MANAGER_MAX_NUMA_NODES",
    "TOPOLOGY_MANAGER_OPTION_PREFIX",
    "TOPOLOGY_MANAGER_POLICY",
    "TOPOLOGY_MANAGER_SCOPE",
    "TOPOLOGY_POLICIES",
    "TOPOLOGY_SCOPES",
    "ZONE_CPU_UTILIZATION",
    "ZONE_MEMORY_PRESSURE",
]

TOPOLOGY_MANAGER_POLICY = "topologyManagerPolicy"
TOPOLOGY_MANAGER_SCOPE = "topologyManagerScope"
TOPOLOGY_MANAGER_MAX_NUMA_NODES = "topologyManagerMaxNUMANodes"
TOPOLOGY_MANAGER_OPTION_PREFIX = "topologyManagerOption"
CPU_MANAGER_POLICY = "cpuManagerPolicy"
MEMORY_MANAGER_POLICY = "memoryManagerPolicy"
RESERVED_SYSTEM_CPUS = "reservedSystemCPUs"
"""Node-level attribute, informational: the kubelet's ``reservedSystemCPUs`` as a cpuset."""

TOPOLOGY_POLICIES = ("none", "best-effort", "restricted", "single-numa-node")
TOPOLOGY_SCOPES = ("container", "pod")

NON_NUMA_DEVICES = "nodeNonTopologyResources"
"""Node-level attribute: device resources whose devices report no NUMA locality (``name=count,...``)."""

ZONE_CPU_UTILIZATION = "cpuUtilizationPercent"
"""Zone attribute: integer percent of the zone's CPU time busy, published only when it leaves a band."""
ZONE_MEMORY_PRESSURE = "memoryPressurePercent"
"""Zone attribute: integer percent of the zone's memory in use, published only when it leaves a band."""

HEARTBEAT_LEASE_NAMESPACE = "rte"
"""The agent renews ``coordination.k8s.io/v1`` Lease ``<node name>`` in this namespace (by default)
as its freshness signal, so liveness never costs an NRT rewrite.

A renewal vouches for the NRT, not for the process: the agent renews only while its published NRT
is current (it talked to the kubelet, confirmed the stored object recently, and nothing failed
since). A running agent that cannot vouch (kubelet gone, nothing published, writes failing)
withholds renewals, so ``spec.renewTime`` ages exactly as a dead agent's would, and a consumer
needs nothing but ``renewTime`` and its own maximum age to stop trusting the NRT."""
