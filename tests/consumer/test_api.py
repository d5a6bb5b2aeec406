import json

import pytest

from rte.consumer.api import Decision, NodeCandidate, evaluate, node_allocatable
from rte.consumer.requests import prepare_pod
from rte.errors import ConfigError, InputError
from rte.model.vocabulary import Compat
from tests.helpers.consumer import GI, container, pod, slit, view

ZONES = {0: {"cpu": 4, "memory": 8 * GI}, 1: {"cpu": 8, "memory": 8 * GI}}


def _nodes() -> list[NodeCandidate]:
    return [
        NodeCandidate("small", view({0: {"cpu": 1, "memory": 8 * GI}})),
        NodeCandidate("big", view(ZONES, costs=slit([0, 1]))),
        NodeCandidate("plain"),
        NodeCandidate("stale", view(ZONES), fresh=False),
        NodeCandidate("no-gpu", view(ZONES), allocatable={"cpu": 12}),
    ]


def test_evaluate_filters_and_scores_every_node_in_order() -> None:
    p = pod(container("c", {"cpu": 2, "memory": 4 * GI}))
    decisions = evaluate(p, _nodes(), "MostAllocated")
    # The kubelet puts the pod on zone 0 (the lowest that holds it): Score rates that zone.
    assert [(d.node, d.fits, d.score) for d in decisions] == [
        ("small", False, None),
        ("big", True, 50),
        ("plain", True, 0),
        ("stale", False, None),
        ("no-gpu", True, 50),
    ]
    assert decisions[0].reason == "single-numa-node: no single NUMA zone holds cpu=2"
    assert decisions[1].reason == "fits NUMA zone 0"
    assert decisions[3].reason == "invalid node topology data"


def test_evaluate_with_the_reference_rules_scores_the_worst_zone_that_fits() -> None:
    p = pod(container("c", {"cpu": 2, "memory": 4 * GI}))
    decisions = evaluate(p, _nodes(), "MostAllocated", compat="reference")
    assert [(d.node, d.fits, d.score) for d in decisions] == [
        ("small", False, None),
        ("big", True, 37),
        ("plain", True, 0),
        ("stale", False, None),
        ("no-gpu", True, 37),
    ]
    assert decisions[0].reason.startswith('cannot align container "c"')


def test_decisions_serialise_to_the_rte_fit_json_shape() -> None:
    d = Decision("n1", True, "fits NUMA zone 0", 94)
    assert json.loads(json.dumps(d.to_dict())) == {
        "node": "n1",
        "fits": True,
        "reason": "fits NUMA zone 0",
        "score": 94,
    }


def test_evaluate_takes_weights_with_a_strategy_name() -> None:
    p = pod(container("c", {"cpu": 2, "memory": 4 * GI}))
    [big] = evaluate(p, [NodeCandidate("big", view(ZONES))], "LeastAllocated", {"cpu": 3})
    assert big.score == 50
    [lnn] = evaluate(p, [NodeCandidate("big", view(ZONES, costs=slit([0, 1])))], "LeastNUMANodes")
    assert lnn.score == 94


def test_evaluate_rejects_an_unknown_strategy() -> None:
    with pytest.raises(ConfigError):
        evaluate(pod(), [], "Random")


def test_evaluate_takes_the_rules_for_plain_pods_and_keeps_those_of_prepared_ones() -> None:
    p = pod(
        container("app", {"cpu": 3, "memory": GI}),
        init=[container("proxy", {"cpu": 3, "memory": GI}, sidecar=True)],
    )
    node = NodeCandidate("n", view({0: {"cpu": 4, "memory": 8 * GI}, 1: {"cpu": 2, "memory": 8 * GI}}))
    # The sidecar keeps 3 CPUs of zone 0, so the app container finds 3 in no zone.
    assert not evaluate(p, [node])[0].fits
    assert evaluate(p, [node], compat="reference")[0].fits
    assert evaluate(prepare_pod(p, compat=Compat.REFERENCE), [node])[0].fits
    assert not evaluate(prepare_pod(p), [node], compat="reference")[0].fits


def test_evaluate_rejects_unknown_rules() -> None:
    with pytest.raises(ConfigError, match="compat"):
        evaluate(pod(), [], compat="scheduler")


def test_node_allocatable_parses_the_node_status() -> None:
    node = {
        "kind": "Node",
        "status": {"allocatable": {"cpu": "3500m", "memory": "8Gi", "example.com/x": "2"}},
    }
    assert node_allocatable(node) == {"cpu": pytest.approx(3.5), "memory": 8 * GI, "example.com/x": 2}
    assert node_allocatable({"metadata": {"name": "n"}}) == {}


def test_node_allocatable_names_the_bad_field() -> None:
    with pytest.raises(InputError, match=r"node.json: status.allocatable.cpu: not a quantity"):
        node_allocatable({"status": {"allocatable": {"cpu": "lots"}}}, "node.json")
    with pytest.raises(InputError, match="expected Node"):
        node_allocatable({"kind": "Pod"})


def test_a_negative_node_allocatable_is_bad_input_naming_the_field() -> None:
    # The apiserver refuses it, so a Node file with one was written by hand or corrupted: taking
    # it would make a node look fuller (or, fed to arithmetic, emptier) than any real node.
    with pytest.raises(InputError, match=r"node.json: status.allocatable.memory: must not be negative"):
        node_allocatable({"status": {"allocatable": {"cpu": "2", "memory": "-1Gi"}}}, "node.json")
