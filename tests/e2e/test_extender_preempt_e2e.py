"""The extender's preempt verb end to end: the real agent (``rte run`` process) publishes the
node's NRT from the fake kubelet (gRPC), the extender (in process, its real watches through the
``kubernetes`` client) follows it and the pods from the apiserver double, and kube-scheduler's
preemption call arrives over HTTP.

Where each running pod holds its CPUs comes from the agent's NRTs themselves: the pods start one
at a time, so each new NRT differs from the last by one pod, and the reserve cache learns that
pod's zone from the difference (rte.consumer.cache.placement); the agent runs without its own pod
watch, so that its fingerprint follows the kubelet's List and each NRT changes its pod set and its
amounts together. The second test takes the same
placements decoded from the agent's numaplacement attributes alone.
"""

from __future__ import annotations

import json
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from rte.extender.app import ExtenderApp
from rte.extender.settings import extender_settings
from rte.testing import scenarios as sc
from rte.testing.apiserver import FakeApiServer
from rte.testing.fake_kubelet import FakeKubelet
from tests.helpers.e2e import NODE, AgentFactory, content, expected_nrt, stored
from tests.helpers.extender import PROFILE
from tests.helpers.waiting import wait_for

GiB = 1024**3
NUMAPLACEMENT_METADATA = "topology.node.k8s.io/numaplacement-metadata"

# The R640 fixture: NUMA 0 has the even CPUs, NUMA 1 the odd ones; 0, 1, 52 and 53 are reserved.
ZONE0 = [c for c in range(2, 104, 2) if c != 52]
ZONE1 = [c for c in range(3, 104, 2) if c != 53]
RUNNING = [
    # name, priority, zone, CPUs
    ("low-a", 0, 0, ZONE0[:40]),
    ("low-b", 0, 1, ZONE1[:36]),
    ("mid-c", 500, 1, ZONE1[36:44]),
]
"""Zone 0 keeps 10 CPUs free, zone 1 6: a pod of 16 fits neither."""


def _pod(name: str, cpus: int, priority: int, node: str | None) -> dict[str, Any]:
    amounts = {"cpu": str(cpus), "memory": "1Gi"}
    spec: dict[str, Any] = {
        "schedulerName": PROFILE,
        "priority": priority,
        "containers": [{"name": "app", "image": "x", "resources": {"requests": amounts, "limits": amounts}}],
    }
    if node is not None:
        spec["nodeName"] = node
    return {"metadata": {"name": name, "namespace": "default"}, "spec": spec, "status": {"phase": "Running"}}


def _post(url: str, verb: str, body: object) -> Any:
    request = urllib.request.Request(
        f"{url}/{verb}", json.dumps(body).encode(), {"Content-Type": "application/json"}
    )
    with urllib.request.urlopen(request, timeout=10) as response:
        return json.loads(response.read())


@pytest.fixture
def node(
    start_agent: AgentFactory, api: FakeApiServer, kubelet: FakeKubelet, tmp_path: Path
) -> Iterator[tuple[ExtenderApp, dict[str, str]]]:
    """The agent, the extender, and RUNNING started one by one; the pods' UIDs by name."""
    kubelet.set_pods([])
    # Without its pod watch the agent fingerprints the kubelet's List: each NRT then changes its
    # pod set and its amounts together (a watch lagging the kubelet would split them in two NRTs).
    agent = start_agent("--no-pod-watch")
    expected = expected_nrt(kubelet, api, pod_watch=False)
    wait_for(lambda: content(stored(api)) == content(expected), 60, "the first publish")
    settings = extender_settings(
        listen="127.0.0.1:0",
        kubeconfig=str(api.write_kubeconfig(tmp_path / "extender-kubeconfig")),
        cache_resync_period="1s",
        scheduler_profiles=[PROFILE],
    )
    app = ExtenderApp(settings).start()
    try:
        wait_for(app.service.ready, 30, "the extender to be ready")
        uids = {}
        for name, priority, zone, cpus in RUNNING:
            obj = api.create_object("pods", _pod(name, len(cpus), priority, NODE))
            uids[name] = obj["metadata"]["uid"]
            wait_for(
                lambda n=name: any(p.name == n for p in app.service.pods()), 10, f"{name} in the extender"
            )
            kubelet.add_pod(
                sc.pod("default", name, sc.container("app", cpus, (), [sc.memory("memory", GiB, zone)]))
            )
            wait_for(
                lambda n=name: ("default", n) in app.cache.known_zones(NODE),  # type: ignore[attr-defined]
                20,
                f"the extender to learn where {name} runs from the agent's NRTs",
            )
        assert agent.alive
        yield app, uids
    finally:
        app.stop()


def test_the_preempt_verb_adds_the_pod_whose_zone_makes_the_kubelet_admit_the_preemptor(
    node: tuple[ExtenderApp, dict[str, str]],
) -> None:
    app, uids = node
    assert app.server is not None
    known = app.cache.known_zones(NODE)  # type: ignore[attr-defined]
    assert {name: set(known[("default", name)]) for name, *_ in RUNNING} == {
        "low-a": {0},
        "low-b": {1},
        "mid-c": {1},
    }
    urgent = _pod("urgent", 16, 1000, None)
    # kube-scheduler's NUMA-blind choice: mid-c (the pod fits node-wide once 8 more CPUs are free).
    args = {
        "Pod": urgent,
        "NodeNameToMetaVictims": {NODE: {"Pods": [{"UID": uids["mid-c"]}], "NumPDBViolations": 0}},
    }
    result = _post(app.server.url, "preempt", args)
    # Zone 1 then has 14 free CPUs, still short: low-b (36 CPUs on zone 1) must go too. low-a
    # (zone 0) would do as well with mid-c's eviction useless; both are one more victim of
    # priority 0, and the reprieve walk keeps low-a, the first in its order.
    assert result == {
        "NodeNameToMetaVictims": {
            NODE: {"Pods": [{"UID": uids["mid-c"]}, {"UID": uids["low-b"]}], "NumPDBViolations": 0}
        }
    }


def test_the_same_choice_from_placements_decoded_from_the_numaplacement_attributes(
    node: tuple[ExtenderApp, dict[str, str]], api: FakeApiServer
) -> None:
    from rte.consumer.placement import Outcome
    from rte.consumer.preemption.placements import ContainerPlacements, decoded_container_zones

    attributes = {a["name"] for a in (stored(api) or {}).get("attributes", [])}
    assert NUMAPLACEMENT_METADATA in attributes
    app, uids = node
    assert app.server is not None
    found = wait_for(lambda: app.cache.placement(NODE), 10, "the cache to decode the adopted NRT's placement")
    assert found.outcome is Outcome.DECODED, found
    # The decoded placement alone: not the cache's own knowledge of the pods' zones.
    app.service.placements = ContainerPlacements(decoded_container_zones(app.cache))
    args = {
        "Pod": _pod("urgent", 16, 1000, None),
        "NodeNameToMetaVictims": {NODE: {"Pods": [{"UID": uids["mid-c"]}], "NumPDBViolations": 0}},
    }
    assert _post(app.server.url, "preempt", args)["NodeNameToMetaVictims"][NODE]["Pods"] == [
        {"UID": uids["mid-c"]},
        {"UID": uids["low-b"]},
    ]
