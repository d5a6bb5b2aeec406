"""The change logs that let a reader skip unchanged nodes: the store's and the caches'."""

from __future__ import annotations

import sys

from rte.consumer.cache.batched import Deadlines
from rte.consumer.changelog import MIN_KEPT, ChangeLog
from rte.consumer.store import ADDED, DELETED, NRTStore
from rte.model.topology import NodeTopology, ResourceInfo, Zone


def topo(name: str, cpus: int = 4) -> NodeTopology:
    return NodeTopology(
        name=name, zones=(Zone("node-0", resources=(ResourceInfo("cpu", cpus, cpus, cpus),)),)
    )


def test_a_reader_gets_the_names_noted_after_its_serial() -> None:
    log = ChangeLog()
    start = log.serial
    log.note("a")
    middle = log.serial
    log.note_all(["b", "a"])
    assert log.since(start) == ["a", "b", "a"]
    assert log.since(middle) == ["b", "a"]
    assert log.since(log.serial) == []
    assert log.since(None) is None


def test_a_reader_too_far_behind_is_told_anything_may_have_changed() -> None:
    log = ChangeLog()
    old = log.serial
    for i in range(3 * MIN_KEPT):
        log.note(f"n{i % 10}")
    assert log.since(old) is None
    recent = log.serial - 5
    assert log.since(recent) == [f"n{i % 10}" for i in range(3 * MIN_KEPT - 5, 3 * MIN_KEPT)]
    assert len(log.since(log.serial - MIN_KEPT // 2) or []) == MIN_KEPT // 2


def test_the_logs_bookkeeping_of_20000_nodes_stays_under_a_mebibyte() -> None:
    # Issue #13's RSS budget: the store and the reserve cache each keep a log of every node;
    # the set that counted distinct names took 2 MiB at 20 000 (sets grow fourfold).
    log = ChangeLog()
    log.note_all(f"worker-{i:05d}" for i in range(20_000))
    assert sys.getsizeof(log._distinct) + sys.getsizeof(log._names) < 2**20
    assert log.since(0) == [f"worker-{i:05d}" for i in range(20_000)]


def test_the_store_names_the_nodes_changed_since_a_generation_and_skips_no_ops() -> None:
    store = NRTStore()
    store.apply(ADDED, topo("a"))
    generation, _ = store.changed_since(None)
    assert store.changed_since(None)[1] is None
    store.apply(ADDED, topo("a"))  # identical: no change
    store.apply(ADDED, topo("b"))
    store.apply(ADDED, topo("a", 8))
    store.apply(DELETED, topo("b"))
    now, changed = store.changed_since(generation)
    assert now == store.generation == generation + 3
    assert changed == ["b", "a", "b"]
    assert store.changed_since(now) == (now, [])


def test_deadlines_name_the_nodes_turning_stale_in_an_interval_and_forget_old_ones() -> None:
    store = NRTStore()
    store.observe_heartbeat("a", 100.0)
    store.observe_heartbeat("b", 110.0)
    deadlines = Deadlines()
    deadlines.ingest(store, 30.0, now=115.0)
    assert deadlines.due(115.0, 129.0) == []
    assert deadlines.due(115.0, 131.0) == ["a"]  # a turns stale at 130
    store.observe_heartbeat("a", 125.0)  # a beats again: stale at 155 now
    deadlines.ingest(store, 30.0, now=131.0)
    assert deadlines.due(131.0, 141.0) == ["b"]
    assert deadlines.due(141.0, 156.0) == ["a"]
    assert deadlines.due(100.0, 120.0) is None  # from before the deadlines were read: start over
    for t in range(MIN_KEPT + 10):  # more beats than the store's log keeps
        store.observe_heartbeat("c", 200.0 + t)
    deadlines.ingest(store, 30.0, now=5000.0)  # behind the log: restarted from the latest beats
    assert deadlines.entries == [(140.0, "b"), (155.0, "a"), (200.0 + MIN_KEPT + 9 + 30.0, "c")]
    assert deadlines.due(4000.0, 5001.0) is None and deadlines.due(5000.0, 5001.0) == []


def test_deadlines_already_due_are_dropped_once_they_outnumber_the_nodes() -> None:
    deadlines = Deadlines(entries=[(float(t), "c") for t in range(MIN_KEPT + 20)], read=0, since=0.0)
    deadlines.prune(now=MIN_KEPT + 10.0, nodes=1)
    assert [d for d, _ in deadlines.entries] == [float(t) for t in range(MIN_KEPT + 10, MIN_KEPT + 20)]
    assert deadlines.due(5.0, MIN_KEPT + 12.0) is None
    assert deadlines.due(MIN_KEPT + 10.0, MIN_KEPT + 12.0) == ["c", "c", "c"]
