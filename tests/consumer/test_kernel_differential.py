"""The decision kernel equals the scalar path: same verdicts, reasons, zones and scores.

Random tables of nodes (every policy and scope, sparse ids, fractional, huge, missing and zero
amounts, devices with and without topology, SMT facts, distribute-cpus-across-numa, memory groups,
costs) and random pods (one container or several, init containers and sidecars, every QoS class,
fractional CPUs, pod-level resources), under every strategy with random weights, both rules. The scalar path
(:func:`rte.consumer.filter.filter_node` and :class:`rte.consumer.score.Scorer`) is the oracle.
Each case is built from its own seed, printed on failure: replay one with
``RTE_KERNEL_SEED=<seed> python -m pytest tests/consumer/test_kernel_differential.py``.
"""

from __future__ import annotations

import os
import random

import pytest

from rte.consumer.filter import filter_node
from rte.consumer.kernel.decide import decide
from rte.consumer.kernel.table import NodeTable
from rte.consumer.numaview import NumaView, build_view
from rte.consumer.requests import prepare_pod
from rte.consumer.score import Scorer, ScoringStrategy
from rte.consumer.strategies import STRATEGIES
from rte.model.pod import Container, Pod, PodLevelResources
from rte.model.quantity import Amount, parse_quantity
from rte.model.topology import Attribute, Cost, NodeTopology, ResourceInfo, Zone
from rte.model.vocabulary import Compat

GI = 2**30
NIC = "vendor.com/nic"
GPU = "vendor.com/gpu"
POLICIES = ("single-numa-node", "single-numa-node", "restricted", "restricted", "best-effort", "none")


def _amount(rng: random.Random, choices: list[str | int]) -> Amount:
    return parse_quantity(rng.choice(choices))


def random_topology(rng: random.Random, name: str) -> NodeTopology:
    count = rng.choice([1, 2, 2, 4, 4, 8])
    ids = sorted(rng.sample(range(12), count)) if rng.random() < 0.2 else list(range(count))
    if rng.random() < 0.1:
        rng.shuffle(ids)  # published out of order
    zones = []
    for i in ids:
        resources = []
        if rng.random() < 0.95:
            cap = rng.choice([4, 8, 16, 32])
            avail = _amount(rng, [0, 1, 2, 3, 4, 6, 8, cap, cap, "1500m", "2500m", -1])
            resources.append(ResourceInfo("cpu", cap, cap - rng.choice([0, 0, 1]), avail))
        if rng.random() < 0.9:
            mem = rng.choice([4, 8, 16, 64]) * GI
            avail = rng.choice([mem, mem, rng.randint(0, mem), 0, 3 * GI])
            if rng.random() < 0.03:
                avail = 2**60  # beyond what the kernel's arithmetic takes: the scalar path decides
            resources.append(ResourceInfo("memory", mem, mem, avail))
        if rng.random() < 0.4:
            hp = rng.choice([0, GI, 2 * GI])
            resources.append(ResourceInfo("hugepages-2Mi", hp, hp, rng.choice([hp, hp // 2, 0])))
        if rng.random() < 0.5:
            devices = rng.randint(0, 3)
            resources.append(ResourceInfo(NIC, devices, devices, rng.randint(0, devices)))
        if rng.random() < 0.1:
            resources.append(ResourceInfo(GPU, 1, 1, rng.randint(0, 1)))
        costs = tuple(Cost(f"node-{j}", 10 if i == j else rng.choice([12, 20, 32])) for j in ids)
        zones.append(Zone(f"node-{i}", costs=costs if rng.random() < 0.9 else (), resources=tuple(resources)))
    attrs = [
        Attribute("topologyManagerPolicy", rng.choice(POLICIES)),
        Attribute("topologyManagerScope", rng.choice(["container", "container", "pod"])),
    ]
    if rng.random() < 0.2:
        attrs.append(Attribute("topologyManagerMaxNUMANodes", str(rng.choice([2, 4, 8, 16]))))
    if rng.random() < 0.15:
        attrs.append(Attribute("nodeUnknownNUMAResources", f"{rng.choice([NIC, GPU])}={rng.randint(0, 2)}"))
    if rng.random() < 0.1:
        attrs.append(Attribute("nodeNonTopologyResources", f"{NIC}={rng.randint(0, 2)}"))
    if rng.random() < 0.2:
        attrs += [
            Attribute("cpuManagerOptionFullPcpusOnly", "true"),
            Attribute("cpuManagerThreadsPerCore", rng.choice(["1", "2", "4"])),
        ]
        if rng.random() < 0.7:
            attrs.append(Attribute("cpuManagerAvailablePhysicalCPUs", str(rng.randint(0, 16))))
    if rng.random() < 0.25:
        # Splits multi-zone allocations evenly: what later units of the pod find (the scalar path).
        attrs.append(Attribute("cpuManagerOptionDistributeCpusAcrossNuma", rng.choice(["true", "false"])))
    if rng.random() < 0.1:
        attrs.append(Attribute("memoryManagerPolicy", "None"))
    if rng.random() < 0.05:
        attrs.append(Attribute("cpuManagerPolicy", "none"))
    if rng.random() < 0.1:
        attrs.append(Attribute("topologyManagerOptionPreferClosestNumaNodes", "true"))
    if rng.random() < 0.05 and len(ids) >= 2:
        attrs.append(
            Attribute("memoryManagerNUMAGroups", f"{ids[0]}-{ids[1]}" if ids[0] + 1 == ids[1] else "0-1")
        )
    if rng.random() < 0.05:
        attrs.append(Attribute("kubeletFeatureGatePodLevelResourceManagers", "true"))
    if rng.random() < 0.2 and len(ids) >= 2:  # devices on several zones (issue #23 item 6)
        shared = sorted(rng.sample(ids, rng.choice([2, len(ids)])))
        allocatable = rng.randint(1, 2)
        value = f"{NIC}:{','.join(map(str, shared))}={rng.randint(0, allocatable)}/{allocatable}"
        attrs.append(Attribute("nodeMultiNUMAResources", value))
    if rng.random() < 0.2:
        # align-by-socket (restricted admits socket-aligned hints) and the socket map, which the
        # allocation and the packed split read: one or two zones per socket, sometimes unknown.
        attrs.append(Attribute("cpuManagerOptionAlignBySocket", rng.choice(["true", "true", "false"])))
        per = rng.choice([1, 2, 2])
        if rng.random() < 0.85:
            pairs = ";".join(f"{z}={k // per}" for k, z in enumerate(sorted(ids)))
            attrs.append(Attribute("cpuManagerNUMASockets", pairs))
    return NodeTopology(name, zones=tuple(zones), attributes=tuple(attrs))


def _requests(rng: random.Random) -> dict[str, Amount]:
    out: dict[str, Amount] = {}
    if rng.random() < 0.9:
        out["cpu"] = _amount(rng, [1, 2, 3, 4, 6, 8, "500m", "1500m", 0])
    if rng.random() < 0.85:
        out["memory"] = _amount(rng, [GI, 2 * GI, 6 * GI, 12 * GI, "1536Mi", 0])
    if rng.random() < 0.25:
        out["hugepages-2Mi"] = _amount(rng, [0, GI // 2, GI])
    if rng.random() < 0.3:
        out[NIC] = _amount(rng, [0, 1, 2, 3])
    if rng.random() < 0.05:
        out[GPU] = parse_quantity(1)
    if rng.random() < 0.05:
        out["ephemeral-storage"] = parse_quantity(GI)
    return out


def _container(rng: random.Random, name: str, qos: str, sidecar: bool = False) -> Container:
    requests = (
        _requests(rng) if qos != "BestEffort" else ({NIC: parse_quantity(1)} if rng.random() < 0.3 else {})
    )
    limits = dict(requests) if qos == "Guaranteed" else {}
    return Container(name, requests, limits, restart_policy="Always" if sidecar else None)


def random_pod(rng: random.Random) -> Pod:
    qos = rng.choice(["Guaranteed"] * 6 + ["Burstable"] * 2 + ["BestEffort"])
    shape = rng.random()
    apps = [_container(rng, "app", qos)]
    inits: list[Container] = []
    if shape < 0.15:
        apps.append(_container(rng, "second", qos))
    elif shape < 0.25:
        inits.append(_container(rng, "init", qos, sidecar=rng.random() < 0.5))
    resources = None
    if rng.random() < 0.05:
        budget = {"cpu": parse_quantity(4), "memory": parse_quantity(4 * GI)}
        resources = PodLevelResources(budget, budget)
    return Pod("ns", "p", containers=tuple(apps), init_containers=tuple(inits), resources=resources)


def _strategy(rng: random.Random) -> ScoringStrategy:
    weights = {"cpu": 1, "memory": 1}
    if rng.random() < 0.3:
        weights = {r: rng.randint(1, 5) for r in ("cpu", "memory", "hugepages-2Mi", NIC)}
    return ScoringStrategy(rng.choice(STRATEGIES), weights)


def _check_case(seed: int) -> int:
    """One table and one pod from ``seed``; returns how many rows the kernel decided itself."""
    rng = random.Random(seed)
    names = [f"n{i}" for i in range(rng.randint(1, 40))]
    views: list[NumaView | None] = [
        None if rng.random() < 0.03 else build_view(random_topology(rng, name)) for name in names
    ]
    fresh = [rng.random() > 0.03 for _ in names]
    allocatable = [
        None if rng.random() < 0.5 else frozenset(rng.sample(["cpu", "memory", "hugepages-2Mi", NIC, GPU], 4))
        for _ in names
    ]
    table = NodeTable.of(names, views, fresh, allocatable)
    compat = Compat.REFERENCE if rng.random() < 0.15 else Compat.KUBELET
    pod = random_pod(rng)
    strategy = _strategy(rng)
    score_failed = rng.random() < 0.3
    rows = sorted(rng.sample(range(len(names)), rng.randint(1, len(names)))) if rng.random() < 0.3 else None
    got = decide(prepare_pod(pod, compat=compat), table, rows, strategy, score_failed=score_failed)
    prep = prepare_pod(pod, compat=compat)
    scorer = Scorer(prep, strategy)
    for k, row in enumerate(rows if rows is not None else range(len(names))):
        want = filter_node(prep, views[row], allocatable[row], fresh=fresh[row])
        score = scorer(views[row], fresh=fresh[row]) if want.fits or score_failed else None
        where = f"seed={seed} node={names[row]} pod={pod} view={views[row] and views[row].source}"
        assert (bool(got.fits[k]), got.reason(k)) == (want.fits, want.reason), where
        assert got.numa_id(k) == want.numa_id, where
        assert got.score(k) == score, where
    return len(got) - got.scalar_rows


def _seeds() -> list[int]:
    replay = os.environ.get("RTE_KERNEL_SEED")
    return [int(replay)] if replay else list(range(1500))


def test_the_kernel_decides_exactly_as_the_scalar_path_on_random_nodes_pods_and_strategies() -> None:
    decided = 0
    for seed in _seeds():
        try:
            decided += _check_case(seed)
        except AssertionError as e:
            pytest.fail(f"kernel != scalar path (replay: RTE_KERNEL_SEED={seed}): {e}")
    if not os.environ.get("RTE_KERNEL_SEED"):
        assert decided > 5000, "the kernel, not only its fallback, is exercised"


def test_the_kernel_decides_a_pod_whose_later_container_depends_on_the_even_split() -> None:
    """Two nodes alike but for ``distribute-cpus-across-numa``: zones of 16 CPUs with 14 and 16
    free, ``restricted``, memory manager None; c1 asks 20 CPUs, c2 8. Packed
    (``takeByTopologyNUMAPacked``) leaves (10, 0) and c2 fits zone 0; distributed
    (``takeByTopologyNUMADistributed``) leaves (4, 6) and c2 is refused. The kernel gives both the
    scalar path's answer (a pod of two units is the scalar path's)."""

    def node(name: str, distribute: str) -> NodeTopology:
        zones = tuple(
            Zone(
                f"node-{i}",
                resources=(
                    ResourceInfo("cpu", 16, 16, free),
                    ResourceInfo("memory", 64 * GI, 64 * GI, 64 * GI),
                ),
            )
            for i, free in enumerate((14, 16))
        )
        attrs = (
            Attribute("topologyManagerPolicy", "restricted"),
            Attribute("topologyManagerScope", "container"),
            Attribute("memoryManagerPolicy", "None"),
            Attribute("cpuManagerOptionDistributeCpusAcrossNuma", distribute),
        )
        return NodeTopology(name, zones=zones, attributes=attrs)

    def container(name: str, cpus: int) -> Container:
        amounts = {"cpu": parse_quantity(cpus), "memory": parse_quantity(GI)}
        return Container(name, amounts, amounts)

    pod = Pod("ns", "p", containers=(container("c1", 20), container("c2", 8)))
    views: list[NumaView | None] = [build_view(node("packed", "false")), build_view(node("even", "true"))]
    table = NodeTable.of(["packed", "even"], views, [True, True], [None, None])
    got = decide(prepare_pod(pod), table, None, ScoringStrategy(STRATEGIES[0], {"cpu": 1, "memory": 1}))
    prep = prepare_pod(pod)
    assert [bool(f) for f in got.fits] == [True, False]
    for k, view in enumerate(views):
        want = filter_node(prep, view, None)
        assert (bool(got.fits[k]), got.reason(k)) == (want.fits, want.reason)


def test_scores_where_the_kernel_placed_every_row_equal_the_scalar_scorers() -> None:
    """The usual whole-table case (every row fresh, every row placed by the kernel), where Score
    reads the zones at the flat positions Filter made instead of masks (issue #27): each score
    is the scalar Scorer's, under every strategy, on nodes of 1 to 8 zones."""
    from rte.consumer.kernel.decide import filter_rows

    rng = random.Random(2727)
    views = []
    for i in range(400):
        zones = []
        count = rng.randint(1, 8)
        for z in range(count):
            cpu, memory = rng.randint(4, 64), rng.randint(4, 512) * 2**30
            resources = (
                ResourceInfo("cpu", 64, 64, cpu),
                ResourceInfo("memory", 512 * 2**30, 512 * 2**30, memory),
            )
            costs = tuple(Cost(f"node-{j}", 10 if j == z else 20) for j in range(count))
            zones.append(Zone(name=f"node-{z}", costs=costs, resources=resources))
        attrs = (
            Attribute("topologyManagerPolicy", "single-numa-node"),
            Attribute("topologyManagerScope", "container"),
        )
        views.append(build_view(NodeTopology(name=f"w{i}", zones=tuple(zones), attributes=attrs)))
    table = NodeTable.of([v.node_name for v in views], views)
    requests: dict[str, Amount] = {"cpu": 2, "memory": 3 * 2**30}
    prep = prepare_pod(Pod("ns", "p", containers=(Container("c", requests, requests),)))
    assert filter_rows(prep, table, None, None).flat is not None  # the path under test
    weights = ({"cpu": 1, "memory": 1}, {"cpu": 3, "memory": 1}, {"cpu": 2, "memory": 1})  # sums 2, 4, 3
    for name, weight in ((n, w) for n in STRATEGIES for w in weights):
        strategy = ScoringStrategy(name, weight)
        verdicts = decide(prep, table, None, strategy)
        scorer = Scorer(prep, strategy)
        assert verdicts.fits.all()
        assert verdicts.scores is not None
        assert verdicts.scores.tolist() == [scorer(v) for v in views], name
