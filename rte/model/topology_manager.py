"""The kubelet Topology Manager's words, as its config and the NRT attributes spell them.

Policy and scope names and the default limit on NUMA nodes come from kubernetes/kubernetes
``pkg/kubelet/cm/topologymanager/`` (``topology_manager.go``, ``policy_*.go``, ``scope.go``).
The host reads them from the kubelet config, the consumer from NRT attributes, and the
simulator's kubelet enforces them; all three use these names.
"""

from __future__ import annotations

POLICY_NONE = "none"
POLICY_BEST_EFFORT = "best-effort"
POLICY_RESTRICTED = "restricted"
POLICY_SINGLE_NUMA_NODE = "single-numa-node"

SCOPE_CONTAINER = "container"
SCOPE_POD = "pod"

DEFAULT_MAX_NUMA_NODES = 8
"""The Topology Manager's historic hard limit on NUMA nodes, still its default."""
