"""What the published object says: attributes from the kubelet config, topologyPolicies, fingerprint."""

from __future__ import annotations

import pytest

from rte.agent.compute.accounting import Accounting
from rte.agent.compute.builder import build_topology, config_attributes, legacy_topology_policy
from rte.host.kubelet_config import KubeletConfig, parse_kubelet_config
from rte.host.kubelet_config_files import load_kubelet_config
from rte.model import fingerprint as fp
from rte.model.topology import Attribute, ResourceInfo, Zone
from rte.model.vocabulary import FingerprintMethod
from tests.helpers.paths import KUBELET_FIXTURES

FIXTURES = KUBELET_FIXTURES
ZONES = (Zone("node-0", resources=(ResourceInfo("cpu", 4, 4, 4),)),)


def test_default_config_publishes_policy_none_rather_than_an_empty_string() -> None:
    assert config_attributes(KubeletConfig()) == [
        ("cpuManagerPolicy", "none"),
        ("kubeletFeatureGatePodLevelResourceManagers", "false"),
        ("kubeletFeatureGatePodLevelResources", "true"),
        ("memoryManagerPolicy", "None"),
        ("topologyManagerMaxNUMANodes", "8"),
        ("topologyManagerPolicy", "none"),
        ("topologyManagerScope", "container"),
    ]


def test_topology_manager_options_become_camel_case_true_false_attributes() -> None:
    config = parse_kubelet_config(
        {
            "topologyManagerPolicy": "best-effort",
            "topologyManagerScope": "pod",
            "topologyManagerPolicyOptions": {
                "prefer-closest-numa-nodes": "True",
                "max-allowable-numa-nodes": "16",
            },
            "reservedSystemCPUs": "0,1,2,52-53",
        }
    )
    assert config.max_numa_nodes == 16
    assert config_attributes(config) == [
        ("cpuManagerPolicy", "none"),
        ("kubeletFeatureGatePodLevelResourceManagers", "false"),
        ("kubeletFeatureGatePodLevelResources", "true"),
        ("memoryManagerPolicy", "None"),
        ("reservedSystemCPUs", "0-2,52-53"),
        ("topologyManagerMaxNUMANodes", "16"),
        ("topologyManagerOptionPreferClosestNumaNodes", "true"),
        ("topologyManagerPolicy", "best-effort"),
        ("topologyManagerScope", "pod"),
    ]


def test_a_false_option_is_published_as_false() -> None:
    config = parse_kubelet_config({"topologyManagerPolicyOptions": {"prefer-closest-numa-nodes": "0"}})
    assert ("topologyManagerOptionPreferClosestNumaNodes", "false") in config_attributes(config)


def test_a_future_option_without_a_boolean_value_has_no_attribute_but_is_kept() -> None:
    config = parse_kubelet_config(
        {"topologyManagerPolicyOptions": {"future-knob": "fast", "future-flag": "t"}}
    )
    names = dict(config_attributes(config))
    assert names["topologyManagerOptionFutureFlag"] == "true"
    assert not any("FutureKnob" in name for name in names)
    assert config.topology_manager_policy_options["future-knob"] == "fast"


def test_attributes_are_sorted_and_unique_for_every_fixture() -> None:
    for path in sorted((FIXTURES / "config").glob("*.yaml")):
        attrs = config_attributes(load_kubelet_config(path))
        names = [name for name, _ in attrs]
        assert names == sorted(set(names)), path


@pytest.mark.parametrize(
    ("policy", "scope", "expected"),
    [
        ("none", "container", "None"),
        ("none", "pod", "None"),
        ("single-numa-node", "container", "SingleNUMANodeContainerLevel"),
        ("single-numa-node", "pod", "SingleNUMANodePodLevel"),
        ("restricted", "container", "RestrictedContainerLevel"),
        ("restricted", "pod", "RestrictedPodLevel"),
        ("best-effort", "container", "BestEffortContainerLevel"),
        ("best-effort", "pod", "BestEffortPodLevel"),
    ],
)
def test_deprecated_topology_policies_value_follows_policy_and_scope(
    policy: str, scope: str, expected: str
) -> None:
    config = parse_kubelet_config({"topologyManagerPolicy": policy, "topologyManagerScope": scope})
    assert legacy_topology_policy(config) == expected


def test_the_fixture_configs_give_their_deprecated_topology_policies() -> None:
    nrop = load_kubelet_config(FIXTURES / "config" / "nrop-openshift-KubeletConfig-cr.yaml")
    assert legacy_topology_policy(nrop) == "SingleNUMANodePodLevel"
    assert legacy_topology_policy(parse_kubelet_config({})) == "None"


def test_without_a_config_or_counted_pods_the_object_has_neither_attributes_nor_a_fingerprint() -> None:
    topology = build_topology(
        "n1", Accounting(ZONES), config=None, fingerprint_pods=None, fingerprint_method=FingerprintMethod.ALL
    )
    assert topology.attributes == ()
    assert topology.topology_policies == ()
    assert topology.annotations == {}


def test_the_object_carries_config_attributes_non_numa_devices_and_the_fingerprint() -> None:
    config = parse_kubelet_config({"topologyManagerPolicy": "restricted", "topologyManagerScope": "pod"})
    accounting = Accounting(ZONES, non_numa_devices={"example.com/gpu": 2, "example.com/nic": 1})
    topology = build_topology(
        "n1",
        accounting,
        config=config,
        fingerprint_pods=[("ns", "a")],
        fingerprint_method=FingerprintMethod.ALL,
    )
    sign = fp.compute([("ns", "a")])
    assert topology.topology_policies == ("RestrictedPodLevel",)
    assert topology.annotations == {fp.ANNOTATION: sign}
    attrs = {a.name: a.value for a in topology.attributes}
    assert attrs == {
        **dict(config_attributes(config)),
        "nodeTopologyPodsFingerprint": sign,
        "nodeTopologyPodsFingerprintMethod": "all",
        "nodeNonTopologyResources": "example.com/gpu=2,example.com/nic=1",
    }
    assert list(topology.attributes) == sorted(topology.attributes, key=lambda a: a.name)
    assert Attribute("topologyManagerScope", "pod") in topology.attributes


# -- what kubelet-exact admission needs ------------------------------------------------------------


def _attrs(accounting: Accounting, config: KubeletConfig | None) -> dict[str, str]:
    topology = build_topology(
        "n1", accounting, config=config, fingerprint_pods=None, fingerprint_method=FingerprintMethod.ALL
    )
    return {a.name: a.value for a in topology.attributes}


def test_boolean_cpu_manager_options_become_camel_case_attributes_and_others_are_left_out() -> None:
    config = parse_kubelet_config(
        {
            "cpuManagerPolicy": "static",
            "cpuManagerPolicyOptions": {
                "full-pcpus-only": "true",
                "distribute-cpus-across-numa": "false",
                "future-knob": "fast",
            },
        }
    )
    names = dict(config_attributes(config))
    assert names["cpuManagerOptionFullPcpusOnly"] == "true"
    assert names["cpuManagerOptionDistributeCpusAcrossNuma"] == "false"
    assert not any("FutureKnob" in name for name in names)


def test_threads_per_core_are_published_and_free_physical_cpus_only_with_full_pcpus_only() -> None:
    accounting = Accounting(ZONES, threads_per_core=2, available_physical_cpus=40)
    plain = parse_kubelet_config({"cpuManagerPolicy": "static"})
    strict = parse_kubelet_config(
        {"cpuManagerPolicy": "static", "cpuManagerPolicyOptions": {"full-pcpus-only": "true"}}
    )
    assert _attrs(accounting, plain)["cpuManagerThreadsPerCore"] == "2"
    assert "cpuManagerAvailablePhysicalCPUs" not in _attrs(accounting, plain)
    assert _attrs(accounting, strict)["cpuManagerAvailablePhysicalCPUs"] == "40"
    assert "cpuManagerThreadsPerCore" not in _attrs(Accounting(ZONES), plain)  # unknown: not published


def test_memory_groups_are_cpuset_lists_joined_by_semicolons_and_absent_without_groups() -> None:
    grouped = Accounting(ZONES, memory_numa_groups=((0, 1), (2, 3, 5)))
    assert _attrs(grouped, None)["memoryManagerNUMAGroups"] == "0-1;2-3,5"
    assert "memoryManagerNUMAGroups" not in _attrs(Accounting(ZONES), None)


def test_devices_of_unknown_numa_are_published_apart_from_devices_without_topology() -> None:
    accounting = Accounting(
        ZONES, non_numa_devices={"example.com/dsp": 1}, unknown_numa_devices={"example.com/gpu": 2}
    )
    attrs = _attrs(accounting, None)
    assert attrs["nodeUnknownNUMAResources"] == "example.com/gpu=2"
    assert attrs["nodeNonTopologyResources"] == "example.com/dsp=1"


def test_pod_level_resources_gates_are_published_with_the_kubelets_defaults_unless_set() -> None:
    default = dict(config_attributes(parse_kubelet_config({})))
    assert default["kubeletFeatureGatePodLevelResources"] == "true"
    assert default["kubeletFeatureGatePodLevelResourceManagers"] == "false"
    gates = {"featureGates": {"PodLevelResources": False, "PodLevelResourceManagers": True, "Other": True}}
    chosen = dict(config_attributes(parse_kubelet_config(gates)))
    assert chosen["kubeletFeatureGatePodLevelResources"] == "false"
    assert chosen["kubeletFeatureGatePodLevelResourceManagers"] == "true"
    assert "kubeletFeatureGateOther" not in chosen  # only the gates that change admission
