"""Priorities and preemption in the simulated scheduler: kube-scheduler's default preemption,
alone (``blind``) or with rte's preempt verb after it (``numa``).

When a pod's cycle finds no node, kube-scheduler's ``PostFilter`` (kubernetes/kubernetes
``pkg/scheduler/framework/preemption/preemption.go`` with ``plugins/defaultpreemption``) looks
for nodes where evicting lower-priority pods makes room:

* **victims per node** (``SelectVictimsOnNode``): every running pod of lower priority is taken
  out; if the pod then fits node-wide (``NodeResourcesFit``, the only filter of the dry run: an
  extender's Filter is not part of it), the pods are put back one by one, more important first,
  each kept when the pod still fits without it. That is all ``blind`` knows: which zone the
  freed CPUs are on is not looked at;
* **the extender** (``callExtenders``): with ``numa`` the candidates go through
  :func:`rte.consumer.preemption.victims.choose_victims`, on the view the scheduler's cache
  serves plus what each victim holds on its zones (the kubelets' exact placements: what the
  agents publish as numaplacement attributes); nodes where nothing helps are dropped and the
  victims of the others may grow;
* **the node** (``pickOneNodeForPreemption``): the lowest highest victim priority, then the
  lowest sum of priorities, then the fewest victims, then the first node.

The victims are deleted at once (graceful termination is not modelled; their controllers do not
replace them) and the pod is *nominated* to the node: it goes back to the queue as after a failed
cycle, takes the node first when it passes (``evaluateNominatedNode``), and the node is kept from
pods of lower or equal priority meanwhile (``RunFilterPluginsWithNominatedPods``, reduced to
leaving the node out, in the preemption dry run too). A nominated pod preempts again only once an
NRT read after its victims' deletion reached the scheduler (kube-scheduler waits for the victims
to terminate, ``PodEligibleToPreemptOthers``; here the room shows in the NRT only then).

A nomination ends when the pod reaches a kubelet: its victims were evicted for nothing (**false
evictions**) when that is another node or the kubelet refuses it, and also when the pod preempts
again or is still pending when the run ends.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from rte.consumer.preemption.victims import Candidate, choose_victims
from rte.model.quantity import Amount

if TYPE_CHECKING:
    from rte.sim.kubelet import SimKubelet
    from rte.sim.result import Counters
    from rte.sim.scheduler import SimScheduler
    from rte.sim.workload import SimPod


class PreemptingSimulation(Protocol):
    """What preemption reads and does of the running simulation (:class:`rte.sim.engine.Simulation`;
    a protocol, so the engine that drives this module is not imported by it)."""

    @property
    def now(self) -> float: ...

    @property
    def counters(self) -> Counters: ...

    @property
    def names(self) -> Sequence[str]: ...

    @property
    def kubelets(self) -> Sequence[SimKubelet]: ...

    @property
    def pods(self) -> Sequence[SimPod]: ...

    @property
    def scheduler(self) -> SimScheduler: ...

    @property
    def cache(self) -> Any: ...

    def evict(self, pid: int, *, preempted: bool = True) -> None: ...


@dataclass(frozen=True, slots=True)
class Nomination:
    node: int
    victims: int
    priority: int
    at: float
    """When the pod was nominated."""


class SimPreemption:
    """The preemption step of one simulation (``numa``: with rte's preempt verb)."""

    def __init__(self, sim: PreemptingSimulation, numa: bool) -> None:
        self.sim = sim
        self.numa = numa
        self.nominations: dict[int, Nomination] = {}
        """Open nominations by pod id."""
        self.running_on: list[set[int]] = [set() for _ in sim.names]
        """Pod ids each kubelet runs."""
        self.read_at = [-1.0] * len(sim.names)
        """When the NRT last delivered for each node was read from its kubelet."""

    # --- what the engine reports ---------------------------------------------------------

    def started(self, pid: int, node: int) -> None:
        self.running_on[node].add(pid)

    def ended(self, pid: int, node: int) -> None:
        self.running_on[node].discard(pid)

    def delivered(self, node: int, read_at: float) -> None:
        self.read_at[node] = max(self.read_at[node], read_at)

    def reached_kubelet(self, pid: int, node: int, admitted: bool) -> None:
        """The pod's admission on ``node``: its open nomination ends."""
        nomination = self.nominations.pop(pid, None)
        if nomination is not None and (not admitted or node != nomination.node):
            self.sim.counters.false_evictions += nomination.victims

    def finish(self) -> None:
        """The run ended: nominations still open evicted for nothing."""
        for nomination in self.nominations.values():
            self.sim.counters.false_evictions += nomination.victims
        self.nominations.clear()

    def placement_hints(self, pid: int) -> tuple[int | None, set[int]]:
        """The pod's nominated node, and the nodes other nominated pods of its priority or
        higher hold."""
        own = self.nominations.get(pid)
        priority = self.sim.pods[pid].arrival.priority
        held = {n.node for q, n in self.nominations.items() if q != pid and n.priority >= priority}
        return (own.node if own is not None else None), held

    # --- preemption ----------------------------------------------------------------------

    def preempt(self, pid: int) -> bool:
        """Try to make room for the unschedulable pod ``pid``; True when it was nominated."""
        priority = self.sim.pods[pid].arrival.priority
        own = self.nominations.get(pid)
        if own is not None and self.read_at[own.node] <= own.at:
            return False  # its victims are not yet gone from the scheduler's view
        _, held = self.placement_hints(pid)
        best: tuple[tuple[int, int, int, int], int, list[int]] | None = None
        for node, lower in enumerate(self.running_on):
            if node in held:
                continue  # the room another nominated pod waits for (the dry run counts it)
            lower_pids = sorted(q for q in lower if self.sim.pods[q].arrival.priority < priority)
            if not lower_pids:
                continue
            victims = self._fitting_victims(pid, node, lower_pids)
            if victims is not None and self.numa:
                victims = self._numa_victims(pid, node, victims, lower_pids)
            if victims is None:
                continue
            prios = [self.sim.pods[q].arrival.priority for q in victims]
            cost = (max(prios, default=-1), sum(prios), len(victims), node)
            if best is None or cost < best[0]:
                best = (cost, node, victims)
        if best is None:
            return False
        _, node, victims = best
        counters = self.sim.counters
        if own is not None:
            counters.false_evictions += own.victims
        counters.preemptions += 1
        counters.victims += len(victims)
        if self.numa:
            learn = getattr(self.sim.cache, "learn_zones", None)
            if learn is not None:
                kubelet = self.sim.kubelets[node]
                learn(
                    self.sim.names[node],
                    {self.sim.pods[q].pod.key: kubelet.held_zones(self.sim.pods[q].pod.key) for q in victims},
                )
        for q in victims:
            self.sim.evict(q)
        self.nominations[pid] = Nomination(node, len(victims), priority, self.sim.now)
        return True

    def _request(self, pid: int) -> dict[str, Amount]:
        return self.sim.scheduler.requests[self.sim.pods[pid].arrival.shape]

    def _fitting_victims(self, pid: int, node: int, lower: Sequence[int]) -> list[int] | None:
        """``SelectVictimsOnNode`` with the node-level fit: None when the pod does not fit even
        with every lower-priority pod gone."""
        scheduler = self.sim.scheduler
        allocatable = scheduler.allocatable[node]
        used = dict(scheduler.used[node])
        for q in lower:
            for r, v in self._request(q).items():
                used[r] -= v
        need = self._request(pid)

        def fits(extra: dict[str, Amount]) -> bool:
            return all(
                used.get(r, 0) + extra.get(r, 0) + need.get(r, 0) <= allocatable.get(r, 0)
                for r in need.keys() | extra.keys()
            )

        if not fits({}):
            return None
        victims = []
        # More important first: higher priority, then the earlier start (the lower pod id).
        for q in sorted(lower, key=lambda q: (-self.sim.pods[q].arrival.priority, q)):
            request = self._request(q)
            if fits(request):
                for r, v in request.items():
                    used[r] = used.get(r, 0) + v
            else:
                victims.append(q)
        return victims

    def _numa_victims(
        self, pid: int, node: int, victims: list[int], lower: Sequence[int]
    ) -> list[int] | None:
        """rte's preempt verb on the node (:func:`~rte.consumer.preemption.victims.choose_victims`)."""
        sim = self.sim
        sp = sim.pods[pid]
        lookup = sim.cache.get(sim.names[node], sp.pod)
        if not lookup.fresh:
            return None
        kubelet = sim.kubelets[node]
        taken = set(victims)

        def candidate(q: int) -> Candidate:
            pod = sim.pods[q].pod
            return Candidate(pod, kubelet.held_zones(pod.key) or None)

        by_key = {sim.pods[q].pod.key: q for q in lower}
        choice = choose_victims(
            sim.scheduler.shapes[sp.arrival.shape],
            lookup.view,
            [candidate(q) for q in victims],
            [candidate(q) for q in lower if q not in taken],
            sp.arrival.priority,
        )
        return None if choice is None else [by_key[c.pod.key] for c in choice.victims]
