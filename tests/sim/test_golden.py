"""Issue #27: seeded runs give the very results (and decisions) recorded before the speed work.

Each configuration's JSON output (``timing`` left out) and a digest of every scheduling decision
(the pod shape and the node chosen, cycle by cycle) are compared with ``tests/sim/golden/``,
recorded by the simulator as it was before issue #27's speed work (the reserve cache's views
built in one step, the shapes' per-view verdicts forgotten): at main b68e123, and again at b149953
once the runs' configuration carried the new CPU manager options (the same decisions). A change that moves
one pod to another node fails here, where ``test_memo_equivalence`` (memos on against memos off,
in the same code) cannot see it.

After a deliberate change of the simulator's behaviour, record again with
``RTE_RECORD_GOLDEN=1 python -m pytest tests/sim/test_golden.py`` and say why in the commit.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Any

import pytest

from rte.sim import scheduler as sim_scheduler
from rte.sim.config import SimConfig
from rte.sim.engine import run_simulation

GOLDEN = Path(__file__).parent / "golden"
BASE: dict[str, Any] = {"nodes": 16, "pods": 400}
CONFIGS: dict[str, dict[str, Any]] = {
    "reserve-1s": {"cache": "reserve", "agent_interval": 1.0, "seed": 3},
    "reserve-60s-bursts": {
        "cache": "reserve",
        "agent_interval": 60.0,
        "burst": "16/60s",
        "load": 0.9,
        "seed": 4,
    },
    "priorities-numa-preemption": {
        "cache": "reserve",
        "priority_mix": "low=0.7,high=0.3",
        "preemption": "numa",
        "load": 0.95,
        "seed": 5,
    },
    "priorities-blind-preemption": {
        "cache": "reserve",
        "priority_mix": "low=0.6,high=0.4",
        "preemption": "blind",
        "load": 0.95,
        "burst": "12/60s",
        "seed": 6,
    },
    "restricted": {
        "cache": "reserve",
        "policy": "restricted",
        "shapes": "4x8c-64Gi",
        "pod_mix": "60%:2c-2Gi,40%:10c-8Gi",
        "seed": 7,
    },
    "pod-scope-mixed": {
        "cache": "reserve",
        "scope": "pod",
        "shapes": "70%:2x32c2t-192Gi,30%:4x16c-128Gi+nic4",
        "pod_mix": "80%:4c-8Gi,20%:2x2c-4Gi+nic1",
        "seed": 8,
    },
    "reference-reserve": {"cache": "reference-reserve", "burst": "16/60s", "load": 0.9, "seed": 9},
    "passthrough": {"cache": "none", "seed": 10},
    "init-sidecar-burstable": {
        "cache": "reserve",
        "dirty_after_failures": 3,
        "follow_clean_nodes": False,
        "requeue_on_flush": True,
        "pod_mix": "50%:2c-4Gi+init1c,30%:4c-8Gi+sidecar1c,20%:3.5c-8Gi+burstable",
        "seed": 14,
    },
}


def observed(config: SimConfig, monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    """The run's JSON (series included, timing left out) and the digest of its decisions."""
    digest = hashlib.sha256()
    decide = sim_scheduler.SimScheduler.decide

    def recorded(self: sim_scheduler.SimScheduler, shape: int, *hints: Any) -> int | None:
        chosen = decide(self, shape, *hints)
        digest.update(f"{shape}:{chosen};".encode())
        return chosen

    with monkeypatch.context() as patch:
        patch.setattr(sim_scheduler.SimScheduler, "decide", recorded)
        doc = run_simulation(config).to_dict(series=True)
    doc.pop("timing", None)
    return {"result": json.loads(json.dumps(doc)), "decisions": digest.hexdigest()}


@pytest.mark.parametrize("name", sorted(CONFIGS))
def test_seeded_runs_are_as_recorded(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    got = observed(SimConfig(**{**BASE, **CONFIGS[name]}), monkeypatch)
    path = GOLDEN / f"{name}.json"
    if os.environ.get("RTE_RECORD_GOLDEN"):
        path.write_text(json.dumps(got, indent=1, sort_keys=True) + "\n")
    want = json.loads(path.read_text())
    assert got["result"]["counters"]["pods_scheduled"] > 0
    assert got["decisions"] == want["decisions"]
    assert got["result"] == want["result"]
