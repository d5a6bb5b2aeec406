"""Readers for the kubelet's CPU and memory manager checkpoint files.

The podresources API stays the source of truth for assignments; these files add what it does not
say (the shared pool, the memory manager's per-NUMA machine state) and serve as change triggers.

Every shape the kubelet has written is accepted (kubernetes/kubernetes
``pkg/kubelet/cm/cpumanager/state/checkpoint.go`` and ``pkg/kubelet/cm/memorymanager/state/checkpoint.go``
and their history):

* ``cpu_manager_state`` v1 (``entries: {containerID: cpuset}``), v2 (``entries: {podUID:
  {container: cpuset}}``), with 1.36 ``podEntries``, and the 1.37-dev ``{"data": "<json>"}`` wrap;
* ``memory_manager_state`` with ``machineState``/``entries``, 1.36 ``podEntries`` and the 1.37-dev
  ``data`` string, which wins over a (possibly stale) top-level copy.

Field names are matched case-insensitively, as Go's JSON decoder does (real files say
``defaultCpuSet``, kubelet tests ``defaultCPUSet``). Map keys that are data (pod UIDs, container
names, NUMA ids, resource names) are kept verbatim. Policy names are lower-cased (``static``,
``none``) so callers compare one spelling. Checksums are ignored: the kubelet computes them over
Go structs, not the text.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rte.errors import InputError
from rte.model.cpuset import parse_cpuset
from rte.yamlfile import decode_json

CPU_MANAGER_STATE = "cpu_manager_state"
MEMORY_MANAGER_STATE = "memory_manager_state"
DRA_MANAGER_STATE = "dra_manager_state"
DEVICE_PLUGIN_CHECKPOINT = "device-plugins/kubelet_internal_checkpoint"


def state_files(kubelet_root: Path) -> tuple[Path, ...]:
    """The checkpoint files under the kubelet root dir whose changes signal new assignments."""
    names = (CPU_MANAGER_STATE, MEMORY_MANAGER_STATE, DRA_MANAGER_STATE, DEVICE_PLUGIN_CHECKPOINT)
    return tuple(kubelet_root / name for name in names)


@dataclass(frozen=True)
class CpuManagerState:
    """The CPU manager checkpoint. Mapping fields are plain dicts: treat them as read-only."""

    policy: str
    """``policyName`` lower-cased: ``static`` or ``none``."""
    default_cpuset: frozenset[int]
    """The shared pool; with ``static`` it includes the reserved CPUs. Empty with ``none``."""
    containers: Mapping[str, Mapping[str, frozenset[int]]]
    """Exclusive CPUs by pod UID, then container name."""
    pods: Mapping[str, frozenset[int]]
    """Pod-level exclusive CPUs (1.36+ ``podEntries``); they include the pod's container CPUs."""
    legacy_containers: Mapping[str, frozenset[int]]
    """v1 files: exclusive CPUs by container ID."""

    @property
    def exclusive_cpus(self) -> frozenset[int]:
        """Every CPU assigned exclusively, at any level."""
        result: set[int] = set()
        for per_container in self.containers.values():
            for cpus in per_container.values():
                result |= cpus
        for cpus in self.pods.values():
            result |= cpus
        for cpus in self.legacy_containers.values():
            result |= cpus
        return frozenset(result)


@dataclass(frozen=True)
class MemoryTable:
    """One resource on one NUMA node, in bytes (``memory``) or bytes of hugepages."""

    total: int
    system_reserved: int
    allocatable: int
    reserved: int
    free: int


@dataclass(frozen=True)
class NumaMemoryState:
    """The memory manager's view of one NUMA node."""

    number_of_assignments: int
    memory_map: Mapping[str, MemoryTable]
    """By resource: ``memory``, ``hugepages-<size>``."""
    cells: tuple[int, ...]
    """The NUMA nodes this one is grouped with for multi-NUMA blocks."""


@dataclass(frozen=True)
class CheckpointMemoryBlock:
    """One memory assignment as the checkpoint records it; a block may span several NUMA nodes.

    The same assignment as podresources reports it is :class:`rte.podres.types.MemoryBlock`.
    """

    numa_affinity: tuple[int, ...]
    memory_type: str
    size: int


@dataclass(frozen=True)
class MemoryManagerState:
    """The memory manager checkpoint. Mapping fields are plain dicts: treat them as read-only."""

    policy: str
    """``policyName`` lower-cased: ``static`` or ``none``."""
    machine_state: Mapping[int, NumaMemoryState]
    containers: Mapping[str, Mapping[str, tuple[CheckpointMemoryBlock, ...]]]
    """Blocks by pod UID, then container name."""
    pods: Mapping[str, tuple[CheckpointMemoryBlock, ...]]
    """Pod-level blocks (1.36+ ``podEntries``)."""


# --- decoding helpers -----------------------------------------------------------------------


def _brief(value: object) -> str:
    """A value for a one-line message; whole sub-objects of a state file can be long."""
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


class _Doc:
    """A JSON object with Go-style case-insensitive field lookup and path-naming errors."""

    def __init__(self, data: object, source: str, path: str) -> None:
        self.source = source
        self.path = path
        if data is None:  # Go decodes null into an empty struct
            data = {}
        if not isinstance(data, Mapping):
            raise InputError(self.where(), f"expected an object, got {_brief(data)}")
        self.fields: dict[str, Any] = {str(key).lower(): value for key, value in data.items()}

    def where(self, name: str = "") -> str:
        dotted = f"{self.path}.{name}" if self.path and name else self.path or name
        return f"{self.source}: {dotted}" if dotted else self.source

    def child(self, name: str) -> str:
        return f"{self.path}.{name}" if self.path else name

    def get(self, name: str) -> Any:
        return self.fields.get(name.lower())

    def string(self, name: str) -> str:
        value = self.get(name)
        if value is None:
            return ""
        if not isinstance(value, str):
            raise InputError(self.where(name), f"expected a string, got {_brief(value)}")
        return value

    def integer(self, name: str) -> int:
        value = self.get(name)
        if value is None:
            return 0
        if isinstance(value, bool) or not isinstance(value, int):
            raise InputError(self.where(name), f"expected an integer, got {_brief(value)}")
        return value

    def object(self, name: str) -> Mapping[str, Any]:
        value = self.get(name)
        if value is None:
            return {}
        if not isinstance(value, Mapping):
            raise InputError(self.where(name), f"expected an object, got {_brief(value)}")
        return value

    def int_list(self, name: str) -> tuple[int, ...]:
        value = self.get(name)
        if value is None:
            return ()
        if not isinstance(value, list) or not all(
            isinstance(item, int) and not isinstance(item, bool) for item in value
        ):
            raise InputError(self.where(name), f"expected a list of integers, got {_brief(value)}")
        return tuple(value)


def _payload(data: object, source: str) -> _Doc:
    """The object to read: the JSON inside a string ``data`` field (1.37-dev) or the top level."""
    top = _Doc(data, source, "")
    inner = top.get("data")
    if not isinstance(inner, str):
        return top
    return _Doc(decode_json(inner, top.where("data")), source, "data")


def _cpuset(value: object, where: str) -> frozenset[int]:
    if not isinstance(value, str):
        raise InputError(where, f"expected a cpuset string, got {_brief(value)}")
    try:
        return parse_cpuset(value)
    except ValueError as e:
        raise InputError(where, str(e)) from None


def _load_json(path: Path) -> object:
    source = str(path)
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as e:
        detail = e.strerror if isinstance(e, OSError) and e.strerror else str(e)
        raise InputError(source, f"cannot read: {detail}") from e
    return decode_json(text, source)


# --- cpu_manager_state ----------------------------------------------------------------------


def parse_cpu_manager_state(data: object, source: str = CPU_MANAGER_STATE) -> CpuManagerState:
    """Build a :class:`CpuManagerState` from the decoded JSON of a ``cpu_manager_state`` file."""
    doc = _payload(data, source)
    containers: dict[str, dict[str, frozenset[int]]] = {}
    legacy: dict[str, frozenset[int]] = {}
    entries_path = doc.child("entries")
    for key, value in doc.object("entries").items():
        if isinstance(value, str):  # v1: containerID -> cpuset
            legacy[key] = _cpuset(value, f"{source}: {entries_path}.{key}")
            continue
        if not isinstance(value, Mapping):
            raise InputError(f"{source}: {entries_path}.{key}", f"expected an object, got {_brief(value)}")
        containers[key] = {
            name: _cpuset(cpus, f"{source}: {entries_path}.{key}.{name}") for name, cpus in value.items()
        }
    pods: dict[str, frozenset[int]] = {}
    for pod_uid, value in doc.object("podEntries").items():
        entry = _Doc(value, source, f"{doc.child('podEntries')}.{pod_uid}")
        pods[pod_uid] = _cpuset(entry.string("cpuSet"), entry.where("cpuSet"))
    return CpuManagerState(
        policy=doc.string("policyName").lower(),
        default_cpuset=_cpuset(doc.string("defaultCpuSet"), doc.where("defaultCpuSet")),
        containers=containers,
        pods=pods,
        legacy_containers=legacy,
    )


def load_cpu_manager_state(path: Path) -> CpuManagerState:
    """Read a ``cpu_manager_state`` file; :class:`InputError` names the file on any defect."""
    return parse_cpu_manager_state(_load_json(path), str(path))


# --- memory_manager_state -------------------------------------------------------------------


def _blocks(value: object, source: str, path: str) -> tuple[CheckpointMemoryBlock, ...]:
    if value is None:
        return ()
    if not isinstance(value, list):
        raise InputError(f"{source}: {path}", f"expected a list of memory blocks, got {_brief(value)}")
    blocks = []
    for index, item in enumerate(value):
        block = _Doc(item, source, f"{path}[{index}]")
        blocks.append(
            CheckpointMemoryBlock(
                numa_affinity=block.int_list("numaAffinity"),
                memory_type=block.string("type"),
                size=block.integer("size"),
            )
        )
    return tuple(blocks)


def _numa_state(value: object, source: str, path: str) -> NumaMemoryState:
    node = _Doc(value, source, path)
    memory_map: dict[str, MemoryTable] = {}
    for resource, table_value in node.object("memoryMap").items():
        table = _Doc(table_value, source, f"{node.child('memoryMap')}.{resource}")
        memory_map[resource] = MemoryTable(
            total=table.integer("total"),
            system_reserved=table.integer("systemReserved"),
            allocatable=table.integer("allocatable"),
            reserved=table.integer("reserved"),
            free=table.integer("free"),
        )
    return NumaMemoryState(
        number_of_assignments=node.integer("numberOfAssignments"),
        memory_map=memory_map,
        cells=node.int_list("cells"),
    )


def parse_memory_manager_state(data: object, source: str = MEMORY_MANAGER_STATE) -> MemoryManagerState:
    """Build a :class:`MemoryManagerState` from the decoded JSON of a ``memory_manager_state`` file."""
    doc = _payload(data, source)
    machine: dict[int, NumaMemoryState] = {}
    for numa_key, value in doc.object("machineState").items():
        path = f"{doc.child('machineState')}.{numa_key}"
        if not (numa_key.isascii() and numa_key.isdigit()):
            raise InputError(f"{source}: {path}", f"not a NUMA node id: {numa_key!r}")
        machine[int(numa_key)] = _numa_state(value, source, path)
    containers: dict[str, dict[str, tuple[CheckpointMemoryBlock, ...]]] = {}
    for pod_uid, per_container in doc.object("entries").items():
        path = f"{doc.child('entries')}.{pod_uid}"
        if not isinstance(per_container, Mapping):
            raise InputError(f"{source}: {path}", f"expected an object, got {_brief(per_container)}")
        containers[pod_uid] = {
            name: _blocks(blocks, source, f"{path}.{name}") for name, blocks in per_container.items()
        }
    pods: dict[str, tuple[CheckpointMemoryBlock, ...]] = {}
    for pod_uid, value in doc.object("podEntries").items():
        entry = _Doc(value, source, f"{doc.child('podEntries')}.{pod_uid}")
        pods[pod_uid] = _blocks(entry.get("memoryBlocks"), source, entry.child("memoryBlocks"))
    return MemoryManagerState(
        policy=doc.string("policyName").lower(),
        machine_state=dict(sorted(machine.items())),
        containers=containers,
        pods=pods,
    )


def load_memory_manager_state(path: Path) -> MemoryManagerState:
    """Read a ``memory_manager_state`` file; :class:`InputError` names the file on any defect."""
    return parse_memory_manager_state(_load_json(path), str(path))
