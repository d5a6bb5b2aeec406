"""One reading of a node in, the object out: compute_topology on the fixture machine and kubelet."""

from __future__ import annotations

from dataclasses import replace

import pytest

from rte.agent.compute.podset import PodGlob
from rte.agent.compute.reading import Checkpoints, KubeletReading, NodeReading, PublishingRules
from rte.agent.compute.topology import compute_topology
from rte.host.kubelet_config_files import load_kubelet_config
from rte.host.kubelet_state import MemoryManagerState, load_memory_manager_state
from rte.host.sysfs import read_machine
from rte.model import fingerprint as fp
from rte.model.nrt import to_nrt
from rte.model.pod import Pod, pod_from_manifest
from rte.model.topology import Attribute, ResourceInfo, Zone
from rte.model.vocabulary import FingerprintMethod, NumaPlacementMode
from rte.podres.files import PodResourcesFiles
from tests.helpers.nrt_schema import schema_errors
from tests.helpers.paths import R640_KUBELET_CONFIG, R640_MEMORY_STATE, R640_STATIC, R640_SYSFS

R640, STATIC, CONFIG, CHECKPOINT = R640_SYSFS, R640_STATIC, R640_KUBELET_CONFIG, R640_MEMORY_STATE
SRIOV = "intel.com/intel_sriov_netdevice"
GiB = 2**30
LISTED = [("cnf", "dpdk-app-0"), ("cnf", "numa1-worker-7f9c"), ("kube-system", "coredns-6d4b75cb6d-x2x8k")]
LOAD = {0: {"cpuUtilizationPercent": "40"}, 1: {"cpuUtilizationPercent": "70", "memoryPressurePercent": "10"}}


def _reading(**changes: object) -> NodeReading:
    files = PodResourcesFiles(STATIC)
    reading = NodeReading(
        node_name="r640",
        machine=read_machine(R640, pci=False),
        config=load_kubelet_config(CONFIG),
        kubelet=KubeletReading(
            files.get_allocatable(), files.list(), Checkpoints(memory=load_memory_manager_state(CHECKPOINT))
        ),
        rules=PublishingRules(FingerprintMethod.ALL),
        zone_attributes=LOAD,
    )
    return replace(reading, **changes)  # type: ignore[arg-type]


def _resource(zone: Zone, name: str) -> ResourceInfo:
    found = zone.resource(name)
    assert found is not None, name
    return found


def _with_free_memory(state: MemoryManagerState, zone: int, free: int) -> MemoryManagerState:
    numa = state.machine_state[zone]
    table = replace(numa.memory_map["memory"], free=free)
    numa = replace(numa, memory_map={**numa.memory_map, "memory": table})
    return replace(state, machine_state={**state.machine_state, zone: numa})


def test_the_fixture_node_with_its_checkpoint_and_zone_load_gives_a_valid_object() -> None:
    computed = compute_topology(_reading())
    assert computed.accounting.findings == ()  # the checkpoint agrees with podresources here
    z0, z1 = computed.topology.zones
    assert (_resource(z0, "cpu").allocatable, _resource(z0, "cpu").available) == (50, 46)
    assert (_resource(z1, "cpu").allocatable, _resource(z1, "cpu").available) == (50, 42)
    assert _resource(z0, "memory").available == 47784828928 - 2 * GiB
    assert _resource(z1, "memory").available == 50693324800 - 4 * GiB
    assert (_resource(z0, SRIOV).available, _resource(z1, SRIOV).available) == (30, 31)
    assert Attribute("cpuUtilizationPercent", "40") in z0.attributes
    assert Attribute("memoryPressurePercent", "10") in z1.attributes
    assert computed.accounting.zones == computed.topology.zones  # the load is in both
    assert computed.fingerprinted == tuple(sorted(LISTED))
    assert computed.topology.attribute(fp.ATTRIBUTE) == fp.compute(LISTED)
    assert computed.topology.attribute("topologyManagerPolicy") == "single-numa-node"
    assert schema_errors(to_nrt(computed.topology)) == []


def test_a_memory_checkpoint_holding_more_than_list_decides_available_memory() -> None:
    state = load_memory_manager_state(CHECKPOINT)
    reading = _reading()
    assert reading.kubelet is not None
    kubelet = replace(reading.kubelet, checkpoints=Checkpoints(memory=_with_free_memory(state, 1, 40 * GiB)))
    computed = compute_topology(replace(reading, kubelet=kubelet))
    assert _resource(computed.topology.zones[1], "memory").available == 40 * GiB
    assert _resource(computed.topology.zones[0], "memory").available == 47784828928 - 2 * GiB
    assert computed.accounting.findings == ()  # finished init containers hold memory List omits


def test_a_memory_checkpoint_behind_list_never_makes_memory_look_freer() -> None:
    state = load_memory_manager_state(CHECKPOINT)
    reading = _reading()
    assert reading.kubelet is not None
    # The copy has not caught up with the 4 GiB pod on zone 1 yet: List still charges it.
    behind = _with_free_memory(state, 1, 50693324800)
    kubelet = replace(reading.kubelet, checkpoints=Checkpoints(memory=behind))
    computed = compute_topology(replace(reading, kubelet=kubelet))
    assert _resource(computed.topology.zones[1], "memory").available == 50693324800 - 4 * GiB
    assert computed.accounting.consistent


def test_without_a_kubelet_it_is_hardware_capacity_without_a_fingerprint() -> None:
    computed = compute_topology(_reading(kubelet=None, zone_attributes={}))
    assert computed.fingerprinted is None
    assert computed.topology.attribute(fp.ATTRIBUTE) is None
    assert computed.topology.annotations == {}
    cpu = _resource(computed.topology.zones[0], "cpu")
    assert cpu.allocatable == 50 and cpu.available == cpu.allocatable  # the config still applies


def test_a_kubelet_without_get_allocatable_falls_back_to_sysfs_and_the_config() -> None:
    reading = _reading()
    assert reading.kubelet is not None
    computed = compute_topology(replace(reading, kubelet=replace(reading.kubelet, allocatable=None)))
    z0 = computed.topology.zones[0]
    cpu = _resource(z0, "cpu")
    assert (cpu.allocatable, cpu.available) == (50, 46)  # reservedSystemCPUs from the config
    assert z0.resource(SRIOV) is None  # only GetAllocatableResources tells which devices exist
    assert computed.fingerprinted == tuple(sorted(LISTED))


def test_exclusions_and_the_method_choose_the_fingerprinted_pods() -> None:
    rules = PublishingRules(FingerprintMethod.ALL, exclude=(PodGlob.parse("kube-system/*"),))
    assert compute_topology(_reading(rules=rules)).fingerprinted == (
        ("cnf", "dpdk-app-0"),
        ("cnf", "numa1-worker-7f9c"),
    )
    exclusive = compute_topology(_reading(rules=PublishingRules(FingerprintMethod.WITH_EXCLUSIVE_RESOURCES)))
    assert exclusive.fingerprinted == (("cnf", "dpdk-app-0"), ("cnf", "numa1-worker-7f9c"))
    assert exclusive.topology.attribute(fp.ATTRIBUTE_METHOD) == FingerprintMethod.WITH_EXCLUSIVE_RESOURCES


def test_pod_specs_switch_the_fingerprint_to_the_pods_the_api_binds_here() -> None:
    def pod(namespace: str, name: str, phase: str) -> Pod:
        return pod_from_manifest(
            {
                "metadata": {"namespace": namespace, "name": name},
                "spec": {"nodeName": "r640", "containers": [{"name": "c"}]},
                "status": {"phase": phase},
            }
        )

    specs = {p.key: p for p in (pod("cnf", "dpdk-app-0", "Running"), pod("cnf", "not-listed-yet", "Running"))}
    computed = compute_topology(_reading(specs=specs))
    assert computed.fingerprinted == (("cnf", "dpdk-app-0"),)  # a pod the kubelet does not list yet waits


@pytest.mark.parametrize("numa_id", [0, 1])
def test_zone_attributes_land_on_their_numa_zone_only_and_unknown_ids_are_ignored(numa_id: int) -> None:
    computed = compute_topology(
        _reading(
            zone_attributes={numa_id: {"cpuUtilizationPercent": "90"}, 7: {"x": "y"}},
            # no numaplacement vectors, which are zone attributes too (tests/agent/test_placement.py)
            rules=PublishingRules(FingerprintMethod.ALL, numa_placement=NumaPlacementMode.NONE),
        )
    )
    assert computed.topology.zones[numa_id].attributes == (Attribute("cpuUtilizationPercent", "90"),)
    assert computed.topology.zones[1 - numa_id].attributes == ()


def test_the_last_consistent_state_caps_only_an_inconsistent_computation() -> None:
    reading = _reading(zone_attributes={})
    assert reading.kubelet is not None
    ceiling = {("node-0", "cpu"): 1, ("node-1", "memory"): 5}
    consistent = compute_topology(replace(reading, last_consistent=ceiling))
    assert consistent.consistent
    assert _resource(consistent.topology.zones[0], "cpu").available == 46  # a consistent one is not capped

    pods = reading.kubelet.pods
    twice = replace(reading.kubelet, pods=(*pods, replace(pods[1], containers=pods[1].containers[1:])))
    capped = compute_topology(replace(reading, kubelet=twice, last_consistent=ceiling))
    assert not capped.consistent
    z0, z1 = capped.topology.zones
    assert _resource(z0, "cpu").available == 1
    assert _resource(z1, "memory").available == 5
    assert _resource(z1, "cpu").available == 42  # not in the ceiling: its own (worst-case) value
    assert capped.accounting.zones == capped.topology.zones
