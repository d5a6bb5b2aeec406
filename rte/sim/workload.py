"""The pods a simulation creates: when, of which shape, for how long.

Arrivals merge two streams until the requested number of pods is reached: a Poisson stream
(exponential gaps at ``rate`` pods/s) and, optionally, bursts of N pods at once every T seconds.
Run times are exponential with the given mean (at least one second). Every random draw comes
from generators seeded from the simulation seed and a stream name, so one seed always gives the
same workload, whatever else changes (node count, cache mode, agent cadence).
"""

from __future__ import annotations

import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from rte.errors import InputError
from rte.model.pod import QOS_BURSTABLE, QOS_GUARANTEED, Container, Pod
from rte.model.quantity import Amount
from rte.sim.config import SimConfig
from rte.sim.specs import Burst, PodShape

NAMESPACE = "sim"
MIN_DURATION = 1.0


def stream(seed: int, name: str) -> random.Random:
    """An independent, reproducible generator for one purpose (string seeds hash with SHA-512)."""
    return random.Random(f"rte-sim/{seed}/{name}")


@dataclass(frozen=True, slots=True)
class Arrival:
    index: int
    time: float
    shape: int
    """Index into the pod mix."""
    duration: float
    priority: int = 0
    """The pod's priority class: its position in the priority mix (its ``spec.priority``)."""


@dataclass(slots=True)
class SimPod:
    """One original pod across its incarnations (replacements after TopologyAffinityErrors)."""

    arrival: Arrival
    pod: Pod
    node: int = -1
    incarnation: int = 0
    had_tae: bool = False
    evicted: bool = False
    """Preempted: deleted for a higher-priority pod, not replaced."""


def template_pod(shape: PodShape, scheduler_name: str, name: str = "template") -> Pod:
    """A pod of ``shape``, not bound to any node: Guaranteed (limits equal requests) unless the
    shape is Burstable (every container's CPU limit twice its request)."""

    def container(
        container_name: str, request: Mapping[str, Amount], restart: str | None = None
    ) -> Container:
        limits = dict(request)
        if shape.burstable:
            limits["cpu"] = 2 * request["cpu"]
        return Container(name=container_name, requests=dict(request), limits=limits, restart_policy=restart)

    inits = tuple(
        container(
            f"{'sidecar' if init.sidecar else 'init'}{i}",
            {"cpu": init.cpus, "memory": init.memory},
            "Always" if init.sidecar else None,
        )
        for i, init in enumerate(shape.inits)
    )
    return Pod(
        namespace=NAMESPACE,
        name=name,
        phase="Pending",
        scheduler_name=scheduler_name,
        containers=tuple(container(f"c{i}", shape.request) for i in range(shape.containers)),
        init_containers=inits,
        status_qos_class=QOS_BURSTABLE if shape.burstable else QOS_GUARANTEED,
    )


def mean_cpus(mix: Sequence[tuple[float, PodShape]]) -> float:
    """Average CPUs per pod of the mix (as the scheduler counts a pod's CPU request)."""
    return sum(p / 100.0 * float(s.pod_cpus) for p, s in mix)


def arrivals(
    *,
    pods: int,
    mix: Sequence[tuple[float, PodShape]],
    rate: float,
    burst: Burst | None,
    mean_duration: float,
    seed: int,
    priority_shares: Sequence[float] = (),
) -> list[Arrival]:
    """``pods`` arrivals in time order (a burst's pods share one time); each pod's priority class
    drawn by ``priority_shares`` (none: 0) from a stream of its own, so that a priority mix changes
    nothing else of the workload."""
    if pods < 0:
        raise InputError("--pods", f"must not be negative, got {pods}")
    if pods and rate <= 0 and burst is None:
        raise InputError("--rate", "with no bursts, the arrival rate must be positive")
    times = stream(seed, "arrival-times")
    kinds = stream(seed, "pod-shapes")
    lives = stream(seed, "durations")
    ranks = stream(seed, "priorities")
    classes = range(len(priority_shares))
    weights = [p for p, _ in mix]
    out: list[Arrival] = []
    next_poisson = times.expovariate(rate) if rate > 0 else float("inf")
    next_burst = burst.period if burst is not None else float("inf")
    while len(out) < pods:
        if next_burst <= next_poisson and burst is not None:
            t, count = next_burst, burst.size
            next_burst += burst.period
        else:
            t, count = next_poisson, 1
            next_poisson += times.expovariate(rate)
        for _ in range(min(count, pods - len(out))):
            shape = kinds.choices(range(len(mix)), weights)[0]
            duration = max(MIN_DURATION, lives.expovariate(1.0 / mean_duration))
            priority = ranks.choices(classes, priority_shares)[0] if len(priority_shares) > 1 else 0
            out.append(Arrival(len(out), t, shape, duration, priority))
    return out


def plan_arrivals(
    config: SimConfig, mix: Sequence[tuple[float, PodShape]], total_cpus: float
) -> tuple[float, list[Arrival]]:
    """The Poisson rate and the arrivals of a run.

    Without an explicit ``rate``, the rate is chosen so that the CPU demand (rate x mean CPUs x
    mean duration), bursts included, is ``load`` of the cluster's allocatable CPUs.
    """
    burst = config.parsed_burst()
    if config.rate is not None:
        rate = config.rate
    else:
        wanted = config.load * total_cpus / (mean_cpus(mix) * config.mean_duration)
        rate = max(0.0, wanted - (burst.size / burst.period if burst else 0.0))
    planned = arrivals(
        pods=config.pods,
        mix=mix,
        rate=rate,
        burst=burst,
        mean_duration=config.mean_duration,
        seed=config.seed,
        priority_shares=[c.share for c in config.priority_classes()],
    )
    return rate, planned
