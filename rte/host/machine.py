"""What the agent knows about the machine's hardware, as read from sysfs.

Every id is the kernel's own id (``node2`` is node 2 even when nodes 0 and 1 are absent), and every
collection is sorted numerically, so two reads of the same tree give equal values. ``None`` means
"the file that holds this fact is absent"; it never means zero. Paths below are relative to the
injected sysfs root (``/sys`` on a real host).

Node-level id sets (``Machine``), each parsed from a cpuset-list file in ``devices/system/node/``:

* ``online_nodes`` (``online``): nodes the kernel uses now. This is the authoritative node list.
* ``possible_nodes`` (``possible``): nodes that could ever come online; may exceed ``online``.
* ``has_cpu`` / ``has_memory`` / ``has_normal_memory``: nodes with CPUs, with any memory, with
  memory in ZONE_NORMAL (memory-only nodes such as PMem or CXL show up in ``has_memory`` only).

CPU id sets (``Machine``), from ``devices/system/cpu/{online,present,possible}``: ghw snapshots
omit them, in which case the CPUs are still known from the ``cpuN`` directories.

``NumaNode`` (one per online node, or per ``nodeN`` directory when ``online`` is absent):

* ``cpus``: ``nodeN/cpulist`` (falling back to the ``nodeN/cpuM`` entries); empty on CPU-less nodes.
* ``memory_total_bytes``: ``MemTotal`` of ``nodeN/meminfo`` (kB x 1024). It **includes** the
  hugepage pool reserved on that node; subtract ``hugepages`` to get memory usable as regular pages.
* ``hugepages`` / ``free_hugepages``: page size in bytes -> page count, from
  ``nodeN/hugepages/hugepages-<K>kB/{nr,free}_hugepages``. Empty when the directory is absent.
  Multiply size by count for the pool's bytes.
* ``distances``: real node id -> SLIT distance (10 = local). The kernel prints ``nodeN/distance``
  as one value per *online* node in ascending id order, so the row is mapped onto the online ids,
  never onto positions. Includes the self distance.

``CpuInfo`` (one per ``devices/system/cpu/cpuN`` directory, plus any CPU named only in a node's
cpulist), from ``cpuN/topology/``:

* ``numa_node``: the node whose cpulist contains the CPU; ``None`` when no node lists it.
* ``package_id`` (``physical_package_id``): the socket. Not necessarily small or dense (arm64
  firmware reports table offsets such as 36 and 8442); ``-1`` (unknown) becomes ``None``.
* ``die_id``: absent on old kernels, ``-1`` on platforms without dies; both give ``None``.
* ``core_id``: unique only within a package (and die); ``-1`` gives ``None``.
* ``thread_siblings`` (``thread_siblings_list``): hardware threads of the same core, the CPU
  itself included. ``len(thread_siblings)`` is threads per core. Empty when unknown.
* ``core_siblings`` (``core_siblings_list``, else ``package_cpus_list``): CPUs of the same package.

``PciDevice`` (one per ``bus/pci/devices/<address>`` entry, a link into ``devices/pci*``):

* ``address``: ``domain:bus:device.function``; devices sort by its numeric value.
* ``numa_node``: the ``numa_node`` attribute; ``None`` when absent or ``-1`` (no affinity).
* ``vendor`` / ``device`` / ``class_code``: the attributes as the kernel prints them
  (``0x8086``, ``0x158b``, ``0x020000``).
* ``driver``: name of the bound driver (the ``driver`` link's last component), ``None`` if unbound.
* ``physfn``: for an SR-IOV virtual function, the address of its physical function.
* ``sriov_totalvfs``: for an SR-IOV capable physical function, the most VFs it supports.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

from rte.model.cpuset import format_cpuset


@dataclass(frozen=True)
class CpuInfo:
    """One logical CPU and where it sits."""

    id: int
    numa_node: int | None = None
    package_id: int | None = None
    die_id: int | None = None
    core_id: int | None = None
    thread_siblings: frozenset[int] = frozenset()
    core_siblings: frozenset[int] = frozenset()


@dataclass(frozen=True)
class NumaNode:
    """One NUMA node, keyed by its kernel id."""

    id: int
    cpus: frozenset[int] = frozenset()
    memory_total_bytes: int | None = None
    hugepages: Mapping[int, int] = field(default_factory=dict)
    free_hugepages: Mapping[int, int] = field(default_factory=dict)
    distances: Mapping[int, int] = field(default_factory=dict)

    @property
    def hugepages_total_bytes(self) -> int:
        """Bytes held by this node's hugepage pools, all sizes together."""
        return sum(size * count for size, count in self.hugepages.items())


@dataclass(frozen=True)
class PciDevice:
    """One PCI function."""

    address: str
    numa_node: int | None
    vendor: str
    device: str
    class_code: str
    driver: str | None = None
    physfn: str | None = None
    sriov_totalvfs: int | None = None


@dataclass(frozen=True)
class Machine:
    """Everything :func:`rte.host.sysfs.read_machine` learned, sorted by kernel id.

    Equal trees give equal ``Machine`` values. The mapping fields make instances unhashable.
    """

    nodes: tuple[NumaNode, ...]
    cpus: Mapping[int, CpuInfo]
    pci_devices: tuple[PciDevice, ...] = ()
    online_nodes: frozenset[int] | None = None
    possible_nodes: frozenset[int] | None = None
    has_cpu: frozenset[int] | None = None
    has_memory: frozenset[int] | None = None
    has_normal_memory: frozenset[int] | None = None
    online_cpus: frozenset[int] | None = None
    present_cpus: frozenset[int] | None = None
    possible_cpus: frozenset[int] | None = None

    @cached_property
    def node_ids(self) -> tuple[int, ...]:
        """The NUMA node ids in ascending order (computed once: the agent asks every cycle)."""
        return tuple(node.id for node in self.nodes)

    def node(self, node_id: int) -> NumaNode:
        """The node with this kernel id; :class:`KeyError` if there is none."""
        for node in self.nodes:
            if node.id == node_id:
                return node
        raise KeyError(f"no NUMA node {node_id} (nodes: {format_cpuset(self.node_ids) or 'none'})")

    def cpu_to_node(self) -> dict[int, int]:
        """CPU id -> NUMA node id, for every CPU whose node is known."""
        return {cpu.id: cpu.numa_node for cpu in self.cpus.values() if cpu.numa_node is not None}

    def packages(self) -> dict[int, frozenset[int]]:
        """Package (socket) id -> its CPUs, for CPUs whose package is known."""
        found: dict[int, set[int]] = {}
        for cpu in self.cpus.values():
            if cpu.package_id is not None:
                found.setdefault(cpu.package_id, set()).add(cpu.id)
        return {pkg: frozenset(found[pkg]) for pkg in sorted(found)}

    @cached_property
    def numa_sockets(self) -> Mapping[int, frozenset[int]]:
        """NUMA id -> the packages of the CPUs in its ``cpulist``, for nodes with CPUs; empty when
        some CPU's package is unknown."""
        out: dict[int, frozenset[int]] = {}
        for node in self.nodes:
            sockets = set()
            for cpu in node.cpus:
                info = self.cpus.get(cpu)
                if info is None or info.package_id is None:
                    return {}
                sockets.add(info.package_id)
            if sockets:
                out[node.id] = frozenset(sockets)
        return out

    @cached_property
    def _core_groups(self) -> tuple[frozenset[int], ...]:
        groups = {cpu.thread_siblings for cpu in self.cpus.values() if cpu.thread_siblings}
        return tuple(sorted(groups, key=min))

    def core_groups(self) -> tuple[frozenset[int], ...]:
        """The distinct thread-sibling sets (one per physical core), ordered by lowest CPU id."""
        return self._core_groups

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready rendering with cpusets as list strings ("0-3,8"), for dumps and goldens."""

        def ids(value: frozenset[int] | None) -> str | None:
            return None if value is None else format_cpuset(value)

        return {
            "node_files": {
                "online": ids(self.online_nodes),
                "possible": ids(self.possible_nodes),
                "has_cpu": ids(self.has_cpu),
                "has_memory": ids(self.has_memory),
                "has_normal_memory": ids(self.has_normal_memory),
            },
            "cpu_files": {
                "online": ids(self.online_cpus),
                "present": ids(self.present_cpus),
                "possible": ids(self.possible_cpus),
            },
            "nodes": [
                {
                    "id": node.id,
                    "cpus": format_cpuset(node.cpus),
                    "memory_total_bytes": node.memory_total_bytes,
                    "hugepages": {str(size): n for size, n in node.hugepages.items()},
                    "free_hugepages": {str(size): n for size, n in node.free_hugepages.items()},
                    "distances": {str(other): d for other, d in node.distances.items()},
                }
                for node in self.nodes
            ],
            "cpus": [
                {
                    "id": cpu.id,
                    "numa_node": cpu.numa_node,
                    "package_id": cpu.package_id,
                    "die_id": cpu.die_id,
                    "core_id": cpu.core_id,
                    "thread_siblings": format_cpuset(cpu.thread_siblings),
                    "core_siblings": format_cpuset(cpu.core_siblings),
                }
                for cpu in self.cpus.values()
            ],
            "pci_devices": [
                {
                    "address": dev.address,
                    "numa_node": dev.numa_node,
                    "vendor": dev.vendor,
                    "device": dev.device,
                    "class": dev.class_code,
                    "driver": dev.driver,
                    "physfn": dev.physfn,
                    "sriov_totalvfs": dev.sriov_totalvfs,
                }
                for dev in self.pci_devices
            ],
        }
