"""When each simulated node agent publishes next: on a timer, or sooner while the node is busy.

``periodic`` is the reference agents' cadence (kubernetes-sigs/resource-topology-exporter's
``--sleep-interval``): every node publishes on its own phase-shifted timer, and only when its
kubelet's state changed, so a change waits up to ``agent_interval``.

``adaptive`` is rte's agent (:mod:`rte.agent.loop`: the podresources poll and the pod watch
trigger a cycle, writes go through a token bucket of ``publish_qps`` and ``publish_burst``): a
change is published as soon as the bucket has a token (``agent_min_gap`` seconds per token, a
burst of :data:`BURST`); the timer only matters when that is later. A node whose pods do not
change writes nothing at all, so steady-state writes stay far below one per node per hour, and a
busy node writes at most once per gap once its burst is spent.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

CADENCE_PERIODIC = "periodic"
CADENCE_ADAPTIVE = "adaptive"
CADENCES = (CADENCE_ADAPTIVE, CADENCE_PERIODIC)
BURST = 3
"""Writes the adaptive agent may make back to back (rte run's ``publish_burst`` default)."""


class AgentCadence:
    """Per node: the next publish time and the write token bucket."""

    def __init__(self, cadence: str, interval: float, min_gap: float, phases: Sequence[float]) -> None:
        self.adaptive = cadence == CADENCE_ADAPTIVE
        self.interval = interval
        self.min_gap = min_gap
        self.phase = list(phases)
        self.due: list[float | None] = [None] * len(self.phase)
        self.tokens = [float(BURST)] * len(self.phase)
        self.refilled = [0.0] * len(self.phase)

    def _periodic(self, node: int, now: float) -> float:
        if not self.interval:
            return now
        phase = self.phase[node]
        return phase + max(math.ceil((now - phase) / self.interval), 0) * self.interval

    def changed(self, node: int, now: float) -> float | None:
        """The node's state changed: the time of a new publish to schedule, or None (one is due
        soon enough already)."""
        at = self._periodic(node, now)
        if self.adaptive:
            at = min(at, now + self.min_gap * max(0.0, 1.0 - self._tokens(node, now)))
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

    def _tokens(self, node: int, now: float) -> float:
        tokens = min(float(BURST), self.tokens[node] + (now - self.refilled[node]) / self.min_gap)
        self.tokens[node], self.refilled[node] = tokens, now
        return tokens

    def wrote(self, node: int, now: float) -> None:
        self.tokens[node] = self._tokens(node, now) - 1.0
