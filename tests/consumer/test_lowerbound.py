"""Filter on a reserve cache's view admits only what the kubelet admits with any more free room.

The property: whatever a node has beyond the view (pods ended since the NRT, pods charged on
every zone that took one), a pod admitted by :func:`admitted_on_any_larger` on the view is
admitted by the kubelet's model on the larger state. The plain model fails it (the first test
shows the case the simulator found: an init container moving to a zone that has more free).
"""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from rte.consumer.lowerbound import MAX_SCENARIOS, admitted_on_any_larger, needs_search
from rte.model.admission.admit import admit_pod
from rte.model.admission.node import NodeFacts, NodeResources, node_resources
from rte.model.admission.units import KIND_APP, KIND_INIT, KIND_SIDECAR, AdmissionUnit
from rte.model.topology_manager import (
    POLICY_BEST_EFFORT,
    POLICY_RESTRICTED,
    POLICY_SINGLE_NUMA_NODE,
    SCOPE_CONTAINER,
)

GIB = 1 << 30


def _node(policy: str, cpus: list[int], memory: list[int], capacity: int = 32) -> NodeResources:
    zones = [
        (z, {"cpu": (capacity, capacity, c), "memory": (64 * GIB, 64 * GIB, m * GIB)})
        for z, (c, m) in enumerate(zip(cpus, memory, strict=True))
    ]
    return node_resources(zones, NodeFacts(policy=policy, scope=SCOPE_CONTAINER))


def _unit(name: str, kind: str, cpus: int, memory_gib: int) -> AdmissionUnit:
    return AdmissionUnit(name, kind, cpus, {"memory": memory_gib * GIB} if memory_gib else {})


INIT_THEN_APP = (_unit("init", KIND_INIT, 4, 0), _unit("app", KIND_APP, 8, 0))


def test_an_init_container_that_more_room_moves_refuses_the_node() -> None:
    # The view: zone 0 has 3 free CPUs, zone 1 has 20. The init container (4) goes to zone 1 and
    # the app container (8) follows it there. If zone 0 really has 4 to 7 free, the kubelet puts
    # the init container on zone 0 and the app container finds at most 7 there.
    view = _node(POLICY_SINGLE_NUMA_NODE, [3, 20], [32, 32])
    assert admit_pod(view, INIT_THEN_APP).admitted
    larger = _node(POLICY_SINGLE_NUMA_NODE, [5, 20], [32, 32])
    assert not admit_pod(larger, INIT_THEN_APP).admitted  # the TopologyAffinityError
    verdict = admitted_on_any_larger(view, INIT_THEN_APP)
    assert not verdict.admitted
    assert 'init container "init" on NUMA {0}' in verdict.reason


def test_room_for_the_app_container_on_every_zone_the_init_may_take_admits() -> None:
    # Zone 0 has 8 free: whichever zone the init container takes, the app container fits there.
    view = _node(POLICY_SINGLE_NUMA_NODE, [8, 20], [32, 32])
    assert admitted_on_any_larger(view, INIT_THEN_APP).admitted
    # The first zone in the kubelet's order is chosen on any larger state too: no search.
    assert admitted_on_any_larger(_node(POLICY_SINGLE_NUMA_NODE, [12, 2], [32, 32]), INIT_THEN_APP).admitted


def test_a_zone_that_cannot_hold_the_init_container_is_no_choice() -> None:
    # Zone 0's capacity is 3 CPUs: no kubelet puts the 4-CPU init container there.
    zones = [(0, {"cpu": (3, 3, 3)}), (1, {"cpu": (32, 32, 20)})]
    view = node_resources(zones, NodeFacts(policy=POLICY_SINGLE_NUMA_NODE, scope=SCOPE_CONTAINER))
    assert admitted_on_any_larger(view, INIT_THEN_APP).admitted


def test_only_several_units_under_refusing_policies_are_searched() -> None:
    view = _node(POLICY_SINGLE_NUMA_NODE, [3, 20], [32, 32])
    assert not needs_search(view, INIT_THEN_APP[1:])
    assert not needs_search(_node(POLICY_BEST_EFFORT, [3, 20], [32, 32]), INIT_THEN_APP)
    assert needs_search(_node(POLICY_RESTRICTED, [3, 20], [32, 32]), INIT_THEN_APP)
    assert MAX_SCENARIOS >= 8  # three units on two zones never reach it


_KINDS = st.sampled_from([KIND_INIT, KIND_SIDECAR])


@st.composite
def _pods(draw: st.DrawFn) -> tuple[AdmissionUnit, ...]:
    memory = st.one_of(st.just(0), st.integers(1, 12))
    before = draw(st.lists(st.tuples(_KINDS, st.integers(0, 10), memory), max_size=2))
    apps = draw(st.lists(st.tuples(st.integers(0, 12), memory), min_size=1, max_size=2))
    units = [_unit(f"i{k}", kind, c, m) for k, (kind, c, m) in enumerate(before)]
    units += [_unit(f"a{k}", KIND_APP, c, m) for k, (c, m) in enumerate(apps)]
    return tuple(units)


@settings(max_examples=400, deadline=None)
@given(
    policy=st.sampled_from([POLICY_SINGLE_NUMA_NODE, POLICY_RESTRICTED]),
    zones=st.integers(2, 3),
    data=st.data(),
    units=_pods(),
)
def test_admitted_on_the_view_means_admitted_on_every_larger_state(
    policy: str, zones: int, data: st.DataObject, units: tuple[AdmissionUnit, ...]
) -> None:
    cpus = data.draw(st.lists(st.integers(0, 16), min_size=zones, max_size=zones))
    memory = data.draw(st.lists(st.integers(0, 24), min_size=zones, max_size=zones))
    view = _node(policy, cpus, memory, capacity=16)
    if not admitted_on_any_larger(view, units).admitted:
        return
    # Mostly a little more (what tips a unit onto another zone), sometimes anything up to capacity.
    more_cpus = [
        c + data.draw(st.one_of(st.integers(0, min(4, 16 - c)), st.integers(0, 16 - c))) for c in cpus
    ]
    more_memory = [
        m + data.draw(st.one_of(st.integers(0, min(4, 64 - m)), st.integers(0, 64 - m))) for m in memory
    ]
    larger = _node(policy, more_cpus, more_memory, capacity=16)
    assert admit_pod(larger, units).admitted, (cpus, memory, more_cpus, more_memory)
