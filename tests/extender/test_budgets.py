"""The extender's PodDisruptionBudget index (rte.extender.budgets) and the preempt verb's counting
of the added pods' violations (rte.extender.preempt), over real HTTP with the index fed directly.

The counting follows kube-scheduler's ``filterPodsWithPDBViolation``
(kubernetes/kubernetes ``pkg/scheduler/framework/preemption/preemption.go``): the scheduler's
victims use up the budgets first, then the added pods, in order."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from typing import Any

import pytest

from rte.consumer.cache.selection import make_cache
from rte.consumer.preemption.placements import ContainerPlacements, ContainerZones
from rte.consumer.store import ADDED, DELETED, MODIFIED, NRTStore
from rte.extender.budgets import BudgetIndex
from rte.extender.server import ExtenderServer
from rte.extender.service import ExtenderService
from rte.extender.settings import extender_settings
from tests.extender.test_preempt import nrt, preemptor, running
from tests.helpers.extender import PROFILE, Client

DB = {"app": "db"}


def pdb(name: str, allowed: int, selector: Any = None, namespace: str = "default") -> dict[str, Any]:
    return {
        "apiVersion": "policy/v1",
        "kind": "PodDisruptionBudget",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"selector": {"matchLabels": DB} if selector is None else selector},
        "status": {"disruptionsAllowed": allowed},
    }


def allowed(index: BudgetIndex) -> dict[str, dict[str, int]]:
    return {ns: {b.name: b.allowed for b in group} for ns, group in index.snapshot().items()}


def test_the_index_follows_lists_and_events() -> None:
    index = BudgetIndex()
    index.replace([pdb("a", 1), pdb("b", 0, namespace="shop")])
    assert index.synced.is_set() and allowed(index) == {"default": {"a": 1}, "shop": {"b": 0}}
    before = index.snapshot()
    index.on_event(MODIFIED, pdb("a", 0))
    index.on_event(ADDED, pdb("c", 2))
    assert allowed(index) == {"default": {"a": 0, "c": 2}, "shop": {"b": 0}}
    assert {b.name: b.allowed for b in before["default"]} == {"a": 1}  # a snapshot stays as it was
    index.on_event(DELETED, {"metadata": {"name": "b", "namespace": "shop"}})
    index.on_event(DELETED, {"metadata": {"name": "gone", "namespace": "shop"}})
    assert allowed(index) == {"default": {"a": 0, "c": 2}}
    index.replace([pdb("c", 3)])  # a relist drops what is no longer there
    assert allowed(index) == {"default": {"c": 3}} and len(index) == 1


def test_malformed_budgets_are_logged_and_skipped(caplog: pytest.LogCaptureFixture) -> None:
    index = BudgetIndex()
    bad = pdb("bad", 0, {"matchExpressions": [{"key": "app", "operator": "Near", "values": ["x"]}]})
    with caplog.at_level(logging.WARNING, logger="rte.extender.budgets"):
        index.replace([bad, pdb("a", 1), "not an object"])
    assert allowed(index) == {"default": {"a": 1}}
    assert "default/bad: spec.selector.matchExpressions[0].operator" in caplog.text
    # An update we cannot read does not leave the old budget standing.
    index.on_event(MODIFIED, {**pdb("a", 1), "status": {"disruptionsAllowed": "many"}})
    assert allowed(index) == {}


# w4: zones with 1 and 2 CPUs free; the preemptor asks 8 on one zone. The scheduler's victim a4
# frees 2 on zone 0, too little; d4 and e4 (3 each, zone 1) are both needed. All three match the
# PDB "db".
PODS = [
    (running("a4", 2, "w4"), DB),
    (running("d4", 3, "w4"), DB),
    (running("e4", 3, "w4"), DB),
]
ZONES: dict[str, ContainerZones] = {
    "w4": {("default", "a4", "main"): 0, ("default", "d4", "main"): 1, ("default", "e4", "main"): 1},
}


@pytest.fixture
def service() -> Iterator[tuple[ExtenderService, Client]]:
    settings = extender_settings(scheduler_profiles=[PROFILE])
    store = NRTStore()
    store.apply_object(ADDED, nrt("w4", [1, 2]))
    svc = ExtenderService(
        store,
        make_cache(settings.cache, store),
        settings.strategy,
        profiles=[PROFILE],
        placements=ContainerPlacements(ZONES.get),
    )
    svc.nrt_synced.set()
    pods = []
    for obj, labels in PODS:
        obj["metadata"]["labels"] = labels
        pods.append(obj)
    svc.replace_pods(pods)
    server = ExtenderServer(svc, "127.0.0.1", 0).start()
    c = Client(server.url)
    try:
        yield svc, c
    finally:
        c.close()
        server.stop()


def answer(c: Client, pdb_violations: int = 0) -> dict[str, Any]:
    meta = {"w4": {"Pods": [{"UID": "uid-a4"}], "NumPDBViolations": pdb_violations}}
    status, result = c.post("preempt", {"Pod": preemptor(), "NodeNameToMetaVictims": meta})
    assert status == 200, result
    out: dict[str, Any] = result["NodeNameToMetaVictims"]["w4"]
    return out


@pytest.mark.parametrize(
    ("budget", "scheduler_s", "expected"),
    [
        (None, 0, 0),
        (3, 0, 0),  # a4, d4 and e4 take the three disruptions allowed
        # Each added pod alone fits the budget a4 leaves; together they exceed it by one.
        (2, 0, 1),
        (1, 0, 2),  # a4 takes the last one: both added pods violate
        (0, 1, 3),  # the scheduler's violation (a4), carried over, and both added pods'
    ],
)
def test_the_added_pods_violations_are_counted_over_the_chosen_set(
    service: tuple[ExtenderService, Client], budget: int | None, scheduler_s: int, expected: int
) -> None:
    svc, c = service
    if budget is not None:
        svc.budgets.replace([pdb("db", budget)])
    got = answer(c, scheduler_s)
    assert [p["UID"] for p in got["Pods"]] == ["uid-a4", "uid-d4", "uid-e4"]
    assert got["NumPDBViolations"] == expected
