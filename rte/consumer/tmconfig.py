"""The Topology Manager configuration a consumer reads from an NRT object.

Derived exactly as the reference scheduler plugin derives it, because the policy decides whether
Filter and Score do anything at all and must not differ between us and it:

* start from ``none`` / ``container`` / 8 NUMA nodes (the kubelet's legacy limit);
* map the deprecated ``topologyPolicies[0]`` (the other entries are ignored);
* then walk the node attributes in list order: valid values of ``topologyManagerScope``,
  ``topologyManagerPolicy`` and ``topologyManagerMaxNUMANodes`` overwrite, so attributes win
  over ``topologyPolicies`` and the last valid duplicate wins.

Values are matched exactly: ``Pod`` or ``SingleNUMANode`` are not values and are ignored.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from rte.model.attributes import (
    TOPOLOGY_MANAGER_MAX_NUMA_NODES,
    TOPOLOGY_MANAGER_POLICY,
    TOPOLOGY_MANAGER_SCOPE,
    TOPOLOGY_POLICIES,
    TOPOLOGY_SCOPES,
)
from rte.model.topology import Attribute, NodeTopology
from rte.model.topology_manager import (
    DEFAULT_MAX_NUMA_NODES,
    LEGACY_TOPOLOGY_POLICIES,
    POLICY_NONE,
    POLICY_SINGLE_NUMA_NODE,
    SCOPE_CONTAINER,
    SCOPE_POD,
)

MAX_NUMA_NODES_CAP = 1024

_INT64_MAX = 2**63 - 1


@dataclass(frozen=True, slots=True)
class TopologyManagerConfig:
    """What the consumer believes the node's kubelet Topology Manager is configured to."""

    policy: str = POLICY_NONE
    scope: str = SCOPE_CONTAINER
    max_numa_nodes: int = DEFAULT_MAX_NUMA_NODES
    # Derived flags, fields rather than properties: Filter and Score read them once per node.
    single_numa_node: bool = field(init=False, repr=False, compare=False)
    pod_scope: bool = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "single_numa_node", self.policy == POLICY_SINGLE_NUMA_NODE)
        object.__setattr__(self, "pod_scope", self.scope == SCOPE_POD)


def _go_atoi(text: str) -> int | None:
    """Go's ``strconv.Atoi``: optional sign, ASCII digits only, int64 range; else None.

    Python's ``int()`` is laxer (spaces, underscores, non-ASCII digits), which would accept
    values the reference ignores.
    """
    digits = text[1:] if text[:1] in ("+", "-") else text
    if not digits or not digits.isascii() or not digits.isdigit():
        return None
    value = int(text)
    if not -_INT64_MAX - 1 <= value <= _INT64_MAX:
        return None
    return value


def tm_config_from_parts(
    topology_policies: Iterable[str], attributes: Iterable[Attribute]
) -> TopologyManagerConfig:
    """Derive the config from the deprecated ``topologyPolicies`` list and the node attributes."""
    policy, scope, max_numa = POLICY_NONE, SCOPE_CONTAINER, DEFAULT_MAX_NUMA_NODES
    for first in topology_policies:
        # A bare "Restricted", "BestEffort" or "None" carries no scope: like every unknown
        # value it leaves the defaults alone.
        policy, scope = LEGACY_TOPOLOGY_POLICIES.get(first, (policy, scope))
        break  # only element [0] counts
    for attr in attributes:
        if attr.name == TOPOLOGY_MANAGER_SCOPE and attr.value in TOPOLOGY_SCOPES:
            scope = attr.value
        elif attr.name == TOPOLOGY_MANAGER_POLICY and attr.value in TOPOLOGY_POLICIES:
            policy = attr.value
        elif attr.name == TOPOLOGY_MANAGER_MAX_NUMA_NODES:
            value = _go_atoi(attr.value)
            if value is not None and value > 1:
                max_numa = min(value, MAX_NUMA_NODES_CAP)
    return TopologyManagerConfig(policy=policy, scope=scope, max_numa_nodes=max_numa)


def tm_config_from(topology: NodeTopology) -> TopologyManagerConfig:
    """The Topology Manager config of an NRT object (see the module docstring for the rules)."""
    return tm_config_from_parts(topology.topology_policies, topology.attributes)
