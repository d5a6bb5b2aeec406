"""A node running one pod (its agent, in a large cluster nearly every node) keeps small state
(issue #27: the extender's RSS at 50 000 nodes).

The reserve cache's per-node mappings hold a node's one pod in a :class:`Single`, its accounted
set is a tuple, its log keeps no empty list after an adoption and shares the empty-set
fingerprint; the pod index groups a node's pods in tuples; a pod's key is made once. Each of
these must read exactly as the structure it replaces: the random histories below drive a
:class:`Single` and a dict side by side, and a node through the cache's rules with either.
"""

from __future__ import annotations

import random
from fractions import Fraction

import pytest

from rte.consumer.cache import reconcile
from rte.consumer.cache.nodestate import NodeState
from rte.consumer.cache.overreserve import OverReserveCache
from rte.consumer.cache.podindex import PodIndex
from rte.consumer.cache.podlog import EMPTY, PodLog, Single, compact, owned
from rte.consumer.config import CacheConfig
from rte.consumer.store import ADDED, NRTStore
from rte.model import fingerprint as fp
from rte.model.pod import Container, Pod, pod_from_manifest
from rte.model.topology import Attribute, NodeTopology, ResourceInfo, Zone


def _agent(i: int) -> Pod:
    """An agent pod as the pod list brings it: bound, running, requesting nothing."""
    return Pod("rte", f"rte-agent-{i}", uid=f"u{i}", node_name=f"n{i}", phase="Running",
               containers=(Container("agent"),))  # fmt: skip


def _nrt(i: int, pods: list[Pod]) -> NodeTopology:
    resources = (ResourceInfo("cpu", 8, 8, 8), ResourceInfo("memory", 2**36, 2**36, 2**36))
    fingerprint = Attribute(fp.ATTRIBUTE, fp.compute(p.key for p in pods))
    return NodeTopology(name=f"n{i}", zones=(Zone("node-0", resources=resources),), attributes=(fingerprint,))


@pytest.mark.parametrize("seed", range(5))
def test_a_single_reads_as_the_dict_it_stands_for(seed: int) -> None:
    """Random writes through owned() and compact() on both sides, compared after each."""
    rng = random.Random(seed)
    mine: object = EMPTY
    reference: dict[str, int] = {}
    for step in range(300):
        key, value = rng.choice("abc"), rng.randrange(10)
        writable = owned(mine)  # type: ignore[arg-type]
        if rng.random() < 0.5:
            writable[key], reference[key] = value, value
        else:
            writable.pop(key, None), reference.pop(key, None)
        mine = compact(writable)
        got = mine  # type: ignore[assignment]
        assert dict(got.items()) == reference and got == reference, step  # type: ignore[attr-defined]
        assert len(got) == len(reference) and list(got) == list(reference)  # type: ignore[arg-type]
        for probe in "abcd":
            assert (probe in got) == (probe in reference)  # type: ignore[operator]
            assert got.get(probe) == reference.get(probe)  # type: ignore[attr-defined]
        if len(reference) == 1:
            assert isinstance(got, Single)
        with pytest.raises(KeyError):
            got["d"]  # type: ignore[index]


def test_a_node_with_its_agent_alone_keeps_no_container_of_its_own() -> None:
    """Through the cache: the pod list, then the NRT that counts the agent, adopted."""
    store = NRTStore()
    cache = OverReserveCache(store, CacheConfig())
    pod = _agent(1)
    cache.on_pod_event(ADDED, pod)
    nrt = _nrt(1, [pod])
    store.replace_all([nrt])
    assert cache.get("n1").fresh
    st = cache._nodes["n1"]
    assert st.adoptions == 1
    assert isinstance(st.live, Single) and st.live == {pod.key: pod}
    assert isinstance(st.log.members, Single) and pod.key in st.log.members
    assert st.accounted == (pod.key,)
    assert st.log.changes == () and not isinstance(st.log.changes, list)
    assert st.log.start[1] is fp.EMPTY_SET  # nothing exclusive: the one empty-set fingerprint
    assert st.log.start[0] is nrt.attribute(fp.ATTRIBUTE)  # the NRT's text, not a copy
    assert st.tried == (store.revision("n1"), st.log.version)
    assert st.reservations is EMPTY


@pytest.mark.parametrize("seed", range(4))
def test_one_pod_nodes_decide_as_before(seed: int) -> None:
    """A node's pods come and go at random (some exclusive, most not); after each event the
    node's state matches one kept with plain dicts and sets by the same rules."""
    rng = random.Random(seed)
    config = CacheConfig()
    small, plain = NodeState(log=PodLog(8)), NodeState(log=PodLog(8))
    reconcile.adopt(small, _nrt(0, []), 1, set(), 0.0, verified=False)
    reconcile.adopt(plain, _nrt(0, []), 1, set(), 0.0, verified=False)
    names = ("cpu", "memory")
    exclusive = 0
    for step in range(200):
        name = f"p{rng.randrange(3)}"
        cpu = rng.choice([0, 0, 2])  # guaranteed with integral cpu: exclusive
        requests = {"cpu": cpu, "memory": 2**30} if cpu else {}
        pod = Pod("ns", name, uid=f"u{step}", node_name="n0", phase="Running",
                  containers=(Container("c", requests, dict(requests)),))  # fmt: skip
        event = rng.choice(["ADDED", "MODIFIED", "DELETED"])
        for st in (small, plain):
            reconcile.track(st, event, pod, config, names, float(step))
        # The plain node's containers as dicts, as before issue #27's compaction.
        plain.live = dict(plain.live)
        plain.log.members = dict(plain.log.members)
        assert dict(small.live) == plain.live, step
        assert dict(small.log.members) == plain.log.members, step
        assert small.log.fingerprint_at(len(small.log.changes), False) == plain.log.fingerprint_at(
            len(plain.log.changes), False
        )
        assert small.log.fingerprint_at(len(small.log.changes), True) == plain.log.fingerprint_at(
            len(plain.log.changes), True
        )
        assert dict(small.reservations) == dict(plain.reservations), step
        exclusive += any(h < 0 for h in small.log.members.values())
        if rng.random() < 0.2:  # an NRT counting the current set, adopted by both
            cut = len(small.log.changes)
            for st in (small, plain):
                reconcile.adopt(st, _nrt(0, []), step + 2, st.log.members_at(cut), float(step))
                st.log.forget_before(cut)
            assert set(small.accounted) == set(plain.accounted)
            assert dict(small.reservations) == dict(plain.reservations)
    assert exclusive  # the exclusive fingerprint was exercised


def test_a_pods_key_is_made_once() -> None:
    pod = _agent(1)
    assert pod.key == ("rte", "rte-agent-1") and pod.key is pod.key


def test_the_pod_index_groups_a_nodes_pods_in_tuples() -> None:
    index = PodIndex([_agent(1), _agent(2)])
    one = index["n1"]
    assert one == (_agent(1),) and isinstance(one, tuple)
    assert "n1" not in index._orders  # a group of one: its order is its pod's
    index.put(Pod("ns", "other", node_name="n1", containers=(Container("c"),)))
    assert [p.name for p in index["n1"]] == ["rte-agent-1", "other"]
    assert one == (_agent(1),)  # a group handed out stays as it was
    assert index._orders["n1"] == (0, 2)
    index.remove(("ns", "other"))
    assert index["n1"] == (_agent(1),) and "n1" not in index._orders
    index.remove(("rte", "rte-agent-1"))
    assert "n1" not in index


def _manifest(name: str, cpu: str, labels: dict[str, str]) -> dict[str, object]:
    resources = {"requests": {"cpu": cpu}, "limits": {"cpu": cpu}}
    return {
        "metadata": {"name": name, "namespace": "rte", "labels": labels},
        "spec": {"nodeName": "n1", "containers": [{"name": "agent", "resources": resources}]},
    }


def test_pods_of_one_shape_share_their_containers_and_labels() -> None:
    labels = {"app": "rte", "tier": "node"}
    one = pod_from_manifest(_manifest("a", "100m", labels))
    two = pod_from_manifest(_manifest("b", "100m", dict(labels)))
    assert one.containers is two.containers and one.labels is two.labels
    other = pod_from_manifest(_manifest("c", "200m", {"app": "rte"}))
    assert other.containers is not one.containers and other.labels is not one.labels
    assert other.containers[0].requests == {"cpu": Fraction(1, 5)} and other.labels == {"app": "rte"}
    # Equal amounts of different types are different shapes (1 == Fraction(1)).
    whole = pod_from_manifest(_manifest("d", "1", labels))
    assert type(whole.containers[0].requests["cpu"]) is int
