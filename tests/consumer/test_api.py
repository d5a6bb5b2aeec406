import json

import pytest

from rte.consumer.api import Decision, NodeCandidate, evaluate, node_allocatable
from rte.consumer.requests import prepare_pod
from rte.errors import ConfigError, InputError
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
    assert [(d.node, d.fits, d.score) for d in decisions] == [
        ("small", False, None),
        ("big", True, 37),
        ("plain", True, 0),
        ("stale", False, None),
        ("no-gpu", True, 37),
    ]
    assert decisions[0].reason.startswith('cannot align container "c"')
    assert decisions[3].reason == "invalid node topology data"


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


def test_evaluate_honours_kubelet_accurate_sidecars_for_plain_pods() -> None:
    p = pod(
        container("app", {"cpu": 3, "memory": GI}),
        init=[container("proxy", {"cpu": 3, "memory": GI}, sidecar=True)],
    )
    node = NodeCandidate("n", view({0: {"cpu": 4, "memory": 8 * GI}, 1: {"cpu": 2, "memory": 8 * GI}}))
    assert evaluate(p, [node])[0].fits
    assert not evaluate(p, [node], kubelet_accurate_sidecars=True)[0].fits
    assert not evaluate(prepare_pod(p, kubelet_accurate_sidecars=True), [node])[0].fits


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
