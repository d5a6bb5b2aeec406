"""What a node's NUMA zones lack for a pod, and which nodes come closest (rte.cluster.shortfall)."""

from __future__ import annotations

import random
from fractions import Fraction

import pytest

from rte.cluster.shortfall import Lack, best_zone, closest, zone_shortfalls
from rte.consumer.filter import filter_node
from rte.consumer.numaview import build_view
from rte.model.nrt import from_nrt
from rte.model.pod import Pod, pod_from_manifest
from rte.model.topology import NodeTopology
from rte.testing.views_cluster import GI, nrt, pod


def topology(name: str, *zones: dict[str, int], scope: str = "container") -> NodeTopology:
    return from_nrt(nrt(name, [{r: (v, v) for r, v in z.items()} for z in zones], scope=scope))


def guaranteed(requests: dict[str, int | str]) -> Pod:
    return pod_from_manifest(pod("p", requests, phase="Pending"))


def test_a_guaranteed_pod_lacks_what_each_zone_has_too_little_of() -> None:
    node = topology("n", {"cpu": 8, "memory": 16 * GI}, {"cpu": 16, "memory": 4 * GI})
    zones = zone_shortfalls(guaranteed({"cpu": 12, "memory": 8 * GI}), node)
    assert [z.zone for z in zones] == ["node-0", "node-1"]
    assert zones[0].lacks == (Lack("cpu", 12, 4),)
    assert zones[1].lacks == (Lack("memory", 8 * GI, 4 * GI),)
    # cpu: 4 of 12 is a third; memory: 4 GiB of 8 GiB is a half. node-0 is closer.
    best = best_zone(guaranteed({"cpu": 12, "memory": 8 * GI}), node)
    assert best is not None and best.zone == "node-0" and best.lacks[0].share == Fraction(1, 3)


def test_a_burstable_pod_needs_cpu_and_memory_listed_but_devices_available() -> None:
    node = topology("n", {"cpu": 1, "memory": GI, "example.com/nic": 0}, {"cpu": 1, "example.com/nic": 2})
    burstable = pod_from_manifest(
        {
            "metadata": {"name": "b"},
            "spec": {
                "containers": [
                    {
                        "name": "c",
                        "resources": {"requests": {"cpu": "4", "memory": "8Gi", "example.com/nic": "1"}},
                    }
                ]
            },
        }
    )
    zones = zone_shortfalls(burstable, node)
    assert zones[0].lacks == (Lack("example.com/nic", 1, 1),)  # the shared pool holds cpu and memory
    assert zones[1].lacks == (Lack("memory", 8 * GI, 8 * GI, "not listed by the zone"),)


def test_host_level_devices_listed_by_no_zone_lack_nothing_unless_the_node_lacks_them() -> None:
    node = topology("n", {"cpu": 8, "memory": 8 * GI})
    p = guaranteed({"cpu": 2, "memory": GI, "example.com/accel": 1})
    assert zone_shortfalls(p, node)[0].fits
    lacks = zone_shortfalls(p, node, allocatable={"cpu", "memory", "pods"})[0].lacks
    assert lacks == (Lack("example.com/accel", 1, 1, "not on the node"),)


def test_closest_ranks_by_the_largest_share_then_the_sum_and_leaves_out_nodes_that_fit() -> None:
    p = guaranteed({"cpu": 10, "memory": 10 * GI})
    nodes = [
        topology("half-cpu", {"cpu": 5, "memory": 10 * GI}),
        topology("fits", {"cpu": 10, "memory": 10 * GI}),
        topology("tenth-both", {"cpu": 9, "memory": 9 * GI}),
        topology("tenth-cpu", {"cpu": 9, "memory": 10 * GI}),
    ]
    assert [s.node for s in closest(p, nodes, 5)] == ["tenth-cpu", "tenth-both", "half-cpu"]
    assert [s.node for s in closest(p, nodes, 1)] == ["tenth-cpu"]
    assert closest(p, nodes, 0) == []


@pytest.mark.parametrize("scope", ["container", "pod"])
def test_a_node_passes_filter_exactly_when_a_zone_can_hold_the_whole_guaranteed_pod(scope: str) -> None:
    """The module's claim, checked against the consumer's Filter on random nodes and pods.

    "Whole pod fits one zone" implies Filter passes; with one app container the converse holds
    too (then Filter's request is the whole pod's).
    """
    rng = random.Random(15)
    for _ in range(400):
        zones = [
            {
                "cpu": rng.randint(0, 16),
                "memory": rng.randint(0, 16) * GI,
                "example.com/nic": rng.randint(0, 3),
            }
            for _ in range(rng.randint(1, 4))
        ]
        node = topology("n", *zones, scope=scope)
        containers = [
            {
                "name": f"c{i}",
                "resources": {
                    "requests": (r := {"cpu": str(rng.randint(1, 8)), "memory": f"{rng.randint(1, 8)}Gi"}),
                    "limits": r,
                },
            }
            for i in range(rng.randint(1, 3))
        ]
        if rng.random() < 0.5:
            containers[0]["resources"]["requests"]["example.com/nic"] = "1"
            containers[0]["resources"]["limits"]["example.com/nic"] = "1"
        p = pod_from_manifest({"metadata": {"name": "p"}, "spec": {"containers": containers}})
        best = best_zone(p, node)
        assert best is not None
        passes = filter_node(p, build_view(node)).fits
        if best.fits:
            assert passes, (zones, containers)
        if len(containers) == 1 or scope == "pod":
            assert passes == best.fits, (zones, containers)
