"""The discrete-event loop tying the simulated kubelets, agents, scheduler and cache together.

A pod's life: created (Pending, unbound) -> queued -> a scheduling cycle picks a node and
``reserve``\\ s it in the NRT cache -> bound after ``bind_latency`` -> the kubelet admits it
after ``admit_delay`` (Running; its pending time ends here) -> it runs for its sampled duration
and is deleted. A pod the kubelet rejects (TopologyAffinityError) turns Failed, and
``tae_backoff`` later is replaced under a new name; its pending time counts from the original.
With ``--preemption``, a pod no cycle places may evict lower-priority running pods
(:mod:`rte.sim.preemption`); they are deleted, not replaced.

Agents publish when their kubelet changed, on the cadence of :mod:`rte.sim.cadence`; an object
reaches the scheduler's store ``publish_delay + watch_delay`` later. Every pod change reaches
the cache as a pod informer event. The reserve cache resyncs every ``cache_resync_period``. An NRT
reaching the store and a pod deletion or failure are cluster events that requeue unschedulable
pods; a cache flush is not (as in the reference plugin), unless ``requeue_on_flush``. With
``--cache oracle`` the scheduler reads the kubelets themselves (:mod:`rte.sim.oracle`).

Ground truth kept beside the real code, for the checks: each published NRT carries the set of
pods the kubelet had admitted (or failed) when the agent read it, and a resync comparison must
match exactly when that set equals the node's pods now (``fingerprint_disagreements`` counts
violations); refusals while a kubelet had room are counted with the cache's diagnosis
(:mod:`rte.sim.room`).
"""

from __future__ import annotations

import heapq
import time
from collections.abc import Callable
from dataclasses import replace
from typing import Any

from rte.consumer.config import DEFAULT_PROFILE, CacheMode
from rte.consumer.requests import prepare_pod
from rte.consumer.score import ScoringStrategy
from rte.consumer.store import ADDED, DELETED, MODIFIED, NRTStore
from rte.model.pod import PHASE_RUNNING, Pod
from rte.model.topology import NodeTopology
from rte.model.vocabulary import FingerprintMethod
from rte.sim.cadence import AgentCadence
from rte.sim.cluster import PHASE_FAILED, build_cache, build_nodes, counted_phases, counted_pods, exclusivity
from rte.sim.collector import fewer_collections
from rte.sim.config import CACHE_ORACLE, PREEMPTION_NUMA, PREEMPTION_OFF, SimConfig
from rte.sim.oracle import OracleCache, exact_topology
from rte.sim.preemption import SimPreemption
from rte.sim.progress import Point, Progress
from rte.sim.queue import LEFTOVER_CHECK, SchedulingQueue
from rte.sim.result import Counters, PendingTimes, SimResult
from rte.sim.room import RoomCheck
from rte.sim.scheduler import SimScheduler
from rte.sim.series import Series
from rte.sim.specs import parse_pod_mix
from rte.sim.workload import SimPod, plan_arrivals, stream, template_pod

DEFAULT_HORIZON = 1800.0
DEFAULT_SAMPLES = 200

Key = tuple[str, str]

# Event codes (the heap holds (time, seq, code, arg, payload)).
ARRIVE, TICK, BIND, ADMIT, DEPART, RECREATE, AGENT_TICK, DELIVER, RESYNC, LEFTOVER, SAMPLE = range(11)


class Simulation:
    """Build with a :class:`SimConfig`, then :meth:`run` once."""

    def __init__(self, config: SimConfig) -> None:
        self.cfg = config
        self.now = 0.0
        self.counters = Counters()
        mix = parse_pod_mix(config.pod_mix)
        nodes = build_nodes(config)
        self.names = nodes.names
        self.hardware = nodes.hardware
        self.kubelets = nodes.kubelets
        self.agents = nodes.agents
        self.index = {name: i for i, name in enumerate(self.names)}
        self.counted_phases = counted_phases(nodes.agent_informer_mode)
        only = config.fingerprint_method is FingerprintMethod.WITH_EXCLUSIVE_RESOURCES
        self.exclusive = [exclusivity(hw.node_allocatable) if only else None for hw in self.hardware]

        self.store = NRTStore()
        self.cache, mode = build_cache(config, self.store, self._clock)
        self.reserve_mode = mode is CacheMode.OVER_RESERVE
        self.oracle: OracleCache | None = None
        if config.cache == CACHE_ORACLE:
            self.cache = self.oracle = OracleCache(self, self.cache.config)
        self.inflight: list[dict[Key, Pod]] = [{} for _ in self.names]
        """Per node, the pods placed there and not yet through admission, in placement order."""

        self.templates = [template_pod(shape, DEFAULT_PROFILE) for _, shape in mix]
        total_cpus = sum(hw.node_allocatable["cpu"] for hw in self.hardware)
        self.rate, self.arrivals = plan_arrivals(config, mix, total_cpus)
        last_arrival = self.arrivals[-1].time if self.arrivals else 0.0
        self.max_time = config.max_time if config.max_time is not None else last_arrival + DEFAULT_HORIZON
        self.sample_period = config.sample_period or max(1.0, self.max_time / DEFAULT_SAMPLES)

        self.scheduler = SimScheduler(
            node_names=self.names,
            node_allocatable=[hw.node_allocatable for hw in self.hardware],
            cache=self.cache,
            shapes=[prepare_pod(t, compat=config.compat) for t in self.templates],
            strategy=ScoringStrategy(config.strategy),
            rng=stream(config.seed, "ties"),
            report_marks=self.reserve_mode,
            dirty_after_failures=config.dirty_after_failures,
            verify=config.verify,
        )
        self.queue = SchedulingQueue()
        self.pods: list[SimPod] = []
        self.api: dict[Key, Pod] = {}
        """Every pod the API holds (what the scheduler's pod informer lists)."""
        self.bound: list[dict[Key, Pod]] = [{} for _ in self.names]
        self.store_truth: list[frozenset[Key]] = [frozenset() for _ in self.names]
        phases, interval = stream(config.seed, "agent-phases"), config.agent_interval
        offsets = [phases.uniform(0.0, interval) if interval else 0.0 for _ in self.names]
        self.cadence = AgentCadence(config.agent_cadence, interval, config.agent_min_gap, offsets)
        classes = [c.name for c in config.priority_classes()]
        self.pending = PendingTimes([shape.text for _, shape in mix], classes)
        numa = config.preemption == PREEMPTION_NUMA
        self.preemption = None if config.preemption == PREEMPTION_OFF else SimPreemption(self, numa)
        self.sampled = Series()
        self.running = 0
        self.room = RoomCheck(
            self.names,
            self.kubelets,
            self.hardware,
            self.inflight,
            self.templates,
            self.scheduler.node_fits,
            getattr(self.cache, "diagnose", None),
        )

        self._heap: list[tuple[float, int, int, int, Any]] = []
        self._seq = 0
        self._tick_at: float | None = None
        self._tick_token = 0
        self._busy_until = 0.0
        self._stop = False
        self._handlers: list[Callable[[int, Any], None]] = [
            self._arrive, self._tick, self._bind, self._admit, self._depart, self._recreate,
            self._agent_tick, self._deliver, self._resync, self._leftover, self._sample,
        ]  # fmt: skip

    # --- plumbing --------------------------------------------------------------------------

    def _clock(self) -> float:
        return self.now

    def _push(self, at: float, code: int, arg: int = 0, payload: Any = None) -> None:
        self._seq += 1
        heapq.heappush(self._heap, (at, self._seq, code, arg, payload))

    def run(self, progress: Progress | None = None) -> SimResult:
        """Run to the end; ``progress`` is told where the run is every few thousand events."""
        started = time.perf_counter()
        for n, agent in enumerate(self.agents):
            # Agents run before the workload starts: every node has its NRT at time 0.
            out = agent.publish(self.bound[n])
            if out is not None:
                self.store.apply(ADDED, out[0])
        for a in self.arrivals:
            self._push(a.time, ARRIVE, a.index)
        if self.reserve_mode:
            self._push(self.cfg.cache_resync_period, RESYNC)
        self._push(LEFTOVER_CHECK, LEFTOVER)
        self._push(0.0, SAMPLE)
        heap, handlers, counters, pods = self._heap, self._handlers, self.counters, len(self.arrivals)
        while heap and not self._stop:
            at, _, code, arg, payload = heapq.heappop(heap)
            if at > self.max_time:
                break
            self.now = at
            counters.events += 1
            handlers[code](arg, payload)
            if progress is not None and not counters.events & 0xFFF:  # every 4096 events
                progress.update(Point(at, self.max_time, counters.pods_scheduled, pods, counters.events))
        self._sample(0, None, reschedule=False)
        if self.preemption is not None:
            self.preemption.finish()
        if progress is not None:
            progress.done(Point(self.now, self.max_time, counters.pods_scheduled, pods, counters.events))
        wall = time.perf_counter() - started
        counters.filter_evaluations = self.scheduler.evaluations
        counters.accounting_findings = sum(a.findings for a in self.agents)
        counters.refused_with_room = dict(sorted(self.room.diagnoses.items()))
        if self.reserve_mode:
            nodes = self.cache.state_dump(self.now)["nodes"].values()
            counters.nrt_adoptions = sum(n.get("adoptions", 0) for n in nodes)
            counters.nrt_unmatched = sum(n.get("historyMismatches", 0) for n in nodes)
        return SimResult(
            config=self.cfg.to_dict(),
            counters=counters,
            pending_times=sorted(self.pending.every),
            pending_by_shape=self.pending.by_shape(),
            pending_by_priority=self.pending.by_priority(),
            still_pending=len(self.arrivals) - counters.pods_scheduled,
            sim_time=self.now,
            wall_seconds=wall,
            rate=self.rate,
            series=self.sampled.data,
        )

    # --- the scheduler's worker and queue ----------------------------------------------------

    def _want_tick(self, at: float) -> None:
        at = max(at, self._busy_until)
        if self._tick_at is not None and self._tick_at <= at:
            return
        self._tick_token += 1
        self._tick_at = at
        self._push(at, TICK, self._tick_token)

    def _kick(self) -> None:
        if self.queue.active:
            self._want_tick(self.now)
        else:
            expiry = self.queue.next_backoff_expiry()
            if expiry is not None:
                self._want_tick(expiry)

    def _cluster_event(self) -> None:
        if self.queue.move_all(self.now):
            self._kick()

    def _tick(self, token: int, _: Any) -> None:
        if token != self._tick_token:
            return  # superseded by an earlier tick
        self._tick_at = None
        pid = self.queue.pop(self.now)
        if pid is None:
            self._kick()
            return
        self._busy_until = self.now + self.cfg.schedule_cycle
        self._schedule(pid)
        self._kick()

    def _schedule(self, pid: int) -> None:
        sp = self.pods[pid]
        shape = sp.arrival.shape
        self.counters.scheduling_attempts += 1
        nominated, held = self.preemption.placement_hints(pid) if self.preemption else (None, ())
        node = self.scheduler.decide(shape, nominated, held)
        if node is None:
            self.counters.unschedulable_attempts += 1
            if self.room.refused(shape):
                self.counters.unschedulable_with_room += 1
            self.queue.failed(pid, self.now)
            if self.preemption is not None and self.preemption.preempt(pid):
                self._cluster_event()  # the victims' deletion
            self.sampled.rose(refused=self.queue.refused)
            return
        self.queue.done(pid)
        sp.node = node
        self.inflight[node][sp.pod.key] = sp.pod
        self.room.changed(node)
        self.cache.reserve(self.names[node], sp.pod)
        self.scheduler.assume(node, shape)
        self._push(self.now + self.cfg.bind_latency, BIND, pid)

    def _kubelet_changed(self, node: int) -> None:
        self.room.changed(node)
        if self.oracle is not None:
            self.oracle.invalidate(self.names[node])
            self.scheduler.node_changed(node)
        self._agent_changed(node)

    def exact_topology(self, node: str) -> NodeTopology | None:
        n = self.index[node]
        return exact_topology(
            node, self.kubelets[n], self.hardware[n], self.inflight[n], self.bound[n], self.cfg
        )

    # --- pod life ----------------------------------------------------------------------------

    def _set_pod(self, sp: SimPod, pod: Pod) -> None:
        sp.pod = pod
        self.api[pod.key] = pod
        if pod.node_name:
            self.bound[sp.node][pod.key] = pod
            self.cache.on_pod_event(MODIFIED, pod)  # the scheduler's pod informer
            self.scheduler.node_changed(sp.node)  # the cache may have adopted an NRT

    def _arrive(self, pid: int, _: Any) -> None:
        arrival = self.arrivals[pid]
        template = self.templates[arrival.shape]
        pod = replace(template, name=f"p{pid:06d}", uid=f"u{pid}", priority=arrival.priority)
        self.pods.append(SimPod(arrival, pod))
        self.api[pod.key] = pod
        self.counters.pods_created += 1
        self.queue.add(pid, self.now, arrival.priority)
        self.sampled.rose(pending=self.counters.pods_created - self.counters.pods_scheduled)
        self._kick()

    def _bind(self, pid: int, _: Any) -> None:
        sp = self.pods[pid]
        name = self.names[sp.node]
        self._set_pod(sp, replace(sp.pod, node_name=name))
        self.cache.post_bind(name, sp.pod)
        self.scheduler.node_changed(sp.node)
        self._push(self.now + self.cfg.admit_delay, ADMIT, pid)

    def _admit(self, pid: int, _: Any) -> None:
        sp = self.pods[pid]
        node = sp.node
        del self.inflight[node][sp.pod.key]
        self.room.changed(node)
        if self.oracle is not None:
            self.oracle.invalidate(self.names[node])
            self.scheduler.node_changed(node)
        if self.kubelets[node].admit(sp.pod) is not None:
            self._set_pod(sp, replace(sp.pod, phase=PHASE_RUNNING))
            waited = self.now - sp.arrival.time
            self.pending.record(waited, sp.arrival.shape, sp.arrival.priority)
            if self.preemption is not None:
                self.preemption.started(pid, node)
                self.preemption.reached_kubelet(pid, node, True)
            self.counters.pods_scheduled += 1
            self.running += 1
            self._kubelet_changed(node)
            self._push(self.now + sp.arrival.duration, DEPART, pid)
            if self.counters.pods_scheduled == len(self.arrivals):
                self._stop = True
            return
        self.counters.topology_affinity_errors += 1
        if self.preemption is not None:
            self.preemption.reached_kubelet(pid, node, False)
        if not sp.had_tae:
            sp.had_tae = True
            self.counters.pods_with_tae += 1
        self._set_pod(sp, replace(sp.pod, phase=PHASE_FAILED))
        self.scheduler.forget(node, sp.arrival.shape)
        self._agent_changed(node)  # a failed pod is part of the node's pod set until deleted
        self._cluster_event()
        self._push(self.now + self.cfg.tae_backoff, RECREATE, pid)

    def _delete(self, sp: SimPod) -> None:
        key = sp.pod.key
        del self.api[key]
        del self.bound[sp.node][key]
        self.cache.on_pod_event(DELETED, sp.pod)
        self.scheduler.node_changed(sp.node)
        self._agent_changed(sp.node)

    def _recreate(self, pid: int, _: Any) -> None:
        sp = self.pods[pid]
        self._delete(sp)
        self._cluster_event()
        sp.incarnation += 1
        sp.node = -1
        template = self.templates[sp.arrival.shape]
        name, uid = f"p{pid:06d}-{sp.incarnation}", f"u{pid}-{sp.incarnation}"
        self._set_pod(sp, replace(template, name=name, uid=uid, priority=sp.arrival.priority))
        self.queue.add(pid, self.now, sp.arrival.priority)
        self._kick()

    def _depart(self, pid: int, _: Any) -> None:
        if not self.pods[pid].evicted:
            self.evict(pid, preempted=False)

    def evict(self, pid: int, *, preempted: bool = True) -> None:
        """The running pod ``pid`` ends: its run is over, or preemption deleted it."""
        sp = self.pods[pid]
        sp.evicted = preempted
        node = sp.node
        if self.preemption is not None:
            self.preemption.ended(pid, node)
        self.kubelets[node].release(sp.pod.key)
        self.running -= 1
        self._delete(sp)
        self.scheduler.forget(node, sp.arrival.shape)
        self._kubelet_changed(node)
        self._cluster_event()

    # --- node agents -------------------------------------------------------------------------

    def _agent_changed(self, node: int) -> None:
        at = self.cadence.changed(node, self.now)
        if at is not None:
            self._push(at, AGENT_TICK, node, at)

    def _truth(self, node: int) -> frozenset[Key]:
        return counted_pods(self.bound[node], self.counted_phases, self.exclusive[node])

    def _agent_tick(self, node: int, at: float) -> None:
        if not self.cadence.fire(node, at):
            return
        out = self.agents[node].publish(self.bound[node])
        if out is None:
            self.counters.nrt_skipped += 1
            return
        self.counters.nrt_writes += 1
        self.cadence.wrote(node, self.now)
        delay = self.cfg.publish_delay + self.cfg.watch_delay
        self._push(self.now + delay, DELIVER, node, (out[0], self._truth(node), self.now))

    def _deliver(self, node: int, payload: tuple[NodeTopology, frozenset[Key], float]) -> None:
        topology, truth, read_at = payload
        if self.preemption is not None:
            self.preemption.delivered(node, read_at)
        if self.store.apply(MODIFIED, topology):
            self.counters.store_updates += 1
            self.store_truth[node] = truth
            self.scheduler.node_changed(node)
            self._cluster_event()

    # --- the reserve cache's resync ----------------------------------------------------------

    def _same_pods(self, name: str) -> bool:
        """The node's NRT in the store counted exactly the pods the node has now."""
        node = self.index[name]
        return self.store_truth[node] == self._truth(node)

    def _resync(self, _: int, __: Any) -> None:
        c = self.counters
        report = self.cache.resync(list(self.api.values()), self.now)
        c.count_comparisons(
            report, lambda name: self.store_truth[self.index[name]] == self._truth(self.index[name])
        )
        for name in report.flushed:
            c.flushes += 1
            self.scheduler.flushed(self.index[name])
        for name in report.config_flushed:
            c.config_flushes += 1
            self.scheduler.node_changed(self.index[name])
        if self.cfg.requeue_on_flush and (report.flushed or report.config_flushed):
            self._cluster_event()
        self._push(self.now + self.cfg.cache_resync_period, RESYNC)

    # --- housekeeping ------------------------------------------------------------------------

    def _leftover(self, _: int, __: Any) -> None:
        if self.queue.flush_leftover(self.now):
            self._kick()
        self._push(self.now + LEFTOVER_CHECK, LEFTOVER)

    def _sample(self, _: int, __: Any, reschedule: bool = True) -> None:
        c = self.counters
        pending, tae = c.pods_created - c.pods_scheduled, c.topology_affinity_errors
        self.sampled.sample(
            self.now, pending=pending, running=self.running, tae=tae, refused=self.queue.refused
        )
        if reschedule:
            self._push(self.now + self.sample_period, SAMPLE)


def run_simulation(config: SimConfig, progress: Progress | None = None) -> SimResult:
    """Run one simulation."""
    with fewer_collections():
        return Simulation(config).run(progress)
