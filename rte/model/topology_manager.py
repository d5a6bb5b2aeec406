"""The kubelet Topology Manager's words, as its config and the NRT attributes spell them.

Policy and scope names and the default limit on NUMA nodes come from kubernetes/kubernetes
``pkg/kubelet/cm/topologymanager/`` (``topology_manager.go``, ``policy_*.go``, ``scope.go``).
The host reads them from the kubelet config, the consumer from NRT attributes, and the
simulator's kubelet enforces them; all three use these names.
"""

from __future__ import annotations

from collections.abc import Mapping

POLICY_NONE = "none"
POLICY_BEST_EFFORT = "best-effort"
POLICY_RESTRICTED = "restricted"
POLICY_SINGLE_NUMA_NODE = "single-numa-node"

SCOPE_CONTAINER = "container"
SCOPE_POD = "pod"

DEFAULT_MAX_NUMA_NODES = 8
"""The Topology Manager's historic hard limit on NUMA nodes, still its default."""

LEGACY_TOPOLOGY_POLICIES: Mapping[str, tuple[str, str]] = {
    "SingleNUMANodeContainerLevel": (POLICY_SINGLE_NUMA_NODE, SCOPE_CONTAINER),
    "SingleNUMANodePodLevel": (POLICY_SINGLE_NUMA_NODE, SCOPE_POD),
    "RestrictedContainerLevel": (POLICY_RESTRICTED, SCOPE_CONTAINER),
    "RestrictedPodLevel": (POLICY_RESTRICTED, SCOPE_POD),
    "BestEffortContainerLevel": (POLICY_BEST_EFFORT, SCOPE_CONTAINER),
    "BestEffortPodLevel": (POLICY_BEST_EFFORT, SCOPE_POD),
}
"""The deprecated NRT ``topologyPolicies`` enum (k8stopologyawareschedwg/noderesourcetopology-api
``pkg/apis/topology/v1alpha2/types.go``), each value with the (policy, scope) it stands for. The
bare ``Restricted``, ``BestEffort`` and ``None`` carry no scope: producers never write them and
consumers ignore them."""
LEGACY_TOPOLOGY_POLICY_NONE = "None"
