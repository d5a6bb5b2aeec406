"""Ground truth for refusals: could some kubelet have admitted a pod the scheduler refused?

A node *had room* for a refused pod when its kubelet, after admitting the pods already on their
way to it (placed, not yet admitted, in order), could admit the pod, and the node has room for it
node-wide by the scheduler's own accounting. Such a refusal is the cost of stale or pessimistic
NUMA data. For each such node the cache's diagnosis (:mod:`rte.consumer.cache.diagnosis`) says
why it refused, and :attr:`RoomCheck.diagnoses` counts the answers.

Answers are memoised per (pod shape, node) and recomputed only for nodes whose kubelet or
in-flight pods changed since (:meth:`RoomCheck.changed`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

from rte.model.pod import Pod, PodKey
from rte.sim.hardware import NodeHardware
from rte.sim.kubelet import SimKubelet
from rte.sim.oracle import with_inflight

UNKNOWN = "unknown"


class RoomCheck:
    def __init__(
        self,
        names: Sequence[str],
        kubelets: Sequence[SimKubelet],
        hardware: Sequence[NodeHardware],
        inflight: Sequence[Mapping[PodKey, Pod]],
        templates: Sequence[Pod],
        node_fits: Callable[[int, int], bool],
        diagnose: Callable[[str], str] | None,
    ) -> None:
        self.names, self.kubelets, self.hardware, self.inflight = names, kubelets, hardware, inflight
        self.templates = templates
        self.node_fits = node_fits
        self.diagnose = diagnose
        self._dirty: list[set[int]] = [set(range(len(names))) for _ in templates]
        self._fit: list[set[int]] = [set() for _ in templates]
        self.diagnoses: dict[str, int] = {}
        """Per diagnosis code: nodes refused while they had room, over every refused attempt."""

    def changed(self, node: int) -> None:
        for dirty in self._dirty:
            dirty.add(node)

    def refused(self, shape: int) -> bool:
        """A pod of ``shape`` was refused: whether some node had room (and count why each was refused)."""
        fit, dirty = self._fit[shape], self._dirty[shape]
        template = self.templates[shape]
        for n in sorted(dirty):
            kubelet = with_inflight(self.kubelets[n], self.hardware[n], self.inflight[n], self.names[n])
            if kubelet.could_admit(template):
                fit.add(n)
            else:
                fit.discard(n)
        dirty.clear()
        roomy = [n for n in sorted(fit) if self.node_fits(n, shape)]
        for n in roomy:
            code = self.diagnose(self.names[n]) if self.diagnose is not None else UNKNOWN
            self.diagnoses[code] = self.diagnoses.get(code, 0) + 1
        return bool(roomy)
