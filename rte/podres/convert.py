"""Turn podresources responses (protobuf messages or JSON) into :mod:`rte.podres.types`.

Two JSON encodings exist in the wild and both are accepted, detected per document:

* protojson (canonical proto3 JSON): lowerCamelCase keys, int64/uint64 as strings;
* Go ``encoding/json`` of the generated structs (what RTE's fake backend reads): snake_case keys,
  plain numbers.

Integers are accepted as numbers or decimal strings in both. Unknown keys are ignored, as a proto
parser skips unknown fields, so newer kubelets' additions do not break us. Anything else that is
wrong raises :class:`InputError` naming the source and the field path.

The protobuf side is duck-typed on the generated messages, so this module imports neither grpc
nor protobuf.
"""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Literal, NoReturn

from rte.errors import InputError
from rte.model.sharing import SharedValues
from rte.podres.types import (
    NO_CPUS,
    AllocatableResources,
    ClaimDevice,
    ContainerResources,
    Device,
    DynamicResource,
    MemoryBlock,
    PodResources,
)
from rte.yamlfile import decode_json

if TYPE_CHECKING:
    from rte.podres.v1 import api_pb2

JsonStyle = Literal["protojson", "gojson"]

# Every multi-word field name of the API; single-word names are spelled alike in both styles.
_SNAKE_FIELDS = (
    "pod_resources",
    "cpu_ids",
    "device_ids",
    "resource_name",
    "memory_type",
    "dynamic_resources",
    "claim_name",
    "claim_namespace",
    "claim_resources",
    "cdi_devices",
    "driver_name",
    "pool_name",
    "device_name",
    "share_id",
    "pod_name",
    "pod_namespace",
)


def _camel(name: str) -> str:
    first, *rest = name.split("_")
    return first + "".join(word.title() for word in rest)


_TO_CAMEL = {name: _camel(name) for name in _SNAKE_FIELDS}
_CAMEL_FIELDS = frozenset(_TO_CAMEL.values())
_INT_TEXT = re.compile(r"-?[0-9]+")


def numa_ids(ids: Iterable[int]) -> tuple[int, ...]:
    """Sorted unique NUMA ids; negative ids (the kubelet's -1) mean "no locality" and are dropped."""
    return tuple(sorted({i for i in ids if i >= 0}))


def _numa_pb(topology: api_pb2.TopologyInfo) -> tuple[int, ...]:
    nodes = topology.nodes
    # Fast path: the kubelet sends one node per device entry, and big nodes have many entries.
    if len(nodes) == 1:
        node_id = nodes[0].ID
        return (node_id,) if node_id >= 0 else ()
    return numa_ids(n.ID for n in nodes)


def _unknown(raw_ids: list[int], ids: tuple[int, ...]) -> bool:
    """A topology that names nodes, none of them known (the kubelet's -1)."""
    return bool(raw_ids) and not ids


# ---------------------------------------------------------------------------------------------
# JSON


def parse_json(text: str | bytes, source: str) -> object:
    """``json.loads`` with a one-line :class:`InputError` naming ``source`` for anything it refuses."""
    return decode_json(text, source)


def detect_json_style(data: object, source: str) -> JsonStyle:
    """Tell protojson from Go JSON by the multi-word keys present.

    A document without any multi-word key reads the same either way and is reported as gojson.
    """
    seen_camel = seen_snake = False
    stack = [data]
    while stack:
        node = stack.pop()
        if isinstance(node, dict):
            for key, value in node.items():
                seen_camel = seen_camel or key in _CAMEL_FIELDS
                seen_snake = seen_snake or key in _TO_CAMEL
                stack.append(value)
        elif isinstance(node, list):
            stack.extend(node)
    if seen_camel and seen_snake:
        raise InputError(source, "mixes protojson (lowerCamelCase) and Go JSON (snake_case) keys")
    return "protojson" if seen_camel else "gojson"


class _Reader:
    """Field access on one JSON document, with the key style fixed and error paths tracked."""

    def __init__(self, data: object, source: str) -> None:
        self.source = source
        self.camel = detect_json_style(data, source) == "protojson"

    def fail(self, path: str, detail: str) -> NoReturn:
        raise InputError(f"{self.source}: {path}" if path else self.source, detail)

    def key(self, name: str) -> str:
        return _TO_CAMEL.get(name, name) if self.camel else name

    def obj(self, value: object, path: str) -> dict[str, object]:
        if value is None:
            return {}
        if not isinstance(value, dict):
            self.fail(path, f"expected an object, got {_show(value)}")
        return value

    def child(self, obj: dict[str, object], name: str, path: str) -> tuple[object, str]:
        key = self.key(name)
        return obj.get(key), f"{path}.{key}" if path else key

    def repeated(self, obj: dict[str, object], name: str, path: str) -> list[tuple[object, str]]:
        value, where = self.child(obj, name, path)
        if value is None:
            return []
        if not isinstance(value, list):
            self.fail(where, f"expected a list, got {_show(value)}")
        return [(item, f"{where}[{i}]") for i, item in enumerate(value)]

    def string(self, obj: dict[str, object], name: str, path: str) -> str:
        value, where = self.child(obj, name, path)
        return "" if value is None else self.as_str(value, where)

    def as_str(self, value: object, path: str) -> str:
        if not isinstance(value, str):
            self.fail(path, f"expected a string, got {_show(value)}")
        return value

    def as_int(self, value: object, path: str) -> int:
        # bool is an int subclass in Python but never a valid proto integer.
        if isinstance(value, int) and not isinstance(value, bool):
            return value
        if isinstance(value, str) and _INT_TEXT.fullmatch(value):
            return int(value)
        self.fail(path, f"expected an integer, got {_show(value)}")

    def natural(self, value: object, path: str, what: str) -> int:
        number = self.as_int(value, path)
        if number < 0:
            self.fail(path, f"negative {what} {number}")
        return number

    def cpu_ids(self, obj: dict[str, object], path: str) -> frozenset[int]:
        return (
            frozenset(self.natural(v, p, "CPU id") for v, p in self.repeated(obj, "cpu_ids", path)) or NO_CPUS
        )

    def numa(self, obj: dict[str, object], path: str) -> tuple[int, ...]:
        return self.topology(obj, path)[0]

    def topology(self, obj: dict[str, object], path: str) -> tuple[tuple[int, ...], bool]:
        """The known NUMA ids, and whether the topology named only unknown (negative) ones."""
        topology, where = self.child(obj, "topology", path)
        nodes = self.repeated(self.obj(topology, where), "nodes", where)
        raw = [self.as_int(self.obj(n, p).get("ID", 0), f"{p}.ID") for n, p in nodes]
        ids = numa_ids(raw)
        return ids, _unknown(raw, ids)


def _show(value: object) -> str:
    text = json.dumps(value)
    return text if len(text) <= 40 else text[:37] + "..."


def _device_json(r: _Reader, value: object, path: str) -> Device:
    obj = r.obj(value, path)
    ids = tuple(r.as_str(v, p) for v, p in r.repeated(obj, "device_ids", path))
    numa, unknown = r.topology(obj, path)
    return Device(r.string(obj, "resource_name", path), ids, numa, unknown)


def _memory_json(r: _Reader, value: object, path: str) -> MemoryBlock:
    obj = r.obj(value, path)
    size, where = r.child(obj, "size", path)
    size_bytes = 0 if size is None else r.natural(size, where, "size")
    return MemoryBlock(r.string(obj, "memory_type", path), size_bytes, r.numa(obj, path))


def _dynamic_json(r: _Reader, value: object, path: str) -> DynamicResource:
    obj = r.obj(value, path)
    devices = []
    for claim, where in r.repeated(obj, "claim_resources", path):
        c = r.obj(claim, where)
        cdi = tuple(r.string(r.obj(v, p), "name", p) for v, p in r.repeated(c, "cdi_devices", where))
        share, share_path = r.child(c, "share_id", where)
        devices.append(
            ClaimDevice(
                r.string(c, "driver_name", where),
                r.string(c, "pool_name", where),
                r.string(c, "device_name", where),
                cdi,
                None if share is None else r.as_str(share, share_path),
            )
        )
    return DynamicResource(
        r.string(obj, "claim_name", path), r.string(obj, "claim_namespace", path), tuple(devices)
    )


def _memory_list_json(r: _Reader, obj: dict[str, object], path: str) -> tuple[MemoryBlock, ...]:
    return tuple(_memory_json(r, v, p) for v, p in r.repeated(obj, "memory", path))


def _container_json(r: _Reader, value: object, path: str) -> ContainerResources:
    obj = r.obj(value, path)
    return ContainerResources(
        name=r.string(obj, "name", path),
        cpu_ids=r.cpu_ids(obj, path),
        devices=tuple(_device_json(r, v, p) for v, p in r.repeated(obj, "devices", path)),
        memory=_memory_list_json(r, obj, path),
        dynamic_resources=tuple(
            _dynamic_json(r, v, p) for v, p in r.repeated(obj, "dynamic_resources", path)
        ),
    )


def _pod_json(r: _Reader, value: object, path: str) -> PodResources:
    obj = r.obj(value, path)
    return PodResources(
        namespace=r.string(obj, "namespace", path),
        name=r.string(obj, "name", path),
        containers=tuple(_container_json(r, v, p) for v, p in r.repeated(obj, "containers", path)),
        cpu_ids=r.cpu_ids(obj, path),
        memory=_memory_list_json(r, obj, path),
    )


def list_from_json(data: object, source: str) -> tuple[PodResources, ...]:
    """A decoded ``ListPodResourcesResponse`` document -> pods."""
    r = _Reader(data, source)
    root = r.obj(data, "")
    return tuple(_pod_json(r, v, p) for v, p in r.repeated(root, "pod_resources", ""))


def allocatable_from_json(data: object, source: str) -> AllocatableResources:
    """A decoded ``AllocatableResourcesResponse`` document -> allocatable resources."""
    r = _Reader(data, source)
    root = r.obj(data, "")
    return AllocatableResources(
        cpu_ids=r.cpu_ids(root, ""),
        devices=tuple(_device_json(r, v, p) for v, p in r.repeated(root, "devices", "")),
        memory=_memory_list_json(r, root, ""),
    )


def get_from_json(data: object, source: str) -> PodResources | None:
    """A decoded ``GetPodResourcesResponse`` document -> the pod, or None if it holds none."""
    r = _Reader(data, source)
    pod, where = r.child(r.obj(data, ""), "pod_resources", "")
    return None if pod is None else _pod_json(r, pod, where)


# ---------------------------------------------------------------------------------------------
# protobuf (field types are guaranteed by the wire format; only values need checking)


def _cpu_ids_pb(ids: Sequence[int], source: str, path: str) -> frozenset[int]:
    if not ids:
        return NO_CPUS
    result = frozenset(ids)
    if result and min(result) < 0:
        raise InputError(f"{source}: {path}", f"negative CPU id {min(result)}")
    return result


def _device_pb(msg: api_pb2.ContainerDevices) -> Device:
    ids = _numa_pb(msg.topology)
    unknown = not ids and _unknown([n.ID for n in msg.topology.nodes], ids)
    return Device(msg.resource_name, tuple(msg.device_ids), ids, unknown)


def _memory_pb(msg: api_pb2.ContainerMemory) -> MemoryBlock:
    return MemoryBlock(msg.memory_type, msg.size, _numa_pb(msg.topology))


def _dynamic_pb(msg: api_pb2.DynamicResource) -> DynamicResource:
    devices = tuple(
        ClaimDevice(
            c.driver_name,
            c.pool_name,
            c.device_name,
            tuple(d.name for d in c.cdi_devices),
            c.share_id if c.HasField("share_id") else None,
        )
        for c in msg.claim_resources
    )
    return DynamicResource(msg.claim_name, msg.claim_namespace, devices)


def pod_from_proto(msg: api_pb2.PodResources, source: str, path: str = "pod_resources") -> PodResources:
    """One ``PodResources`` message -> :class:`PodResources`; ``path`` locates it in errors."""
    containers = tuple(
        ContainerResources(
            name=sys.intern(c.name),
            cpu_ids=_cpu_ids_pb(c.cpu_ids, source, f"{path}.containers[{i}].cpu_ids"),
            devices=tuple(_device_pb(d) for d in c.devices),
            memory=tuple(_memory_pb(m) for m in c.memory),
            dynamic_resources=tuple(_dynamic_pb(d) for d in c.dynamic_resources),
        )
        for i, c in enumerate(msg.containers)
    )
    return PodResources(
        # Interned: a node's pods share a few namespaces and container names, and every decoded
        # message brings its own copy of each otherwise. The pod's name too: the agent's pod
        # watch interns the names it reads from the API, so both views share one string.
        namespace=sys.intern(msg.namespace),
        name=sys.intern(msg.name),
        containers=_shared_if_plain(containers),
        cpu_ids=_cpu_ids_pb(msg.cpu_ids, source, f"{path}.cpu_ids"),
        memory=tuple(_memory_pb(m) for m in msg.memory),
    )


_PLAIN_CONTAINERS: SharedValues[tuple[ContainerResources, ...]] = SharedValues(1024)
"""Containers that hold nothing, by value: most pods of a node are one or two such containers
of a few names (``app``, ``istio-proxy``), and each pod had its own tuple and objects (~190
bytes a pod at 5000 pods)."""


def _shared_if_plain(containers: tuple[ContainerResources, ...]) -> tuple[ContainerResources, ...]:
    if any(c.cpu_ids or c.devices or c.memory or c.dynamic_resources for c in containers):
        return containers
    return _PLAIN_CONTAINERS.share(containers, containers)


def list_from_proto(msg: api_pb2.ListPodResourcesResponse, source: str) -> tuple[PodResources, ...]:
    """A ``ListPodResourcesResponse`` -> pods."""
    return tuple(pod_from_proto(p, source, f"pod_resources[{i}]") for i, p in enumerate(msg.pod_resources))


def allocatable_from_proto(msg: api_pb2.AllocatableResourcesResponse, source: str) -> AllocatableResources:
    """An ``AllocatableResourcesResponse`` -> allocatable resources."""
    return AllocatableResources(
        cpu_ids=_cpu_ids_pb(msg.cpu_ids, source, "cpu_ids"),
        devices=tuple(_device_pb(d) for d in msg.devices),
        memory=tuple(_memory_pb(m) for m in msg.memory),
    )


def get_from_proto(msg: api_pb2.GetPodResourcesResponse, source: str) -> PodResources | None:
    """A ``GetPodResourcesResponse`` -> the pod, or None if it holds none."""
    return pod_from_proto(msg.pod_resources, source) if msg.HasField("pod_resources") else None
