"""The agent pods' readiness as heartbeats (rte.consumer.agentpods): what each pod event means."""

from __future__ import annotations

import math
from typing import Any

import pytest

from rte.consumer.agentpods import (
    DEFAULT_AGENT_SELECTOR,
    READY_FOREVER,
    AgentPods,
    agent_pod_state,
    parse_selector,
)
from rte.consumer.cache.freshness import heartbeat_age, is_stale
from rte.consumer.config import CacheConfig
from rte.consumer.store import NRTStore
from rte.errors import InputError

LABELS = parse_selector(DEFAULT_AGENT_SELECTOR)
T0 = "2026-11-28T10:00:00Z"
T0_S = 1_795_860_000.0  # T0 in seconds since the epoch
T1 = "2026-11-28T10:01:00Z"


def agent(
    name: str = "rte-agent-a",
    node: str | None = "n1",
    ready: bool | None = None,
    since: str | None = T1,
    namespace: str = "rte",
    labels: dict[str, str] | None = None,
) -> dict[str, Any]:
    pod: dict[str, Any] = {
        "metadata": {
            "name": name,
            "namespace": namespace,
            "labels": LABELS if labels is None else labels,
            "creationTimestamp": T0,
        },
        "spec": {"nodeName": node} if node else {},
        "status": {},
    }
    if ready is not None:
        condition = {"type": "Ready", "status": "True" if ready else "False"}
        if since:
            condition["lastTransitionTime"] = since
        pod["status"]["conditions"] = [{"type": "PodScheduled", "status": "True"}, condition]
    return pod


class Published:
    def __init__(self) -> None:
        self.beats: dict[str, float | None] = {}
        self.calls = 0

    def __call__(self, node: str, beat: float | None) -> None:
        self.beats[node] = beat
        self.calls += 1


def tracker(now: float = T0_S + 3600) -> tuple[AgentPods, Published]:
    published = Published()
    return AgentPods("rte", LABELS, published, lambda: now), published


def test_a_ready_pod_vouches_forever_and_a_not_ready_one_since_its_transition() -> None:
    pods, published = tracker()
    pods.on_event("ADDED", agent(ready=True))
    assert published.beats == {"n1": READY_FOREVER}
    pods.on_event("MODIFIED", agent(ready=False, since=T1))
    assert published.beats["n1"] == T0_S + 60


def test_a_pod_never_ready_counts_from_its_creation() -> None:
    pods, published = tracker()
    pods.on_event("ADDED", agent(ready=None))
    assert published.beats["n1"] == T0_S
    assert agent_pod_state(agent(ready=False, since=None)) is not None
    assert agent_pod_state(agent(ready=False, since=None)).since == T0_S  # type: ignore[union-attr]


def test_a_deleted_pod_leaves_its_node_staleable_from_the_deletion() -> None:
    pods, published = tracker(now=T0_S + 999)
    pods.on_event("ADDED", agent(ready=True))
    pods.on_event("DELETED", agent(ready=True))
    assert published.beats["n1"] == T0_S + 999
    # Its replacement, once ready, vouches again.
    pods.on_event("ADDED", agent(name="rte-agent-b", ready=True))
    assert published.beats["n1"] == READY_FOREVER


def test_during_a_surge_the_node_is_fresh_while_either_pod_is_ready() -> None:
    pods, published = tracker()
    pods.on_event("ADDED", agent(name="old", ready=True))
    pods.on_event("ADDED", agent(name="new", ready=False))
    assert published.beats["n1"] == READY_FOREVER
    pods.on_event("MODIFIED", agent(name="old", ready=False, since=T1))
    assert published.beats["n1"] == T0_S + 60


def test_pods_that_are_not_agents_or_not_bound_change_nothing() -> None:
    pods, published = tracker()
    pods.on_event("ADDED", agent(namespace="default", ready=True))
    pods.on_event("ADDED", agent(labels={"app.kubernetes.io/name": "rte"}, ready=True))
    pods.on_event("ADDED", agent(node=None, ready=True))
    pods.on_event("ADDED", {"metadata": "garbage"})
    assert published.beats == {}


def test_an_unchanged_heartbeat_is_not_published_again() -> None:
    pods, published = tracker()
    pods.on_event("ADDED", agent(ready=True))
    pods.on_event("MODIFIED", agent(ready=True))
    assert published.calls == 1


def test_a_relist_deletes_the_agents_it_no_longer_has() -> None:
    pods, published = tracker(now=T0_S + 500)
    pods.on_event("ADDED", agent(name="a", node="n1", ready=True))
    pods.on_event("ADDED", agent(name="b", node="n2", ready=True))
    pods.replace([agent(name="b", node="n2", ready=True), agent(namespace="x", name="z")])
    assert published.beats == {"n1": T0_S + 500, "n2": READY_FOREVER}


def test_a_malformed_transition_time_makes_the_pod_tell_nothing() -> None:
    with pytest.raises(InputError, match=r"lastTransitionTime|conditions"):
        agent_pod_state(agent(ready=False, since="yesterday"))
    pods, published = tracker()
    pods.on_event("ADDED", agent(ready=False, since="yesterday"))
    assert published.beats == {}


@pytest.mark.parametrize("text", ["", "a", "a!=b", "!a", "a in (b)", ","])
def test_selectors_other_than_equality_are_refused(text: str) -> None:
    with pytest.raises(InputError):
        parse_selector(text)


def test_selector_equality_forms() -> None:
    assert parse_selector("a=b, c==d") == {"a": "b", "c": "d"}


def test_the_store_takes_readiness_heartbeats_backwards_and_the_staleness_rule_reads_them() -> None:
    store = NRTStore()
    config = CacheConfig(heartbeat_max_age=5.0)
    store.set_heartbeat("n1", READY_FOREVER)
    assert heartbeat_age(store, "n1", 1000.0) == 0.0
    assert not is_stale(store, config, "n1", 1000.0)
    serial, _ = store.heartbeats()
    store.set_heartbeat("n1", 990.0)  # backwards: a Lease renewal never does this
    assert heartbeat_age(store, "n1", 1000.0) == 10.0
    assert is_stale(store, config, "n1", 1000.0)
    _, changed = store.heartbeats_since(serial)
    assert changed == {"n1": 990.0}
    store.set_heartbeat("n1", None)
    assert store.heartbeat("n1") is None
    assert math.isinf(READY_FOREVER)


def _beats_from_scratch(
    pods: dict[tuple[str, str], dict[str, Any]], gone: dict[str, float]
) -> dict[str, float | None]:
    """Every node's heartbeat computed from all pods at once, as the module's docstring states it."""
    beats: dict[str, float | None] = {}
    nodes = {p["spec"]["nodeName"] for p in pods.values()} | set(gone)
    for node in nodes:
        states = [agent_pod_state(p) for p in pods.values() if p["spec"]["nodeName"] == node]
        if any(s is not None and s.ready for s in states):
            beats[node] = READY_FOREVER
            gone.pop(node, None)  # a ready pod replaced the deleted one
            continue
        times = [s.since for s in states if s is not None and s.since is not None]
        if node in gone:
            times.append(gone[node])
        beats[node] = max(times) if times else None
    return beats


@pytest.mark.parametrize("seed", range(20))
def test_the_per_node_grouping_gives_the_heartbeats_of_a_scan_over_every_pod(seed: int) -> None:
    """Random adds, moves, readiness flips and deletions on a few nodes: the heartbeats published
    (kept per node since issue #27's 50 000-node list) equal a computation from all pods."""
    import random

    rng = random.Random(seed)
    tracked, published = tracker()
    now = T0_S + 3600
    pods: dict[tuple[str, str], dict[str, Any]] = {}
    gone: dict[str, float] = {}
    for _ in range(200):
        name = f"rte-agent-{rng.randrange(6)}"
        key = ("rte", name)
        if rng.random() < 0.2:
            tracked.on_event("DELETED", {"metadata": {"name": name, "namespace": "rte", "labels": LABELS}})
            old = pods.pop(key, None)
            if old is not None:
                gone[old["spec"]["nodeName"]] = now
        else:
            node = f"n{rng.randrange(3)}"
            ready = rng.choice([True, False, None])
            since = rng.choice([T0, T1, None])
            pod = agent(name, node, ready, since)
            tracked.on_event("MODIFIED", pod)
            pods[key] = pod
        expected = _beats_from_scratch(pods, gone)
        for node in {"n0", "n1", "n2"}:
            assert tracked.heartbeat(node) == expected.get(node), (seed, node)
    assert published.beats == {n: tracked.heartbeat(n) for n in published.beats}
