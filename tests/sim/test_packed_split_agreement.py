"""The consumer's exact packed splits equal the simulated CPU manager's, CPU id by CPU id.

:func:`rte.model.admission.sockets.packed_takes` decides per-zone counts from an NRT's counts and
socket map; :func:`rte.sim.cpus.take_packed` picks CPU ids as kubernetes/kubernetes
``cpu_assignment.go`` ``takeByTopologyNUMAPacked`` does (``numaFirst`` with one socket per
zone, ``socketsFirst`` with two). On random machines and random free CPUs, whenever the model
gives an answer it must be the zones the simulated kubelet's CPUs came from.
"""

from __future__ import annotations

import random

from rte.model.admission.masks import positions
from rte.model.admission.node import NodeFacts, node_resources
from rte.model.admission.sockets import packed_takes, socket_layout
from rte.sim.cpus import take_packed
from rte.sim.cputopology import CpuTopology


def _machine(rng: random.Random) -> tuple[CpuTopology, dict[int, int]]:
    zones = rng.choice([2, 4, 4, 6, 8])
    per_socket = rng.choice([1, 2, 2]) if zones % 2 == 0 else 1
    threads = rng.choice([1, 2])
    cores = rng.choice([2, 3, 4])
    interleaved = rng.random() < 0.3
    socket_of = {z: (z % (zones // per_socket) if interleaved else z // per_socket) for z in range(zones)}
    zone_of, core_of = {}, {}
    for z in range(zones):
        for c in range(cores):
            first = (z * cores + c) * threads
            for t in range(threads):
                zone_of[first + t] = z
                core_of[first + t] = first
    topology = CpuTopology(
        zone_of=zone_of,
        core_of=core_of,
        zone_size={z: cores * threads for z in range(zones)},
        threads_per_core=threads,
        socket_of=socket_of if per_socket > 1 else None,
    )
    return topology, socket_of


def test_the_model_splits_exactly_as_the_simulated_cpu_manager_when_it_decides() -> None:
    rng = random.Random(23)
    decided = 0
    for case in range(3000):
        topology, socket_of = _machine(rng)
        zones = len(topology.zone_size)
        # Some zones wholly free, some partly, some full.
        available = {
            cpu for cpu, z in topology.zone_of.items() if rng.random() < (1.0 if z % 3 == 0 else 0.6)
        }
        mask = rng.randint(1, (1 << zones) - 1)
        inside = sorted(c for c in available if mask >> topology.zone_of[c] & 1)
        if not inside:
            continue
        amount = rng.randint(1, len(inside))
        picked = take_packed(topology, inside, amount)
        assert picked is not None
        want: dict[int, int] = {}
        for cpu in picked:
            want[topology.zone_of[cpu]] = want.get(topology.zone_of[cpu], 0) + 1
        free = [sum(1 for c in available if topology.zone_of[c] == z) for z in range(zones)]
        facts = NodeFacts(numa_sockets=tuple((z, frozenset({socket_of[z]})) for z in range(zones)))
        size = topology.zone_size
        node = node_resources([(z, {"cpu": (size[z], size[z], free[z])}) for z in range(zones)], facts)
        layout = socket_layout(node)
        assert layout is not None
        got = packed_takes(free, node.cpu_capacity, mask, amount, layout, topology.threads_per_core)
        if got is None:
            continue
        decided += 1
        where = f"case {case}: sockets {socket_of} free {free} mask {positions(mask)} amount {amount}"
        assert {z: n for z, n in got.items() if n} == want, where
    assert decided > 1000, decided
