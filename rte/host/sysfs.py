"""NUMA nodes and CPU topology from a sysfs tree whose root is injected.

The parsers take text and return values (raising ``ValueError`` with the offending text), so each
kernel quirk has a unit test without a file tree; :func:`read_machine` walks the tree, names the
file in every error, and never reads outside ``sysfs_root``. What each fact means is documented
in :mod:`rte.host.machine`.

Differences on purpose from the Go reference agents, which read topology through jaypipes/ghw
(``pkg/topology/topology_linux.go`` lists node directories in name order and stops at the first
node that fails to read) and then use list positions as ids: node ids come from
``node/online`` and are sorted numerically (never ``node10`` before ``node2``), the distance row
is keyed by real node ids, and a node without meminfo, hugepages or CPUs yields fewer facts
instead of truncating the node list.
"""

from __future__ import annotations

import os
from pathlib import Path

from rte.errors import InputError
from rte.host.machine import CpuInfo, Machine, NumaNode, PciDevice
from rte.host.pci import read_pci_devices
from rte.host.sysfsio import list_dir, parse_int, parse_optional_id, read_parsed
from rte.model.cpuset import format_cpuset, parse_cpuset

_NODE_SET_FILES = ("online", "possible", "has_cpu", "has_memory", "has_normal_memory")
_CPU_SET_FILES = ("online", "present", "possible")


# ---- parsers: text in, value out ------------------------------------------------------------


def parse_id_set(text: str) -> frozenset[int]:
    """A cpuset-list file ("0-3,8\\n", trailing NULs allowed, empty for CPU-less nodes)."""
    return parse_cpuset(text)


def parse_distance_row(text: str) -> tuple[int, ...]:
    """A ``nodeN/distance`` row: whitespace-separated SLIT distances."""
    fields = text.replace("\x00", "").split()
    if not all(f.isascii() and f.isdigit() for f in fields):
        raise ValueError(f"not a row of distances: {text.strip()[:200]!r}")
    return tuple(int(f) for f in fields)


def parse_node_meminfo(text: str) -> dict[str, int]:
    """``nodeN/meminfo`` as field -> value; ``kB`` values are converted to bytes.

    Lines look like ``Node 0 MemTotal:  16769836 kB``; the ``Node N`` prefix is optional (the
    same parser reads /proc/meminfo-style text), blank lines are skipped (some old kernels
    start the file with one), and unitless fields (``HugePages_Total``) are plain counts.
    """
    values: dict[str, int] = {}
    for line in text.replace("\x00", "").splitlines():
        parts = line.split()
        if not parts:
            continue
        if parts[0] == "Node" and len(parts) >= 2:
            parts = parts[2:]
        if len(parts) not in (2, 3) or not parts[0].endswith(":") or not parts[1].isdigit():
            raise ValueError(f"not a meminfo line: {line.strip()[:120]!r}")
        if len(parts) == 3 and parts[2] != "kB":
            raise ValueError(f"unknown unit {parts[2]!r} in meminfo line {line.strip()[:120]!r}")
        value = int(parts[1])
        values[parts[0][:-1]] = value * 1024 if len(parts) == 3 else value
    return values


def parse_hugepages_dir_name(name: str) -> int:
    """Page size in bytes from a ``hugepages-<K>kB`` directory name."""
    size_kb = name.removeprefix("hugepages-").removesuffix("kB")
    if not (name.startswith("hugepages-") and name.endswith("kB") and size_kb.isdigit()):
        raise ValueError(f"not a hugepages-<size>kB directory name: {name!r}")
    return int(size_kb) * 1024


def numbered(names: list[str] | None, prefix: str) -> list[int]:
    """Sorted ids of entries named ``<prefix><decimal>`` ("node10" -> 10), others ignored."""
    if not names:
        return []
    cut = len(prefix)
    return sorted(
        int(name[cut:])
        for name in names
        if name.startswith(prefix) and name[cut:].isdigit() and name[cut:].isascii()
    )


# ---- the reader ------------------------------------------------------------------------------


def read_machine(sysfs_root: Path | str, *, pci: bool = True, use_udev: bool | None = None) -> Machine:
    """Read NUMA nodes, CPU topology and (unless ``pci=False``) PCI devices under ``sysfs_root``.

    ``sysfs_root`` is the directory holding ``devices/system/node`` (``/sys`` on a host).
    ``use_udev``: ``None`` lets :func:`rte.host.pci.read_pci_devices` use udev only when the
    root is the real ``/sys``; ``True`` / ``False`` force it on / off.
    Raises :class:`InputError` naming the file for malformed content or a tree that is not sysfs.
    """
    root = os.path.abspath(os.fspath(sysfs_root))
    node_dir = f"{root}/devices/system/node"
    cpu_dir = f"{root}/devices/system/cpu"
    node_entries = list_dir(node_dir)
    cpu_entries = list_dir(cpu_dir)
    if node_entries is None and cpu_entries is None:
        raise InputError(root, "not a sysfs root: neither devices/system/node nor devices/system/cpu exists")

    node_sets = _read_id_sets(node_dir, node_entries, _NODE_SET_FILES)
    cpu_sets = _read_id_sets(cpu_dir, cpu_entries, _CPU_SET_FILES)
    cpu_dir_ids = numbered(cpu_entries, "cpu")

    if node_entries is None:
        # A kernel built without NUMA has no node directory; like cadvisor and the kubelet we
        # then see one node 0 holding every CPU, so the agent still publishes one zone.
        nodes: tuple[NumaNode, ...] = (NumaNode(id=0, cpus=frozenset(cpu_dir_ids)),)
    else:
        online = node_sets["online"]
        node_ids = sorted(online) if online is not None else numbered(node_entries, "node")
        missing = sorted(set(node_ids) - set(numbered(node_entries, "node")))
        if missing:
            # The kernel creates nodeN for every online node: this tree cannot be true.
            raise InputError(
                f"{node_dir}/online", f"lists node {missing[0]}, which has no node{missing[0]} directory"
            )
        nodes = tuple(_read_node(node_dir, node_id, node_ids) for node_id in node_ids)

    cpu_to_node = _cpu_to_node(node_dir, nodes)
    all_cpu_ids = sorted(set(cpu_dir_ids).union(cpu_to_node))
    cpus = {cpu_id: _read_cpu(cpu_dir, cpu_id, cpu_to_node.get(cpu_id)) for cpu_id in all_cpu_ids}
    pci_devices = read_pci_devices(root, use_udev=use_udev) if pci else ()
    _check_pci_nodes(root, pci_devices, [node.id for node in nodes])

    return Machine(
        nodes=nodes,
        cpus=cpus,
        pci_devices=pci_devices,
        online_nodes=node_sets["online"],
        possible_nodes=node_sets["possible"],
        has_cpu=node_sets["has_cpu"],
        has_memory=node_sets["has_memory"],
        has_normal_memory=node_sets["has_normal_memory"],
        online_cpus=cpu_sets["online"],
        present_cpus=cpu_sets["present"],
        possible_cpus=cpu_sets["possible"],
    )


def _check_pci_nodes(root: str, devices: tuple[PciDevice, ...], node_ids: list[int]) -> None:
    for dev in devices:
        if dev.numa_node is not None and dev.numa_node not in node_ids:
            raise InputError(
                f"{root}/bus/pci/devices/{dev.address}/numa_node",
                f"NUMA node {dev.numa_node} is not online (online: {format_cpuset(node_ids) or 'none'})",
            )


def _read_id_sets(
    directory: str, entries: list[str] | None, names: tuple[str, ...]
) -> dict[str, frozenset[int] | None]:
    present = set(entries or ())
    return {
        name: read_parsed(f"{directory}/{name}", parse_id_set) if name in present else None for name in names
    }


def _read_node(node_dir: str, node_id: int, node_ids: list[int]) -> NumaNode:
    path = f"{node_dir}/node{node_id}"
    cpus = read_parsed(f"{path}/cpulist", parse_id_set)
    if cpus is None:
        # Older layouts without cpulist still link each CPU as nodeN/cpuM.
        cpus = frozenset(numbered(list_dir(path), "cpu"))
    meminfo = read_parsed(f"{path}/meminfo", parse_node_meminfo)
    if meminfo is not None and "MemTotal" not in meminfo:
        raise InputError(f"{path}/meminfo", "no MemTotal line: every node's meminfo has one")
    hugepages, free_hugepages = _read_hugepages(f"{path}/hugepages")
    distance_path = f"{path}/distance"
    row = read_parsed(distance_path, parse_distance_row)
    return NumaNode(
        id=node_id,
        cpus=cpus,
        memory_total_bytes=None if meminfo is None else meminfo.get("MemTotal"),
        hugepages=hugepages,
        free_hugepages=free_hugepages,
        distances={} if row is None else _distances_by_id(distance_path, row, node_ids),
    )


def _distances_by_id(source: str, row: tuple[int, ...], node_ids: list[int]) -> dict[int, int]:
    # The kernel prints one distance per online node in ascending id order; position i is
    # node_ids[i], not node i (they differ as soon as ids have holes).
    if len(row) != len(node_ids):
        raise InputError(
            source,
            f"{len(row)} distances {' '.join(map(str, row))!r} for {len(node_ids)} online nodes "
            f"{format_cpuset(node_ids)!r}",
        )
    return dict(zip(node_ids, row, strict=True))


def _read_hugepages(hugepages_dir: str) -> tuple[dict[int, int], dict[int, int]]:
    total: dict[int, int] = {}
    free: dict[int, int] = {}
    sizes: list[tuple[int, str]] = []
    for name in list_dir(hugepages_dir) or ():
        try:
            sizes.append((parse_hugepages_dir_name(name), name))
        except ValueError as e:
            raise InputError(f"{hugepages_dir}/{name}", str(e)) from e
    for size, name in sorted(sizes):
        for counts, attribute in ((total, "nr_hugepages"), (free, "free_hugepages")):
            path = f"{hugepages_dir}/{name}/{attribute}"
            count = read_parsed(path, parse_int)
            if count is not None and count < 0:
                raise InputError(path, f"negative page count {count}")
            if count is not None:
                counts[size] = count
    return total, free


def _cpu_to_node(node_dir: str, nodes: tuple[NumaNode, ...]) -> dict[int, int]:
    found: dict[int, int] = {}
    for node in nodes:
        for cpu in node.cpus:
            other = found.setdefault(cpu, node.id)
            if other != node.id:
                raise InputError(
                    f"{node_dir}/node{node.id}/cpulist", f"CPU {cpu} is also listed by node {other}"
                )
    return found


def _read_cpu(cpu_dir: str, cpu_id: int, numa_node: int | None) -> CpuInfo:
    topology = f"{cpu_dir}/cpu{cpu_id}/topology"
    # One listing instead of failed opens: which files exist varies by kernel and architecture.
    entries = list_dir(topology)
    if entries is None:
        return CpuInfo(id=cpu_id, numa_node=numa_node)
    present = set(entries)

    def optional_id(name: str) -> int | None:
        return read_parsed(f"{topology}/{name}", parse_optional_id) if name in present else None

    def id_set(*names: str) -> frozenset[int]:
        for name in names:
            if name in present:
                return read_parsed(f"{topology}/{name}", parse_id_set) or frozenset()
        return frozenset()

    return CpuInfo(
        id=cpu_id,
        numa_node=numa_node,
        package_id=optional_id("physical_package_id"),
        die_id=optional_id("die_id"),
        core_id=optional_id("core_id"),
        thread_siblings=id_set("thread_siblings_list"),
        core_siblings=id_set("core_siblings_list", "package_cpus_list"),
    )
