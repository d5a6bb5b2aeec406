"""The pod index kept by events (:mod:`rte.consumer.cache.podindex`) against the pod list.

Its groups must be exactly what :func:`group_pods` makes of its pods in order, after any sequence
of adds, replacements (in place), moves between nodes, deletions and relists; and a reserve cache
resynced from the index must leave what the full pass over the pod list leaves, over the random
histories of ``test_resync_incremental`` (the index follows the informer's content, every change
to it an event).
"""

from __future__ import annotations

import random
from dataclasses import replace
from typing import Any

import pytest

from rte.consumer.cache.overreserve import OverReserveCache
from rte.consumer.cache.podindex import UNBOUND, PodIndex
from rte.consumer.cache.resync import group_pods
from rte.model.pod import Pod, PodKey
from tests.consumer.test_resync_incremental import CONFIGS, NODES, History, report, state


def _expected(index: PodIndex) -> dict[str, list[Pod]]:
    by_node, known = group_pods(list(index.known.values()))
    unbound = [p for p in known.values() if not p.node_name]
    return {**by_node, **({UNBOUND: unbound} if unbound else {})}


@pytest.mark.parametrize("seed", range(20))
def test_the_groups_are_those_of_the_pod_list(seed: int) -> None:
    rng = random.Random(seed)
    index = PodIndex()
    names = [f"p{k}" for k in range(30)]
    for step in range(600):
        roll = rng.random()
        name = rng.choice(names)
        if roll < 0.6:
            index.put(Pod("ns", name, uid=f"{step}", node_name=rng.choice(["", *NODES])))
        elif roll < 0.7 and ("ns", name) in index.known:
            index.put(replace(index.known[("ns", name)]))  # an equal pod, a new object
        elif roll < 0.97:
            index.remove(("ns", name))
        else:
            pods = list(index.known.values())
            rng.shuffle(pods)
            index.replace(pods[: rng.randint(0, len(pods))])
        groups = {node: list(group) for node, group in index.items()}
        assert groups == _expected(index), step
        assert all(group for group in groups.values())


def test_drain_names_the_changed_keys_and_both_nodes_of_a_move() -> None:
    index = PodIndex([Pod("ns", "a", node_name="n0"), Pod("ns", "b")])
    assert index.drain()[2], "the first drain compares everything"
    index.put(Pod("ns", "b", node_name="n1"))
    index.put(Pod("ns", "a", node_name="n2"))
    index.remove(("ns", "zz"))
    keys, nodes, reset = index.drain()
    assert (keys, nodes, reset) == ({("ns", "a"), ("ns", "b")}, {"n0", "n1", "n2"}, False)
    assert index.drain() == (set(), set(), False)


def test_a_group_handed_out_never_changes() -> None:
    index = PodIndex([Pod("ns", "a", node_name="n0")])
    group = index["n0"]
    index.put(Pod("ns", "b", node_name="n0"))
    index.remove(("ns", "a"))
    assert [p.name for p in group] == ["a"]
    assert [p.name for p in index["n0"]] == ["b"]


class _Informer(dict[PodKey, Pod]):
    """The informer's content (the history's pod dict), each change also an index event."""

    def __init__(self, index: PodIndex) -> None:
        super().__init__()
        self.index = index

    def __setitem__(self, key: PodKey, pod: Pod) -> None:
        super().__setitem__(key, pod)
        self.index.put(pod)

    def pop(self, key: PodKey, default: Any = None) -> Any:
        self.index.remove(key)
        return super().pop(key, default)


class IndexedHistory(History):
    """The history with a third cache, resynced from a pod index instead of the pod list."""

    def __init__(self, seed: int, config: Any) -> None:
        super().__init__(seed, config)
        self.index = PodIndex()
        self.pods = _Informer(self.index)
        self.indexed = OverReserveCache(self.store, config, clock=lambda: self.now)
        fast_get = self.fast.get

        def get(node: str) -> Any:  # a lookup may adopt an NRT: the third cache sees it too
            self.indexed.get(node)
            return fast_get(node)

        self.fast.get = get  # type: ignore[method-assign]

    def both(self, method: str, *args: Any) -> None:
        super().both(method, *args)
        getattr(self.indexed, method)(*args)

    def resync(self) -> None:
        indexed = self.indexed.resync(self.index, self.now)
        reports: list[Any] = []
        full_resync = self.full.resync

        def recorded(*args: Any, **kwargs: Any) -> Any:
            reports.append(full_resync(*args, **kwargs))
            return reports[-1]

        self.full.resync = recorded  # type: ignore[method-assign]
        try:
            super().resync()  # the incremental pass from the pod list against the full pass
        finally:
            del self.full.resync
        assert report(indexed) == report(reports[0])
        assert sorted(self.indexed._nodes) == sorted(self.full._nodes)
        for node, st in self.indexed._nodes.items():
            assert state(st) == state(self.full._nodes[node]), node


@pytest.mark.parametrize("name", sorted(CONFIGS))
@pytest.mark.parametrize("seed", range(6))
def test_a_resync_from_the_index_leaves_what_the_full_pass_leaves(name: str, seed: int) -> None:
    history = IndexedHistory(seed, CONFIGS[name])
    for _ in range(400):
        history.step()
    history.resync()
    assert history.resyncs > 10
