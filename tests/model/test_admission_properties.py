"""Properties of the admission model on random nodes and pods (fixed seeds)."""

from __future__ import annotations

import random

from rte.model.admission.admit import admit_pod, unit_hints
from rte.model.admission.merge import merge_hints
from rte.model.admission.node import NodeFacts, NodeResources, Working, node_resources
from rte.model.admission.reasons import policy_reason
from rte.model.admission.units import pod_admission_units
from rte.model.pod import Container, Pod

GI = 2**30
NIC = "vendor.com/nic"


def _node(rng: random.Random, policy: str) -> NodeResources:
    zones = []
    for i in range(rng.randint(1, 5)):
        cpu = rng.choice([4, 8, 16])
        mem = rng.choice([4, 8, 16]) * GI
        counts = {
            "cpu": (cpu, cpu, rng.randint(0, cpu)),
            "memory": (mem, mem, rng.choice([mem, rng.randint(0, mem)])),
        }
        if rng.random() < 0.4:
            nics = rng.randint(0, 3)
            counts[NIC] = (nics, nics, rng.randint(0, nics))
        zones.append((i, counts))
    groups = (frozenset({0, 1}),) if len(zones) > 2 and rng.random() < 0.2 else ()
    facts = NodeFacts(policy=policy, scope=rng.choice(["container", "pod"]), memory_groups=groups)
    return node_resources(zones, facts)


def _pod(rng: random.Random) -> Pod:
    def one(name: str) -> Container:
        requests = {"cpu": rng.choice([1, 2, 4, 6, 10]), "memory": rng.choice([1, 4, 12, 20]) * GI}
        if rng.random() < 0.3:
            requests[NIC] = rng.randint(0, 3)
        return Container(name, requests, requests, "Always" if rng.random() < 0.2 else None)

    inits = tuple(one(f"i{i}") for i in range(rng.randint(0, 2)))
    return Pod(
        "ns", "p", containers=tuple(one(f"a{i}") for i in range(rng.randint(1, 3))), init_containers=inits
    )


def test_single_zone_hints_merge_like_the_full_hints_under_single_numa_node() -> None:
    rng = random.Random(5)
    for _ in range(1500):
        node = _node(rng, "single-numa-node")
        working = Working(node)
        for unit in pod_admission_units(_pod(rng), node.facts):
            full = unit_hints(working, unit)
            narrow = unit_hints(working, unit, single_only=True)
            merged = merge_hints(full, "single-numa-node", node.all_zones)
            assert merge_hints(narrow, "single-numa-node", node.all_zones) == merged
            if not merged.admit:
                best = node.all_zones if merged.mask is None else merged.mask
                reasons = [
                    policy_reason("single-numa-node", unit, h, best, node.ids, True) for h in (full, narrow)
                ]
                assert reasons[0] == reasons[1]


def test_more_free_resources_never_turn_an_admission_into_a_refusal_for_one_unit() -> None:
    """Admission of a one-container pod under restricted and single-numa-node is monotone in the
    free amounts (more free only adds hints): what the count allocator's over-charging relies on."""
    rng = random.Random(8)
    for _ in range(1500):
        policy = rng.choice(["restricted", "single-numa-node"])
        node = _node(rng, policy)
        pod = Pod("ns", "p", containers=(_pod(rng).containers[0],))
        units = pod_admission_units(pod, node.facts)
        if not admit_pod(node, units).admitted:
            continue
        richer = NodeResources(
            node.ids,
            node.cpu_capacity,
            tuple(
                min(c, a + rng.randint(0, 4))
                for c, a in zip(node.cpu_capacity, node.cpu_available, strict=True)
            ),
            {
                t: (alloc, tuple(min(x, v + GI) for x, v in zip(alloc, avail, strict=True)))
                for t, (alloc, avail) in node.memory.items()
            },
            {
                r: (alloc, tuple(min(x, v + 1) for x, v in zip(alloc, avail, strict=True)))
                for r, (alloc, avail) in node.devices.items()
            },
            node.facts,
            node.distances,
        )
        assert admit_pod(richer, units).admitted, (node, pod)
