"""The preempt verb over real HTTP: kube-scheduler's ExtenderPreemptionArgs in both forms (whole
victims and nodeCacheCapable meta victims), answered with the nodes where evicting the victims
lets the kubelet admit the pod (rte.extender.preempt)."""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import pytest

from rte.consumer.cache.selection import make_cache
from rte.consumer.preemption.placements import ContainerPlacements, ContainerZones
from rte.consumer.store import ADDED, MODIFIED, NRTStore
from rte.extender.server import ExtenderServer
from rte.extender.service import ExtenderService
from rte.extender.settings import extender_settings
from tests.helpers.extender import GI, PROFILE, Client, pod

HIGH = 1000


def nrt(name: str, free: Sequence[int], allocatable: int = 16) -> dict[str, Any]:
    """Zones of ``allocatable`` CPUs and 64 GiB, ``free[i]`` CPUs available on zone i."""
    return {
        "apiVersion": "topology.node.k8s.io/v1alpha2",
        "kind": "NodeResourceTopology",
        "metadata": {"name": name},
        "attributes": [
            {"name": "topologyManagerPolicy", "value": "single-numa-node"},
            {"name": "topologyManagerScope", "value": "container"},
        ],
        "zones": [
            {
                "name": f"node-{i}",
                "type": "Node",
                "resources": [
                    {
                        "name": "cpu",
                        "capacity": str(allocatable),
                        "allocatable": str(allocatable),
                        "available": str(c),
                    },
                    {
                        "name": "memory",
                        "capacity": str(64 * GI),
                        "allocatable": str(64 * GI),
                        "available": str(60 * GI),
                    },
                ],
            }
            for i, c in enumerate(free)
        ],
    }


def running(name: str, cpus: int, node: str, priority: int = 0) -> dict[str, Any]:
    obj = pod(name, {"cpu": cpus, "memory": GI}, node=node, phase="Running")
    obj["spec"]["priority"] = priority
    return obj


def preemptor(cpus: int = 8) -> dict[str, Any]:
    obj = pod("urgent", {"cpu": cpus, "memory": GI})
    obj["spec"]["priority"] = HIGH
    return obj


# w1: the scheduler's victim frees zone 0 enough. w2: its victim frees zone 0 too little, a pod it
# reprieved on zone 1 helps. w3: nothing on the node helps.
PODS = [
    running("a1", 6, "w1"),
    running("a2", 4, "w2"),
    running("b2", 6, "w2"),
    running("a3", 4, "w3"),
    running("b3", 4, "w3", priority=HIGH),
]
ZONES: dict[str, ContainerZones] = {
    "w1": {("default", "a1", "main"): 0},
    "w2": {("default", "a2", "main"): 0, ("default", "b2", "main"): 1},
    "w3": {("default", "a3", "main"): 0, ("default", "b3", "main"): 1},
}


@pytest.fixture
def client() -> Iterator[Client]:
    settings = extender_settings(scheduler_profiles=[PROFILE])  # Passthrough: the NRTs as they are
    store = NRTStore()
    for obj in (nrt("w1", [2, 2]), nrt("w2", [1, 2]), nrt("w3", [1, 2])):
        store.apply_object(ADDED, obj)
    service = ExtenderService(
        store,
        make_cache(settings.cache, store),
        settings.strategy,
        profiles=[PROFILE],
        placements=ContainerPlacements(ZONES.get),
    )
    service.nrt_synced.set()
    service.replace_pods(PODS)
    server = ExtenderServer(service, "127.0.0.1", 0).start()
    c = Client(server.url)
    try:
        yield c
    finally:
        c.close()
        server.stop()


def by_name(name: str) -> dict[str, Any]:
    return next(p for p in PODS if p["metadata"]["name"] == name)


def meta(victims: Mapping[str, Sequence[str]], pdb: int = 0) -> dict[str, Any]:
    return {
        node: {"Pods": [{"UID": f"uid-{n}"} for n in names], "NumPDBViolations": pdb}
        for node, names in victims.items()
    }


SCHEDULER_VICTIMS = {"w1": ["a1"], "w2": ["a2"], "w3": ["a3"]}
EXPECTED = {
    "w1": {"Pods": [{"UID": "uid-a1"}], "NumPDBViolations": 0},
    "w2": {"Pods": [{"UID": "uid-a2"}, {"UID": "uid-b2"}], "NumPDBViolations": 0},
}


def test_meta_victims_keep_only_nodes_where_the_kubelet_admits_the_pod(client: Client) -> None:
    status, result = client.post(
        "preempt", {"Pod": preemptor(), "NodeNameToMetaVictims": meta(SCHEDULER_VICTIMS)}
    )
    assert status == 200
    assert result == {"NodeNameToMetaVictims": EXPECTED}


def test_whole_victims_are_answered_as_meta_victims(client: Client) -> None:
    victims = {
        node: {"Pods": [by_name(n) for n in names], "NumPDBViolations": 0}
        for node, names in SCHEDULER_VICTIMS.items()
    }
    status, result = client.post("preempt", {"Pod": preemptor(), "NodeNameToVictims": victims})
    assert status == 200
    assert result == {"NodeNameToMetaVictims": EXPECTED}


def test_the_scheduler_s_pdb_violations_are_carried_over(client: Client) -> None:
    status, result = client.post(
        "preempt", {"pod": preemptor(), "nodeNameToMetaVictims": meta({"w1": ["a1"]}, 2)}
    )
    assert status == 200
    assert result["NodeNameToMetaVictims"]["w1"]["NumPDBViolations"] == 2


def test_a_victim_we_do_not_know_stays_but_frees_nothing(client: Client) -> None:
    status, result = client.post(
        "preempt", {"Pod": preemptor(), "NodeNameToMetaVictims": meta({"w1": ["ghost"]})}
    )
    assert status == 200
    # 2 free CPUs per zone and a1 (the only lower-priority pod) on zone 0: a1 is added.
    assert result["NodeNameToMetaVictims"] == {
        "w1": {"Pods": [{"UID": "uid-ghost"}, {"UID": "uid-a1"}], "NumPDBViolations": 0}
    }


def test_no_candidates_is_an_empty_answer(client: Client) -> None:
    status, result = client.post("preempt", {"Pod": preemptor()})
    assert (status, result) == (200, {"NodeNameToMetaVictims": {}})


@pytest.mark.parametrize(
    ("body", "error"),
    [
        (b"[]", "ExtenderPreemptionArgs: expected a JSON object"),
        (json.dumps({"NodeNameToMetaVictims": {}}).encode(), "ExtenderPreemptionArgs.Pod"),
        (
            json.dumps({"Pod": preemptor(), "NodeNameToMetaVictims": {"w1": {"Pods": [{}]}}}).encode(),
            "ExtenderPreemptionArgs.NodeNameToMetaVictims[w1].Pods[0]: expected a MetaPod with a UID",
        ),
        (
            json.dumps(
                {"Pod": preemptor(), "NodeNameToMetaVictims": {"w1": {"Pods": [], "NumPDBViolations": "x"}}}
            ).encode(),
            "ExtenderPreemptionArgs.NodeNameToMetaVictims[w1].NumPDBViolations",
        ),
    ],
)
def test_a_bad_preemption_request_is_a_400_naming_the_field(client: Client, body: bytes, error: str) -> None:
    status, result = client.request("POST", "/preempt", body)
    assert status == 400
    assert result["Error"].startswith(error)


def test_the_reserve_cache_s_own_placements_serve_without_numaplacement() -> None:
    """A pod this extender placed alone on a node is predicted on the zone the kubelet picks
    (rte.consumer.cache.predict); evicting it frees that zone."""
    settings = extender_settings(cache_resync_period="5s", scheduler_profiles=[PROFILE])
    store = NRTStore()
    store.apply_object(ADDED, nrt("w1", [8, 2]))
    service = ExtenderService(store, make_cache(settings.cache, store), settings.strategy, profiles=[PROFILE])
    service.nrt_synced.set()
    service.replace_pods([])
    placed = pod("placed", {"cpu": 8, "memory": GI}, node="w1", phase="Pending")
    service.on_pod_event(ADDED, placed)  # bound by our profile, in flight: reserved on zone 0
    server = ExtenderServer(service, "127.0.0.1", 0).start()
    c = Client(server.url)
    try:
        status, result = c.post("preempt", {"Pod": preemptor(), "NodeNameToMetaVictims": meta({"w1": []})})
        assert status == 200
        assert result == {
            "NodeNameToMetaVictims": {"w1": {"Pods": [{"UID": "uid-placed"}], "NumPDBViolations": 0}}
        }
        service.on_pod_event(MODIFIED, {**placed, "status": {"phase": "Running"}})
        status, result = c.post("preempt", {"Pod": preemptor(), "NodeNameToMetaVictims": meta({"w1": []})})
        assert result["NodeNameToMetaVictims"]["w1"]["Pods"] == [{"UID": "uid-placed"}]
    finally:
        c.close()
        server.stop()
