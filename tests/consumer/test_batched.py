"""The batched cache path (one lock, only changed nodes looked up) equals the per-node path.

Random histories of NRT updates, reservations, pod events, resyncs, heartbeats and the clock are
played into two identical worlds: one decides through the caches' batched interface, the other
through a wrapper that offers only the per-node interface (every node looked up every time).
After every step both must give the same verdicts, reasons and scores, every row the mirror
decided on must hold exactly what ``cache.get`` serves now, and at the end both caches must be
in the same state.
"""

from __future__ import annotations

import random
import threading
from collections.abc import Callable
from typing import Any

import pytest

from rte.consumer.cache.selection import make_cache
from rte.consumer.config import CacheConfig, CacheMode, CacheSettings, Reconcile, StaleAction
from rte.consumer.cycle import evaluate_nodes, filter_nodes, score_nodes
from rte.consumer.kernel.mirror import mirror_of
from rte.consumer.requests import prepare_pod
from rte.consumer.score import Scorer, ScoringStrategy
from rte.consumer.store import ADDED, DELETED, MODIFIED, NRTStore
from rte.model import fingerprint as fp
from rte.model.pod import Container, Pod
from rte.model.topology import Attribute, NodeTopology, ResourceInfo, Zone
from rte.model.vocabulary import FingerprintMethod
from rte.testing.per_node_cache import PerNodeCache

GIB = 1024**3
OURS = "topo-aware-scheduler"
NODES = [f"n{i}" for i in range(12)]


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def a_pod(rng: random.Random, name: str, node: str = "", scheduler: str = OURS) -> Pod:
    requests = {"cpu": rng.choice([1, 2, 4]), "memory": rng.choice([1, 4]) * GIB}
    phase = "Running" if node and rng.random() < 0.5 else "Pending"
    return Pod(
        namespace="ns",
        name=name,
        uid=f"uid-{name}",
        node_name=node,
        phase=phase,
        scheduler_name=scheduler,
        containers=(Container("c", requests, dict(requests)),),
    )


def an_nrt(rng: random.Random, name: str, pods: list[Pod]) -> NodeTopology:
    zones = tuple(
        Zone(
            f"node-{i}",
            resources=(
                ResourceInfo("cpu", 8, 8, rng.randrange(0, 9)),
                ResourceInfo("memory", 16 * GIB, 16 * GIB, rng.randrange(0, 17) * GIB),
            ),
        )
        for i in range(rng.choice([1, 2, 4]))
    )
    policy = rng.choice(["single-numa-node", "single-numa-node", "restricted", "best-effort"])
    attributes = (
        Attribute("topologyManagerPolicy", policy),
        Attribute("topologyManagerScope", rng.choice(["container", "pod"])),
        Attribute(fp.ATTRIBUTE, fp.compute(p.key for p in pods if p.node_name == name)),
        Attribute(fp.ATTRIBUTE_METHOD, FingerprintMethod.ALL.value),
    )
    return NodeTopology(name=name, zones=zones, attributes=attributes)


class World:
    def __init__(self, settings: CacheSettings, per_node: bool) -> None:
        self.clock = Clock()
        self.store = NRTStore()
        self.cache = make_cache(settings, self.store, self.clock)
        self.front: Any = PerNodeCache(self.cache) if per_node else self.cache
        self.pods: dict[str, Pod] = {}

    def decide(self, pod: Pod, names: list[str]) -> tuple[object, ...]:
        prep = prepare_pod(pod)
        scorer = Scorer(prep, ScoringStrategy("MostAllocated"))
        outcome = filter_nodes(prep, names, self.front)
        scores = score_nodes(prep, outcome.passed, self.front, scorer)
        evaluation = evaluate_nodes(prep, names, self.front, scorer)
        self.check_rows(names)
        return (
            outcome.passed,
            outcome.failed,
            outcome.reasons,
            scores,
            evaluation.scores.tolist(),
            evaluation.filtered.failed,
        )

    def check_rows(self, names: list[str]) -> None:
        mirror = mirror_of(self.front)
        table = mirror.table
        for name in names:
            lookup = self.cache.get(name)
            # A name the cache does not track reads the row all such names share.
            row = table.index.get(name, mirror.untracked_row)
            assert row is not None, name
            view, fresh = table.tokens[row]
            assert view is lookup.view and fresh == lookup.fresh, name


def step(rng: random.Random, world: World, op: str, arg: Any) -> None:
    """Apply one step of a history (the same ``op`` and ``arg`` to both worlds)."""
    cache, store = world.cache, world.store
    if op == "nrt":
        name, seed = arg
        store.apply(
            rng.choice([ADDED, MODIFIED]), an_nrt(random.Random(seed), name, list(world.pods.values()))
        )
    elif op == "delete":
        store.apply(DELETED, NodeTopology(name=arg))
    elif op == "reserve":
        node, pod = arg
        cache.reserve(node, pod)
    elif op == "unreserve":
        node, pod = arg
        cache.unreserve(node, pod)
    elif op == "bind":
        world.pods[arg.name] = arg
        cache.on_pod_event(ADDED, arg)
    elif op == "gone":
        pod = world.pods.pop(arg, None)
        if pod is not None:
            cache.on_pod_event(DELETED, pod)
    elif op == "resync":
        cache.resync(list(world.pods.values()), world.clock.now)
    elif op == "beat":
        store.observe_heartbeat(arg, world.clock.now)
    elif op == "tick":
        world.clock.now += arg


def history(rng: random.Random, length: int) -> list[tuple[str, Any]]:
    steps: list[tuple[str, Any]] = []
    reserved: list[tuple[str, Pod]] = []
    bound: list[str] = []
    for i in range(length):
        op = rng.choice(["nrt", "nrt", "delete", "reserve", "reserve", "unreserve", "bind", "gone"])
        op = rng.choice([op, op, "resync", "beat", "tick", "decide", "decide"])
        node = rng.choice(NODES)
        if op == "nrt":
            steps.append((op, (node, rng.randrange(10**9))))
        elif op == "delete" or op == "beat":
            steps.append((op, node))
        elif op == "reserve":
            pod = a_pod(rng, f"r{i}")
            reserved.append((node, pod))
            steps.append((op, (node, pod)))
        elif op == "unreserve" and reserved:
            steps.append((op, reserved.pop(rng.randrange(len(reserved)))))
        elif op == "bind":
            scheduler = OURS if rng.random() < 0.7 else "default-scheduler"
            pod = a_pod(rng, f"b{i}", node, scheduler)
            bound.append(pod.name)
            steps.append((op, pod))
        elif op == "gone" and bound:
            steps.append((op, bound.pop(rng.randrange(len(bound)))))
        elif op == "tick":
            steps.append((op, rng.choice([1.0, 5.0, 30.0])))
        elif op == "decide":
            names = rng.sample(NODES, rng.randrange(1, len(NODES) + 1))
            if rng.random() < 0.3:
                names = list(NODES)  # the same list again and again, as kube-scheduler sends it
            steps.append((op, (a_pod(rng, f"d{i}"), names)))
        elif op == "resync":
            steps.append((op, None))
    return steps


def settings(mode: CacheMode, **config: Any) -> Callable[[], CacheSettings]:
    return lambda: CacheSettings(mode, 10.0, CacheConfig(**config))


SETTINGS: dict[str, Callable[[], CacheSettings]] = {
    "overreserve-history": settings(CacheMode.OVER_RESERVE),
    "overreserve-exact": settings(CacheMode.OVER_RESERVE, reconcile=Reconcile.EXACT, dirty_after_failures=2),
    "overreserve-startup-grace": settings(CacheMode.OVER_RESERVE, startup_grace=40.0),
    "overreserve-heartbeat": settings(
        CacheMode.OVER_RESERVE, heartbeat_max_age=20.0, stale_action=StaleAction.UNSCHEDULABLE
    ),
    "passthrough-heartbeat": settings(
        CacheMode.PASSTHROUGH, heartbeat_max_age=20.0, stale_action=StaleAction.NO_NRT
    ),
    "discardreserved": settings(CacheMode.DISCARD_RESERVED),
}


@pytest.mark.parametrize("mode", sorted(SETTINGS))
@pytest.mark.parametrize("seed", range(12))
def test_the_batched_path_decides_as_the_per_node_path(mode: str, seed: int) -> None:
    batched = World(SETTINGS[mode](), per_node=False)
    per_node = World(SETTINGS[mode](), per_node=True)
    for k, (op, arg) in enumerate(history(random.Random(seed), 150)):
        if op == "decide":
            pod, names = arg
            assert batched.decide(pod, names) == per_node.decide(pod, names), f"seed {seed}, step {k}"
            continue
        for world in (batched, per_node):
            step(random.Random(f"{seed}-{k}"), world, op, arg)
    assert batched.cache.state_dump() == per_node.cache.state_dump(), f"seed {seed}"


def test_a_request_in_which_nothing_changed_looks_up_no_node() -> None:
    world = World(SETTINGS["overreserve-history"](), per_node=False)
    rng = random.Random(3)
    for name in NODES:
        world.store.apply(ADDED, an_nrt(rng, name, []))
    pod = a_pod(rng, "p")
    world.decide(pod, NODES)
    mirror = mirror_of(world.cache)
    looked = mirror.lookups
    world.decide(pod, NODES)
    assert mirror.lookups == looked
    world.cache.reserve("n3", a_pod(rng, "q"))
    world.store.apply(MODIFIED, an_nrt(rng, "n5", []))
    world.decide(pod, NODES)
    assert mirror.lookups - looked == 2  # n3 and n5, in the first of the three calls only


def test_candidate_lists_map_to_rows_once_and_tuples_by_identity() -> None:
    world = World(SETTINGS["passthrough-heartbeat"](), per_node=False)
    mirror = mirror_of(world.cache)
    first = mirror.rows(["n1", "n2"])
    assert first.tolist() == [0, 1] and mirror.whole
    assert mirror.rows(["n1", "n2"]) is first  # the same names: the remembered rows
    names = ("n3", "n1", "n3")
    rows = mirror.rows(names)
    assert rows.tolist() == [2, 0, 2] and not mirror.whole
    assert mirror.rows(names) is rows
    assert mirror.rows(("n1", "n2", "n3")).tolist() == [0, 1, 2] and mirror.whole
    mirror.rows(["n4"])
    assert not mirror.whole and mirror.rows(("n1", "n2", "n3")).tolist() == [0, 1, 2]
    assert not mirror.whole  # n4's row came since: no longer the whole table


class CountingLock:
    """A re-entrant lock that counts its acquisitions."""

    def __init__(self) -> None:
        self._lock = threading.RLock()
        self.taken = 0

    def __enter__(self) -> bool:
        self.taken += 1
        return self._lock.__enter__()

    def __exit__(self, *exc: object) -> None:
        self._lock.__exit__(*exc)


@pytest.mark.parametrize("mode", ["overreserve-history", "discardreserved"])
def test_a_request_takes_the_cache_s_lock_a_fixed_number_of_times_whatever_the_node_count(mode: str) -> None:
    taken = []
    for count in (10, 300):
        world = World(SETTINGS[mode](), per_node=False)
        rng = random.Random(count)
        names = [f"m{i}" for i in range(count)]
        for name in names:
            world.store.apply(ADDED, an_nrt(rng, name, []))
        pod = a_pod(rng, "p")
        prep = prepare_pod(pod)
        filter_nodes(prep, names, world.cache)  # the first request looks every node up
        lock = world.cache._lock = CountingLock()  # type: ignore[assignment]
        outcome = filter_nodes(prep, names, world.cache)
        score_nodes(prep, outcome.passed, world.cache, Scorer(prep, ScoringStrategy("LeastAllocated")))
        taken.append(lock.taken)
    # filter: the snapshot and the bookkeeping; score: the snapshot (and the reserve cache's score views)
    assert taken[0] == taken[1] == (4 if mode == "overreserve-history" else 3)


@pytest.mark.parametrize("mode", sorted(SETTINGS))
def test_names_the_cache_never_heard_of_share_one_row_until_they_turn_tracked(mode: str) -> None:
    """Issue #26, item 1: a million made-up names once added a million rows for good. Names
    the cache does not track map to one shared row and decide as a node without NRT (the
    per-node path is the reference); a name turning tracked gets its own row at once."""
    batched = World(SETTINGS[mode](), per_node=False)
    per_node = World(SETTINGS[mode](), per_node=True)
    rng = random.Random(5)
    for world in (batched, per_node):
        for name in ("n1", "n2"):
            world.store.apply(ADDED, an_nrt(random.Random(name), name, []))
    ghosts = [f"ghost-{i}" for i in range(500)]
    names = ["n1", *ghosts, "n2"]
    pod = a_pod(rng, "p")
    for k in range(3):
        batched_names = names if k < 2 else [f"other-{i}" for i in range(500)]
        assert batched.decide(pod, batched_names) == per_node.decide(pod, batched_names)
    mirror = mirror_of(batched.cache)
    assert mirror.table.size == 3  # n1, n2 and the row of every untracked name
    for world in (batched, per_node):
        world.store.apply(ADDED, an_nrt(random.Random("g"), "ghost-7", []))
    assert batched.decide(pod, names) == per_node.decide(pod, names)
    assert mirror.table.index["ghost-7"] == 3 and mirror.table.size == 4
