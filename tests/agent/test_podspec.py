"""The pod watch's compact record gives the answers the model's rules give on the whole pod.

:class:`rte.agent.compute.podspec.PodSpec` keeps what the fingerprint's spec rule reads of a pod
(docs/performance.md, "Agent memory"); these seeded random pods (QoS classes, sidecars, init
containers, pod-level resources, non-native requests, every phase, bound or not) hold each of its
answers equal to :func:`rte.model.pod.counts_for_fingerprint`, ``Pod.is_terminal`` and
:func:`rte.model.exclusive.is_exclusive` over random published resource sets.
"""

from __future__ import annotations

import random
from fractions import Fraction

import pytest

from rte.agent.compute.podspec import PodSpec
from rte.model.exclusive import is_exclusive
from rte.model.pod import Container, Pod, PodLevelResources, counts_for_fingerprint
from rte.model.quantity import Amount
from rte.model.vocabulary import InformerMode

NIC, GPU, SHARED_NIC = "vendor.com/nic", "vendor.com/gpu", "example.kubernetes.io/nic"
RESOURCES = ("cpu", "memory", "hugepages-1Gi", "ephemeral-storage", NIC, GPU, SHARED_NIC)


def _quantities(rng: random.Random) -> dict[str, Amount]:
    out: dict[str, Amount] = {}
    for res in rng.sample(RESOURCES, rng.randrange(4)):
        out[res] = rng.choice((0, 1, 2, Fraction(1, 2), Fraction(3, 2), 2**30, Fraction(2**31, 3)))
    return out


def _container(rng: random.Random, name: str, *, sidecar: bool = False) -> Container:
    requests = _quantities(rng)
    limits = dict(requests) if rng.random() < 0.5 else _quantities(rng)
    for res, qty in limits.items():  # requests defaulted from limits, as the API does
        requests.setdefault(res, qty)
    return Container(name, requests, limits, "Always" if sidecar else None)


def random_pod(rng: random.Random, i: int) -> Pod:
    init = tuple(_container(rng, f"init-{j}", sidecar=rng.random() < 0.5) for j in range(rng.randrange(3)))
    resources = None
    if rng.random() < 0.15:
        requests = _quantities(rng)
        resources = PodLevelResources(requests, dict(requests) if rng.random() < 0.5 else {})
    return Pod(
        f"ns-{i % 3}",
        f"pod-{i}",
        node_name=rng.choice(("n", "n", "")),
        phase=rng.choice(("", "Pending", "Running", "Running", "Succeeded", "Failed", "Unknown")),
        containers=tuple(_container(rng, f"c{j}") for j in range(1 + rng.randrange(3))),
        init_containers=init,
        status_qos_class=rng.choice(("", "", "Guaranteed", "Burstable", "BestEffort")),
        resources=resources,
    )


@pytest.mark.parametrize("seed", range(6))
def test_the_record_answers_as_the_model_rules_answer_on_the_whole_pod(seed: int) -> None:
    rng = random.Random(seed)
    for i in range(300):
        pod = random_pod(rng, i)
        spec = PodSpec.of(pod)
        for mode in InformerMode:
            assert spec.counts_for_fingerprint(mode) == counts_for_fingerprint(pod, mode), (seed, i, mode)
        assert spec.is_terminal == pod.is_terminal
        for _ in range(4):
            published = rng.sample(RESOURCES, rng.randrange(len(RESOURCES) + 1))
            assert spec.is_exclusive(published) == is_exclusive(pod, published), (seed, i, published)


def test_pods_alike_to_the_rule_share_one_record() -> None:
    a = Pod("ns", "a", node_name="n", phase="Running", containers=(Container("app", {"cpu": 1}),))
    b = Pod("ns", "a", uid="other", node_name="n", phase="Running", containers=(Container("x", {"cpu": 1}),))
    assert PodSpec.of(a) is PodSpec.of(b), "what the rule does not read does not count: one record"
    c = Pod("ns", "a", node_name="n", phase="Pending", containers=(Container("app", {"cpu": 1}),))
    assert PodSpec.of(a) != PodSpec.of(c)
