"""The simulator's pace of cyclic garbage collection (rte/sim/collector.py, issue #27)."""

import gc

import pytest

from rte.sim import collector
from rte.sim.config import SimConfig
from rte.sim.engine import Simulation, run_simulation
from rte.sim.progress import Progress
from rte.sim.result import SimResult


def test_a_run_collects_at_its_own_pace_and_restores_the_callers(monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[tuple[int, int, int]] = []
    run = Simulation.run

    def watched(self: Simulation, progress: Progress | None = None) -> SimResult:
        seen.append(gc.get_threshold())
        return run(self, progress)

    monkeypatch.setattr(Simulation, "run", watched)
    before = gc.get_threshold()
    run_simulation(SimConfig(nodes=2, pods=10))
    assert seen == [collector.GC_THRESHOLDS]
    assert gc.get_threshold() == before != collector.GC_THRESHOLDS
