"""The change logs that let a reader skip unchanged nodes: the store's and the caches'."""

from __future__ import annotations

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
