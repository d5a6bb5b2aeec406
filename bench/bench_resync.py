"""The reserve cache's periodic resync: nothing changed, or a few nodes changed (issue #13).

Every ``--cache-resync-period`` the extender resyncs its OverReserve cache, holding the cache's
lock: every extender request waits meanwhile. The incremental resync visits only the nodes whose
inputs changed (:mod:`rte.consumer.cache.resyncplan`); the baseline, on the same cache in the same
process, is the full pass over every node (``resync(..., full=True)``, the previous behaviour).

The cluster: NRTs of 8 zones (bench_consumer's), two running pods per node whose fingerprint
every NRT carries, five pods reserved and not listed yet. "10 changed": before each timed resync
10 nodes publish a new NRT (other amounts, the same pods), as agents do, and one pod of each
comes as a new object (a pod event), so the pod list is grouped and compared again. Both the wall time of the
call and the time the cache's lock was held within it are printed: grouping the informer's pod
list and comparing it with the last one happen before the lock is taken.

Issue #27: the same resyncs from a :class:`~rte.consumer.cache.podindex.PodIndex` kept by the
pod events (each changed pod one ``put``) instead of the whole pod list: a call then looks at the
changed pods only. Targets: 10 nodes changed at 50 000 nodes in at most 20 ms a call, and nothing
changed flat in the cluster's size (50 000 nodes within :data:`FLAT_FACTOR` of 5000).

Run: ``.venv/bin/python -m bench.bench_resync``.
"""

from __future__ import annotations

import random
import statistics
import threading
import time
from dataclasses import dataclass, replace
from types import TracebackType

from bench.bench_consumer import _topology
from bench.timing import Row, print_rows
from rte.consumer.cache.overreserve import OverReserveCache
from rte.consumer.cache.podindex import PodIndex
from rte.consumer.store import ADDED, NRTStore
from rte.model import fingerprint as fp
from rte.model.pod import Container, Pod
from rte.model.topology import Attribute, NodeTopology

NODES = 5000
MANY_NODES = 50_000
CHANGED = 10
TARGET_MS = 1.0
"""Nothing changed at 5000 nodes, under the lock: next to nothing against the 65-70 ms before."""
INDEXED_TARGET_MS = 20.0
"""10 nodes changed at 50 000 nodes, a whole call from the pod index (issue #27)."""
FLAT_FACTOR = 2.0
"""Nothing changed, from the pod index: 10 times the nodes within this factor of the time."""


class _TimedLock:
    """The cache's lock, counting how long it is held (outermost acquisitions only)."""

    def __init__(self) -> None:
        self._lock = threading.RLock()
        self._depth = 0
        self._since = 0.0
        self.held = 0.0

    def __enter__(self) -> None:
        self._lock.acquire()
        self._depth += 1
        if self._depth == 1:
            self._since = time.perf_counter()

    def __exit__(self, *exc: type[BaseException] | BaseException | TracebackType | None) -> None:
        self._depth -= 1
        if self._depth == 0:
            self.held += time.perf_counter() - self._since
        self._lock.release()


def _with_pods(index: int, rng: random.Random, pods: list[Pod]) -> NodeTopology:
    topology = _topology(index, rng)
    digest = Attribute(fp.ATTRIBUTE, fp.compute(p.key for p in pods))
    return replace(topology, attributes=(*topology.attributes, digest))


@dataclass
class _Cluster:
    cache: OverReserveCache
    store: NRTStore
    pods: list[Pod]
    by_node: dict[str, list[Pod]]
    lock: _TimedLock
    index: PodIndex


def _setup(count: int) -> _Cluster:
    rng = random.Random(42)
    store = NRTStore()
    pods: list[Pod] = []
    by_node: dict[str, list[Pod]] = {}
    requests = {"cpu": 2, "memory": 1 << 30}
    app = (Container("app", requests, requests),)
    for i in range(count):
        node = f"worker-{i:05d}"
        on_node = [
            Pod("bench", f"{node}-{k}", uid=f"{i}-{k}", node_name=node, phase="Running", containers=app)
            for k in range(2)
        ]
        by_node[node] = on_node
        pods += on_node
        store.apply(ADDED, _with_pods(i, rng, on_node))
    cache = OverReserveCache(store)
    lock = _TimedLock()
    cache._lock = lock  # type: ignore[assignment]  # same behaviour, timed
    for k in range(5):
        cache.reserve(f"worker-{k * 97 % count:05d}", Pod("bench", f"reserved-{k}", containers=app))
    cache.resync(pods)  # the first resync visits every node (the startup pass), untimed
    return _Cluster(cache, store, pods, by_node, lock, PodIndex(pods))


def _run(
    cluster: _Cluster, changed: int, full: bool, repeat: int, indexed: bool = False
) -> tuple[float, float]:
    """(median ms per resync call, median ms of it holding the cache's lock); ``indexed``: from
    the pod index (the pod list and the index both follow every pod event)."""
    count = len(cluster.by_node)
    rng = random.Random(count + changed)
    walls, helds = [], []
    for _ in range(repeat):
        for _ in range(changed):
            i = rng.randrange(count)
            on_node = cluster.by_node[f"worker-{i:05d}"]
            on_node[0] = cluster.pods[2 * i] = replace(on_node[0])  # a pod event: a new object
            cluster.index.put(on_node[0])
            cluster.store.apply(ADDED, _with_pods(i, rng, on_node))
        cluster.lock.held = 0.0
        start = time.perf_counter()
        cluster.cache.resync(cluster.index if indexed else cluster.pods, full=full)
        walls.append(time.perf_counter() - start)
        helds.append(cluster.lock.held)
    return statistics.median(walls) * 1000, statistics.median(helds) * 1000


def summary() -> list[Row]:
    rows = []
    unchanged: dict[int, float] = {}
    for count, repeat, base_repeat in ((NODES, 21, 7), (MANY_NODES, 7, 3)):
        cluster = _setup(count)
        for changed in (0, CHANGED):
            _run(cluster, changed, False, 2)  # settle after the last full pass, untimed
            base, base_held = _run(cluster, changed, True, base_repeat)
            _run(cluster, changed, False, 2)
            ms, held = _run(cluster, changed, False, repeat)
            label = "nothing changed" if not changed else f"{changed} nodes changed"
            what = f"reserve-cache resync, {count} nodes x 2 pods, {label}"
            figure = (
                f"lock {held:.2f} ms, call {ms:.1f} ms (full pass: lock {base_held:.0f} ms, "
                f"call {base:.0f} ms: {base_held / held:.0f}x under the lock)"
            )
            met = held <= TARGET_MS if count == NODES and not changed else None
            rows.append(Row(what, figure, f"<= {TARGET_MS:.0f} ms" if met is not None else "-", met))
            _run(cluster, changed, False, 2, indexed=True)  # the switch to the index: a full pass
            indexed, indexed_held = _run(cluster, changed, False, repeat, indexed=True)
            what = f"reserve-cache resync from the pod index, {count} nodes x 2 pods, {label}"
            figure = f"call {indexed:.2f} ms, lock {indexed_held:.2f} ms (from the list: call {ms:.1f} ms)"
            if changed:
                target, met = f"<= {INDEXED_TARGET_MS:.0f} ms", indexed <= INDEXED_TARGET_MS
                if count != MANY_NODES:
                    target, met = "-", None
            elif count == NODES:
                unchanged[count] = indexed
                target, met = "-", None
            else:
                ratio = indexed / unchanged[NODES]
                figure += f"; {ratio:.1f}x the {NODES}-node call for {count // NODES}x the nodes"
                target, met = f"<= {FLAT_FACTOR:.0f}x the {NODES}-node call", ratio <= FLAT_FACTOR
            rows.append(Row(what, figure, target, met))
    return rows


def main() -> None:
    print_rows(summary())


if __name__ == "__main__":
    main()
