"""A node's containers are its own only once written (issue #13: per-node empties at 20 000 nodes).

A fresh node state and pod log hold the one shared read-only empty; the first write gives the
node a dict of its own, never touching another node's, and a state emptied again goes back to the
shared one.
"""

from __future__ import annotations

import pytest

from rte.consumer.cache import reconcile
from rte.consumer.cache.nodestate import NodeState
from rte.consumer.cache.podlog import EMPTY, PodLog
from rte.consumer.config import CacheConfig
from rte.consumer.store import ADDED, DELETED
from rte.model.pod import Container, Pod
from rte.model.topology import NodeTopology, ResourceInfo, Zone

CONTAINERS = ("reservations", "live", "holds", "credits")


def _pod(name: str) -> Pod:
    requests = {"cpu": 2, "memory": 2**30}
    return Pod(
        namespace="ns",
        name=name,
        uid=f"uid-{name}",
        node_name="n1",
        phase="Running",
        scheduler_name="other",
        containers=(Container("c", requests, dict(requests)),),
    )


def _topology() -> NodeTopology:
    resources = (ResourceInfo("cpu", 8, 8, 8), ResourceInfo("memory", 2**36, 2**36, 2**36))
    return NodeTopology(name="n1", zones=(Zone("node-0", resources=resources),))


def test_a_fresh_node_state_holds_no_container_of_its_own() -> None:
    st = NodeState(log=PodLog(8))
    assert all(getattr(st, name) is EMPTY for name in CONTAINERS)
    assert st.log.members is EMPTY and st.log.changes == () and not isinstance(st.log.changes, list)
    assert not hasattr(st, "__dict__") and not hasattr(st.log, "__dict__")  # slotted


def test_the_shared_empty_cannot_be_written() -> None:
    with pytest.raises(TypeError):
        EMPTY["x"] = 1  # type: ignore[index]


def test_writes_go_to_the_nodes_own_dicts_only() -> None:
    one, other = NodeState(log=PodLog(8)), NodeState(log=PodLog(8))
    config = CacheConfig()
    pod = _pod("p")
    reconcile.adopt(one, _topology(), 1, set(), 0.0, verified=False)
    reconcile.track(one, ADDED, pod, config, ())
    assert one.live == {pod.key: pod} and pod.key in one.reservations and pod.key in one.log.members
    assert len(one.log.changes) == 1
    assert all(getattr(other, name) is EMPTY for name in CONTAINERS) and other.log.members is EMPTY
    assert other.log.changes == ()
    reconcile.track(one, DELETED, pod, config, ())
    assert not one.live and not one.reservations and not one.log.members
    # An NRT accounting for nothing, adopted: the emptied containers are the shared one again.
    reconcile.adopt(one, _topology(), 2, set(), 1.0)
    assert one.reservations is one.holds is one.credits is EMPTY
