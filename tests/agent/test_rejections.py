"""Which pods the kubelet refused over alignment, each counted once (pure: decoded pods in)."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from rte.agent.watch.rejections import STARTUP_LOOKBACK, RejectionTracker, rejection_of
from tests.helpers.clock import FakeClock

NOW = 1_750_000_000.0


def pod(name: str, reason: str | None = None, *, uid: str | None = None, age: float = 5.0) -> dict[str, Any]:
    """A pod bound to the node; ``reason`` makes it one the kubelet refused at admission."""
    created = datetime.fromtimestamp(NOW - age, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    obj: dict[str, Any] = {
        "metadata": {"namespace": "default", "name": name, "uid": uid or f"uid-{name}"},
        "spec": {"nodeName": "worker-1"},
        "status": {"phase": "Running"},
    }
    obj["metadata"]["creationTimestamp"] = created
    if reason is not None:
        obj["status"] = {"phase": "Failed", "reason": reason, "message": f"Pod was rejected: {reason}"}
    return obj


def tracker() -> RejectionTracker:
    return RejectionTracker(wall=FakeClock(NOW))


def test_only_failed_pods_with_an_alignment_reason_are_rejections() -> None:
    found = rejection_of(pod("a", "TopologyAffinityError"))
    assert found is not None
    assert (found.pod, found.reason, found.message) == (
        "default/a",
        "TopologyAffinityError",
        "Pod was rejected: TopologyAffinityError",
    )
    assert rejection_of(pod("b", "SMTAlignmentError")) is not None
    assert rejection_of(pod("c", "UnexpectedAdmissionError")) is not None
    assert rejection_of(pod("d", "OutOfcpu")) is None
    assert rejection_of(pod("e")) is None
    running_with_reason = pod("f", "TopologyAffinityError")
    running_with_reason["status"]["phase"] = "Running"
    assert rejection_of(running_with_reason) is None


def test_a_relist_or_another_update_never_counts_a_pod_twice() -> None:
    t = tracker()
    assert [r.name for r in t.listed([pod("a", "TopologyAffinityError"), pod("b")])] == ["a"]
    assert t.event("MODIFIED", pod("b", "SMTAlignmentError")) is not None
    assert t.event("MODIFIED", pod("b", "SMTAlignmentError")) is None
    assert t.listed([pod("a", "TopologyAffinityError"), pod("b", "SMTAlignmentError")]) == []


def test_a_pod_created_again_under_the_same_name_counts_again() -> None:
    t = tracker()
    assert t.event("ADDED", pod("a", "TopologyAffinityError", uid="1")) is not None
    assert t.event("DELETED", pod("a", "TopologyAffinityError", uid="1")) is None
    assert t.event("ADDED", pod("a", "TopologyAffinityError", uid="2")) is not None
    assert t.listed([pod("a", "TopologyAffinityError", uid="3")]) != []


def test_the_first_list_leaves_out_rejections_older_than_the_lookback() -> None:
    t = tracker()
    old = pod("old", "TopologyAffinityError", age=STARTUP_LOOKBACK + 60)
    recent = pod("recent", "TopologyAffinityError", age=30)  # refused while the agent restarted
    assert [r.name for r in t.listed([old, recent])] == ["recent"]
    assert t.listed([old, recent]) == []
    # After the first list, any new rejection counts, whatever its pod's age.
    late = pod("late", "TopologyAffinityError", age=STARTUP_LOOKBACK + 60)
    assert [r.name for r in t.listed([old, recent, late])] == ["late"]


def test_gone_pods_are_forgotten_so_memory_follows_the_nodes_pods() -> None:
    t = tracker()
    t.listed([pod(f"p{i}", "TopologyAffinityError") for i in range(100)])
    t.listed([pod("p0", "TopologyAffinityError")])
    assert t.remembered == 1
