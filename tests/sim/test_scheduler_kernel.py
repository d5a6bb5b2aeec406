"""The simulated scheduler's kernel path decides as the scalar path: every cycle verified."""

from dataclasses import replace
from typing import Any

import pytest

from rte.sim import scheduler
from rte.sim.config import SimConfig
from rte.sim.engine import run_simulation

BASE = SimConfig(nodes=12, pods=150, burst="20/20s", load=0.9, agent_interval=10.0, verify=True)


@pytest.mark.parametrize("cache", ["none", "reserve"])
@pytest.mark.parametrize(
    "variant",
    [
        {},
        {"policy": "restricted", "shapes": "4x8c-64Gi", "pod_mix": "60%:2c-2Gi,40%:10c-8Gi"},
        {"scope": "pod", "pod_mix": "70%:2x2c-2Gi,30%:2x4c-4Gi"},
        {"shapes": "70%:2x16c-64Gi,30%:4x8c-64Gi+nic2", "pod_mix": "80%:2c-2Gi,20%:2c-2Gi+nic1"},
        {"strategy": "BalancedAllocation"},
        {"strategy": "LeastNUMANodes", "compat": "reference"},
    ],
)
def test_decisions_through_the_kernel_match_a_full_scalar_recomputation_every_cycle(
    monkeypatch: pytest.MonkeyPatch, cache: str, variant: dict[str, Any]
) -> None:
    monkeypatch.setattr(scheduler, "KERNEL_MIN_NODES", 1)  # every changed node through the kernel
    config = replace(BASE, cache=cache, **variant)
    result = run_simulation(config)  # verify: raises VerifyError where the kernel's memo differs
    assert result.counters.pods_scheduled + result.still_pending == config.pods
    assert result.counters.pods_scheduled > 0


def test_a_large_simulation_sends_its_changed_nodes_through_the_kernel(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    calls: list[int] = []
    real = scheduler.decide

    def counting(*args: Any, **kwargs: Any) -> Any:
        verdicts = real(*args, **kwargs)
        calls.append(len(verdicts))
        return verdicts

    monkeypatch.setattr(scheduler, "decide", counting)
    run_simulation(replace(BASE, nodes=scheduler.KERNEL_MIN_NODES + 16, pods=30, verify=False))
    assert calls and max(calls) >= scheduler.KERNEL_MIN_NODES
