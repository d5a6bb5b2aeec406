"""rte's consumer decides the same on the sparse and the dense publication of one node.

The agent publishes a node with NUMA node 1 offline either as ``node-0, node-2, node-3``
(``zone_names: numa-id``) or as ``node-0, node-1, node-2`` (``dense``,
:mod:`rte.agent.compute.zonenames`). Nothing in the consumer may read a zone's name as anything
but a label ordered by its number: Filter, Score (every strategy, both rule sets), the NumPy
kernel and the numaplacement decoder must give the same verdicts, with zone ids mapped by the
renumbering. (scheduler-plugins' Score, ``score.go`` ``scoreForEachNUMANode``, cannot take the
sparse one at all; that is why the dense one exists.)
"""

from __future__ import annotations

from dataclasses import replace

import pytest

from rte.agent.compute.reading import KubeletReading, NodeReading, PublishingRules
from rte.agent.compute.topology import Computed, compute_topology
from rte.consumer.api import NodeCandidate, evaluate
from rte.consumer.filter import filter_node
from rte.consumer.numaview import build_view
from rte.consumer.placement import Outcome, decode_node_placement
from rte.consumer.requests import prepare_pod
from rte.consumer.score import ScoringStrategy, score_node
from rte.consumer.strategies import STRATEGIES
from rte.host.kubelet_config import KubeletConfig
from rte.host.machine import Machine
from rte.host.sysfs import read_machine
from rte.model.pod import Pod
from rte.model.vocabulary import Compat, FingerprintMethod, ZoneNames
from rte.podres.types import AllocatableResources, ContainerResources, PodResources
from tests.helpers.consumer import GI, container, pod
from tests.helpers.offline_node import offline_node_sysfs

SNN = KubeletConfig(
    topology_manager_policy="single-numa-node",
    cpu_manager_policy="static",
    reserved_system_cpus=frozenset({0}),
)


@pytest.fixture(scope="module")
def machine(tmp_path_factory: pytest.TempPathFactory) -> Machine:
    return read_machine(offline_node_sysfs(tmp_path_factory.mktemp("offline")), pci=False)


def _held(machine: Machine) -> tuple[PodResources, ...]:
    """Pods already on the node: 8 exclusive CPUs of kernel node 3, 4 of node 2."""
    on3 = frozenset(sorted(machine.node(3).cpus)[:8])
    on2 = frozenset(sorted(machine.node(2).cpus)[:4])
    return (
        PodResources("ns", "a", (ContainerResources("x", cpu_ids=on3),)),
        PodResources("ns", "b", (ContainerResources("y", cpu_ids=on2),)),
    )


def _publish(machine: Machine, mode: ZoneNames, scope: str) -> Computed:
    reading = NodeReading(
        node_name="offline",
        machine=machine,
        config=replace(SNN, topology_manager_scope=scope),
        kubelet=KubeletReading(
            AllocatableResources(cpu_ids=frozenset(machine.cpu_to_node()) - {0}), _held(machine)
        ),
        rules=PublishingRules(FingerprintMethod.ALL, zone_names=mode),
    )
    return compute_topology(reading)


def _pods() -> list[Pod]:
    one = container("c", {"cpu": 4, "memory": GI})
    return [
        pod(one),
        pod(container("c", {"cpu": 12, "memory": 4 * GI})),  # fits kernel node 0 or 2, not 3
        pod(container("c", {"cpu": 16, "memory": GI})),  # fits kernel node 0 only
        pod(container("c", {"cpu": 40, "memory": GI})),  # fits no zone
        pod(container("a", {"cpu": 10, "memory": GI}), container("b", {"cpu": 10, "memory": GI})),
        pod(container("c", {"cpu": "1500m", "memory": GI})),  # not pinned: shared pool
        pod(container("c", {"cpu": 2, "memory": 200 * GI})),  # more memory than any zone
    ]


@pytest.mark.parametrize("scope", ["container", "pod"])
@pytest.mark.parametrize("compat", [Compat.KUBELET, Compat.REFERENCE])
def test_filter_and_score_decide_the_same_on_both_publications(
    machine: Machine, scope: str, compat: Compat
) -> None:
    sparse, dense = _publish(machine, ZoneNames.NUMA_ID, scope), _publish(machine, ZoneNames.DENSE, scope)
    assert dense.numbering is not None
    back = {published: kernel for kernel, published in dense.numbering.items()}
    sparse_view, dense_view = build_view(sparse.topology), build_view(dense.topology)
    assert sparse_view.ids == (0, 2, 3) and dense_view.ids == (0, 1, 2)
    fits = 0
    for p in _pods():
        prep = prepare_pod(p, compat=compat)
        a, b = filter_node(prep, sparse_view), filter_node(prep, dense_view)
        assert a.code == b.code, p
        assert a.numa_id == (None if b.numa_id is None else back[b.numa_id])
        assert a.placements == tuple((name, None if z is None else back[z]) for name, z in b.placements)
        if not a.fits:  # a fit's reason names its zones, which the placements above compare
            assert a.reason == b.reason
        fits += a.fits
        for strategy in STRATEGIES:
            scoring = ScoringStrategy(strategy)
            assert score_node(prep, sparse_view, scoring) == score_node(prep, dense_view, scoring), (
                p,
                strategy,
            )
        # The NumPy kernel (rte fit, the extender) over both views at once.
        nodes = [NodeCandidate("sparse", sparse_view), NodeCandidate("dense", dense_view)]
        one, two = evaluate(prep, nodes)
        assert (one.fits, one.score) == (two.fits, two.score) == (a.fits, one.score)
        assert one.fits or one.reason == two.reason
    assert 0 < fits < len(_pods())  # the pods tell fitting zones apart


def test_the_numaplacement_decoder_puts_each_container_on_the_same_zone(machine: Machine) -> None:
    held = [
        pod(container("x", {"cpu": 8, "memory": GI})),
        pod(container("y", {"cpu": 4, "memory": GI})),
    ]
    held = [replace(held[0], name="a"), replace(held[1], name="b")]
    decoded = {}
    for mode in (ZoneNames.NUMA_ID, ZoneNames.DENSE):
        topology = _publish(machine, mode, "container").topology
        placement = decode_node_placement(topology, held)
        assert placement.outcome is Outcome.DECODED, placement.detail
        # Each container sits on a published zone whose resources are its kernel node's.
        decoded[mode] = {cid.pod: topology.zone(f"node-{numa}") for cid, numa in placement.containers.items()}
    assert decoded[ZoneNames.NUMA_ID] and all(
        z is not None for zones in decoded.values() for z in zones.values()
    )
    for name, zone in decoded[ZoneNames.NUMA_ID].items():
        twin = decoded[ZoneNames.DENSE][name]
        assert zone is not None and twin is not None
        assert zone.resources == twin.resources
    assert decoded[ZoneNames.NUMA_ID]["a"].name == "node-3"  # type: ignore[union-attr]
    assert decoded[ZoneNames.DENSE]["a"].name == "node-2"  # type: ignore[union-attr]
