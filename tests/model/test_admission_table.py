"""The kubelet's admission, rule by rule: one row per rule, with the kubelet's verdict and the Go
function (kubernetes/kubernetes, ``pkg/kubelet/cm/...``) that justifies it.

Each row is a node (zones of CPUs, memory, hugepages and devices, capacity/allocatable and
available), a pod and the expected verdict: admitted or not, the kubelet's error class, the NUMA
ids of each unit's merged hint (None: no affinity) and a fragment of the reason. Verdicts were
worked out by hand from the Go source; the comment of each row says how.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import pytest

from rte.model.admission.admit import admit_pod
from rte.model.admission.node import NodeFacts, NodeResources, node_resources
from rte.model.admission.units import pod_admission_units
from rte.model.pod import Container, Pod, PodLevelResources
from rte.model.quantity import Amount, parse_quantity

GI = 2**30
NIC = "vendor.com/nic"
OLD_NIC = "vendor.com/old-nic"
HP2M = "hugepages-2Mi"

Zone = Mapping[str, Any]
"""``cpu``: (capacity, available); memory types and devices: (allocatable, available); an int
means all of them."""


def node(*zones: Zone, distances: Sequence[Sequence[int]] | None = None, **facts: Any) -> NodeResources:
    built = []
    for numa_id, zone in enumerate(zones):
        counts: dict[str, tuple[Amount, Amount, Amount]] = {}
        for key, value in zone.items():
            name = {"nic": NIC, "old_nic": OLD_NIC}.get(key, key)
            if isinstance(value, tuple):
                total, free = value
            else:
                total = free = value
            counts[name] = (total, total, free)
        built.append((numa_id, counts))
    table = None
    if distances is not None:
        table = {i: dict(enumerate(row)) for i, row in enumerate(distances)}
    return node_resources(built, NodeFacts(**facts), table)


def c(name: str, *, guaranteed: bool = True, sidecar: bool = False, **requests: Any) -> Container:
    parsed = {
        k.replace("_", "-") if k.startswith("hugepages") else k: parse_quantity(v)
        for k, v in requests.items()
    }
    parsed = {NIC if k == "nic" else OLD_NIC if k == "old_nic" else k: v for k, v in parsed.items()}
    return Container(name, parsed, parsed if guaranteed else {}, "Always" if sidecar else None)


def pod(
    *containers: Container,
    init: Sequence[Container] = (),
    overhead: Mapping[str, Any] | None = None,
    resources: Mapping[str, Any] | None = None,
) -> Pod:
    level = None
    if resources is not None:
        parsed = {k: parse_quantity(v) for k, v in resources.items()}
        level = PodLevelResources(parsed, parsed)
    return Pod(
        "ns",
        "p",
        containers=containers,
        init_containers=tuple(init),
        overhead={k: parse_quantity(v) for k, v in (overhead or {}).items()},
        resources=level,
    )


@dataclass(frozen=True)
class Row:
    id: str
    node: NodeResources
    pod: Pod
    admitted: bool
    masks: Sequence[tuple[int, ...] | None] = ()
    """Expected merged hint of each unit (NUMA ids), in order; checked when admitted."""
    reason: str = ""
    error: str = ""
    go: str = ""
    """The Go function the verdict rests on."""
    extra: dict[str, Any] = field(default_factory=dict)


def sn(*zones: Zone, **facts: Any) -> NodeResources:
    return node(*zones, **{"policy": "single-numa-node", **facts})


def rs(*zones: Zone, **facts: Any) -> NodeResources:
    return node(*zones, **{"policy": "restricted", **facts})


# Two zones: A has too few CPUs, B too little memory, for cpu=4 memory=8Gi.
SPLIT = ({"cpu": (16, 3), "memory": (64 * GI, 60 * GI)}, {"cpu": (16, 5), "memory": (64 * GI, 4 * GI)})
ROOMY = ({"cpu": (16, 16), "memory": (64 * GI, 64 * GI)}, {"cpu": (16, 16), "memory": (64 * GI, 64 * GI)})
G48 = pod(c("app", cpu=4, memory=8 * GI))
# The reference plugin's own test host (scheduler-plugins filter_test.go, host0).
HOST0 = ({"cpu": (32, 30), "memory": (64 * GI, 60 * GI)}, {"cpu": (32, 32), "memory": (64 * GI, 64 * GI)})
INIT_PINNED = pod(
    c("a", cpu=20, memory=40 * GI),
    c("b", cpu=20, memory=40 * GI),
    init=[c("i1", cpu=30, memory=10 * GI), c("i2", cpu=30, memory=10 * GI)],
)
SIDECAR = pod(c("app", cpu=3, memory=GI), init=[c("proxy", cpu=3, memory=GI, sidecar=True)])
# Four zones whose preferred 2-zone masks for cpu=24 (16 per zone) and memory=60Gi (at most
# 40Gi per zone, all free) meet in exactly {0,3} and {1,2}: cpu pairs with 24 free are 03 12 13
# 23, memory pairs with 60Gi are 01 02 03 12.
FOUR = (
    {"cpu": (16, 8), "memory": 40 * GI},
    {"cpu": (16, 12), "memory": 30 * GI},
    {"cpu": (16, 12), "memory": 30 * GI},
    {"cpu": (16, 16), "memory": 20 * GI},
)
FOUR_POD = pod(c("app", cpu=24, memory=60 * GI))
NEAR_03 = [[10, 21, 21, 11], [21, 10, 21, 21], [21, 21, 10, 21], [11, 21, 21, 10]]

ROWS = [
    # --- one container, every policy -----------------------------------------------------------
    Row(
        "single-numa-node refuses when no zone holds every resource",
        sn(*SPLIT),
        G48,
        False,
        reason="single-numa-node: no single NUMA zone holds cpu=4 and memory=8Gi",
        error="TopologyAffinityError",
        go="policy_single_numa_node.go Merge, filterSingleNumaHints",
    ),
    # cpu prefers {1} (5 free), memory {0}: never equal; the best non-preferred merge is {0}.
    Row(
        "restricted refuses when the preferred masks never meet",
        rs(*SPLIT),
        G48,
        False,
        reason="restricted: best merged hint {0} is not preferred (cpu and memory each want 1 zone",
        go="policy.go mergePermutation, HintMerger.compare; policy_restricted.go",
    ),
    Row(
        "best-effort admits the best non-preferred merge",
        node(*SPLIT, policy="best-effort"),
        G48,
        True,
        masks=[(0,)],
        go="policy_best_effort.go canAdmitPodResult",
    ),
    Row(
        "none admits without aligning",
        node(*SPLIT, policy="none"),
        G48,
        True,
        masks=[None],
        go="scope_none.go Admit",
    ),
    Row(
        "pod scope refuses the same pod",
        sn(*SPLIT, scope="pod"),
        G48,
        False,
        reason="single-numa-node: no single NUMA zone holds cpu=4 and memory=8Gi",
        go="scope_pod.go Admit",
    ),
    # cpu=24 needs 2 zones of 16 (minAffinitySize 2), memory=8Gi one: preferred masks never equal.
    Row(
        "restricted refuses resources that want different widths",
        rs(*ROOMY),
        pod(c("app", cpu=24, memory=8 * GI)),
        False,
        reason="restricted: best merged hint {0,1} is not preferred (cpu wants 2 zones, memory 1)",
        go="policy_static.go generateCPUTopologyHints minAffinitySize",
    ),
    Row(
        "restricted admits a preferred two-zone mask",
        rs(*ROOMY),
        pod(c("app", cpu=24, memory=100 * GI)),
        True,
        masks=[(0, 1)],
        go="policy_restricted.go canAdmitPodResult",
    ),
    Row(
        "single-numa-node refuses what needs two zones",
        sn(*ROOMY),
        pod(c("app", cpu=24, memory=100 * GI)),
        False,
        reason="no single NUMA zone holds cpu=24 and memory=100Gi",
        go="policy_single_numa_node.go",
    ),
    # --- several app containers, allocated one after the other ---------------------------------
    Row(
        "each app container is allocated before the next is hinted",
        sn(*ROOMY),
        pod(c("a", cpu=10, memory=GI), c("b", cpu=10, memory=GI)),
        True,
        masks=[(0,), (1,)],
        go="scope_container.go Admit, allocateAlignedResources",
    ),
    Row(
        "a third container finds what the first two left",
        sn(*ROOMY),
        pod(c("a", cpu=10, memory=GI), c("b", cpu=10, memory=GI), c("c", cpu=10, memory=GI)),
        False,
        reason='no single NUMA zone holds cpu=10 for container "c"',
        go="scope_container.go Admit",
    ),
    # --- init containers: reuse pins the app containers ----------------------------------------
    # i1 takes 30 CPUs of zone 0, i2 reuses them, a takes 20 of them; b must include zone 0
    # (10 reusable CPUs there) and no single zone does: refused. The reference admits it.
    Row(
        "reusable init-container CPUs pin later containers to their zone",
        sn(*HOST0),
        INIT_PINNED,
        False,
        reason='single-numa-node: no single NUMA zone holds cpu=20 for container "b"',
        go="policy_static.go generateCPUTopologyHints (reusable), updateCPUsToReuse",
    ),
    Row(
        "restricted refuses the pinned container too",
        rs(*HOST0),
        INIT_PINNED,
        False,
        reason='for container "b" is not preferred',
        go="policy_static.go generateCPUTopologyHints",
    ),
    # b's CPUs may span {0,1} (not preferred), its memory only fits zone 1 (zone 0 keeps a
    # single-zone block, so {0,1} is barred): best-effort merges to {1}.
    Row(
        "best-effort admits the pinned container where memory goes",
        node(*HOST0, policy="best-effort"),
        INIT_PINNED,
        True,
        masks=[(0,), (0,), (0,), (1,)],
        go="memorymanager policy_static.go calculateHints (groups)",
    ),
    # cpu=40 needs both zones; memory=80Gi too, but zone 0 holds a single-zone block, so the
    # memory manager has no mask at all (no preference: the CPUs alone refuse the pod).
    Row(
        "pod scope sums the app containers, init containers reused",
        sn(*HOST0, scope="pod"),
        INIT_PINNED,
        False,
        reason="single-numa-node: no single NUMA zone holds cpu=40",
        go="policy_static.go podGuaranteedCPUs; memorymanager getPodRequestedResources, calculateHints",
    ),
    Row(
        "an init container with room admits its app containers",
        sn(*ROOMY),
        pod(c("a", cpu=8, memory=GI), init=[c("i", cpu=4, memory=GI)]),
        True,
        masks=[(0,), (0,)],
        go="policy_static.go allocateCPUs with cpusToReuse",
    ),
    # --- sidecars keep their resources ----------------------------------------------------------
    Row(
        "a sidecar keeps its CPUs beside the app container",
        sn({"cpu": (8, 4), "memory": 8 * GI}, {"cpu": (8, 2), "memory": 8 * GI}),
        SIDECAR,
        False,
        reason='no single NUMA zone holds cpu=3 for container "app"',
        go="policy_static.go updateCPUsToReuse (restartable init containers are not reused)",
    ),
    Row(
        "a sidecar and its app container on two zones",
        sn({"cpu": (8, 4), "memory": 8 * GI}, {"cpu": (8, 4), "memory": 8 * GI}),
        SIDECAR,
        True,
        masks=[(0,), (1,)],
        go="policy_static.go updateCPUsToReuse",
    ),
    Row(
        "a later init container sees the sidecar's CPUs taken",
        sn({"cpu": (8, 4), "memory": 8 * GI}),
        pod(
            c("app", cpu=1, memory=GI),
            init=[c("proxy", cpu=3, memory=GI, sidecar=True), c("setup", cpu=4, memory=GI)],
        ),
        False,
        reason='for init container "setup"',
        go="scope_container.go Admit",
    ),
    Row(
        "pod scope adds sidecars to the app containers",
        sn({"cpu": (8, 4), "memory": 8 * GI}, {"cpu": (8, 6), "memory": 8 * GI}, scope="pod"),
        SIDECAR,
        True,
        masks=[(1,)],
        go="policy_static.go podGuaranteedCPUs (sidecars)",
    ),
    # --- overhead and fractional CPUs are not aligned -------------------------------------------
    Row(
        "pod overhead is not aligned",
        sn({"cpu": (8, 4), "memory": 4 * GI}, {"cpu": (8, 2), "memory": 8 * GI}, scope="pod"),
        pod(c("app", cpu=4, memory=4 * GI), overhead={"cpu": "1", "memory": "1Gi"}),
        True,
        masks=[(0,)],
        go="memorymanager policy_static.go getPodRequestedResources; devicemanager getPodDeviceRequest",
    ),
    Row(
        "a fractional CPU request gets no hint",
        sn({"cpu": (8, 1), "memory": 8 * GI}, {"cpu": (8, 1), "memory": 8 * GI}),
        pod(c("app", cpu="1500m", memory=GI)),
        True,
        masks=[(0,)],
        go="policy_static.go guaranteedCPUs (isIntegralCPUAmount)",
    ),
    # --- QoS classes and devices ----------------------------------------------------------------
    Row(
        "a Burstable pod gets no CPU or memory hint",
        sn({"cpu": (8, 0), "memory": 8 * GI}),
        pod(c("app", guaranteed=False, cpu=4)),
        True,
        masks=[None],
        go="policy_static.go guaranteedCPUs (QoS); memorymanager GetTopologyHints",
    ),
    Row(
        "a Burstable pod's devices are aligned",
        sn({"cpu": 8, "nic": (2, 1)}, {"cpu": 8, "nic": (2, 2)}),
        pod(c("app", guaranteed=False, cpu=1, nic=2)),
        True,
        masks=[(1,)],
        go="devicemanager topology_hints.go GetTopologyHints",
    ),
    Row(
        "a BestEffort pod's devices must fit one zone under single-numa-node",
        sn({"cpu": 8, "nic": 2}, {"cpu": 8, "nic": 2}),
        pod(c("app", guaranteed=False, nic=3)),
        False,
        reason="no single NUMA zone holds vendor.com/nic=3",
        go="devicemanager generateDeviceTopologyHints",
    ),
    # nic=3 with 2 per zone: minAffinitySize 2, so {0,1} is preferred.
    Row(
        "restricted admits devices spread over their narrowest width",
        rs({"cpu": 8, "nic": 2}, {"cpu": 8, "nic": 2}),
        pod(c("app", guaranteed=False, nic=3)),
        True,
        masks=[(0, 1)],
        go="devicemanager generateDeviceTopologyHints minAffinitySize",
    ),
    Row(
        "a BestEffort pod without devices is not aligned",
        sn({"cpu": (8, 0)}),
        pod(c("app", guaranteed=False)),
        True,
        masks=[None],
        go="scope_container.go Admit",
    ),
    Row(
        "devices of unknown NUMA node count toward no mask",
        sn({"cpu": 8}, unknown_numa_devices={NIC: 2}),
        pod(c("app", guaranteed=False, nic=1)),
        False,
        reason="no single NUMA zone holds vendor.com/nic=1",
        go="devicemanager generateDeviceTopologyHints (mask.AnySet of NUMA -1)",
    ),
    Row(
        "restricted refuses devices of unknown NUMA node",
        rs({"cpu": 8}, unknown_numa_devices={NIC: 2}),
        pod(c("app", guaranteed=False, nic=1)),
        False,
        reason="restricted: no NUMA zone set holds vendor.com/nic=1",
        go="devicemanager GetTopologyHints",
    ),
    Row(
        "best-effort takes devices of unknown NUMA node",
        node({"cpu": 8}, policy="best-effort", unknown_numa_devices={NIC: 2}),
        pod(c("app", guaranteed=False, nic=1)),
        True,
        masks=[(0,)],
        go="policy_best_effort.go",
    ),
    Row(
        "devices without topology give no hint",
        sn({"cpu": 8}, non_topology_devices={OLD_NIC: 4}),
        pod(c("app", guaranteed=False, old_nic=2)),
        True,
        masks=[None],
        go="devicemanager deviceHasTopologyAlignment",
    ),
    # --- hugepages ride on the memory manager's one mask ----------------------------------------
    Row(
        "hugepages must fit the same zone as memory",
        sn({"cpu": 8, "memory": 8 * GI, HP2M: 256 * 2**20}, {"cpu": 8, "memory": 8 * GI, HP2M: GI}),
        pod(c("app", cpu=2, memory=GI, hugepages_2Mi="512Mi")),
        True,
        masks=[(1,)],
        go="memorymanager policy_static.go calculateHints",
    ),
    # hugepages=1.5Gi needs both zones' 1Gi: the memory types want 2 zones, cpu 1.
    Row(
        "restricted refuses hugepages that need two zones beside one-zone CPUs",
        rs({"cpu": 8, "memory": 8 * GI, HP2M: GI}, {"cpu": 8, "memory": 8 * GI, HP2M: GI}),
        pod(c("app", cpu=2, memory=GI, hugepages_2Mi="1536Mi")),
        False,
        reason="(cpu wants 1 zone, hugepages-2Mi 2, memory 2)",
        go="memorymanager calculateHints minAffinitySize",
    ),
    # --- memory manager groups --------------------------------------------------------------------
    Row(
        "a zone of a memory group is never used alone",
        sn(
            *[{"cpu": 8, "memory": (64 * GI, 30 * GI)}] * 2,
            *[{"cpu": 8, "memory": 64 * GI}] * 2,
            memory_groups=(frozenset({0, 1}),),
        ),
        pod(c("app", cpu=2, memory=4 * GI)),
        True,
        masks=[(2,)],
        go="memorymanager calculateHints (grouped node, single-NUMA hint)",
    ),
    Row(
        "a multi-zone allocation uses a group whole or free zones only",
        rs(
            *[{"cpu": 32, "memory": (64 * GI, 30 * GI)}] * 2,
            *[{"cpu": 32, "memory": 64 * GI}] * 2,
            memory_groups=(frozenset({0, 1}),),
        ),
        pod(c("app", cpu=40, memory=100 * GI)),
        True,
        masks=[(2, 3)],
        go="memorymanager calculateHints (areGroupsEqual)",
    ),
    Row(
        "a zone holding a single-zone block never joins a group",
        rs({"cpu": 32, "memory": (64 * GI, 60 * GI)}, *[{"cpu": 32, "memory": 64 * GI}] * 2),
        pod(c("app", cpu=40, memory=100 * GI)),
        True,
        masks=[(1, 2)],
        go="memorymanager calculateHints (NumberOfAssignments, single-NUMA cells)",
    ),
    Row(
        "memory that fits no zone set fails the memory manager's allocation",
        sn({"cpu": 8, "memory": 64 * GI}, {"cpu": 8, "memory": 64 * GI}),
        pod(c("app", cpu=2, memory=200 * GI)),
        False,
        error="UnexpectedAdmissionError",
        reason="memory manager: no NUMA zone set",
        go="memorymanager Allocate, getDefaultHint / extendTopologyManagerHint",
    ),
    Row(
        "without the static CPU manager CPUs are not aligned",
        sn({"cpu": (8, 2), "memory": 8 * GI}, {"cpu": (8, 2), "memory": 8 * GI}, cpu_manager_static=False),
        pod(c("app", cpu=8, memory=GI)),
        True,
        masks=[(0,)],
        go="cpumanager policy_none.go GetTopologyHints",
    ),
    # --- full-pcpus-only ------------------------------------------------------------------------------
    Row(
        "SMT: a request that is not a multiple of the threads per core",
        sn(
            {"cpu": 16, "memory": 8 * GI},
            full_pcpus_only=True,
            threads_per_core=2,
            available_physical_cpus=16,
        ),
        pod(c("app", cpu=3, memory=GI)),
        False,
        error="SMTAlignmentError",
        reason="SMTAlignmentError: cpu=3 is not a multiple of 2 threads per core",
        go="cpumanager policy_static.go enforceSMTAlignment",
    ),
    Row(
        "SMT: more CPUs than free physical cores",
        sn(
            {"cpu": 16, "memory": 8 * GI}, full_pcpus_only=True, threads_per_core=2, available_physical_cpus=2
        ),
        pod(c("app", cpu=4, memory=GI)),
        False,
        reason="cpu=4 exceeds the 2 free physical CPUs",
        go="cpumanager policy_static.go enforceSMTAlignment (GetAvailablePhysicalCPUs)",
    ),
    Row(
        "SMT: the check needs the threads per core",
        sn({"cpu": 16, "memory": 8 * GI}, {"cpu": 16, "memory": 8 * GI}, full_pcpus_only=True),
        pod(c("app", cpu=3, memory=GI)),
        True,
        masks=[(0,)],
        go="cpumanager policy_static.go enforceSMTAlignment",
    ),
    Row(
        "single-numa-node on one zone admits with no affinity (the whole machine)",
        sn({"cpu": 16, "memory": 8 * GI}),
        G48,
        True,
        masks=[None],
        go="policy_single_numa_node.go Merge",
    ),
    Row(
        "SMT: pod scope checks each container's CPUs",
        sn({"cpu": 16, "memory": 8 * GI}, scope="pod", full_pcpus_only=True, threads_per_core=2),
        pod(c("a", cpu=2, memory=GI), c("b", cpu=3, memory=GI)),
        False,
        reason='cpu=3 is not a multiple of 2 threads per core for container "b"',
        go="scope_pod.go Admit (Allocate per container)",
    ),
    # --- pod-level resources ---------------------------------------------------------------------------
    Row(
        "pod-level resources without KEP-5526: the CPU and memory managers skip the pod",
        sn({"cpu": (8, 2), "memory": 8 * GI}),
        pod(c("app", cpu=4, memory=4 * GI), resources={"cpu": "4", "memory": "4Gi"}),
        True,
        masks=[None],
        go="policy_static.go GetTopologyHints (IsPodLevelResourcesSet)",
    ),
    Row(
        "KEP-5526 pod scope aligns the pod-level budget",
        sn(
            {"cpu": (8, 2), "memory": 8 * GI},
            {"cpu": (8, 6), "memory": 8 * GI},
            scope="pod",
            pod_level_resource_managers=True,
        ),
        pod(c("app", guaranteed=False), resources={"cpu": "4", "memory": "4Gi"}),
        True,
        masks=[(1,)],
        go="policy_static.go podGuaranteedCPUs (pod-level), AllocatePod",
    ),
    Row(
        "KEP-5526 refuses a budget that leaves shared containers nothing",
        sn({"cpu": 8, "memory": 8 * GI}, scope="pod", pod_level_resource_managers=True),
        pod(
            c("excl", cpu=4, memory=GI),
            c("shared", guaranteed=False),
            resources={"cpu": "4", "memory": "4Gi"},
        ),
        False,
        reason="none is left for its shared pool",
        go="policy_static.go validatePodScopeResources",
    ),
    Row(
        "KEP-5526 container scope aligns only containers with requests equal to limits",
        sn(
            {"cpu": (8, 2), "memory": 8 * GI},
            {"cpu": (8, 6), "memory": 8 * GI},
            pod_level_resource_managers=True,
        ),
        pod(
            c("excl", cpu=4, memory=GI),
            c("shared", guaranteed=False),
            resources={"cpu": "6", "memory": "4Gi"},
        ),
        True,
        masks=[(1,), None],
        go="policy_static.go guaranteedCPUs (IsContainerEquivalentQOSGuaranteed)",
    ),
    # --- 2, 4 and 8 zones, tie-breaks ------------------------------------------------------------------
    Row(
        "four zones: equally wide masks go to the smaller value ({1,2} before {0,3})",
        rs(*FOUR),
        FOUR_POD,
        True,
        masks=[(1, 2)],
        go="bitmask.go IsNarrowerThan",
    ),
    Row(
        "prefer-closest-numa-nodes picks the closer of equally wide masks",
        rs(*FOUR, prefer_closest_numa=True, distances=NEAR_03),
        FOUR_POD,
        True,
        masks=[(0, 3)],
        go="numa_info.go Closest",
    ),
    Row(
        "single-numa-node ignores prefer-closest-numa-nodes",
        sn(
            {"cpu": 8, "memory": 8 * GI},
            {"cpu": 8, "memory": 8 * GI},
            prefer_closest_numa=True,
            distances=[[20, 21], [21, 10]],
        ),
        G48,
        True,
        masks=[(0,)],
        go="policy.go NewHintMerger",
    ),
    Row(
        "restricted with prefer-closest-numa-nodes weighs even single zones",
        rs(
            {"cpu": 8, "memory": 8 * GI},
            {"cpu": 8, "memory": 8 * GI},
            prefer_closest_numa=True,
            distances=[[20, 21], [21, 10]],
        ),
        G48,
        True,
        masks=[(1,)],
        go="numa_info.go CalculateAverageFor",
    ),
    Row(
        "eight zones: the only zone with room",
        sn(*[{"cpu": (16, 2), "memory": 16 * GI}] * 7, {"cpu": (16, 8), "memory": 16 * GI}),
        G48,
        True,
        masks=[(7,)],
        go="bitmask.go IterateBitMasks",
    ),
    Row(
        "eight zones: the narrowest preferred width, lowest value first",
        rs(*[{"cpu": (16, 8), "memory": 16 * GI}] * 8),
        pod(c("app", cpu=40, memory=40 * GI)),
        False,
        reason="restricted: best merged hint",
        go="policy.go HintMerger.compare",
    ),
    Row(
        "eight zones: three zones of 16 CPUs for 40, the lowest three",
        rs(*[{"cpu": (16, 16), "memory": 16 * GI}] * 8),
        pod(c("app", cpu=40, memory=40 * GI)),
        True,
        masks=[(0, 1, 2)],
        go="policy.go HintMerger.compare, bitmask.go IsNarrowerThan",
    ),
]


@pytest.mark.parametrize("row", ROWS, ids=[r.id for r in ROWS])
def test_kubelet_admission_rule(row: Row) -> None:
    verdict = admit_pod(row.node, pod_admission_units(row.pod, row.node.facts))
    assert verdict.admitted is row.admitted, verdict.reason
    assert row.reason in verdict.reason
    if row.error:
        assert verdict.error == row.error
    elif not row.admitted:
        assert verdict.error in ("TopologyAffinityError", "SMTAlignmentError")
    if row.admitted:
        masks = [u.numa_ids if u.aligned else None for u in verdict.units]
        assert masks == list(row.masks), verdict.units


def test_every_row_names_the_go_function_behind_it() -> None:
    assert all(row.go for row in ROWS)
