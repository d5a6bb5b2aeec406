"""The socket of every NUMA node with CPUs, published as ``cpuManagerNUMASockets``.

The CPU manager learns each CPU's socket and NUMA node from cAdvisor (kubernetes/kubernetes
``pkg/kubelet/cm/cpumanager/topology/topology.go`` ``Discover``); ``align-by-socket``
(``policy_static.go`` ``isHintSocketAligned``, ``getAlignedCPUs``) and the packed allocator's
order (``cpu_assignment.go`` ``newCPUAccumulator``: sockets first when NUMA nodes nest in them)
depend on it. The expected maps are derived from each fixture's own FIXTURE.json (its package
cpulists against its node cpulists), not from the code under test.
"""

from __future__ import annotations

import json
from dataclasses import replace

import pytest
from click.testing import CliRunner

from rte.agent.compute.accounting import Accounting
from rte.agent.compute.builder import numa_sockets_value
from rte.agent.compute.cpu_accounting import numa_sockets
from rte.agent.compute.zonenames import dense_numbering, renumber_accounting
from rte.cli import main
from rte.host.sysfs import read_machine
from rte.model import attributes as names
from rte.model.cpuset import parse_cpuset
from rte.model.topology import Zone
from tests.helpers.nrt_schema import schema_errors
from tests.helpers.paths import FIXTURES, MACHINES


def _expected(machine: str) -> str:
    text = (FIXTURES / "sysfs" / machine / "FIXTURE.json").read_text()
    facts = json.loads(text)["expected_facts_parsed_from_tree"]
    packages = {int(p): parse_cpuset(cpus) for p, cpus in facts["cpu"]["packages"].items()}
    items = []
    for numa, node in sorted(facts["numa_nodes"].items(), key=lambda kv: int(kv[0])):
        cpus = parse_cpuset(node["cpulist"])
        if cpus:  # a CPU-less node (memory only) has no socket
            sockets = sorted(p for p, members in packages.items() if cpus & members)
            items.append(f"{numa}={','.join(map(str, sockets))}")
    return ";".join(items)


@pytest.mark.parametrize("machine", MACHINES)
def test_dump_publishes_each_cpu_zones_socket_and_the_object_stays_valid(machine: str) -> None:
    result = CliRunner().invoke(
        main, ["dump", "--sysfs", str(FIXTURES / "sysfs" / machine / "sys"), "--no-kubelet", "-o", "json"]
    )
    assert result.exit_code == 0, result.stderr
    obj = json.loads(result.stdout)
    assert schema_errors(obj) == []
    attrs = {a["name"]: a["value"] for a in obj["attributes"]}
    # Single-socket ids print as one number; the fixtures have no NUMA node spanning sockets.
    assert attrs[names.CPU_MANAGER_NUMA_SOCKETS] == _expected(machine)


def test_the_known_layouts_numa_in_socket_interleaved_and_sparse_socket_ids() -> None:
    assert _expected("intel-2s-snc2-4numa-80t-hugepages") == "0=0;1=0;2=1;3=1"
    assert _expected("intel-2s-snc2-pmem-8numa-112t") == "0=0;1=1;2=0;3=1"  # PMem nodes 4-7: none
    assert _expected("arm-kunpeng920-2s-4numa-128c") == "0=36;1=36;2=8442;3=8442"


def test_a_cpu_of_unknown_socket_withholds_the_whole_map() -> None:
    machine = read_machine(FIXTURES / "sysfs" / "dell-r640-2s-xeon6230r-2numa-sriov-vfs" / "sys")
    assert numa_sockets(machine) == {0: frozenset({0}), 1: frozenset({1})}
    cpus = dict(machine.cpus)
    cpus[5] = replace(cpus[5], package_id=None)
    assert numa_sockets(replace(machine, cpus=cpus)) == {}


def test_a_numa_node_spanning_sockets_lists_them_all() -> None:
    assert numa_sockets_value({0: frozenset({0, 1}), 2: frozenset({3})}) == "0=0-1;2=3"


def test_dense_zone_names_renumber_the_numa_ids_but_not_the_sockets() -> None:
    zones = tuple(Zone(f"node-{n}") for n in (0, 2, 3))
    sockets = {0: frozenset({0}), 2: frozenset({1}), 3: frozenset({1})}
    accounting = Accounting(zones=zones, numa_sockets=sockets)
    renamed = renumber_accounting(accounting, dense_numbering((0, 2, 3)))
    assert numa_sockets_value(renamed.numa_sockets) == "0=0;1=1;2=1"
