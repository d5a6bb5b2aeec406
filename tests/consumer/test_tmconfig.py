import pytest

from rte.consumer.tmconfig import TopologyManagerConfig, tm_config_from, tm_config_from_parts
from rte.model.nrt import from_nrt
from rte.model.topology import Attribute


def _cfg(policies: list[str] | None = None, **attrs: str | list[str]) -> TopologyManagerConfig:
    attributes = []
    for name, value in attrs.items():
        for v in value if isinstance(value, list) else [value]:
            attributes.append(Attribute(name, v))
    return tm_config_from_parts(policies or [], attributes)


def test_a_node_with_neither_source_is_none_container_with_eight_numa_nodes() -> None:
    assert _cfg() == TopologyManagerConfig("none", "container", 8)


@pytest.mark.parametrize(
    ("legacy", "policy", "scope"),
    [
        ("SingleNUMANodeContainerLevel", "single-numa-node", "container"),
        ("SingleNUMANodePodLevel", "single-numa-node", "pod"),
        ("RestrictedContainerLevel", "restricted", "container"),
        ("RestrictedPodLevel", "restricted", "pod"),
        ("BestEffortContainerLevel", "best-effort", "container"),
        ("BestEffortPodLevel", "best-effort", "pod"),
        ("Restricted", "none", "container"),
        ("BestEffort", "none", "container"),
        ("None", "none", "container"),
        ("SingleNUMANode", "none", "container"),
    ],
)
def test_topology_policies_first_entry_maps_like_the_reference(legacy: str, policy: str, scope: str) -> None:
    cfg = _cfg([legacy])
    assert (cfg.policy, cfg.scope) == (policy, scope)


def test_only_the_first_topology_policy_counts() -> None:
    assert _cfg(["None", "SingleNUMANodePodLevel"]).policy == "none"


def test_attributes_win_over_topology_policies() -> None:
    cfg = _cfg(
        ["SingleNUMANodePodLevel"], topologyManagerPolicy="best-effort", topologyManagerScope="container"
    )
    assert (cfg.policy, cfg.scope) == ("best-effort", "container")


def test_values_are_matched_exactly_so_capitalised_values_are_ignored() -> None:
    cfg = _cfg(["SingleNUMANodePodLevel"], topologyManagerPolicy="SingleNUMANode", topologyManagerScope="Pod")
    assert (cfg.policy, cfg.scope) == ("single-numa-node", "pod")


def test_the_last_valid_duplicate_attribute_wins() -> None:
    cfg = _cfg(
        topologyManagerPolicy=["restricted", "single-numa-node", "bogus"], topologyManagerScope=["pod"]
    )
    assert (cfg.policy, cfg.scope) == ("single-numa-node", "pod")


@pytest.mark.parametrize(
    ("values", "expected"),
    [
        (["4"], 4),
        (["2"], 2),
        (["1"], 8),  # must be > 1
        (["0"], 8),
        (["-3"], 8),
        (["+16"], 16),  # Go's Atoi takes a sign
        (["016"], 16),
        (["5000"], 1024),  # capped
        (["99999999999999999999"], 8),  # outside int64: Atoi fails, ignored
        ([" 4"], 8),  # Atoi rejects spaces, unlike Python's int()
        (["1_6"], 8),
        (["four"], 8),
        (["4", "x", "6"], 6),
        (["6", "1"], 6),  # an invalid later duplicate does not reset a valid one
    ],
)
def test_max_numa_nodes_attribute_follows_go_atoi_and_the_cap(values: list[str], expected: int) -> None:
    assert _cfg(topologyManagerMaxNUMANodes=values).max_numa_nodes == expected


def test_config_reads_from_a_v1alpha1_object_through_topology_policies() -> None:
    topo = from_nrt(
        {
            "apiVersion": "topology.node.k8s.io/v1alpha1",
            "kind": "NodeResourceTopology",
            "metadata": {"name": "n1"},
            "topologyPolicies": ["SingleNUMANodePodLevel"],
            "zones": [],
        }
    )
    assert tm_config_from(topo) == TopologyManagerConfig("single-numa-node", "pod", 8)
