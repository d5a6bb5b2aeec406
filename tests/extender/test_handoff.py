"""A stopping leader's hand-off: which answered pods it still waits for (rte/extender/handoff.py)."""

from __future__ import annotations

import pytest

from rte.extender import handoff
from rte.extender.handoff import AnsweredPods


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_settled_once_every_answered_pod_is_seen_bound_or_deleted() -> None:
    clock = Clock()
    pods = AnsweredPods(5.0, clock)
    assert pods.settled()  # nothing answered: hand over at once
    pods.answered(("default", "a"))
    pods.answered(("default", "b"))
    pods.seen(("default", "a"), bound=False)  # still pending: still waited for
    assert not pods.settled() and pods.waiting() == 2
    pods.seen(("default", "a"), bound=True)
    assert not pods.settled()
    pods.seen(("default", "b"), bound=True)
    assert pods.settled()


def test_a_pod_never_bound_is_waited_for_one_window_after_its_last_answer() -> None:
    clock = Clock()
    pods = AnsweredPods(5.0, clock)
    pods.answered(("default", "gave-up"))
    clock.now += 3.0
    pods.answered(("default", "gave-up"))  # answered again (prioritize): the window restarts
    clock.now += 4.0
    assert not pods.settled()
    clock.now += 1.0
    assert pods.settled()


def test_a_flood_of_answered_pods_waits_the_whole_window(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(handoff, "KEPT", 3)
    clock = Clock()
    pods = AnsweredPods(5.0, clock)
    for i in range(5):
        pods.answered(("default", f"p{i}"))
    for i in range(5):
        pods.seen(("default", f"p{i}"), bound=True)
    assert not pods.settled()  # some were forgotten: their bindings cannot be told
    clock.now += 5.0
    assert pods.settled()
