"""``zone_names: numa-id | dense`` on a real machine with NUMA node 1 offline (ids 0, 2, 3).

Why the option exists: scheduler-plugins ``pkg/noderesourcetopology/score.go``
``scoreForEachNUMANode`` makes ``numaScores`` as long as the zone list and writes
``numaScores[numa.NUMAID]``, so ``node-3`` among three zones is out of range. These tests check
that under either naming the object says one consistent thing: zone names, every ``costs``
entry, ``memoryManagerNUMAGroups`` and the numaplacement attributes name the same zones, the
dense object is the sparse one renumbered by ascending kernel id, and rte's own consumer decides
the same on both.
"""

from __future__ import annotations

import json
import logging
import re
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from rte.agent.compute.accounting import Accounting
from rte.agent.compute.reading import KubeletReading, NodeReading, PublishingRules
from rte.agent.compute.topology import Computed, compute_topology
from rte.agent.compute.zonenames import dense_numbering, renumber_accounting, sparse_ids_warning
from rte.agent.settings import AgentSettings, load_settings
from rte.cli import main
from rte.host.kubelet_config import KubeletConfig
from rte.host.machine import Machine
from rte.host.sysfs import read_machine
from rte.model import attributes as names
from rte.model import numaplacement as npl
from rte.model.numaplacement import ContainerId
from rte.model.topology import Cost, NodeTopology, Zone, numa_id_of
from rte.model.vocabulary import FingerprintMethod, ZoneNames
from rte.podres.types import AllocatableResources, ContainerResources, MemoryBlock, PodResources
from tests.helpers import agent_loop
from tests.helpers.agent_loop import Harness
from tests.helpers.offline_node import NODE_IDS, OFFLINE, offline_node_sysfs
from tests.helpers.paths import R640_SYSFS

DENSE, NUMA_ID = ZoneNames.DENSE, ZoneNames.NUMA_ID
SNN = KubeletConfig(
    topology_manager_policy="single-numa-node",
    cpu_manager_policy="static",
    reserved_system_cpus=frozenset({0}),
)


@pytest.fixture(scope="module")
def machine(tmp_path_factory: pytest.TempPathFactory) -> Machine:
    return read_machine(offline_node_sysfs(tmp_path_factory.mktemp("offline")), pci=False)


def _cpus_of(machine: Machine, node: int, first: int, count: int) -> frozenset[int]:
    return frozenset(sorted(machine.node(node).cpus - {0})[first : first + count])


def _pods(machine: Machine) -> tuple[PodResources, ...]:
    """Exclusive containers on kernel nodes 3 (two) and 2 (one), and one in the shared pool."""
    return (
        PodResources("ns", "a", (ContainerResources("x", cpu_ids=_cpus_of(machine, 3, 0, 2)),)),
        PodResources("ns", "b", (ContainerResources("y", cpu_ids=_cpus_of(machine, 2, 0, 4)),)),
        PodResources("ns", "c", (ContainerResources("z", cpu_ids=_cpus_of(machine, 3, 2, 4)),)),
        PodResources("ns", "d", (ContainerResources("shared"),)),
    )


def _computed(machine: Machine, mode: ZoneNames, config: KubeletConfig = SNN) -> Computed:
    reading = NodeReading(
        node_name="offline",
        machine=machine,
        config=config,
        kubelet=KubeletReading(
            AllocatableResources(cpu_ids=frozenset(machine.cpu_to_node()) - {0}), _pods(machine)
        ),
        rules=PublishingRules(FingerprintMethod.ALL, zone_names=mode),
    )
    return compute_topology(reading)


def _zone_ids(topology: NodeTopology) -> list[int]:
    return [z.numa_id for z in topology.zones if z.numa_id is not None]


def test_the_derived_fixture_is_a_machine_with_node_1_offline(machine: Machine) -> None:
    assert machine.node_ids == NODE_IDS
    assert all(OFFLINE not in machine.node(n).distances for n in NODE_IDS)
    assert machine.node(2).distances == {0: 21, 2: 10, 3: 11}
    assert len(machine.cpus) == 60


def test_numa_id_names_publish_the_kernel_ids_and_costs_name_the_same_zones(machine: Machine) -> None:
    topology = _computed(machine, NUMA_ID).topology
    assert _zone_ids(topology) == [0, 2, 3]
    for zone in topology.zones:
        assert [c.name for c in zone.costs] == ["node-0", "node-2", "node-3"]
        assert dict((c.name, c.value) for c in zone.costs)[zone.name] == 10


def test_dense_names_are_the_sparse_object_renumbered_by_ascending_kernel_id(machine: Machine) -> None:
    sparse, dense = _computed(machine, NUMA_ID), _computed(machine, DENSE)
    assert dense.numbering == {0: 0, 2: 1, 3: 2}
    assert sparse.numbering is None
    assert _zone_ids(dense.topology) == [0, 1, 2]
    kernel = {0: "node-0", 1: "node-2", 2: "node-3"}
    for zone in dense.topology.zones:
        twin = sparse.topology.zone(kernel[zone.numa_id or 0])
        assert twin is not None
        assert zone.resources == twin.resources
        # Distances keep their values and point at the renamed twin of the same zone.
        assert [c.name for c in zone.costs] == ["node-0", "node-1", "node-2"]
        assert [c.value for c in zone.costs] == [c.value for c in twin.costs]
    # The node-level attributes other than numaplacement and the NUMA ids of the socket map are
    # the same.
    renumbered = {npl.METADATA_ATTRIBUTE, names.CPU_MANAGER_NUMA_SOCKETS}
    assert {a for a in dense.topology.attributes if a.name not in renumbered} == {
        a for a in sparse.topology.attributes if a.name not in renumbered
    }
    sockets = {a.name: a.value for a in dense.topology.attributes}[names.CPU_MANAGER_NUMA_SOCKETS]
    assert sockets == "0=0;1=1;2=1"  # kernel 0=0;2=1;3=1
    # The accounting (and so the ceiling of an inconsistent cycle) stays in kernel ids.
    assert dense.accounting == sparse.accounting
    assert dense.available() == sparse.available()


def _placement(topology: NodeTopology) -> tuple[npl.Payload, dict[ContainerId, int]]:
    metadata = topology.attribute(npl.METADATA_ATTRIBUTE)
    assert metadata is not None
    vectors = {
        z.numa_id: text
        for z in topology.zones
        if z.numa_id is not None and (text := z.attribute(npl.VECTOR_ATTRIBUTE)) is not None
    }
    payload = npl.unpack_metadata(metadata).with_vectors(vectors)
    payload.validate()
    containers = [ContainerId("ns", "a", "x"), ContainerId("ns", "b", "y"), ContainerId("ns", "c", "z")]
    return payload, npl.decode(payload, containers)


def test_numaplacement_follows_the_zone_names(machine: Machine) -> None:
    """Sparse: ``nn`` = highest id + 1, vectors on the kernel zones. Dense: ``nn`` = zone count and
    ``bn``/vectors the dense index, what RTE's ``ComputeNUMAPlacementPayload`` publishes with its
    list-position zone names; both decode to the same zone."""
    sparse_payload, sparse = _placement(_computed(machine, NUMA_ID).topology)
    dense_payload, dense = _placement(_computed(machine, DENSE).topology)
    assert (sparse_payload.numa_nodes, sparse_payload.busiest_node) == (4, 3)
    assert (dense_payload.numa_nodes, dense_payload.busiest_node) == (3, 2)
    assert set(sparse_payload.vectors) == {2} and set(dense_payload.vectors) == {1}
    assert sparse == {
        ContainerId("ns", "a", "x"): 3,
        ContainerId("ns", "b", "y"): 2,
        ContainerId("ns", "c", "z"): 3,
    }
    numbering = dense_numbering(NODE_IDS)
    assert dense == {cid: numbering[numa] for cid, numa in sparse.items()}
    # Byte for byte what the codec gives for these containers on a 3-node machine.
    assert dense_payload == npl.encode(3, dense.items())


def test_memory_groups_are_renumbered_with_the_zones() -> None:
    zones = tuple(Zone(f"node-{n}", costs=(Cost(f"node-{n}", 10),)) for n in NODE_IDS)
    accounting = Accounting(zones=zones, memory_numa_groups=((2, 3),))
    renamed = renumber_accounting(accounting, dense_numbering(NODE_IDS))
    assert renamed.memory_numa_groups == ((1, 2),)
    assert [z.name for z in renamed.zones] == ["node-0", "node-1", "node-2"]
    assert [z.costs[0].name for z in renamed.zones] == ["node-0", "node-1", "node-2"]


def test_memory_groups_attribute_names_published_zones_under_both_names(machine: Machine) -> None:
    # The Static memory manager put one container's memory on kernel nodes 2 and 3 together.
    config = replace(SNN, topology_manager_policy="restricted", memory_manager_policy="Static")
    pods = (
        PodResources("ns", "big", (ContainerResources("m", memory=(MemoryBlock("memory", 2**30, (2, 3)),)),)),
    )
    for mode, expected in ((NUMA_ID, "2-3"), (DENSE, "1-2")):
        reading = NodeReading(
            node_name="offline",
            machine=machine,
            config=config,
            kubelet=KubeletReading(
                AllocatableResources(cpu_ids=frozenset(machine.cpu_to_node()) - {0}), pods
            ),
            rules=PublishingRules(FingerprintMethod.ALL, zone_names=mode),
        )
        topology = compute_topology(reading).topology
        groups = topology.attribute(names.MEMORY_MANAGER_NUMA_GROUPS)
        assert groups == expected
        zone_ids = set(_zone_ids(topology))
        assert {int(i) for i in groups.split("-")} <= zone_ids


def test_every_name_that_points_at_a_zone_names_a_published_zone(machine: Machine) -> None:
    for mode in (NUMA_ID, DENSE):
        topology = _computed(machine, mode).topology
        published = {z.name for z in topology.zones}
        assert all(c.name in published for z in topology.zones for c in z.costs)
        payload, decoded = _placement(topology)
        assert all(f"node-{n}" in published for n in (*decoded.values(), payload.busiest_node))
        assert all(numa_id_of(name) is not None for name in published)


def test_sparse_ids_published_as_they_are_warn_and_dense_or_dense_ids_do_not(machine: Machine) -> None:
    warning = _computed(machine, NUMA_ID).zone_names_warning
    assert warning is not None
    assert "sparse (0,2-3)" in warning and "zone_names: dense" in warning
    assert _computed(machine, DENSE).zone_names_warning is None
    assert sparse_ids_warning((0, 1, 2, 3), NUMA_ID) is None


def test_on_dense_ids_both_names_publish_the_same_object(machine: Machine) -> None:
    r640 = read_machine(R640_SYSFS, pci=False)
    a = compute_topology(
        NodeReading("r640", r640, SNN, None, PublishingRules(FingerprintMethod.ALL, zone_names=NUMA_ID))
    )
    b = compute_topology(
        NodeReading("r640", r640, SNN, None, PublishingRules(FingerprintMethod.ALL, zone_names=DENSE))
    )
    assert a.topology == b.topology


# --- where the choice is made and the warning shown ----------------------------------------------


def test_zone_names_default_to_numa_id_and_are_set_by_flag_env_and_file(tmp_path: Path) -> None:
    def load(**kwargs: Any) -> AgentSettings:
        kwargs.setdefault("env", {})
        return load_settings(hostname=lambda: "host-1", **kwargs)

    assert load().zone_names is NUMA_ID
    assert load(flags={"zone_names": "dense"}).zone_names is DENSE
    assert load(env={"RTE_ZONE_NAMES": "Dense"}).zone_names is DENSE
    config = tmp_path / "agent.yaml"
    config.write_text("zone_names: dense\n")
    assert load(config_file=config).zone_names is DENSE
    result = CliRunner().invoke(main, ["run", "--dump-config", "--zone-names", "dense"])
    assert result.exit_code == 0, result.output
    assert "zone_names: dense" in result.stdout
    bad = CliRunner().invoke(main, ["run", "--dump-config"], env={"RTE_ZONE_NAMES": "position"})
    assert bad.exit_code == 2
    assert bad.stderr.startswith("rte: error: RTE_ZONE_NAMES:")


def _dump(sysfs: Path, *extra: str) -> Any:
    args = ["dump", "--sysfs", str(sysfs), "--node-name", "n1", "--no-kubelet", *extra]
    return CliRunner().invoke(main, args)


def test_rte_dump_warns_on_sparse_ids_and_publishes_dense_names_on_request(tmp_path: Path) -> None:
    sysfs = offline_node_sysfs(tmp_path)
    sparse = _dump(sysfs, "-o", "json")
    assert sparse.exit_code == 0, sparse.stderr
    assert [z["name"] for z in json.loads(sparse.stdout)["zones"]] == ["node-0", "node-2", "node-3"]
    assert "rte: warning: this node's NUMA ids are sparse (0,2-3)" in sparse.stderr
    dense = _dump(sysfs, "-o", "json", "--zone-names", "dense")
    assert dense.exit_code == 0, dense.stderr
    zones = json.loads(dense.stdout)["zones"]
    assert [z["name"] for z in zones] == ["node-0", "node-1", "node-2"]
    assert [c["name"] for c in zones[1]["costs"]] == ["node-0", "node-1", "node-2"]
    assert "sparse" not in dense.stderr
    table = _dump(sysfs, "--zone-names", "dense")
    assert table.exit_code == 0, table.stderr
    # The table names each renumbered zone's kernel node and shows that node's CPUs.
    assert "node-2 (kernel NUMA node 3)  cpus " in table.stdout
    assert (
        f"({len(machine_cpus(sysfs, 3))})"
        in table.stdout.split("node-2 (kernel NUMA node 3)")[1].split("\n")[0]
    )
    bad = _dump(sysfs, "--zone-names", "position")
    assert bad.exit_code == 2 and "--zone-names" in bad.stderr


def machine_cpus(sysfs: Path, node: int) -> frozenset[int]:
    return read_machine(sysfs, pci=False).node(node).cpus


def test_the_agent_logs_the_sparse_ids_warning_once(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    sysfs = offline_node_sysfs(tmp_path / "hw")
    # The harness's kubelet config reserves CPU 53, one of the offline node's: reserve CPU 0.
    config = tmp_path / "kubelet.yaml"
    text = agent_loop.CONFIG.read_text()
    config.write_text(re.sub(r"reservedSystemCPUs: .*", 'reservedSystemCPUs: "0"', text))

    class OfflineHarness(Harness):
        def _load_machine(self) -> Machine:
            return read_machine(sysfs, pci=False)

    h = OfflineHarness(tmp_path, kubelet_config=config)
    caplog.set_level(logging.WARNING, logger="rte")
    h.advance(130)  # cycles and two resyncs
    h.scanner.mark_allocatable_stale(machine=True)
    h.advance(70)
    warned = [r for r in caplog.records if "NUMA ids are sparse" in r.getMessage()]
    assert len(warned) == 1
    assert warned[0].levelno == logging.WARNING


def test_zone_load_and_the_inconsistent_cycle_ceiling_follow_the_kernel_node(machine: Machine) -> None:
    """Both are kept in kernel ids and renumbered with the zone: a ceiling keyed by published names
    would cap dense ``node-2`` (kernel node 3) with kernel node 2's numbers."""
    on3 = _cpus_of(machine, 3, 0, 10)
    consistent = (PodResources("ns", "a", (ContainerResources("x", cpu_ids=on3),)),)
    # Next cycle: pod a is gone, and the kubelet lists one CPU of node 2 twice (inconsistent).
    twice = _cpus_of(machine, 2, 0, 1)
    contradictory = (
        PodResources("ns", "b", (ContainerResources("y", cpu_ids=twice),)),
        PodResources("ns", "c", (ContainerResources("z", cpu_ids=twice),)),
    )
    allocatable = AllocatableResources(cpu_ids=frozenset(machine.cpu_to_node()) - {0})
    published: dict[ZoneNames, NodeTopology] = {}
    for mode in (NUMA_ID, DENSE):

        def reading(pods: tuple[PodResources, ...], ceiling: Any, mode: ZoneNames = mode) -> NodeReading:
            return NodeReading(
                node_name="offline",
                machine=machine,
                config=SNN,
                kubelet=KubeletReading(allocatable, pods),
                rules=PublishingRules(FingerprintMethod.ALL, zone_names=mode),
                zone_attributes={3: {names.ZONE_CPU_UTILIZATION: "40"}},
                last_consistent=ceiling,
            )

        first = compute_topology(reading(consistent, {}))
        second = compute_topology(reading(contradictory, first.available()))
        assert not second.consistent
        published[mode] = second.topology
    kernel3, dense2 = published[NUMA_ID].zone("node-3"), published[DENSE].zone("node-2")
    assert kernel3 is not None and dense2 is not None
    assert (
        kernel3.attribute(names.ZONE_CPU_UTILIZATION) == dense2.attribute(names.ZONE_CPU_UTILIZATION) == "40"
    )
    cpu3, dense_cpu = kernel3.resource("cpu"), dense2.resource("cpu")
    assert cpu3 is not None and dense_cpu is not None
    assert cpu3.available == dense_cpu.available == cpu3.allocatable - 10  # capped: pod a still counted
    for kernel_name, dense_name in (("node-0", "node-0"), ("node-2", "node-1")):
        twin, zone = published[NUMA_ID].zone(kernel_name), published[DENSE].zone(dense_name)
        assert twin is not None and zone is not None and twin.resources == zone.resources
