"""The preempt verb and PodDisruptionBudgets, end to end: the whole extender app against the
apiserver double through the real ``kubernetes`` client (NRTs, pods and PDBs listed and watched),
asked over HTTP.

The pods added to the scheduler's victims are marked as kube-scheduler's
``filterPodsWithPDBViolation`` marks them (kubernetes/kubernetes
``pkg/scheduler/framework/preemption/preemption.go``): a pod whose PDB allows no more disruptions
violates it. Where the pods hold their resources is set by the test (a
:class:`~rte.consumer.preemption.placements.ContainerPlacements`, as tests/extender/test_preempt.py
does): the NRTs here carry no numaplacement.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client

from rte.consumer.preemption.placements import ContainerPlacements, ContainerZones
from rte.extender.app import ExtenderApp
from rte.extender.settings import extender_settings
from rte.testing.apiserver import FakeApiServer
from tests.extender.test_preempt import HIGH, nrt, preemptor, running
from tests.helpers.extender import PROFILE, Client
from tests.helpers.waiting import wait_for

GROUP, VERSION, PLURAL = "topology.node.k8s.io", "v1alpha2", "noderesourcetopologies"

# The preemptor asks 8 CPUs on one zone. w2: zones with 1 and 2 CPUs free; the scheduler's victim
# a2 frees 4 on zone 0, too little; b2 (zone 1) or c2 (zone 0) would each complete it, b2 being
# the less important. w3: only b3 (zone 1) completes it.
GUARDED = {"app": "guarded"}
PODS = [
    (running("a2", 4, "w2"), {}),
    (running("b2", 6, "w2"), GUARDED),
    (running("c2", 3, "w2", priority=1), {"app": "free"}),
    (running("a3", 4, "w3"), {}),
    (running("b3", 6, "w3"), GUARDED),
]
ZONES: dict[str, ContainerZones] = {
    "w2": {("default", "a2", "main"): 0, ("default", "b2", "main"): 1, ("default", "c2", "main"): 0},
    "w3": {("default", "a3", "main"): 0, ("default", "b3", "main"): 1},
}


def budget(name: str, selector: dict[str, Any], allowed: int) -> dict[str, Any]:
    """A policy/v1 PDB; the double keeps the status it is created with (it has no status
    subresource and no disruption controller)."""
    return {
        "apiVersion": "policy/v1",
        "kind": "PodDisruptionBudget",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {"selector": selector, "minAvailable": 1},
        "status": {
            "disruptionsAllowed": allowed,
            "currentHealthy": 1,
            "desiredHealthy": 1,
            "expectedPods": 1,
            "observedGeneration": 1,
        },
    }


@pytest.fixture
def app(
    fake_apiserver: FakeApiServer, fake_kubeconfig: Path, objects: Any, kube_api_client: Any
) -> Iterator[ExtenderApp]:
    core = client.CoreV1Api(kube_api_client)
    for obj in (nrt("w2", [1, 2]), nrt("w3", [1, 2])):
        objects.create_cluster_custom_object(GROUP, VERSION, PLURAL, obj)
    for obj, labels in PODS:
        obj["metadata"]["labels"] = labels
        core.create_namespaced_pod("default", obj)
    settings = extender_settings(
        scheduler_profiles=[PROFILE], listen="127.0.0.1:0", kubeconfig=str(fake_kubeconfig)
    )
    extender = ExtenderApp(settings, state_max_age=0).start()
    extender.service.placements = ContainerPlacements(ZONES.get)
    try:
        yield extender
    finally:
        extender.stop()


@pytest.fixture
def policy(kube_api_client: Any) -> Any:
    return client.PolicyV1Api(kube_api_client)


UID_OF: dict[str, str] = {}
"""Pod name -> the UID the apiserver gave it (the scheduler names its victims by UID)."""


@pytest.fixture(autouse=True)
def _learn_uids(kube_api_client: Any, app: ExtenderApp) -> None:
    UID_OF.clear()
    for p in client.CoreV1Api(kube_api_client).list_namespaced_pod("default").items:
        UID_OF[p.metadata.name] = p.metadata.uid


def preempt(http: Client, victims: dict[str, list[str]], pdb: int = 0) -> dict[str, Any]:
    meta = {
        n: {"Pods": [{"UID": UID_OF[v]} for v in vs], "NumPDBViolations": pdb} for n, vs in victims.items()
    }
    status, result = http.post("preempt", {"Pod": preemptor(), "NodeNameToMetaVictims": meta})
    assert status == 200, result
    answer: dict[str, Any] = result["NodeNameToMetaVictims"]
    return answer


def names(answer: dict[str, Any], node: str) -> list[str]:
    """The victims named in ``answer`` for ``node``, by pod name."""
    name_of = {uid: name for name, uid in UID_OF.items()}
    return [name_of[p["UID"]] for p in answer[node]["Pods"]]


def test_a_pdb_allowing_no_disruption_makes_the_verb_prefer_another_victim(
    app: ExtenderApp, http: Client, policy: Any
) -> None:
    assert HIGH > 1
    # Without a PDB the less important b2 completes the scheduler's set.
    assert names(preempt(http, {"w2": ["a2"]}), "w2") == ["a2", "b2"]

    policy.create_namespaced_pod_disruption_budget("default", budget("guard", {"matchLabels": GUARDED}, 0))
    wait_for(lambda: len(app.service.budgets) == 1)
    answer = preempt(http, {"w2": ["a2"]})
    assert names(answer, "w2") == ["a2", "c2"]  # c2 violates nothing
    assert answer["w2"]["NumPDBViolations"] == 0

    # The budget's status allows one disruption again (a MODIFIED event): b2 is back.
    policy.patch_namespaced_pod_disruption_budget("guard", "default", {"status": {"disruptionsAllowed": 1}})
    wait_for(lambda: names(preempt(http, {"w2": ["a2"]}), "w2") == ["a2", "b2"])


def test_the_only_helpful_addition_violating_a_pdb_is_counted(
    http: Client, app: ExtenderApp, policy: Any
) -> None:
    expressions = {"matchExpressions": [{"key": "app", "operator": "In", "values": ["guarded", "other"]}]}
    policy.create_namespaced_pod_disruption_budget("default", budget("guard", expressions, 0))
    wait_for(lambda: len(app.service.budgets) == 1)
    answer = preempt(http, {"w3": ["a3"]}, pdb=1)
    assert names(answer, "w3") == ["a3", "b3"]
    assert answer["w3"]["NumPDBViolations"] == 2  # the scheduler's one, and b3's

    policy.delete_namespaced_pod_disruption_budget("guard", "default")
    wait_for(lambda: preempt(http, {"w3": ["a3"]}, pdb=1)["w3"]["NumPDBViolations"] == 1)


def test_a_malformed_pdb_is_skipped_and_the_watch_goes_on(
    http: Client, app: ExtenderApp, policy: Any, caplog: pytest.LogCaptureFixture
) -> None:
    bad = budget("bad", {"matchExpressions": [{"key": "app", "operator": "Near", "values": ["x"]}]}, 0)
    policy.create_namespaced_pod_disruption_budget("default", bad)
    policy.create_namespaced_pod_disruption_budget("default", budget("guard", {"matchLabels": GUARDED}, 0))
    wait_for(lambda: len(app.service.budgets) == 1)
    assert "operator" in caplog.text
    assert preempt(http, {"w3": ["a3"]})["w3"]["NumPDBViolations"] == 1
