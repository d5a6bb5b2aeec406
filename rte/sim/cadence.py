"""When each simulated node agent publishes next: on a timer, or sooner while the node is busy.

``periodic`` is the reference agents' cadence (kubernetes-sigs/resource-topology-exporter's
``--sleep-interval``): every node publishes on its own phase-shifted timer, and only when its
kubelet's state changed, so a change waits up to ``agent_interval``.

``adaptive`` is rte's agent (:mod:`rte.agent.loop`: the podresources poll and the pod watch
trigger a cycle, writes limited by ``publish_qps``): a change on a *busy* node is published as
soon as the write rate limit allows (at most one write per ``agent_min_gap`` per node), the timer
still covers the others. A node is busy when some zone of its last published NRT has less than
half its allocatable CPUs available (near full: a scheduler waits for every CPU it frees), or
when its previous change was less than ``agent_interval`` ago (churning). A node whose pods do
not change writes nothing at all, so steady-state writes stay far below one per node per hour.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from rte.model.topology import NodeTopology

CADENCE_PERIODIC = "periodic"
CADENCE_ADAPTIVE = "adaptive"
CADENCES = (CADENCE_ADAPTIVE, CADENCE_PERIODIC)
_CPU = "cpu"


def near_full(topology: NodeTopology | None) -> bool:
    """Some NUMA zone has less than half its allocatable CPUs available."""
    if topology is None:
        return False
    for zone in topology.numa_zones():
        for res in zone.resources:
            if res.name == _CPU and res.available * 2 < res.allocatable:
                return True
    return False


class AgentCadence:
    """Per node: the next publish time, the last write and the last change."""

    def __init__(self, cadence: str, interval: float, min_gap: float, phases: Sequence[float]) -> None:
        self.adaptive = cadence == CADENCE_ADAPTIVE
        self.interval = interval
        self.min_gap = min_gap
        self.phase = list(phases)
        self.due: list[float | None] = [None] * len(self.phase)
        self.last_write = [-math.inf] * len(self.phase)
        self.last_change = [-math.inf] * len(self.phase)

    def _periodic(self, node: int, now: float) -> float:
        if not self.interval:
            return now
        phase = self.phase[node]
        return phase + max(math.ceil((now - phase) / self.interval), 0) * self.interval

    def changed(self, node: int, now: float, published: NodeTopology | None) -> float | None:
        """The node's state changed: the time of a new publish to schedule, or None (one is due
        soon enough already)."""
        at = self._periodic(node, now)
        churning = now - self.last_change[node] < self.interval
        self.last_change[node] = now
        if self.adaptive and (churning or near_full(published)):
            at = min(at, max(now, self.last_write[node] + self.min_gap))
        due = self.due[node]
        if due is not None and due <= at:
            return None
        self.due[node] = at
        return at

    def fire(self, node: int, at: float) -> bool:
        """A publish scheduled for ``at`` is due; False when a sooner one superseded it."""
        if self.due[node] != at:
            return False
        self.due[node] = None
        return True

    def wrote(self, node: int, now: float) -> None:
        self.last_write[node] = now
