"""The simulated kubelet rejects what the kubelet rejects, and the consumer's Filter agrees with it.

Random sequences of pods (init containers, sidecars, fractional and Burstable ones among them) are
admitted and released on one simulated node; before each admission the real agent pipeline
publishes the node's NRT from the kubelet's ``List`` and checkpoints, and the consumer's Filter
decides on that NRT. Filter must never admit what the kubelet rejects (that would be a
TopologyAffinityError), and where admission is exact over counts (``single-numa-node``, and any
pod of one unit) the two verdicts must be the same.
"""

import random
from dataclasses import replace

import pytest

from rte.consumer.filter import filter_node
from rte.consumer.numaview import build_view
from rte.model.pod import PHASE_RUNNING, Pod
from rte.model.vocabulary import FingerprintMethod
from rte.sim.agent import SimAgent
from rte.sim.hardware import build_hardware
from rte.sim.kubelet import SimKubelet
from rte.sim.specs import GiB, PodShape, parse_node_shapes, parse_pod_mix
from rte.sim.workload import template_pod

MIX = parse_pod_mix(
    "20%:2c-2Gi,10%:3c-1Gi,10%:2x2c-4Gi,10%:1c-1Gi+nic1,10%:6c-6Gi,10%:2c-2Gi+init4c,"
    "10%:2c-2Gi+sidecar1c,10%:1.5c-1Gi,5%:2c-1Gi+burstable,5%:1c-1Gi+init2c+sidecar2c"
)

CASES = [
    ("single-numa-node", "container", "2x8c2t-32Gi+nic2"),
    ("single-numa-node", "pod", "4x4c-32Gi+nic1"),
    ("restricted", "container", "4x4c2t-32Gi+nic1"),
    ("restricted", "pod", "2x8c-16Gi+nic2"),
    # Many NUMA zones (issue #23): more than the 16 every mask is listed for.
    ("single-numa-node", "container", "24x2c-48Gi+nic1"),
    ("restricted", "container", "20x2c2t-40Gi+nic1"),
    ("restricted", "pod", "18x2c-36Gi+nic1"),
]

SOCKET_CASES = [
    # Two NUMA zones per socket (issue #23 items 2 and 4): the kubelet takes whole sockets before
    # whole NUMA nodes, and with align-by-socket prefers socket-aligned hints and allocates from
    # the hint's sockets; the agent publishes each zone's socket.
    ("restricted", "container", "4x4c-16Gi+nic1", True),
    ("restricted", "pod", "4x4c2t-16Gi+nic1", True),
    ("restricted", "container", "4x4c2t-16Gi+nic1", False),
    ("single-numa-node", "container", "4x4c-16Gi+nic1", False),
]

# Devices attached to several NUMA nodes (issue #23 item 6): a GPU per zone and GPUs shared by
# pairs (or quads) of zones, pods asking 1 to 3 of them, so masks of several zones count a shared
# GPU once (generateDeviceTopologyHints) and the agent's nodeMultiNUMAResources tells it.
SHARED_MIX = parse_pod_mix(
    "25%:1c-1Gi+gpu1,25%:1c-1Gi+gpu2,15%:1c-1Gi+gpu3,10%:2x1c-1Gi+gpu1,10%:1c-1Gi+init1c+gpu2,15%:2c-2Gi"
)
SHARED_CASES = [
    ("single-numa-node", "container", "4x4c-16Gi+gpu1+gpu1@2"),
    ("restricted", "container", "4x4c-16Gi+gpu1@2"),
    ("restricted", "pod", "4x4c-16Gi+gpu1+gpu2@4"),
    ("restricted", "container", "18x2c-36Gi+gpu1@2"),
]


# distribute-cpus-across-numa (issue #23, item 3); the split itself: test_distribute_agreement.py.
DISTRIBUTE = {"distribute-cpus-across-numa": "true"}
# Units spanning zones (their memory too, or ``restricted`` refuses them), then more beside them.
SPANNING_MIX = parse_pod_mix(
    "25%:20c-40Gi,15%:10c-20Gi,10%:2x5c-9Gi,10%:8c-14Gi+sidecar2c-1Gi,15%:3c-1Gi,15%:2x2c-2Gi,10%:7c-2Gi"
)
DISTRIBUTE_CASES = [
    ("restricted", "container", "2x16c-64Gi", SPANNING_MIX),
    ("restricted", "container", "3x8c-48Gi", SPANNING_MIX),
    ("restricted", "container", "4x6c2t-48Gi+nic1", SPANNING_MIX),
    ("restricted", "pod", "3x8c-48Gi", SPANNING_MIX),
    ("restricted", "container", "4x4c2t-32Gi+nic1", MIX),
]


@pytest.mark.parametrize(
    ("policy", "scope", "shape", "zones_per_socket", "align_by_socket"),
    [(*case, 1, False) for case in CASES] + [(p, sc, sh, 2, a) for p, sc, sh, a in SOCKET_CASES],
)
@pytest.mark.parametrize("seed", range(6))
def test_filter_on_the_published_nrt_never_admits_what_the_simulated_kubelet_rejects(
    policy: str, scope: str, shape: str, zones_per_socket: int, align_by_socket: bool, seed: int
) -> None:
    _agree(
        policy, scope, shape, seed, MIX, zones_per_socket=zones_per_socket, align_by_socket=align_by_socket
    )


@pytest.mark.parametrize(("policy", "scope", "shape"), SHARED_CASES)
@pytest.mark.parametrize("seed", range(6))
def test_devices_on_several_numa_nodes_agree_with_the_simulated_kubelet(
    policy: str, scope: str, shape: str, seed: int
) -> None:
    _agree(policy, scope, shape, seed, SHARED_MIX)


@pytest.mark.parametrize(("policy", "scope", "shape", "mix"), DISTRIBUTE_CASES)
@pytest.mark.parametrize("seed", range(6))
def test_with_distribute_cpus_across_numa_filter_never_admits_what_the_simulated_kubelet_rejects(
    policy: str, scope: str, shape: str, mix: tuple[tuple[float, PodShape], ...], seed: int
) -> None:
    """The simulated kubelet splits a multi-zone allocation by ``takeByTopologyNUMADistributed``
    (cpumanager ``cpu_assignment.go``), the agent publishes the option, the Filter models it."""
    _agree(policy, scope, shape, seed, mix, options=DISTRIBUTE)


def _agree(
    policy: str,
    scope: str,
    shape: str,
    seed: int,
    mix: tuple[tuple[float, PodShape], ...],
    options: dict[str, str] | None = None,
    zones_per_socket: int = 1,
    align_by_socket: bool = False,
) -> None:
    ((_, node_shape),) = parse_node_shapes(shape)
    node_shape = replace(node_shape, zones_per_socket=zones_per_socket)
    hw = build_hardware(
        node_shape,
        policy=policy,
        scope=scope,
        reserved_cpus=2,
        reserved_memory=GiB,
        align_by_socket=align_by_socket,
        cpu_manager_options=options,
    )
    kubelet = SimKubelet(hw)
    agent = SimAgent("n", hw, kubelet, method=FingerprintMethod.ALL)
    rng = random.Random(seed)
    running: dict[tuple[str, str], Pod] = {}
    verdicts = {"admitted": 0, "rejected": 0}
    for i in range(60):
        if running and rng.random() < 0.3:
            key = rng.choice(sorted(running))
            assert kubelet.release(key)
            del running[key]
            continue
        shape_index = rng.choices(range(len(mix)), [p for p, _ in mix])[0]
        candidate = template_pod(mix[shape_index][1], "default-scheduler", name=f"p{i}")
        topology, _ = agent.snapshot(running)
        assert agent.findings == 0
        verdict = filter_node(candidate, build_view(topology), hw.node_allocatable)
        admitted = kubelet.admit(candidate) is not None
        if verdict.fits:
            assert admitted, (
                f"Filter admitted {candidate.name} ({mix[shape_index][1].text}): {verdict.reason}"
            )
        units = len(candidate.containers) + len(candidate.init_containers)
        if policy == "single-numa-node" or units == 1:
            assert verdict.fits == admitted, verdict.reason
        verdicts["admitted" if admitted else "rejected"] += 1
        if admitted:
            running[candidate.key] = Pod(
                candidate.namespace,
                candidate.name,
                node_name="n",
                phase=PHASE_RUNNING,
                containers=candidate.containers,
                init_containers=candidate.init_containers,
                status_qos_class=candidate.status_qos_class,
            )
    assert verdicts["admitted"] and verdicts["rejected"]  # the sequence reached a full node


def test_the_published_nrt_charges_what_only_the_checkpoints_know() -> None:
    ((_, node_shape),) = parse_node_shapes("2x8c-16Gi")
    hw = build_hardware(
        node_shape, policy="single-numa-node", scope="container", reserved_cpus=0, reserved_memory=0
    )
    kubelet = SimKubelet(hw)
    agent = SimAgent("n", hw, kubelet, method=FingerprintMethod.ALL)
    ((_, shape),) = parse_pod_mix("1c-1Gi+init4c-3Gi")
    assert kubelet.admit(template_pod(shape, "default-scheduler", name="a")) is not None
    topology, _ = agent.snapshot({})
    zone0 = {r.name: r.available for r in topology.zones[0].resources}
    assert zone0["cpu"] == 4  # the init container's 4 CPUs, which List does not report
    assert zone0["memory"] == 5 * GiB  # and its 3Gi block, the app container reusing 1Gi of it
