"""Build synthetic podresources scenarios (for tests, benchmarks and the fake kubelet).

``synthetic()`` makes a node with any NUMA ids (sparse ones on purpose), CPUs split into one
contiguous block per zone, allocatable memory and 1Gi hugepages per zone, devices on several zones,
and pods mixing exclusive single-zone pods, pods whose CPUs and memory span two zones, and
shared-pool pods. Nothing is over-allocated. The same seed gives the same scenario.
``large_node()`` is the lead's benchmark shape: 8 sparse zones, 384 CPUs, 64 devices, 250 pods.

``Scenario.write(dir)`` lays the responses out like the fixtures (``list.pb``,
``get_allocatable_resources.pb``, optionally ``.protojson.json`` / ``.gojson.json``).

The small builders (``pod``, ``container``, ``device``, ``memory``) make protobuf messages for
tests, e.g. to feed :meth:`rte.testing.fake_kubelet.FakeKubelet.add_pod`; ``cpu_manager_state``
makes the CPU manager's checkpoint that goes with them (what init containers still hold).
"""

from __future__ import annotations

import json
import random
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from google.protobuf import json_format
from google.protobuf.message import Message

from rte.model.cpuset import format_cpuset
from rte.podres.v1 import api_pb2

if TYPE_CHECKING:
    from rte.host.machine import Machine

GiB = 1024**3
NIC = "example.com/nic"
LARGE_NODE_NUMA_IDS = (0, 1, 4, 5, 8, 9, 12, 14)


def topology(numa_ids: Iterable[int]) -> api_pb2.TopologyInfo:
    return api_pb2.TopologyInfo(nodes=[api_pb2.NUMANode(ID=i) for i in numa_ids])


def device(resource: str, device_id: str, *numa_ids: int) -> api_pb2.ContainerDevices:
    """One device entry; no NUMA ids means no topology field at all."""
    msg = api_pb2.ContainerDevices(resource_name=resource, device_ids=[device_id])
    if numa_ids:
        msg.topology.CopyFrom(topology(numa_ids))
    return msg


def memory(memory_type: str, size: int, *numa_ids: int) -> api_pb2.ContainerMemory:
    msg = api_pb2.ContainerMemory(memory_type=memory_type, size=size)
    if numa_ids:
        msg.topology.CopyFrom(topology(numa_ids))
    return msg


def container(
    name: str,
    cpu_ids: Iterable[int] = (),
    devices: Iterable[api_pb2.ContainerDevices] = (),
    memory: Iterable[api_pb2.ContainerMemory] = (),
) -> api_pb2.ContainerResources:
    return api_pb2.ContainerResources(name=name, cpu_ids=sorted(cpu_ids), devices=devices, memory=memory)


def pod(
    namespace: str,
    name: str,
    *containers: api_pb2.ContainerResources,
    cpu_ids: Iterable[int] = (),
    memory: Iterable[api_pb2.ContainerMemory] = (),
) -> api_pb2.PodResources:
    return api_pb2.PodResources(
        namespace=namespace, name=name, containers=containers, cpu_ids=sorted(cpu_ids), memory=memory
    )


def cpu_manager_state(
    cpus: Iterable[int], entries: Mapping[str, Mapping[str, Iterable[int]]]
) -> dict[str, object]:
    """A static CPU manager checkpoint as the kubelet writes it (``cpu_manager_state``, v2).

    ``entries``: pod UID -> container name -> exclusive CPUs, init containers included (the
    kubelet keeps their CPUs for the pod's life); every other CPU of ``cpus`` is the shared pool.
    """
    exclusive = {c for per_pod in entries.values() for ids in per_pod.values() for c in ids}
    return {
        "policyName": "static",
        "defaultCpuSet": format_cpuset(set(cpus) - exclusive),
        "entries": {
            uid: {name: format_cpuset(ids) for name, ids in per.items()} for uid, per in entries.items()
        },
        "checksum": 0,
    }


@dataclass(frozen=True)
class Scenario:
    """Responses plus the hardware facts they were built from (to build a matching host)."""

    numa_ids: tuple[int, ...]
    zone_cpus: dict[int, tuple[int, ...]]
    reserved_cpus: frozenset[int]
    zone_memory: dict[str, int]  # memory type -> allocatable bytes per zone
    allocatable: api_pb2.AllocatableResourcesResponse
    listing: api_pb2.ListPodResourcesResponse

    def write(self, directory: str | Path, encodings: Sequence[str] = ("pb",)) -> Path:
        """Write the responses in the fixture layout; ``encodings`` from pb, protojson, gojson."""
        out = Path(directory)
        out.mkdir(parents=True, exist_ok=True)
        for stem, msg in (("list", self.listing), ("get_allocatable_resources", self.allocatable)):
            for encoding in encodings:
                if encoding == "pb":
                    (out / f"{stem}.pb").write_bytes(msg.SerializeToString())
                elif encoding == "protojson":
                    (out / f"{stem}.protojson.json").write_text(json_format.MessageToJson(msg, indent=1))
                elif encoding == "gojson":
                    (out / f"{stem}.gojson.json").write_text(json.dumps(go_json(msg), indent=1))
                else:
                    raise ValueError(f"unknown encoding {encoding!r}")
        return out


def go_json(msg: Message) -> object:
    """The shape Go ``encoding/json`` gives the generated structs: snake_case keys, int numbers."""
    return _int64_as_numbers(json_format.MessageToDict(msg, preserving_proto_field_name=True))


def _int64_as_numbers(node: object) -> object:
    # The API's only integers: NUMANode.ID, ContainerMemory.size and the cpu_ids lists.
    if isinstance(node, dict):
        return {
            k: [int(x) for x in v]
            if k == "cpu_ids"
            else int(v)
            if k in ("ID", "size")
            else _int64_as_numbers(v)
            for k, v in node.items()
        }
    if isinstance(node, list):
        return [_int64_as_numbers(v) for v in node]
    return node


def synthetic(
    *,
    numa_ids: Sequence[int] = LARGE_NODE_NUMA_IDS,
    cpus: int = 384,
    pods: int = 250,
    devices: int = 64,
    device_zones: Sequence[int] | None = None,
    reserved_cpus: Iterable[int] = (0, 1),
    memory_per_zone: int = 64 * GiB,
    hugepages_1g_per_zone: int = 8,
    seed: int = 1,
) -> Scenario:
    """A consistent node; ``device_zones`` defaults to every other NUMA id (devices on several zones)."""
    if cpus % len(numa_ids):
        raise ValueError(f"{cpus} CPUs do not split evenly over {len(numa_ids)} NUMA zones")
    rng = random.Random(seed)
    per_zone = cpus // len(numa_ids)
    zone_cpus = {z: tuple(range(k * per_zone, (k + 1) * per_zone)) for k, z in enumerate(numa_ids)}
    reserved = frozenset(reserved_cpus)
    zone_memory = {"memory": memory_per_zone, "hugepages-1Gi": hugepages_1g_per_zone * GiB}

    dev_zones = list(device_zones) if device_zones is not None else list(numa_ids[::2])
    zone_devices: dict[int, list[str]] = {z: [] for z in numa_ids}
    for i in range(devices):
        zone_devices[dev_zones[i % len(dev_zones)]].append(f"0000:{0x10 + i // 8:02x}:00.{i % 8}")

    allocatable = api_pb2.AllocatableResourcesResponse(
        cpu_ids=sorted(set(range(cpus)) - reserved),
        devices=[device(NIC, d, z) for z in numa_ids for d in zone_devices[z]],
        memory=[memory(t, size, z) for z in numa_ids for t, size in zone_memory.items()],
    )

    free_cpus = {z: [c for c in zone_cpus[z] if c not in reserved] for z in numa_ids}
    free_mem = {z: dict(zone_memory) for z in numa_ids}
    free_dev = {z: list(zone_devices[z]) for z in numa_ids}

    def take_cpus(zone: int, n: int) -> list[int] | None:
        if len(free_cpus[zone]) < n:
            return None
        taken, free_cpus[zone] = free_cpus[zone][:n], free_cpus[zone][n:]
        return taken

    listing = api_pb2.ListPodResourcesResponse()
    for i in range(pods):
        namespace, name = f"ns-{i % 10}", f"pod-{i:04d}"
        roll = rng.random()
        zone = rng.choice(numa_ids)
        size = rng.choice((1, 2, 4)) * GiB
        if roll < 0.3 and free_mem[zone]["memory"] >= size and (cpu := take_cpus(zone, rng.choice((2, 4)))):
            free_mem[zone]["memory"] -= size
            blocks = [memory("memory", size, zone)]
            if rng.random() < 0.3 and free_mem[zone]["hugepages-1Gi"] >= GiB:
                free_mem[zone]["hugepages-1Gi"] -= GiB
                blocks.append(memory("hugepages-1Gi", GiB, zone))
            devs = [device(NIC, free_dev[zone].pop(), zone)] if free_dev[zone] and rng.random() < 0.5 else []
            app = container("app", cpu, devs, blocks)
            listing.pod_resources.append(pod(namespace, name, app, container("sidecar")))
            continue
        other = numa_ids[(numa_ids.index(zone) + 1) % len(numa_ids)]
        if (
            roll < 0.38
            and other != zone
            and free_mem[zone]["memory"] >= size
            and free_mem[other]["memory"] >= size
        ):
            cpu_a, cpu_b = take_cpus(zone, 2), take_cpus(other, 2)
            if cpu_a and cpu_b:
                # The memory manager groups cells: one block spanning both zones.
                free_mem[zone]["memory"] -= size
                free_mem[other]["memory"] -= size
                block = memory("memory", 2 * size, zone, other)
                listing.pod_resources.append(
                    pod(namespace, name, container("wide", cpu_a + cpu_b, (), [block]))
                )
                continue
            for z, c in ((zone, cpu_a), (other, cpu_b)):
                if c:
                    free_cpus[z] = c + free_cpus[z]
        listing.pod_resources.append(pod(namespace, name, container("main")))

    return Scenario(tuple(numa_ids), zone_cpus, reserved, zone_memory, allocatable, listing)


def large_node(seed: int = 1) -> Scenario:
    """8 NUMA zones with sparse ids, 384 CPUs, 64 devices on 4 zones, 250 pods."""
    return synthetic(numa_ids=LARGE_NODE_NUMA_IDS, cpus=384, pods=250, devices=64, seed=seed)


def machine_for(scenario: Scenario, *, distance_far: int = 21) -> Machine:
    """A host matching ``scenario``: its zones and CPUs, MemTotal = allocatable memory + hugepages +
    1 GiB (so reserved memory exists), two threads per core, local distance 10, ``distance_far``
    elsewhere."""
    from rte.host.machine import CpuInfo, Machine, NumaNode

    hugepages_1g = scenario.zone_memory.get("hugepages-1Gi", 0) // GiB
    nodes = []
    cpus: dict[int, CpuInfo] = {}
    for zone in scenario.numa_ids:
        zone_cpus = scenario.zone_cpus[zone]
        half = len(zone_cpus) // 2
        for i, cpu in enumerate(zone_cpus):
            sibling = zone_cpus[(i + half) % len(zone_cpus)]
            cpus[cpu] = CpuInfo(
                id=cpu,
                numa_node=zone,
                package_id=zone // 8,
                core_id=i % half if half else 0,
                thread_siblings=frozenset({cpu, sibling}),
            )
        nodes.append(
            NumaNode(
                id=zone,
                cpus=frozenset(zone_cpus),
                memory_total_bytes=scenario.zone_memory["memory"] + hugepages_1g * GiB + GiB,
                hugepages={GiB: hugepages_1g},
                free_hugepages={GiB: hugepages_1g},
                distances={z: 10 if z == zone else distance_far for z in scenario.numa_ids},
            )
        )
    ids = frozenset(scenario.numa_ids)
    return Machine(nodes=tuple(nodes), cpus=dict(sorted(cpus.items())), online_nodes=ids, possible_nodes=ids)
