"""The incremental resync (nodes whose inputs changed only) against the full pass (every node).

Two reserve caches over one store live the same random history: reservations, NRT updates
(matching some pod set of the node or none, a Topology Manager change, a deletion), pod events
(some missed, as a front end without a watch misses them all), filter failures, lookups, time
steps, a new startup grace. At every resync one cache visits what its plan names, the other
every node (``full=True``, the reference's pass): their reports and every node's state must be
equal, and the incremental one must have noted every node whose lookup changed.
"""

from __future__ import annotations

import random
from dataclasses import replace
from typing import Any

import pytest

from rte.consumer.cache.interface import ResyncReport
from rte.consumer.cache.nodestate import NodeState
from rte.consumer.cache.overreserve import OverReserveCache
from rte.consumer.config import CacheConfig, ForeignPodsDetect, Reconcile, ResyncScope
from rte.consumer.store import ADDED, DELETED, MODIFIED, NRTStore
from rte.model import fingerprint as fp
from rte.model.pod import Container, Pod
from rte.model.topology import Attribute, NodeTopology, ResourceInfo, Zone
from rte.model.vocabulary import FingerprintMethod

GIB = 1024**3
OURS = "topo-aware-scheduler"
NODES = [f"n{i}" for i in range(6)]


def topology(node: str, counted: list[Pod] | None, rng: random.Random, policy: str) -> NodeTopology:
    zones = tuple(
        Zone(
            f"node-{z}",
            resources=(
                ResourceInfo("cpu", 8, 8, rng.randint(0, 8)),
                ResourceInfo("memory", 16 * GIB, 16 * GIB, rng.randint(0, 16) * GIB),
            ),
        )
        for z in range(2)
    )
    attributes = [
        Attribute("topologyManagerPolicy", policy),
        Attribute("topologyManagerScope", "container"),
        Attribute(fp.ATTRIBUTE_METHOD, FingerprintMethod.ALL.value),
    ]
    if counted is not None:
        attributes.append(Attribute(fp.ATTRIBUTE, fp.compute(p.key for p in counted)))
    return NodeTopology(name=node, zones=zones, attributes=tuple(attributes))


def state(st: NodeState) -> dict[str, Any]:
    """Everything of a node's state but the memos (and the memo counter)."""
    out = st.dump()
    out.update(
        revision=st.revision,
        checked=st.checked_revision,
        topology=st.topology,
        reservations={k: (r, r.zones, r.unpredictable) for k, r in st.reservations.items()},
        live=dict(st.live),
        accounted=st.accounted,
        holds=dict(st.holds),
        credits=dict(st.credits),
        tried=st.tried,
        members=dict(st.log.members),
        changes=list(st.log.changes),
        version=st.log.version,
        base=st.log.base,
        start=st.log.start,
        unverified=st.unverified,
        mismatches=st.mismatches,
    )
    return out


def lookup(cache: OverReserveCache, node: str) -> tuple[Any, ...]:
    found = cache.get(node)
    zones = None if found.view is None else [dict(z) for z in found.view.zone_available]
    return found.fresh, zones, None if found.view is None else found.view.source


def report(r: ResyncReport) -> tuple[Any, ...]:
    return r.flushed, r.config_flushed, r.still_dirty, dict(r.comparisons)


class History:
    """One random history, applied to both caches at once."""

    def __init__(self, seed: int, config: CacheConfig) -> None:
        self.rng = random.Random(seed)
        self.now = 1000.0
        self.store = NRTStore()
        self.fast = OverReserveCache(self.store, config, clock=lambda: self.now)
        self.full = OverReserveCache(self.store, config, clock=lambda: self.now)
        self.pods: dict[tuple[str, str], Pod] = {}
        self.count = 0
        self.policy = {n: "single-numa-node" for n in NODES}
        self.resyncs = self.visited_nothing = 0

    def both(self, method: str, *args: Any) -> None:
        getattr(self.fast, method)(*args)
        getattr(self.full, method)(*args)

    def event(self, event_type: str, pod: Pod) -> None:
        if event_type == DELETED:
            self.pods.pop(pod.key, None)
        else:
            self.pods[pod.key] = pod
        if self.rng.random() < 0.85:  # else missed: the next resync's pod list catches up
            self.both("on_pod_event", event_type, pod)

    def new_pod(self) -> None:
        self.count += 1
        cpu = self.rng.randint(1, 3)
        requests = {"cpu": cpu, "memory": GIB}
        scheduler = OURS if self.rng.random() < 0.8 else "default-scheduler"
        pod = Pod(
            "ns",
            f"p{self.count}",
            uid=f"u{self.count}",
            scheduler_name=scheduler,
            containers=(Container("c", requests, dict(requests)),),
        )
        self.event(ADDED, pod)

    def pod_step(self) -> None:
        if not self.pods or self.rng.random() < 0.25:
            self.new_pod()
            return
        if self.rng.random() < 0.1:  # placed by us, not listed yet (or never: its reservation expires)
            self.count += 1
            ghost = Pod("ns", f"ghost{self.count}", uid=f"g{self.count}")
            self.both("reserve", self.rng.choice(NODES), ghost)
            return
        pod = self.pods[self.rng.choice(sorted(self.pods))]
        roll = self.rng.random()
        if not pod.node_name:
            node = self.rng.choice(NODES)
            if pod.scheduler_name == OURS and roll < 0.4:
                self.both("reserve", node, pod)
            elif roll < 0.5:
                self.both("unreserve", node, pod)
            elif roll < 0.9:  # bound where it was reserved, mostly; or by someone else elsewhere
                self.event(MODIFIED, replace(pod, node_name=node))
            else:
                self.event(DELETED, pod)
        elif pod.phase == "Pending" and roll < 0.6:
            self.event(MODIFIED, replace(pod, phase="Running"))
        elif roll < 0.75:
            self.event(MODIFIED, replace(pod, phase=self.rng.choice(["Succeeded", "Failed"])))
        elif roll < 0.9:
            self.event(DELETED, pod)
        else:
            self.pods[pod.key] = replace(pod)  # an equal pod, a new object (a relist)

    def nrt_step(self) -> None:
        node = self.rng.choice(NODES)
        roll = self.rng.random()
        if roll < 0.1:
            self.store.apply(DELETED, NodeTopology(name=node))
            return
        if roll < 0.2:
            self.policy[node] = self.rng.choice(["single-numa-node", "restricted", "best-effort"])
        on_node = [p for p in self.pods.values() if p.node_name == node and p.phase != "Pending"]
        if roll < 0.3:
            counted = None  # no fingerprint at all
        elif roll < 0.5:
            counted = self.rng.sample(on_node, self.rng.randint(0, len(on_node)))  # an older set
        else:
            counted = on_node
        self.store.apply(ADDED, topology(node, counted, self.rng, self.policy[node]))

    def step(self) -> None:
        roll = self.rng.random()
        if roll < 0.45:
            self.pod_step()
        elif roll < 0.65:
            self.nrt_step()
        elif roll < 0.72:
            self.both("mark_maybe_over_reserved", self.rng.choice(NODES))
        elif roll < 0.75:
            self.both("note_filter_success", self.rng.choice(NODES))
        elif roll < 0.8:
            node = self.rng.choice(NODES)
            assert lookup(self.fast, node) == lookup(self.full, node)
        elif roll < 0.88:
            self.now += self.rng.choice([0.5, 3.0, 12.0, 31.0])
        elif roll < 0.885:
            self.both("restart_startup_grace", self.now)
        else:
            self.resync()

    def resync(self) -> None:
        pods = list(self.pods.values())
        serial = self.fast._changes.serial
        before = {n: st.token() for n, st in self.fast._nodes.items()}
        fast = self.fast.resync(pods, self.now)
        full = self.full.resync(pods, self.now, full=True)
        assert report(fast) == report(full)
        assert self.fast.generation == self.full.generation
        assert sorted(self.fast._nodes) == sorted(self.full._nodes)
        for node, st in self.fast._nodes.items():
            assert state(st) == state(self.full._nodes[node]), node
        noted = set(self.fast._changes.since(serial) or ())
        assert {n for n, st in self.fast._nodes.items() if before.get(n) != st.token()} <= noted
        self.resyncs += 1


CONFIGS = {
    "history": CacheConfig(),
    "history-startup": CacheConfig(startup_grace=20.0, history_limit=8),
    "history-not-following": CacheConfig(follow_clean_nodes=False, resync_scope=ResyncScope.ONLY_RESOURCES),
    "exact": CacheConfig(reconcile=Reconcile.EXACT),
    "exact-startup": CacheConfig(
        reconcile=Reconcile.EXACT, startup_grace=20.0, dirty_after_failures=2, absent_pod_grace=10.0
    ),
    "exact-no-foreign": CacheConfig(reconcile=Reconcile.EXACT, foreign_pods_detect=ForeignPodsDetect.NONE),
}


@pytest.mark.parametrize("name", sorted(CONFIGS))
@pytest.mark.parametrize("seed", range(12))
def test_the_incremental_resync_leaves_what_the_full_pass_leaves(name: str, seed: int) -> None:
    history = History(seed, CONFIGS[name])
    for _ in range(400):
        history.step()
    history.resync()
    assert history.resyncs > 10


def test_a_resync_with_nothing_changed_visits_no_node() -> None:
    history = History(7, CacheConfig())
    for _ in range(300):
        history.step()
    history.resync()
    cache = history.fast
    calls: list[str] = []
    step = cache._step

    def counted(node: str, st: NodeState, run: Any) -> None:
        calls.append(node)
        step(node, st, run)

    cache._step = counted  # type: ignore[method-assign]
    pods = list(history.pods.values())
    report = cache.resync(pods, history.now)
    marked = {n for n, st in cache._nodes.items() if st.foreign}
    assert set(calls) == marked, "only the foreign nodes are checked again, by rule"
    assert set(report.still_dirty) >= set(report.comparisons)
    calls.clear()
    history.now += 1
    cache.reserve(NODES[0], next(iter(history.pods.values())))
    cache.resync(pods, history.now)
    assert set(calls) == marked | {NODES[0]}
