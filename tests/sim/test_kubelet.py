"""The simulated kubelet's Topology Manager admission, per policy and scope, and what it lists.

Node used throughout: two zones of 4 CPUs (no reserved CPUs), 8 GiB each, 2 NICs on each zone.
"""

from collections.abc import Mapping

import pytest

from rte.agent.compute.accounting import account
from rte.model.pod import QOS_GUARANTEED, Container, Pod
from rte.sim.hardware import build_hardware
from rte.sim.kubelet import SimKubelet
from rte.sim.specs import GiB, parse_node_shapes

NIC = "example.com/nic"


def kubelet(
    policy: str = "single-numa-node", scope: str = "container", shape: str = "2x4c-16Gi+nic2"
) -> SimKubelet:
    ((_, node_shape),) = parse_node_shapes(shape)
    hw = build_hardware(node_shape, policy=policy, scope=scope, reserved_cpus=0, reserved_memory=0)
    return SimKubelet(hw)


def pod(name: str, *containers: Mapping[str, int], init: Mapping[str, int] | None = None) -> Pod:
    def c(i: int, req: Mapping[str, int], prefix: str = "c") -> Container:
        full = {"memory": GiB, **req}
        return Container(f"{prefix}{i}", requests=full, limits=full)

    return Pod(
        "ns",
        name,
        containers=tuple(c(i, r) for i, r in enumerate(containers)),
        init_containers=(c(0, init, "init"),) if init else (),
        status_qos_class=QOS_GUARANTEED,
    )


def cpus_by_zone(k: SimKubelet) -> list[int]:
    return [k.free(z)["cpu"] for z in range(2)]


def test_single_numa_node_takes_the_lowest_zone_that_fits() -> None:
    k = kubelet()
    first = k.admit(pod("a", {"cpu": 3}))
    assert first is not None and first.containers[0].cpu_ids == frozenset({0, 1, 2})
    second = k.admit(pod("b", {"cpu": 2}))  # zone 0 has 1 left: zone 1
    assert second is not None and second.containers[0].cpu_ids == frozenset({4, 5})
    assert second.containers[0].memory[0].numa_ids == (1,)
    assert cpus_by_zone(k) == [1, 2]


def test_single_numa_node_rejects_a_container_no_zone_can_hold_although_the_node_can() -> None:
    k = kubelet()
    assert k.admit(pod("a", {"cpu": 3})) is not None
    assert k.admit(pod("b", {"cpu": 3})) is not None
    assert k.admit(pod("c", {"cpu": 2})) is None  # 1 + 1 CPUs free: a TopologyAffinityError
    assert cpus_by_zone(k) == [1, 1]
    assert not k.holds(("ns", "c"))


def test_container_scope_aligns_each_container_on_its_own() -> None:
    k = kubelet(scope="container")
    placed = k.admit(pod("a", {"cpu": 3}, {"cpu": 3}))
    assert placed is not None
    assert [sorted(c.cpu_ids) for c in placed.containers] == [[0, 1, 2], [4, 5, 6]]


def test_pod_scope_needs_the_whole_pod_in_one_zone() -> None:
    assert kubelet(scope="pod").admit(pod("a", {"cpu": 3}, {"cpu": 3})) is None
    k = kubelet(scope="pod")
    placed = k.admit(pod("b", {"cpu": 2}, {"cpu": 2}))
    assert placed is not None
    assert [sorted(c.cpu_ids) for c in placed.containers] == [[0, 1], [2, 3]]


def test_a_rejected_pod_keeps_nothing_even_when_its_first_container_fitted() -> None:
    k = kubelet()
    assert k.admit(pod("a", {"cpu": 4}, {"cpu": 4}, {"cpu": 1})) is None
    assert cpus_by_zone(k) == [4, 4]
    assert k.listing() == ()


def test_devices_count_like_cpus_and_come_from_the_chosen_zone() -> None:
    k = kubelet()
    assert k.admit(pod("a", {"cpu": 1, NIC: 2})) is not None
    placed = k.admit(pod("b", {"cpu": 1, NIC: 1}))
    assert placed is not None
    (dev,) = placed.containers[0].devices
    assert dev.numa_ids == (1,) and dev.device_ids == ("nic-1-0",)
    assert k.admit(pod("c", {"cpu": 1, NIC: 2})) is None


def test_an_init_containers_cpus_stay_assigned_for_the_pods_life_and_the_app_reuses_them() -> None:
    k = kubelet()
    assert k.admit(pod("a", {"cpu": 1}, init={"cpu": 5})) is None
    placed = k.admit(pod("b", {"cpu": 1}, init={"cpu": 4}))
    assert placed is not None
    assert [c.name for c in placed.containers] == ["c0"]  # List never reports init containers
    assert placed.containers[0].cpu_ids <= {0, 1, 2, 3}  # taken from the init container's CPUs
    assert cpus_by_zone(k) == [0, 4]
    cpu_state = k.checkpoints().cpu
    assert cpu_state is not None and cpu_state.default_cpuset == frozenset(range(4, 8))
    assert k.release(("ns", "b")) and cpus_by_zone(k) == [4, 4]


def test_restricted_lets_a_pod_wider_than_a_zone_span_the_narrowest_zone_set() -> None:
    k = kubelet(policy="restricted", shape="4x4c-32Gi")
    placed = k.admit(pod("big", {"cpu": 6, "memory": 9 * GiB}))
    assert placed is not None
    assert sorted(placed.containers[0].cpu_ids) == [0, 1, 2, 3, 4, 5]  # a whole NUMA node first
    assert placed.containers[0].memory[0].numa_ids == (0, 1)


def test_restricted_rejects_cpus_needing_two_zones_with_memory_that_fits_one() -> None:
    # The CPU hint {0,1} and the memory hint {0} are both preferred, but a merged hint is preferred
    # only when every provider's mask is the same (topologymanager policy.go mergePermutation).
    assert kubelet(policy="restricted", shape="4x4c-32Gi").admit(pod("big", {"cpu": 6})) is None


def test_restricted_rejects_a_pod_that_fits_one_zone_when_only_two_zones_have_room() -> None:
    k = kubelet(policy="restricted")
    assert k.admit(pod("a", {"cpu": 3})) is not None
    assert k.admit(pod("b", {"cpu": 3})) is not None
    assert k.admit(pod("c", {"cpu": 2})) is None  # preferred width is 1; only a 2-zone set has room


def test_restricted_rejects_a_wide_pod_when_no_set_of_the_preferred_width_has_room() -> None:
    k = kubelet(policy="restricted", shape="4x4c-32Gi")
    for name in ("a", "b", "c"):  # zones 0, 1, 2 keep 1 CPU each; zone 3 is empty
        assert k.admit(pod(name, {"cpu": 3})) is not None
    assert k.admit(pod("d", {"cpu": 6, "memory": 9 * GiB})) is None  # the best pair has 1 + 4 CPUs
    # 5 CPUs fit zones 0 and 3, but zone 0 holds a single-zone memory block: the memory manager
    # never groups it with another (memorymanager isAffinityViolatingNUMAAllocations).
    assert k.admit(pod("e", {"cpu": 5, "memory": 9 * GiB})) is None
    assert k.release(("ns", "a"))
    placed = k.admit(pod("e", {"cpu": 5, "memory": 9 * GiB}))
    assert placed is not None and placed.containers[0].memory[0].numa_ids == (0, 3)
    memory_state = k.checkpoints().memory
    assert memory_state is not None and memory_state.machine_state[3].cells == (0, 3)
    assert len(k) == 3


def test_release_gives_everything_back_and_cpu_ids_are_reused_lowest_first() -> None:
    k = kubelet()
    assert k.admit(pod("a", {"cpu": 2, NIC: 1})) is not None
    assert k.admit(pod("b", {"cpu": 2})) is not None
    assert k.release(("ns", "a"))
    assert not k.release(("ns", "a"))
    again = k.admit(pod("c", {"cpu": 1}))
    assert again is not None and again.containers[0].cpu_ids == frozenset({0})
    assert k.free(0)[NIC] == 2


def test_admitting_the_same_pod_twice_is_a_bug() -> None:
    k = kubelet()
    assert k.admit(pod("a", {"cpu": 1})) is not None
    with pytest.raises(ValueError, match="already admitted"):
        k.admit(pod("a", {"cpu": 1}))


@pytest.mark.parametrize("policy", ["single-numa-node", "restricted"])
def test_the_agent_accounting_of_the_listing_equals_what_the_kubelet_has_free(policy: str) -> None:
    k = kubelet(policy=policy, shape="4x4c-32Gi+nic2+hp2")
    for i, req in enumerate(({"cpu": 3, NIC: 1}, {"cpu": 6}, {"cpu": 2, "hugepages-1Gi": GiB}, {"cpu": 1})):
        k.admit(pod(f"p{i}", req))
    hw = k.hardware
    zones = account(hw.machine, hw.config, hw.allocatable, k.listing()).zones
    for z, zone in enumerate(zones):
        published = {r.name: r.available for r in zone.resources}
        assert published == dict(k.free(z))


def test_ephemeral_storage_is_never_aligned() -> None:
    k = kubelet()  # no zone has any ephemeral-storage: no hint provider knows it
    placed = k.admit(pod("a", {"cpu": 1, "ephemeral-storage": 100 * GiB}))
    assert placed is not None and placed.containers[0].cpu_ids == frozenset({0})


def test_a_sidecar_is_listed_after_the_app_containers_and_its_cpus_are_not_reused() -> None:
    k = kubelet()
    sidecar = Container("side", {"cpu": 1, "memory": GiB}, {"cpu": 1, "memory": GiB}, restart_policy="Always")
    app = Container("c0", {"cpu": 2, "memory": GiB}, {"cpu": 2, "memory": GiB})
    placed = k.admit(
        Pod("ns", "a", containers=(app,), init_containers=(sidecar,), status_qos_class=QOS_GUARANTEED)
    )
    assert placed is not None
    assert [(c.name, sorted(c.cpu_ids)) for c in placed.containers] == [("c0", [1, 2]), ("side", [0])]
    assert cpus_by_zone(k) == [1, 4]
