"""Devices attached to several NUMA nodes (issue #23 item 6), against the kubelet's device manager.

The reference here restates kubernetes/kubernetes ``pkg/kubelet/cm/devicemanager/topology_hints.go``
``generateDeviceTopologyHints`` over a list of devices, each with its NUMA nodes: a device counts
toward a mask when ``mask.AnySet(getNUMANodeIds(device.Topology))``, ``minAffinitySize`` is the
width of the narrowest mask whose devices (all, not only free) reach the request, and a mask is
hinted when its free devices do (``GetTopologyHints`` gives no hint at all when fewer devices are
free than requested). The model reads the same node as an NRT carries it: zone counts, each shared
device counted in every zone it is attached to, plus ``nodeMultiNUMAResources``.
"""

from __future__ import annotations

import itertools
import random

import pytest

from rte.model.admission.admit import admit_pod
from rte.model.admission.facts import facts_from_attributes
from rte.model.admission.hints import HINTS, NONE, device_hints
from rte.model.admission.node import NodeResources, Working, node_resources
from rte.model.admission.units import pod_admission_units
from rte.model.pod import Container, Pod
from rte.model.shared_devices import SharedDevices, format_shared_devices, parse_shared_devices

GPU = "example.com/gpu"

Device = tuple[tuple[int, ...], bool]
"""(NUMA nodes, free) of one device."""


def _kubelet_hints(devices: list[Device], zones: int, request: int) -> tuple[list[int], set[int]] | None:
    """``generateDeviceTopologyHints`` (after ``GetTopologyHints``' count check): the hinted
    masks in ``IterateBitMasks`` order and the preferred ones; None for the empty hint list."""
    if sum(free for _, free in devices) < request:
        return None
    every = [
        sum(1 << b for b in combo)
        for size in range(1, zones + 1)
        for combo in itertools.combinations(range(zones), size)
    ]
    min_affinity = zones
    hints = []
    for mask in every:
        in_mask = sum(1 for nodes, _ in devices if any(mask >> n & 1 for n in nodes))
        if in_mask >= request and mask.bit_count() < min_affinity:
            min_affinity = mask.bit_count()
        if sum(1 for nodes, free in devices if free and any(mask >> n & 1 for n in nodes)) >= request:
            hints.append(mask)
    return hints, {m for m in hints if m.bit_count() == min_affinity}


def _attributes(devices: list[Device], zones: int, policy: str = "restricted") -> dict[str, str]:
    groups: dict[tuple[int, ...], list[int]] = {}
    for nodes, free in devices:
        if len(nodes) > 1:
            counts = groups.setdefault(nodes, [0, 0])
            counts[0] += free
            counts[1] += 1
    attrs = {"topologyManagerPolicy": policy}
    if groups:
        shared = [SharedDevices(GPU, nodes, f, a) for nodes, (f, a) in groups.items()]
        attrs["nodeMultiNUMAResources"] = format_shared_devices(shared)
    return attrs


def _node(
    devices: list[Device], zones: int, attrs: dict[str, str], policy: str = "restricted"
) -> NodeResources:
    """The node as the agent publishes it: each device in every zone it is attached to."""
    counts = []
    for z in range(zones):
        allocatable = sum(1 for nodes, _ in devices if z in nodes)
        free = sum(1 for nodes, f in devices if f and z in nodes)
        counts.append((z, {"cpu": (8, 8, 8), GPU: (allocatable, allocatable, free)}))
    facts = facts_from_attributes(attrs, policy=policy, scope="container", max_numa_nodes=8)
    return node_resources(counts, facts)


def _random_devices(rng: random.Random, zones: int) -> list[Device]:
    devices = []
    for _ in range(rng.randint(1, 6)):
        width = rng.choice([1, 1, 2, 2, zones])
        nodes = tuple(sorted(rng.sample(range(zones), min(width, zones))))
        devices.append((nodes, rng.random() < 0.7))
    return devices


@pytest.mark.parametrize("seed", range(300))
def test_device_hints_follow_generate_device_topology_hints(seed: int) -> None:
    rng = random.Random(seed)
    zones = rng.choice([2, 3, 4])
    devices = _random_devices(rng, zones)
    request = rng.randint(1, 4)
    node = _node(devices, zones, _attributes(devices, zones))
    got = device_hints(Working(node), GPU, request)
    want = _kubelet_hints(devices, zones, request)
    if want is None or not want[0]:
        assert got.kind == NONE or not got.masks, (devices, request)
        return
    assert got.kind == HINTS
    assert list(got.masks) == want[0], (devices, request)
    assert set(got.preferred) == want[1], (devices, request)


def test_one_shared_device_is_not_two_devices() -> None:
    """The case the zones alone get wrong: one free GPU attached to NUMA nodes 0 and 1 reads as
    one GPU in each zone. ``GetTopologyHints`` sees 1 free device for a request of 2 and gives
    no hint, so ``restricted`` refuses; without ``nodeMultiNUMAResources`` rte (and every
    consumer of the zones) would admit on mask {0,1}."""
    devices: list[Device] = [((0, 1), True)]
    pod = Pod("ns", "p", containers=(Container("c", {GPU: 2}, {GPU: 2}),))
    node = _node(devices, 2, _attributes(devices, 2))
    assert not admit_pod(node, pod_admission_units(pod, node.facts)).admitted
    legacy = _node(devices, 2, {"topologyManagerPolicy": "restricted"})
    assert admit_pod(legacy, pod_admission_units(pod, legacy.facts)).admitted  # documented gap


def test_a_shared_device_taken_leaves_every_zone_it_was_attached_to() -> None:
    """``devicesToAllocate`` takes the aligned devices (``filterByAffinity``: any node in the
    hint); zone 0 holds its own GPU and the shared one, a request of 2 takes both, and zone 1
    (which only had the shared one besides its own) is left with its own GPU alone."""
    devices: list[Device] = [((0,), True), ((0, 1), True), ((1,), True)]
    node = _node(devices, 2, _attributes(devices, 2))
    pods = [
        Pod("ns", f"p{i}", containers=(Container("c", {GPU: n}, {GPU: n}),)) for i, n in enumerate((2, 2))
    ]
    first = admit_pod(node, pod_admission_units(pods[0], node.facts))
    assert first.admitted and first.units[0].numa_ids == (0,)
    working = Working(node)
    from rte.model.admission.allocate import CountAllocator

    CountAllocator().take(working, pod_admission_units(pods[0], node.facts)[0], 1, None)
    assert working.dev_free[GPU] == [0, 1]
    assert working.dev_groups[GPU] == [[0b11, 0]]
    assert working.dev_free_total[GPU] == 1
    assert device_hints(working, GPU, 2).kind == NONE  # one GPU left, not the two the rows sum to


def test_an_inexact_pick_charges_every_aligned_pool() -> None:
    """Two pools meet mask {0,1} (zone 0's own GPUs, the shared one); taking 1 of 3 leaves which
    one to the device plugin, so both pools lose 1: no mask keeps more than the kubelet leaves."""
    devices: list[Device] = [((0,), True), ((0,), True), ((0, 1), True)]
    node = _node(devices, 2, _attributes(devices, 2))
    working = Working(node)
    from rte.model.admission.allocate import CountAllocator

    unit = pod_admission_units(Pod("ns", "p", containers=(Container("c", {GPU: 1}, {GPU: 1}),)), node.facts)[
        0
    ]
    CountAllocator().take(working, unit, 0b01, None)
    assert not working.exact
    assert working.dev_groups[GPU] == [[0b11, 0]]
    assert working.dev_free[GPU] == [1, 0]


@pytest.mark.parametrize(
    "value",
    ["", "gpu", "gpu:0-1", "gpu:0=1/1", "gpu:0-1=2/1", "gpu:0-1=a/1", "gpu:0-1=1/1;gpu:0-1=0/1", ":0-1=1/1"],
)
def test_a_malformed_attribute_is_ignored_whole(value: str) -> None:
    assert parse_shared_devices(value) is None


def test_the_attribute_round_trips() -> None:
    groups = (SharedDevices("a.com/x", (0, 2), 0, 1), SharedDevices(GPU, (0, 1), 1, 2))
    text = format_shared_devices(groups)
    assert text == "a.com/x:0,2=0/1;example.com/gpu:0-1=1/2"
    assert parse_shared_devices(text) == tuple(sorted(groups))


def test_groups_that_disagree_with_the_zones_are_ignored() -> None:
    """A group naming a zone the NRT lacks, or more shared devices than a zone counts, cannot be
    this node's: the zones are read alone, as without the attribute."""
    devices: list[Device] = [((0, 1), True)]
    for value in (f"{GPU}:0,5=1/1", f"{GPU}:0-1=1/3"):
        node = _node(devices, 2, {"topologyManagerPolicy": "restricted", "nodeMultiNUMAResources": value})
        assert node.device_layouts() == {}
