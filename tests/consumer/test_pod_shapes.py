"""Pods of one shape share decisions (:class:`rte.consumer.requests.PodShapes`, the kernel's
:class:`~rte.consumer.kernel.decide.DecisionMemo`), and nothing of one pod reaches another.

Random pods (the kernel differential test's) are decided under several names through one memo,
with other pods and row rewrites in between: every answer equals a decision made for that pod
alone, prepared on its own. Pods that differ in any field a decision reads never share a shape.
"""

from __future__ import annotations

import dataclasses
import random
from fractions import Fraction

import pytest

from rte.consumer.kernel.decide import Verdicts, decide
from rte.consumer.kernel.memo import DecisionMemo
from rte.consumer.kernel.table import NodeTable
from rte.consumer.numaview import build_view
from rte.consumer.requests import PodShapes, prepare_pod, shape_key, shape_of
from rte.model.pod import Container, Pod, PodLevelResources
from rte.model.quantity import parse_quantity
from rte.model.vocabulary import Compat
from tests.consumer.test_kernel_differential import _strategy, random_pod, random_topology

GI = 2**30


def _facts(v: Verdicts) -> tuple[object, ...]:
    scores = None if v.scores is None else v.scores.tolist()
    return (v.rows.tolist(), v.fits.tolist(), v.reasons(), v.numa_ids.tolist(), scores, v.scalar_rows)


def _renamed(pod: Pod, k: int) -> Pod:
    """``pod`` as another pod of its ReplicaSet: another name, uid, namespace and life."""
    return dataclasses.replace(
        pod, namespace=f"ns-{k % 2}", name=f"pod{k}x", uid=f"uid-{k}", node_name="", phase="Pending"
    )


@pytest.mark.parametrize("seed", range(60))
def test_pods_decided_through_a_shared_shape_decide_as_if_prepared_alone(seed: int) -> None:
    rng = random.Random(f"shapes-{seed}")
    names = [f"n{i}" for i in range(rng.randint(4, 40))]
    table = NodeTable.of(names, [build_view(random_topology(rng, n)) for n in names])
    compat = Compat.REFERENCE if rng.random() < 0.15 else Compat.KUBELET
    shapes = PodShapes(compat)
    memo = DecisionMemo(table)
    pods = [random_pod(rng) for _ in range(3)]
    strategy = _strategy(rng)
    rows = None if rng.random() < 0.5 else sorted(rng.sample(range(len(names)), rng.randint(1, len(names))))
    for k in range(40):
        if rng.random() < 0.3:  # a reservation, a new NRT: one row rewritten
            row = rng.randrange(len(names))
            table.put(row, build_view(random_topology(rng, names[row])), rng.random() > 0.05)
        pod = _renamed(rng.choice(pods), k)
        prep = shapes.prepare(pod)
        assert prep.pod is pod and prep.pod_request.name == pod.name
        alone = prepare_pod(pod, compat=compat)
        for strat, failed in ((None, False), (strategy, True)):
            got = decide(prep, table, rows, strat, score_failed=failed, memo=memo)
            want = decide(alone, table, rows, strat, score_failed=failed)
            assert _facts(got) == _facts(want), (seed, k, pod)
            others = [f"pod{j}x" for j in range(k)]  # no earlier pod's name in this one's reasons
            assert not [r for r in set(got.reasons()) for other in others if other in r], (seed, k)
    assert memo.hits > 0 and memo.score_hits > 0 and shapes.hits > 0


def test_the_memo_brings_a_decision_up_to_date_by_deciding_only_the_rewritten_rows() -> None:
    rng = random.Random(5)
    names = [f"n{i}" for i in range(40)]
    table = NodeTable.of(names, [build_view(random_topology(rng, n)) for n in names])
    memo = DecisionMemo(table)
    pod = Pod("ns", "p", containers=(Container("c", {"cpu": 2, "memory": GI}, {"cpu": 2, "memory": GI}),))
    rows = list(range(0, 40, 2))
    for k in range(30):
        table.put(rng.randrange(40), build_view(random_topology(rng, "x")))
        prep = prepare_pod(_renamed(pod, k))  # a new pod each time, no PodShapes: matched by shape
        got = decide(prep, table, rows, memo=memo)
        assert _facts(got) == _facts(decide(prep, table, rows)), k
    assert memo.patches >= 25 and memo.hits == 0
    table.row("new")  # the table grew: everything is decided again
    before = memo.patches
    decide(prepare_pod(pod), table, rows, memo=memo)
    assert memo.patches == before


def test_the_table_names_the_rows_rewritten_since_a_generation() -> None:
    rng = random.Random(1)
    names = [f"n{i}" for i in range(6)]
    table = NodeTable.of(names, [build_view(random_topology(rng, n)) for n in names])
    start = table.generation
    assert table.rewritten_since(start) is not None and not len(table.rewritten_since(start))  # type: ignore[arg-type]
    table.put(3, build_view(random_topology(rng, "n3")))
    table.put_many([1, 3], [None, None])
    assert table.rewritten_since(start).tolist() == [1, 3]  # type: ignore[union-attr]
    assert table.rewritten_since(start + 2).tolist() == []  # type: ignore[union-attr]
    assert table.rewritten_since(start + 3) is None  # a generation not reached yet
    grown = table.generation
    table.row("n6")
    assert table.rewritten_since(grown) is None
    later = table.generation
    for _ in range(40):
        table.put(0, None)
    assert table.rewritten_since(later) is None  # further back than the log reaches
    assert table.rewritten_since(table.generation - 1).tolist() == [0]  # type: ignore[union-attr]


_GUARANTEED = Container("app", {"cpu": 2, "memory": GI}, {"cpu": 2, "memory": GI})
_BASE = Pod("ns", "web-1", uid="u1", scheduler_name="s", containers=(_GUARANTEED,))


def _variants() -> dict[str, Pod]:
    """The base pod changed in one field a decision reads, each."""
    c = _GUARANTEED
    budget = {"cpu": parse_quantity(4), "memory": parse_quantity(4 * GI)}
    return {
        "request": dataclasses.replace(
            _BASE, containers=(dataclasses.replace(c, requests={"cpu": 3, "memory": GI}),)
        ),
        "request type": dataclasses.replace(
            _BASE, containers=(dataclasses.replace(c, requests={"cpu": Fraction(2), "memory": GI}),)
        ),
        "limit": dataclasses.replace(_BASE, containers=(dataclasses.replace(c, limits={"cpu": 2}),)),
        "container name": dataclasses.replace(_BASE, containers=(dataclasses.replace(c, name="other"),)),
        "restart policy": dataclasses.replace(
            _BASE, containers=(dataclasses.replace(c, restart_policy="Always"),)
        ),
        "second container": dataclasses.replace(_BASE, containers=(c, dataclasses.replace(c, name="b"))),
        "init container": dataclasses.replace(_BASE, init_containers=(dataclasses.replace(c, name="i"),)),
        "sidecar": dataclasses.replace(
            _BASE, init_containers=(dataclasses.replace(c, name="i", restart_policy="Always"),)
        ),
        "overhead": dataclasses.replace(_BASE, overhead={"cpu": Fraction(1, 10)}),
        "status QoS": dataclasses.replace(_BASE, status_qos_class="Burstable"),
        "pod-level resources": dataclasses.replace(_BASE, resources=PodLevelResources(budget, budget)),
    }


def test_pods_that_differ_in_what_a_decision_reads_never_share_a_shape() -> None:
    base = shape_key(_BASE, Compat.KUBELET)
    keys = {what: shape_key(pod, Compat.KUBELET) for what, pod in _variants().items()}
    assert all(key != base for key in keys.values()), [w for w, k in keys.items() if k == base]
    assert len(set(keys.values())) == len(keys)
    assert shape_key(_BASE, Compat.REFERENCE) != base
    # What no decision reads: another pod of the same ReplicaSet shares the shape...
    assert shape_key(_renamed(_BASE, 7), Compat.KUBELET) == base
    assert shape_key(dataclasses.replace(_BASE, scheduler_name="other"), Compat.KUBELET) == base
    # ...except with pod-level resources, whose admission unit bears the pod's name.
    pod_level = _variants()["pod-level resources"]
    assert shape_key(_renamed(pod_level, 1), Compat.KUBELET) != shape_key(pod_level, Compat.KUBELET)


def test_pod_shapes_give_each_pod_its_own_preparation_and_forget_old_shapes() -> None:
    shapes = PodShapes(kept=2)
    first = shapes.prepare(_BASE)
    second = shapes.prepare(_renamed(_BASE, 1))
    assert shape_of(second) is shape_of(first) and shapes.hits == 1
    assert second.memo is not first.memo and second.pod.name == "pod1x"
    assert (second.init, second.app, second.qos) == (first.init, first.app, first.qos)
    assert second.pod_request.items == first.pod_request.items and first.pod_request.name == "web-1"
    assert shape_of(second) == shape_of(prepare_pod(_renamed(_BASE, 2)))
    for pod in _variants().values():
        shapes.prepare(pod)
    assert len(shapes) == 2
    assert shape_of(shapes.prepare(_renamed(_BASE, 3))) is not shape_of(first)  # forgotten: a new shape
