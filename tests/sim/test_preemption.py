"""Priorities and preemption in the simulator (rte.sim.preemption): kube-scheduler's NUMA-blind
default preemption evicts pods for nothing; with rte's preempt verb (numa) every eviction lets
the kubelet admit the pod it was made for."""

from __future__ import annotations

from dataclasses import replace

import pytest

from rte.errors import InputError
from rte.sim.config import SimConfig
from rte.sim.engine import run_simulation
from rte.sim.priorities import PriorityClass, parse_priority_mix
from rte.sim.queue import SchedulingQueue
from rte.sim.result import SimResult
from rte.sim.specs import parse_pod_mix
from rte.sim.workload import arrivals

# All on one worker under pytest -n (--dist loadgroup): the three simulations of the module-scoped
# `runs` fixture (about 20 s) run once, not once on each worker.
pytestmark = pytest.mark.xdist_group("sim-preemption-runs")

# Near saturation with bursts, small enough for a test: blind preemption shows false evictions.
SATURATED = SimConfig(
    nodes=10,
    pods=800,
    burst="40/60s",
    load=0.95,
    mean_duration=120.0,
    priority_mix="low=0.7,high=0.3",
    cache="reserve",
)


@pytest.fixture(scope="module")
def runs() -> dict[str, SimResult]:
    return {mode: run_simulation(replace(SATURATED, preemption=mode)) for mode in ("off", "blind", "numa")}


def test_the_priority_mix_lists_classes_lowest_first() -> None:
    assert parse_priority_mix("low=0.7, high=0.3") == (
        PriorityClass("low", 0.7, 0),
        PriorityClass("high", 0.3, 1),
    )


@pytest.mark.parametrize(
    ("text", "error"),
    [
        ("low", "'low' is not <class>=<share>"),
        ("low=x", "'low=x': the share is not a number"),
        ("low=0", "'low=0': the share must be a positive number"),
        ("low=1,low=2", "class 'low' is listed twice"),
        ("Low=1", "'Low=1' is not <class>=<share>"),
    ],
)
def test_a_bad_priority_mix_is_one_line_naming_the_option(text: str, error: str) -> None:
    with pytest.raises(InputError) as raised:
        parse_priority_mix(text)
    assert str(raised.value).startswith(f"--priority-mix: {error}")
    assert "\n" not in str(raised.value)


def test_a_priority_mix_changes_nothing_else_of_the_workload() -> None:
    mix = parse_pod_mix("50%:2c-4Gi,50%:8c-16Gi")
    plain = arrivals(pods=200, mix=mix, rate=2.0, burst=None, mean_duration=60.0, seed=3)
    ranked = arrivals(
        pods=200, mix=mix, rate=2.0, burst=None, mean_duration=60.0, seed=3, priority_shares=[0.5, 0.5]
    )
    assert [(a.time, a.shape, a.duration) for a in plain] == [(a.time, a.shape, a.duration) for a in ranked]
    assert {a.priority for a in plain} == {0}
    assert {a.priority for a in ranked} == {0, 1}


def test_the_queue_serves_higher_priorities_first_then_the_oldest() -> None:
    queue = SchedulingQueue()
    queue.add(1, 0.0, priority=0)
    queue.add(2, 1.0, priority=1)
    queue.add(3, 2.0, priority=1)
    queue.add(4, 3.0, priority=0)
    assert [queue.pop(5.0) for _ in range(4)] == [2, 3, 1, 4]


def test_blind_preemption_evicts_pods_for_nothing_and_rte_s_never(runs: dict[str, SimResult]) -> None:
    blind, numa = runs["blind"].counters, runs["numa"].counters
    assert blind.preemptions > 0 and blind.false_evictions > 0
    assert numa.preemptions > 0 and numa.victims > 0
    assert numa.false_evictions == 0
    assert blind.topology_affinity_errors == numa.topology_affinity_errors == 0


def test_rte_s_preemption_serves_high_priority_no_worse_than_blind(runs: dict[str, SimResult]) -> None:
    def p99(result: SimResult) -> float:
        value = result.pending_summary(result.pending_by_priority["high"])["p99"]
        assert value is not None
        return value

    assert p99(runs["numa"]) <= p99(runs["blind"])
    assert p99(runs["numa"]) < p99(runs["off"])  # preemption is worth having at all


def test_without_preemption_nothing_is_evicted(runs: dict[str, SimResult]) -> None:
    c = runs["off"].counters
    assert (c.preemptions, c.victims, c.false_evictions) == (0, 0, 0)


def test_the_json_and_the_table_show_the_preemption_counters(runs: dict[str, SimResult]) -> None:
    result = runs["numa"]
    out = result.to_dict()
    c = result.counters
    assert {k: out["counters"][k] for k in ("preemptions", "victims", "false_evictions")} == {
        "preemptions": c.preemptions,
        "victims": c.victims,
        "false_evictions": 0,
    }
    by_priority = out["pending_seconds_by_priority"]
    assert list(by_priority) == ["low", "high"]
    assert {"p50", "p99", "scheduled"} <= set(by_priority["high"])
    assert sum(v["scheduled"] for v in by_priority.values()) == c.pods_scheduled
    table = result.table()
    assert f"preemption               numa: {c.preemptions} nominations, {c.victims} victims" in table
    assert "  priority high" in table
