"""Issue #13: the simulator's memos (the admission model's zone per pod shape and view content,
verdicts and scores per view object) change no result.

Each configuration runs twice with the same seed, once as is and once with every memo bypassed
(the admission model runs for every prediction, every node is filtered and scored again); the
counters, the pending times and every scheduling decision must be the same.
"""

from dataclasses import replace
from typing import Any

import pytest

from rte.consumer.cache import predict
from rte.sim import scheduler as sim_scheduler
from rte.sim.config import SimConfig
from rte.sim.engine import run_simulation

SMALL = SimConfig(nodes=12, pods=200, burst="20/20s", load=0.9, agent_interval=10.0)


def _run(config: SimConfig, monkeypatch: pytest.MonkeyPatch, *, memo: bool) -> dict[str, Any]:
    decisions: list[tuple[int, int | None]] = []
    decide = sim_scheduler.SimScheduler.decide
    evaluate = sim_scheduler.SimScheduler._evaluate

    def recorded(self: sim_scheduler.SimScheduler, shape: int, *hints: Any) -> int | None:
        chosen = decide(self, shape, *hints)  # hints: preemption's nominated and held nodes
        decisions.append((shape, chosen))
        return chosen

    def fresh(self: sim_scheduler.SimScheduler, node: int, shape: int, reuse: bool = True) -> int | None:
        return evaluate(self, node, shape, reuse=False)

    with monkeypatch.context() as patch:
        patch.setattr(sim_scheduler.SimScheduler, "decide", recorded)
        if not memo:
            patch.setattr(predict, "_admitted_zone", predict._admit)  # the model, every time
            patch.setattr(sim_scheduler.SimScheduler, "_evaluate", fresh)
        predict._memo.clear()
        result = run_simulation(config)
    doc = result.to_dict()
    doc.pop("timing", None)
    return {"result": doc, "pending": result.pending_by_shape, "decisions": decisions}


@pytest.mark.parametrize("seed", [1, 2, 3])
@pytest.mark.parametrize(
    "variant",
    [
        {"cache": "none"},
        {"cache": "reserve", "agent_interval": 1.0},
        {"cache": "reserve", "agent_interval": 60.0},
        {
            "cache": "reserve",
            "shapes": "4x8c-64Gi",
            "pod_mix": "60%:2c-2Gi,40%:10c-8Gi",
            "policy": "restricted",
        },
    ],
)
def test_memos_change_no_result(seed: int, variant: dict[str, Any], monkeypatch: pytest.MonkeyPatch) -> None:
    config = replace(SMALL, seed=seed, **variant)
    with_memo = _run(config, monkeypatch, memo=True)
    without = _run(config, monkeypatch, memo=False)
    assert with_memo["result"]["counters"]["pods_scheduled"] > 0
    assert with_memo == without
