"""The agent gives its heap's free pages back after reading many pods, not after every cycle."""

from __future__ import annotations

from pathlib import Path

from rte.agent.heaptrim import TRIM_AFTER_PODS, HeapTrim
from tests.helpers.agent_loop import Harness


def test_a_trim_follows_many_pods_read_or_the_pod_watchs_list_and_nothing_else() -> None:
    calls: list[int] = []
    heap = HeapTrim(trim=lambda: calls.append(1))
    heap.after_cycle(10)
    assert not calls, "a few pods read: no trim"
    heap.after_cycle(10 + TRIM_AFTER_PODS)
    assert len(calls) == 1
    heap.after_cycle(20 + TRIM_AFTER_PODS)
    assert len(calls) == 1, "counted from the last trim"
    heap.pods_listed()
    heap.after_cycle(20 + TRIM_AFTER_PODS)
    assert len(calls) == 2 and heap.trims == 2


def test_the_loop_trims_once_after_the_pod_watch_listed(tmp_path: Path) -> None:
    h = Harness(tmp_path)
    h.advance(2)
    assert h.publisher.writes == 1 and h.agent.heap.trims == 0, "the fixture's few pods"
    h.pods.is_synced = True
    h.advance(2)
    assert h.agent.heap.trims == 1
    h.add_pod("late", [10])
    h.advance(5)
    assert h.agent.heap.trims == 1, "one changed pod: no trim"
