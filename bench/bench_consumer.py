"""Filter + Score of one Guaranteed pod against 5000 nodes of 8 NUMA zones (target: median <= 50 ms).

Views are built once, untimed (the store does it per NRT update); each timed cycle prepares the
pod once, then filters every node and scores the ones that fit, as a scheduling cycle does. Zones
get varied, realistic availability so that filter verdicts and zone scores differ between nodes.
The target is set on the common Guaranteed cpu+memory pod under the kubelet's rules (the
default), for nodes whose Topology Manager runs single-numa-node and for nodes running
restricted; the reference plugin's rules (``--compat reference``) run in the same process as the
baseline the ratio compares with. A wide telco pod (cpu, memory, hugepages, a NIC) is printed
beside it for information: every extra resource costs a pass over the zones of every node.

Run: ``.venv/bin/python -m bench.bench_consumer``.
"""

from __future__ import annotations

import random
import time

from bench.timing import Row, median_seconds
from rte.consumer.filter import filter_node
from rte.consumer.numaview import NumaView, build_view
from rte.consumer.requests import prepare_pod
from rte.consumer.score import Scorer, ScoringStrategy
from rte.consumer.strategies import STRATEGIES
from rte.model.pod import Container, Pod
from rte.model.topology import Attribute, Cost, NodeTopology, ResourceInfo, Zone
from rte.model.vocabulary import Compat

NODES = 5000
ZONES = 8
GI = 2**30
TARGET_MS = 50.0
POLICIES = ("single-numa-node", "restricted")


def _topology(index: int, rng: random.Random, policy: str = "single-numa-node") -> NodeTopology:
    zones = []
    for z in range(ZONES):
        cpu = rng.randrange(0, 33)
        memory = rng.randrange(0, 96) * GI
        hugepages = rng.randrange(0, 8) * GI
        nic = rng.randrange(0, 5)
        resources = (
            ResourceInfo("cpu", 32, 32, cpu),
            ResourceInfo("hugepages-1Gi", 8 * GI, 8 * GI, hugepages),
            ResourceInfo("memory", 96 * GI, 96 * GI, memory),
            ResourceInfo("vendor.com/nic", 4, 4, nic),
        )
        costs = tuple(
            Cost(f"node-{j}", 10 if j == z else (12 if j // 4 == z // 4 else 32)) for j in range(ZONES)
        )
        zones.append(Zone(name=f"node-{z}", costs=costs, resources=resources))
    attrs = (
        Attribute("topologyManagerPolicy", policy),
        Attribute("topologyManagerScope", "container"),
    )
    return NodeTopology(name=f"worker-{index:05d}", zones=tuple(zones), attributes=attrs)


PODS = {
    "cpu+memory": {"cpu": 4, "memory": 8 * GI},
    "cpu+memory+hugepages+nic": {"cpu": 4, "memory": 8 * GI, "hugepages-1Gi": 2 * GI, "vendor.com/nic": 1},
}


def _pod(requests: dict[str, int]) -> Pod:
    return Pod(namespace="bench", name="latency-critical", containers=(Container("app", requests, requests),))


def _cycle(
    pod: Pod,
    views: list[NumaView],
    allocatable: dict[str, int],
    strategy: ScoringStrategy,
    compat: Compat = Compat.KUBELET,
) -> int:
    """One scheduling cycle: prepare the pod, then Filter and Score every node."""
    prep = prepare_pod(pod, compat=compat)
    scorer = Scorer(prep, strategy)
    fits = 0
    for view in views:
        if filter_node(prep, view, allocatable).fits:
            scorer(view)
            fits += 1
    return fits


def _views(policy: str = "single-numa-node") -> list[NumaView]:
    rng = random.Random(42)
    return [build_view(_topology(i, rng, policy)) for i in range(NODES)]


ALLOCATABLE = {"cpu": 256, "memory": 768 * GI, "hugepages-1Gi": 64 * GI, "vendor.com/nic": 32}


def _median_ms(
    pod: Pod, views: list[NumaView], strategy: ScoringStrategy, compat: Compat, repeat: int
) -> float:
    return median_seconds(lambda: _cycle(pod, views, ALLOCATABLE, strategy, compat), repeat=repeat) * 1000


def summary() -> list[Row]:
    """Every policy and strategy: the cpu+memory pod by the kubelet's rules against the target,
    with the reference's rules as the baseline; the wide telco pod for information."""
    rows = []
    for policy in POLICIES:
        views = _views(policy)
        for index, (label, requests) in enumerate(PODS.items()):
            pod = _pod(requests)
            headline = index == 0  # the target is set on the common Guaranteed cpu+memory pod
            for name in STRATEGIES:
                strategy = ScoringStrategy(name)
                ms = _median_ms(pod, views, strategy, Compat.KUBELET, 15)
                base = _median_ms(pod, views, strategy, Compat.REFERENCE, 15)
                rows.append(
                    Row(
                        f"consumer filter+score, 5000 NRTs x 8 zones, {policy}, {name} ({label})",
                        f"{ms:.1f} ms ({ms / base:.1f}x reference rules)",
                        f"<= {TARGET_MS:.0f} ms" if headline else "-",
                        ms <= TARGET_MS if headline else None,
                    )
                )
    return rows


def _filter_all(pod: Pod, views: list[NumaView]) -> int:
    """Filter only, with a freshly prepared pod (a prepared pod remembers its verdicts)."""
    prep = prepare_pod(pod)
    return sum(filter_node(prep, v, ALLOCATABLE).fits for v in views)


def main() -> None:
    for policy in POLICIES:
        rng = random.Random(42)
        topologies = [_topology(i, rng, policy) for i in range(NODES)]
        start = time.perf_counter()
        views = [build_view(t) for t in topologies]
        build_ms = (time.perf_counter() - start) * 1000
        print(
            f"{policy}: built {NODES} views of {ZONES} zones in {build_ms:.0f} ms"
            f" ({build_ms * 1000 / NODES:.1f} µs/view)"
        )
        for label, requests in PODS.items():
            pod = _pod(requests)
            print(f"  Guaranteed pod, one container, {label}:")
            for name in STRATEGIES:
                strategy = ScoringStrategy(name)
                fits = _cycle(pod, views, ALLOCATABLE, strategy)
                ms = _median_ms(pod, views, strategy, Compat.KUBELET, 7)
                base = _median_ms(pod, views, strategy, Compat.REFERENCE, 7)
                verdict = "ok" if ms <= TARGET_MS else "over"
                print(
                    f"    {name:<19} filter+score: median {ms:6.1f} ms, {ms * 1000 / NODES:5.2f} µs/node"
                    f" ({fits} fit; target {TARGET_MS:.0f} ms: {verdict});"
                    f" reference rules {base:6.1f} ms ({ms / base:.2f}x)"
                )
            ms = median_seconds(lambda p=pod, vs=views: _filter_all(p, vs)) * 1000  # type: ignore[misc]
            print(f"    {'filter only':<19}       median {ms:6.1f} ms, {ms * 1000 / NODES:5.2f} µs/node")


if __name__ == "__main__":
    main()
