"""The node facts admission reads from an NRT's attributes: the agent's names, the kubelet's
defaults where an attribute is missing or does not parse."""

from __future__ import annotations

from rte.model.admission.facts import facts_from_attributes, parse_counts, parse_groups
from rte.model.admission.node import NodeFacts
from rte.model.topology import Attribute


def _facts(**attrs: str) -> NodeFacts:
    return facts_from_attributes(
        [Attribute(k, v) for k, v in attrs.items()], policy="restricted", scope="pod", max_numa_nodes=8
    )


def test_a_node_without_the_attributes_gets_the_kubelets_defaults() -> None:
    facts = _facts()
    assert (facts.policy, facts.scope) == ("restricted", "pod")
    assert facts.cpu_manager_static and facts.memory_manager_static
    assert not facts.prefer_closest_numa and not facts.full_pcpus_only
    assert facts.threads_per_core is None and facts.memory_groups == ()
    assert facts.pod_level_resources and not facts.pod_level_resource_managers


def test_the_agents_attributes_are_read() -> None:
    facts = _facts(
        cpuManagerPolicy="none",
        memoryManagerPolicy="None",
        topologyManagerOptionPreferClosestNumaNodes="true",
        cpuManagerOptionFullPcpusOnly="true",
        cpuManagerThreadsPerCore="2",
        cpuManagerAvailablePhysicalCPUs="30",
        memoryManagerNUMAGroups="0-1;2-3",
        nodeUnknownNUMAResources="vendor.com/nic=2",
        nodeNonTopologyResources="vendor.com/old=4",
        kubeletFeatureGatePodLevelResources="false",
        kubeletFeatureGatePodLevelResourceManagers="true",
    )
    assert not facts.cpu_manager_static and not facts.memory_manager_static
    assert facts.prefer_closest_numa and facts.full_pcpus_only
    assert (facts.threads_per_core, facts.available_physical_cpus) == (2, 30)
    assert facts.memory_groups == (frozenset({0, 1}), frozenset({2, 3}))
    assert facts.unknown_numa_devices == {"vendor.com/nic": 2}
    assert facts.non_topology_devices == {"vendor.com/old": 4}
    assert not facts.pod_level_resources and facts.pod_level_resource_managers


def test_values_that_do_not_parse_are_ignored() -> None:
    facts = _facts(cpuManagerThreadsPerCore="two", cpuManagerOptionFullPcpusOnly="yes")
    assert facts.threads_per_core is None and not facts.full_pcpus_only
    assert parse_counts("a=1,b,c=x,=3, d = 2") == {"a": 1, "d": 2}
    assert parse_groups("0-1;3;x;4,6") == (frozenset({0, 1}), frozenset({4, 6}))
