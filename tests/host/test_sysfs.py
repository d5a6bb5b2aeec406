"""NUMA node and CPU topology reading: six real machines, every kernel quirk, and bad input."""

from __future__ import annotations

import json
import os
import re
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from rte.errors import InputError
from rte.host.machine import Machine
from rte.host.sysfs import (
    numbered,
    parse_distance_row,
    parse_hugepages_dir_name,
    parse_id_set,
    parse_node_meminfo,
    read_machine,
)
from rte.host.sysfsio import parse_int, parse_optional_id
from rte.model.cpuset import format_cpuset
from tests.helpers.paths import MACHINES, SYSFS_FIXTURES

FIXTURES = SYSFS_FIXTURES


def expected(name: str) -> dict[str, Any]:
    facts: dict[str, Any] = json.loads((FIXTURES / name / "FIXTURE.json").read_text())
    section: dict[str, Any] = facts["expected_facts_parsed_from_tree"]
    return section


def write_tree(root: Path, files: dict[str, str | bytes]) -> Path:
    """Create files (relative path -> content) under root; returns root."""
    for rel, content in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_text(content)
    return root


def render_facts(machine: Machine) -> dict[str, Any]:
    """The machine in the shape of FIXTURE.json's expected facts (PCI is in test_host_pci)."""

    def ids(value: frozenset[int] | None) -> str | None:
        return None if value is None else format_cpuset(value)

    numa_nodes = {}
    for node in machine.nodes:
        assert node.memory_total_bytes is None or node.memory_total_bytes % 1024 == 0
        assert list(node.distances) in ([], list(machine.node_ids))
        sizes = sorted(set(node.hugepages) | set(node.free_hugepages))
        numa_nodes[str(node.id)] = {
            "cpulist": format_cpuset(node.cpus),
            "ncpus": len(node.cpus),
            "memtotal_kb": None if node.memory_total_bytes is None else node.memory_total_bytes // 1024,
            "distance": list(node.distances.values()),
            "hugepages": {
                f"hugepages-{size // 1024}kB": {"nr": node.hugepages[size], "free": node.free_hugepages[size]}
                for size in sizes
            },
        }
    threads = Counter(len(cpu.thread_siblings) for cpu in machine.cpus.values())
    return {
        "node_files": {
            "online": ids(machine.online_nodes),
            "possible": ids(machine.possible_nodes),
            "has_cpu": ids(machine.has_cpu),
            "has_memory": ids(machine.has_memory),
            "has_normal_memory": ids(machine.has_normal_memory),
        },
        "numa_nodes": numa_nodes,
        "cpu": {
            "online_file": ids(machine.online_cpus),
            "present_file": ids(machine.present_cpus),
            "cpu_dirs": len(machine.cpus),
            "packages": {str(pkg): format_cpuset(cpus) for pkg, cpus in machine.packages().items()},
            "physical_cores": len(machine.core_groups()),
            "threads_per_core_histogram": {str(n): count for n, count in sorted(threads.items())},
        },
    }


# ---- the six real machines ---------------------------------------------------------------------


def test_all_six_machines_are_present() -> None:
    assert len(MACHINES) == 7  # the Grace-Blackwell-class one is synthetic (see its NOTICE)


@pytest.mark.parametrize("name", MACHINES)
def test_each_machine_yields_exactly_the_facts_its_fixture_lists(name: str) -> None:
    machine = read_machine(FIXTURES / name / "sys", pci=False)
    facts = render_facts(machine)
    want = expected(name)
    assert facts["node_files"] == want["node_files"]
    assert facts["numa_nodes"] == want["numa_nodes"]
    assert facts["cpu"] == want["cpu"]


@pytest.mark.parametrize("name", MACHINES)
def test_every_cpu_is_mapped_to_the_node_whose_cpulist_holds_it(name: str) -> None:
    machine = read_machine(FIXTURES / name / "sys", pci=False)
    for node in machine.nodes:
        for cpu in node.cpus:
            assert machine.cpus[cpu].numa_node == node.id
    assert set(machine.cpu_to_node()) == set(machine.cpus)


def test_memory_only_pmem_nodes_have_memory_but_no_cpus() -> None:
    machine = read_machine(FIXTURES / "intel-2s-snc2-pmem-8numa-112t" / "sys", pci=False)
    for node_id in (4, 5, 6, 7):
        node = machine.node(node_id)
        assert node.cpus == frozenset()
        assert node.memory_total_bytes == 130023424 * 1024
    assert machine.node(4).distances == {0: 17, 1: 28, 2: 28, 3: 28, 4: 10, 5: 28, 6: 28, 7: 28}


def test_arm_package_ids_are_kept_as_the_firmware_reports_them() -> None:
    machine = read_machine(FIXTURES / "arm-kunpeng920-2s-4numa-128c" / "sys", pci=False)
    assert set(machine.packages()) == {36, 8442}
    cpu = machine.cpus[64]
    assert (cpu.package_id, cpu.die_id, cpu.thread_siblings) == (8442, None, frozenset({64}))


def test_hugepage_pools_are_keyed_by_page_size_in_bytes() -> None:
    node0 = read_machine(FIXTURES / "dell-r740xd-2s-xeon6230-2numa-nics-hugepages" / "sys", pci=False).node(0)
    assert node0.hugepages == {2 * 1024**2: 128, 1024**3: 0}
    assert node0.free_hugepages == {2 * 1024**2: 128, 1024**3: 0}
    assert node0.hugepages_total_bytes == 128 * 2 * 1024**2


def test_a_snapshot_without_node_meminfo_gives_no_memory_fact_rather_than_zero() -> None:
    machine = read_machine(FIXTURES / "dell-r640-2s-xeon6230r-2numa-sriov-vfs" / "sys", pci=False)
    assert [(n.memory_total_bytes, dict(n.hugepages)) for n in machine.nodes] == [(None, {}), (None, {})]


def test_two_reads_of_one_tree_are_equal_and_render_the_same() -> None:
    root = FIXTURES / "intel-2s-snc2-4numa-80t-hugepages" / "sys"
    first, second = read_machine(root), read_machine(str(root))
    assert first == second
    assert json.dumps(first.to_dict()) == json.dumps(second.to_dict())


def test_the_dump_rendering_is_json_with_cpusets_as_list_strings() -> None:
    rendered = read_machine(FIXTURES / "intel-2s-snc2-4numa-80t-hugepages" / "sys").to_dict()
    assert rendered["node_files"]["possible"] == "0-5"
    assert rendered["nodes"][0]["cpus"] == "0-2,5-6,10-12,15-16,40-42,45-46,50-52,55-56"
    assert rendered["nodes"][0]["hugepages"] == {"2097152": 2560, "1073741824": 0}
    assert rendered["cpus"][0]["thread_siblings"] == "0,40"
    json.dumps(rendered)


def test_reading_touches_nothing_outside_the_injected_root(tmp_path: Path) -> None:
    root = FIXTURES / "dell-r740xd-2s-xeon6230-2numa-nics-hugepages" / "sys"
    read_machine(root)  # warm imports so only the reader's own accesses are recorded
    seen: list[str] = []
    recording = [True]

    def hook(event: str, args: tuple[Any, ...]) -> None:
        if recording[0] and event in ("open", "os.listdir", "os.scandir") and args:
            path = args[0]
            if isinstance(path, str | bytes | os.PathLike):
                seen.append(os.fsdecode(os.fspath(path)))

    sys.addaudithook(hook)  # hooks cannot be removed; the flag turns this one off afterwards
    try:
        read_machine(root)
    finally:
        recording[0] = False
    assert len(seen) > 1000
    outside = [p for p in seen if not os.path.abspath(p).startswith(str(root.resolve()))]
    assert outside == []


# ---- parsers: one test per quirk ---------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "ids"),
    [
        ("0-7\n\x00", set(range(8))),  # old AMD kernel: online/possible end with a NUL
        ("0-31\n\x00", set(range(32))),  # arm64 5.15-rc: *_list files end with NUL after newline
        ("\n", set()),  # CPU-less node: cpulist holds only a newline
        ("", set()),
        ("0-2,5-6,40\n", {0, 1, 2, 5, 6, 40}),  # SNC: non-contiguous per-node lists
    ],
)
def test_id_lists_tolerate_nul_bytes_newlines_and_emptiness(text: str, ids: set[int]) -> None:
    assert parse_id_set(text) == ids


def test_distance_rows_tolerate_trailing_newline_and_nul() -> None:
    assert parse_distance_row("10 16 32 33\n\x00") == (10, 16, 32, 33)
    assert parse_distance_row("") == ()


def test_node_meminfo_skips_a_leading_blank_line_and_converts_kb_to_bytes() -> None:
    text = "\nNode 0 MemTotal:       16769836 kB\nNode 0 MemFree:  1 kB\nNode 0 HugePages_Total:     0\n"
    assert parse_node_meminfo(text) == {"MemTotal": 16769836 * 1024, "MemFree": 1024, "HugePages_Total": 0}


def test_node_meminfo_parser_also_reads_lines_without_the_node_prefix() -> None:
    assert parse_node_meminfo("MemTotal: 2 kB\n") == {"MemTotal": 2048}


@pytest.mark.parametrize(
    ("name", "size"),
    [("hugepages-2048kB", 2 * 1024**2), ("hugepages-1048576kB", 1024**3), ("hugepages-64kB", 64 * 1024)],
)
def test_hugepage_directory_names_give_page_sizes_in_bytes(name: str, size: int) -> None:
    assert parse_hugepages_dir_name(name) == size


@pytest.mark.parametrize(("text", "value"), [("36\n", 36), ("8442\n", 8442), ("-1\n", None), ("0\x00", 0)])
def test_ids_read_minus_one_as_unknown_and_keep_odd_package_numbers(text: str, value: int | None) -> None:
    assert parse_optional_id(text) == value


def test_numbered_entries_sort_numerically_not_lexicographically() -> None:
    names = ["node10", "node2", "has_cpu", "node1", "online", "node", "nodeX", "node0"]
    assert numbered(names, "node") == [0, 1, 2, 10]


@pytest.mark.parametrize(
    ("parse", "text", "shown"),
    [
        (parse_id_set, "abc\n", "abc"),
        (parse_distance_row, "10 x1 20\n", "x1"),
        (parse_node_meminfo, "Node 0 MemTotal: lots kB\n", "lots"),
        (parse_node_meminfo, "Node 0 MemTotal: 5 MB\n", "MB"),
        (parse_hugepages_dir_name, "hugepages-2MB", "2MB"),
        (parse_int, "1_000\n", "1_000"),
        (parse_int, "+5", "+5"),
        (parse_optional_id, "-2", "-2"),
    ],
)
def test_parsers_reject_malformed_text_and_quote_it(parse: Any, text: str, shown: str) -> None:
    with pytest.raises(ValueError, match=re.escape(shown)):
        parse(text)


# ---- the reader on synthetic trees ------------------------------------------------------------


def numa_tree(root: Path, online: str | None, nodes: dict[int, dict[str, str]]) -> Path:
    files: dict[str, str | bytes] = {}
    if online is not None:
        files["devices/system/node/online"] = online
    for node_id, node_files in nodes.items():
        for name, content in node_files.items():
            files[f"devices/system/node/node{node_id}/{name}"] = content
    return write_tree(root, files)


def test_sparse_numa_ids_keep_their_real_names(tmp_path: Path) -> None:
    root = numa_tree(
        tmp_path,
        "0,2\n",
        {0: {"cpulist": "0-1\n", "distance": "10 20\n"}, 2: {"cpulist": "2-3\n", "distance": "20 10\n"}},
    )
    machine = read_machine(root, pci=False)
    assert machine.node_ids == (0, 2)
    assert machine.node(2).distances == {0: 20, 2: 10}
    assert machine.cpus[3].numa_node == 2
    with pytest.raises(KeyError, match="no NUMA node 1"):
        machine.node(1)


def test_without_an_online_file_node_directories_are_used_in_numeric_order(tmp_path: Path) -> None:
    nodes = {n: {"cpulist": f"{n}\n"} for n in (0, 1, 2, 10, 11)}
    machine = read_machine(numa_tree(tmp_path, None, nodes), pci=False)
    assert machine.node_ids == (0, 1, 2, 10, 11)
    assert machine.online_nodes is None
    assert list(machine.cpus) == [0, 1, 2, 10, 11]


def test_possible_nodes_beyond_online_ones_do_not_become_nodes(tmp_path: Path) -> None:
    root = numa_tree(tmp_path, "0-1\n", {0: {"cpulist": "0\n"}, 1: {"cpulist": "1\n"}})
    (root / "devices/system/node/possible").write_text("0-5\n")
    machine = read_machine(root, pci=False)
    assert (machine.node_ids, machine.possible_nodes) == ((0, 1), frozenset(range(6)))


def test_missing_optional_files_give_fewer_facts_not_errors(tmp_path: Path) -> None:
    # node1 has nothing but its directory; node0 has no meminfo, hugepages or distance;
    # there are no cpu/online, present or possible files and cpu1 has no topology directory.
    root = numa_tree(tmp_path, "0-1\n", {0: {"cpulist": "0-1\n"}})
    (root / "devices/system/node/node1").mkdir()
    write_tree(
        root, {"devices/system/cpu/cpu0/topology/core_id": "0\n", "devices/system/cpu/cpu1/uevent": ""}
    )
    machine = read_machine(root, pci=False)
    node0, node1 = machine.nodes
    assert (node0.memory_total_bytes, node0.hugepages, node0.distances) == (None, {}, {})
    assert (node1.id, node1.cpus) == (1, frozenset())
    assert (machine.online_cpus, machine.present_cpus, machine.possible_cpus) == (None, None, None)
    assert machine.cpus[0].core_id == 0 and machine.cpus[0].package_id is None
    assert machine.cpus[1].thread_siblings == frozenset()


def test_a_node_without_cpulist_is_read_from_its_cpu_entries(tmp_path: Path) -> None:
    root = numa_tree(tmp_path, "0\n", {0: {"cpu3/online": "1\n", "cpu12/online": "1\n"}})
    assert read_machine(root, pci=False).node(0).cpus == {3, 12}


def test_core_siblings_fall_back_to_package_cpus_list(tmp_path: Path) -> None:
    root = numa_tree(tmp_path, "0\n", {0: {"cpulist": "0\n"}})
    write_tree(root, {"devices/system/cpu/cpu0/topology/package_cpus_list": "0-3\n"})
    assert read_machine(root, pci=False).cpus[0].core_siblings == {0, 1, 2, 3}


def test_a_kernel_without_numa_is_one_node_zero_holding_every_cpu(tmp_path: Path) -> None:
    write_tree(tmp_path, {f"devices/system/cpu/cpu{n}/topology/core_id": f"{n}\n" for n in range(4)})
    machine = read_machine(tmp_path, pci=False)
    assert machine.node_ids == (0,)
    assert machine.node(0).cpus == {0, 1, 2, 3}
    assert machine.cpu_to_node() == {0: 0, 1: 0, 2: 0, 3: 0}


# ---- bad input: one-line InputErrors naming the file ---------------------------------------


def assert_input_error(root: Path, rel: str, shown: str) -> None:
    with pytest.raises(InputError) as caught:
        read_machine(root, pci=False)
    assert caught.value.source == str(root / rel)
    assert shown in caught.value.detail
    assert "\n" not in str(caught.value)


def test_garbage_in_a_cpulist_names_the_file_and_the_text(tmp_path: Path) -> None:
    root = numa_tree(tmp_path, "0\n", {0: {"cpulist": "abc\n"}})
    assert_input_error(root, "devices/system/node/node0/cpulist", "abc")


def test_a_non_numeric_distance_names_the_file_and_the_text(tmp_path: Path) -> None:
    root = numa_tree(tmp_path, "0\n", {0: {"cpulist": "0\n", "distance": "ten\n"}})
    assert_input_error(root, "devices/system/node/node0/distance", "ten")


def test_a_distance_row_that_does_not_match_the_online_nodes_is_rejected(tmp_path: Path) -> None:
    root = numa_tree(tmp_path, "0,2\n", {0: {"distance": "10 20 30\n"}, 2: {"distance": "20 10\n"}})
    assert_input_error(root, "devices/system/node/node0/distance", "3 distances")


def test_a_malformed_online_file_names_it(tmp_path: Path) -> None:
    root = numa_tree(tmp_path, "0-x\n", {0: {"cpulist": "0\n"}})
    assert_input_error(root, "devices/system/node/online", "0-x")


def test_a_malformed_meminfo_names_it(tmp_path: Path) -> None:
    root = numa_tree(tmp_path, "0\n", {0: {"meminfo": "Node 0 MemTotal: many kB\n"}})
    assert_input_error(root, "devices/system/node/node0/meminfo", "many")


def test_a_malformed_hugepage_count_names_it(tmp_path: Path) -> None:
    root = numa_tree(tmp_path, "0\n", {0: {"hugepages/hugepages-2048kB/nr_hugepages": "12a\n"}})
    assert_input_error(root, "devices/system/node/node0/hugepages/hugepages-2048kB/nr_hugepages", "12a")


def test_an_unexpected_hugepages_directory_names_it(tmp_path: Path) -> None:
    root = numa_tree(tmp_path, "0\n", {0: {"hugepages/hugepages-2M/nr_hugepages": "1\n"}})
    assert_input_error(root, "devices/system/node/node0/hugepages/hugepages-2M", "hugepages-2M")


def test_a_malformed_package_id_names_it(tmp_path: Path) -> None:
    root = numa_tree(tmp_path, "0\n", {0: {"cpulist": "0\n"}})
    write_tree(root, {"devices/system/cpu/cpu0/topology/physical_package_id": "socket0\n"})
    assert_input_error(root, "devices/system/cpu/cpu0/topology/physical_package_id", "socket0")


def test_a_cpu_claimed_by_two_nodes_is_rejected(tmp_path: Path) -> None:
    root = numa_tree(tmp_path, "0-1\n", {0: {"cpulist": "0-1\n"}, 1: {"cpulist": "1-2\n"}})
    assert_input_error(root, "devices/system/node/node1/cpulist", "CPU 1 is also listed by node 0")


# Trees that cannot be true (#14.14): each would make the agent publish numbers no kernel wrote.


def test_a_meminfo_without_memtotal_names_the_file(tmp_path: Path) -> None:
    root = numa_tree(tmp_path, "0\n", {0: {"cpulist": "0\n", "meminfo": "Node 0 MemFree: 1024 kB\n"}})
    assert_input_error(root, "devices/system/node/node0/meminfo", "no MemTotal")


@pytest.mark.parametrize("attribute", ["nr_hugepages", "free_hugepages"])
def test_a_negative_hugepage_count_names_the_file_and_the_value(tmp_path: Path, attribute: str) -> None:
    root = numa_tree(tmp_path, "0\n", {0: {f"hugepages/hugepages-2048kB/{attribute}": "-3\n"}})
    assert_input_error(root, f"devices/system/node/node0/hugepages/hugepages-2048kB/{attribute}", "-3")


def test_an_online_node_without_its_directory_names_the_online_file(tmp_path: Path) -> None:
    root = numa_tree(tmp_path, "0-1\n", {0: {"cpulist": "0-1\n"}})
    assert_input_error(root, "devices/system/node/online", "node 1, which has no node1 directory")


def test_a_pci_device_on_a_numa_node_that_is_not_online_names_its_numa_node_file(tmp_path: Path) -> None:
    root = numa_tree(tmp_path, "0-1\n", {0: {"cpulist": "0\n"}, 1: {"cpulist": "1\n"}})
    device = root / "devices/pci0000:00/0000:3b:00.0"
    write_tree(
        device, {"vendor": "0x8086\n", "device": "0x158b\n", "class": "0x020000\n", "numa_node": "3\n"}
    )
    (root / "bus/pci/devices").mkdir(parents=True)
    (root / "bus/pci/devices/0000:3b:00.0").symlink_to("../../../devices/pci0000:00/0000:3b:00.0")
    with pytest.raises(InputError) as caught:
        read_machine(root, use_udev=False)
    assert caught.value.source == f"{root}/bus/pci/devices/0000:3b:00.0/numa_node"
    assert caught.value.detail == "NUMA node 3 is not online (online: 0-1)"
    assert read_machine(root, pci=False).node_ids == (0, 1)  # the agent, which reads no PCI, is unaffected


def test_a_directory_that_is_not_sysfs_is_rejected(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="not a sysfs root"):
        read_machine(tmp_path / "nowhere")


# ---- the real machine, when it has sysfs ---------------------------------------------------


@pytest.mark.skipif(not Path("/sys/devices/system/cpu").is_dir(), reason="no /sys on this machine")
def test_this_machines_own_sysfs_reads_without_error() -> None:
    machine = read_machine(Path("/sys"), pci=False)
    assert machine.cpus
    assert all(
        cpu.numa_node in machine.node_ids for cpu in machine.cpus.values() if cpu.numa_node is not None
    )
