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
    "CPU_MANAGER_NUMA_SOCKETS",
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
    "MULTI_NUMA_DEVICES",
    "NON_NUMA_DEVICES",
    "RESERVED_SYSTEM_CPUS",
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
RESERVED_SYSTEM_CPUS = "reservedSystemCPUs"
"""Node-level attribute, informational: the kubelet's ``reservedSystemCPUs`` as a cpuset."""

TOPOLOGY_POLICIES = ("none", "best-effort", "restricted", "single-numa-node")
TOPOLOGY_SCOPES = ("container", "pod")

NON_NUMA_DEVICES = "nodeNonTopologyResources"
"""Node-level attribute: device resources whose devices report no NUMA locality (``name=count,...``)."""

# rte's additions for kubelet-exact admission, named like the Topology Manager attributes.
CPU_MANAGER_OPTION_PREFIX = "cpuManagerOption"
"""Node-level attribute prefix: each boolean CPU manager policy option of the kubelet config,
camel-cased like ``topologyManagerOption*`` (``full-pcpus-only`` ->
``cpuManagerOptionFullPcpusOnly``), valued ``true``/``false``; non-boolean options are left out."""
CPU_MANAGER_THREADS_PER_CORE = "cpuManagerThreadsPerCore"
"""Node-level attribute: logical CPUs per physical core (the CPU manager's ``CPUsPerCore()``),
an integer, from sysfs."""
CPU_MANAGER_AVAILABLE_PHYSICAL_CPUS = "cpuManagerAvailablePhysicalCPUs"
"""Node-level attribute, only with ``full-pcpus-only`` on: the number the kubelet's SMT check
compares a request with (``GetAvailablePhysicalCPUs``: free CPUs minus the core siblings of the
reserved CPUs)."""
CPU_MANAGER_NUMA_SOCKETS = "cpuManagerNUMASockets"
"""Node-level attribute: the socket (sysfs ``physical_package_id``) of every NUMA node that has
CPUs, ``;``-separated ``<NUMA id>=<socket ids>`` with the socket ids in cpuset list syntax
(``0=0;1=0;2=1;3=1`` for two sockets of two NUMA nodes each; ``0=0-1`` when one NUMA node spans
two sockets). What the CPU manager's ``align-by-socket`` option and its packed allocator
(``takeByTopologyNUMAPacked``: whole sockets before whole NUMA nodes when NUMA nodes nest in
sockets) decide by; absent when sysfs does not say the socket of every CPU."""
MEMORY_MANAGER_NUMA_GROUPS = "memoryManagerNUMAGroups"
"""Node-level attribute: the groups of NUMA ids the Static memory manager has bound together for
multi-NUMA allocations, ``;``-separated, each in cpuset list syntax (``0-1;2-3``); only groups of
two nodes or more; absent when there are none."""
UNKNOWN_NUMA_DEVICES = "nodeUnknownNUMAResources"
"""Node-level attribute: the *free* devices (allocatable and held by no pod) of a resource the
device manager aligns whose NUMA node is unknown (-1, an id the machine lacks, or no topology
while other devices of the resource have one), ``name=count,...``; a resource whose such devices
are all held is published with 0. The device manager counts them toward no NUMA mask, so a
request that needs them gets no hint; the consumer reads the count as the free devices it adds
to the zones' ones. Distinct from :data:`NON_NUMA_DEVICES` (no topology: no constraint)."""
MULTI_NUMA_DEVICES = "nodeMultiNUMAResources"
"""Node-level attribute: devices attached to several NUMA nodes, per resource and NUMA set, free
and allocatable (``nvidia.com/gpu:0-1=1/2;...``, :mod:`rte.model.shared_devices`). The zones still
count each such device in every zone it is attached to; this says which of those counts are one
shared device, so a consumer can count it once per mask as the device manager does."""
KUBELET_FEATURE_GATE_PREFIX = "kubeletFeatureGate"
"""Node-level attribute prefix: ``kubeletFeatureGate<GateName>`` = ``true``/``false`` for the
kubelet feature gates that change admission (pod-level resources, KEP-2837 and KEP-5526), with
the kubelet's default when its config does not set them."""

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
