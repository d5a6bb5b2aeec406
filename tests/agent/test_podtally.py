"""The pod tally: a cycle accounts only the pods that changed, and gives what a full pass gives.

The differential test replays seeded random List changes (pods added, removed, replaced,
reordered, listed twice; CPUs and devices held twice; unknown memory types, devices and NUMA
nodes; empty names) and compares every computation with a tally against one without.
"""

from __future__ import annotations

import random
from dataclasses import replace

import pytest

from rte.agent.compute.podset import PodGlob
from rte.agent.compute.podtally import PodTally
from rte.agent.compute.reading import Checkpoints, KubeletReading, NodeReading, PublishingRules
from rte.agent.compute.topology import Computed, compute_topology
from rte.host.kubelet_config import KubeletConfig
from rte.host.kubelet_state import CpuManagerState
from rte.host.machine import CpuInfo, Machine, NumaNode
from rte.model.vocabulary import FingerprintMethod
from rte.podres.types import AllocatableResources, ContainerResources, Device, MemoryBlock, PodResources

GiB = 2**30
NIC, GPU = "vendor.com/nic", "vendor.com/gpu"
ZONES = (0, 1, 2, 3)
STATIC = KubeletConfig(cpu_manager_policy="static", memory_manager_policy="Static")
ALLOCATABLE = AllocatableResources(
    cpu_ids=frozenset(range(2, 32)),
    devices=(
        *(Device(NIC, (f"nic{i}",), (i % 2,)) for i in range(6)),
        Device(NIC, ("nic-both",), (0, 1)),
        *(Device(GPU, (f"gpu{i}",)) for i in range(2)),
    ),
    memory=tuple(
        MemoryBlock(kind, size, (z,))
        for z in ZONES
        for kind, size in (("memory", 32 * GiB), ("hugepages-1Gi", 4 * GiB))
    ),
)


def machine() -> Machine:
    nodes = tuple(
        NumaNode(
            id=z,
            cpus=frozenset(range(8 * z, 8 * z + 8)),
            memory_total_bytes=40 * GiB,
            hugepages={GiB: 4},
            distances={o: 10 if o == z else 20 for o in ZONES},
        )
        for z in ZONES
    )
    cpus = {c: CpuInfo(id=c, numa_node=c // 8, thread_siblings=frozenset({c, c ^ 1})) for c in range(32)}
    return Machine(nodes=nodes, cpus=cpus, online_nodes=frozenset(ZONES))


def _reading(pods: tuple[PodResources, ...], tally: PodTally | None, rng: random.Random) -> NodeReading:
    checkpoints = Checkpoints()
    if rng.random() < 0.2:
        held = frozenset(rng.sample(range(2, 32), 3))
        checkpoints = Checkpoints(
            cpu=CpuManagerState("static", frozenset(range(32)) - held, {"u": {"c": held}}, {}, {})
        )
    rules = PublishingRules(
        rng.choice(list(FingerprintMethod)),
        exclude=(PodGlob.parse("ns-1/*"),) if rng.random() < 0.2 else (),
    )
    return NodeReading(
        node_name="n",
        machine=machine(),
        config=rng.choice([STATIC, STATIC, None, KubeletConfig()]),
        kubelet=KubeletReading(ALLOCATABLE, pods, checkpoints, tally),
        rules=rules,
    )


def _held(pods: list[PodResources]) -> tuple[set[int], set[str]]:
    cpus: set[int] = set()
    devices: set[str] = set()
    for pod in pods:
        for c in pod.containers:
            cpus |= c.cpu_ids
            devices.update(i for d in c.devices for i in d.device_ids)
    return cpus, devices


def _pod(rng: random.Random, serial: int, others: list[PodResources], *, odd: float) -> PodResources:
    """A random pod holding what ``others`` leave free, as the kubelet would; with probability
    ``odd`` each, one of the contradictions or unknowns."""
    taken_cpus, taken_devices = _held(others)
    zone = rng.choice(ZONES)
    free = [c for c in range(8 * zone, 8 * zone + 8) if c >= 2 and c not in taken_cpus]
    cpus = frozenset(rng.sample(free, min(len(free), rng.choice((0, 0, 1, 2)))))
    if rng.random() < odd:
        cpus |= {rng.choice((0, 40, *taken_cpus))}  # reserved, unknown to the machine, or taken
    memory = [MemoryBlock("memory", rng.choice((1, 2)) * GiB, (zone,))] if rng.random() < 0.5 else []
    if rng.random() < 0.2:
        memory.append(MemoryBlock("hugepages-1Gi", GiB, (zone,)))
    if rng.random() < 0.15:
        memory.append(MemoryBlock("memory", 3 * GiB, (zone, (zone + 1) % 4)))  # a multi-NUMA group
    if rng.random() < odd:
        memory.append(
            rng.choice([MemoryBlock("hugepages-2Mi", 2**21, (zone,)), MemoryBlock("memory", GiB, (7,))])
        )
    if rng.random() < odd:
        memory.append(MemoryBlock("memory", GiB, ()))
    devices = []
    nics = [d for d in [f"nic{i}" for i in range(6)] + ["nic-both"] if d not in taken_devices]
    if rng.random() < 0.3 and nics:
        devices.append(Device(NIC, (rng.choice(nics),), (0,)))
    gpus = [d for d in ("gpu0", "gpu1") if d not in taken_devices]
    if rng.random() < 0.1 and gpus:
        devices.append(Device(GPU, (rng.choice(gpus),)))
    if rng.random() < odd:
        devices.append(Device(NIC, (rng.choice(("nic-unknown", *sorted(taken_devices))),), (0,)))
    name = "" if rng.random() < odd / 3 else "app"
    containers = [ContainerResources(name, cpus, tuple(devices), tuple(memory))]
    if rng.random() < 0.3:
        containers.append(ContainerResources("sidecar"))
    if rng.random() < odd:  # the same CPU in two containers of this pod
        containers.append(ContainerResources("twin", cpus or frozenset({8 * zone})))
    pod_cpus = cpus if rng.random() < 0.1 else frozenset()  # KEP-5526 pod-level CPUs
    return PodResources(f"ns-{serial % 3}", f"pod-{serial}", tuple(containers), pod_cpus)


def _change(rng: random.Random, pods: list[PodResources], serial: int, odd: float) -> None:
    roll = rng.random()
    if roll < 0.35 or not pods:
        pods.insert(rng.randrange(len(pods) + 1), _pod(rng, serial, pods, odd=odd))
    elif roll < 0.6:
        del pods[rng.randrange(len(pods))]
    elif roll < 0.75:  # the kubelet changed what a pod holds: same name, new object
        i = rng.randrange(len(pods))
        fresh = _pod(rng, serial, pods[:i] + pods[i + 1 :], odd=odd)
        pods[i] = replace(fresh, namespace=pods[i].namespace, name=pods[i].name)
    elif roll < 0.85:
        rng.shuffle(pods)
    elif roll < 0.9 and rng.random() < odd * 5:  # the same object listed twice
        pods.append(rng.choice(pods))
    elif roll < 0.95 and rng.random() < odd * 5:  # the same name again, with other contents
        twin = rng.choice(pods)
        pods.append(replace(_pod(rng, serial, pods, odd=odd), namespace=twin.namespace, name=twin.name))
    # else: the same List again


def _same(with_tally: Computed, without: Computed) -> None:
    assert with_tally.accounting == without.accounting
    assert with_tally.fingerprinted == without.fingerprinted
    assert with_tally.topology == without.topology


@pytest.mark.parametrize("seed", range(12))
def test_the_tally_gives_what_a_full_pass_gives_over_random_list_changes(seed: int) -> None:
    rng = random.Random(seed)
    odd = (0.0, 0.02, 0.1)[seed % 3]  # clean Lists, rare contradictions, frequent ones
    tally = PodTally()
    pods: list[PodResources] = []
    for i in range(rng.randrange(0, 40)):
        pods.append(_pod(rng, i, pods, odd=odd))
    listed = tuple(pods)
    clean = 0
    for step in range(60):
        if step:
            _change(rng, pods, 1000 + step, odd)
            listed = tuple(pods) if rng.random() < 0.9 else listed  # sometimes the same List object
        context = rng.getstate()
        with_tally = compute_topology(_reading(listed, tally, rng))
        rng.setstate(context)
        without = compute_topology(_reading(listed, None, rng))
        clean += tally.clean
        try:
            _same(with_tally, without)
        except AssertionError as e:
            raise AssertionError(f"seed {seed}, step {step}: {e}") from e
    if odd == 0.0:
        assert clean == 60  # the sums were used every time, not the full pass


def test_an_unchanged_pod_is_not_accounted_again() -> None:
    rng = random.Random(5)
    pods: list[PodResources] = []
    for i in range(50):
        pods.append(_pod(rng, i, pods, odd=0.0))
    tally = PodTally()
    compute_topology(_reading(tuple(pods), tally, rng))
    assert tally.facts_computed == 50 and tally.clean
    pods[17] = _pod(rng, 99, pods[:17] + pods[18:], odd=0.0)  # one pod replaced
    compute_topology(_reading(tuple(pods), tally, rng))
    assert tally.facts_computed == 51
    del pods[3]  # one pod gone: nothing to compute
    compute_topology(_reading(tuple(pods), tally, rng))
    rng.shuffle(pods)  # a reordered List: nothing to compute
    compute_topology(_reading(tuple(pods), tally, rng))
    assert tally.facts_computed == 51


def test_a_contradiction_turns_the_tally_unclean_until_it_is_gone() -> None:
    a = PodResources("ns", "a", (ContainerResources("app", frozenset({4})),))
    b = PodResources("ns", "b", (ContainerResources("app", frozenset({4, 5})),))
    tally = PodTally()
    tally.sync((a,))
    assert tally.clean
    tally.sync((a, b))  # CPU 4 held twice
    assert not tally.clean
    tally.sync((b,))
    assert tally.clean
    tally.sync((b, b))  # one object listed twice
    assert not tally.clean and set(tally.listed_keys()) == {("ns", "b")}
    tally.sync((b,))
    assert tally.clean and set(tally.listed_keys()) == {("ns", "b")}
