"""The simulator's small text languages: bursts, node shapes and pod mixes.

Every parser raises :class:`~rte.errors.InputError` naming the option and the offending text, so
the CLI prints one line instead of a traceback.

* Burst: ``N/T``, N pods at once every T (a duration as :mod:`rte.durations` reads it, or a
  plain number of seconds): ``200/60s``.
* Node shapes: comma-separated ``[P%:]<zones>x<cpus>c[<threads>t][<sockets>s]-<memory>[+extra...]``,
  e.g. ``70%:2x32c2t-192Gi,30%:4x16c-128Gi+nic4``. ``<cpus>`` are the logical CPUs of each zone,
  grouped into cores of ``<threads>`` hardware threads (default 1: no SMT); the zones sit on
  ``<sockets>`` sockets, consecutive zones sharing one (default: one socket per zone;
  ``4x16c2t2s`` is two sockets of two NUMA zones each, as Intel SNC2 or AMD NPS2).
  ``memory`` is the node's regular memory (hugepages excluded), split evenly over its zones.
  Extras, per zone: ``hp<N>`` (N 1Gi hugepages) or ``<name><N>`` (N devices of
  ``example.com/<name>``); ``<name><N>@<W>``: the zones in consecutive groups of W (W of at least
  2, dividing the zones), N devices attached to all the zones of each group (a device plugin
  reporting several NUMA nodes for one device). Percentages must add up to 100; a single entry
  may omit its percentage.
* Pod mix: comma-separated ``[P%:][<k>x]<cpus>c-<memory>[+extra...]``, each a pod of k identical
  app containers (default 1) with that request per container, Guaranteed (limits equal requests)
  unless ``+burstable``. ``<cpus>`` may be fractional (``1.5c``: 1500m, which the CPU manager
  never pins). Extras, per app container: ``hp<N>`` (N Gi of ``hugepages-1Gi``) or ``<name><N>``
  (N ``example.com/<name>`` devices); per pod, in the order written: ``init<C>c[-<M>]`` (an init
  container with C CPUs and M memory, by default the app container's), ``sidecar<C>c[-<M>]`` (the
  same, restarted with the pod: ``restartPolicy: Always``), and ``burstable`` (every container's
  CPU limit twice its request: no exclusive CPU or memory).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from fractions import Fraction
from typing import TypeVar

from rte import durations
from rte.errors import InputError
from rte.model.quantity import Amount, parse_quantity

GiB = 1024**3
HUGEPAGES_1G = "hugepages-1Gi"
DEVICE_DOMAIN = "example.com/"

# Bounds on what a shape may ask for. The simulator models every CPU and names every device, so a
# count beyond any real machine would only run it out of memory or time; it is refused instead.
MAX_NODE_CPUS = 8192
"""No kernel runs more CPUs (x86-64's largest ``NR_CPUS``: torvalds/linux ``arch/x86/Kconfig``),
so no node, and no container, of a simulation needs more."""
MAX_DEVICES = 1024
"""Devices of one resource per zone (node shapes) or per container (pod mixes)."""
MAX_CONTAINERS = 100
"""Containers per pod in a pod mix."""

_SHAPE_RE = re.compile(
    r"^(?:(?P<pct>\d+(?:\.\d*)?)%:)?(?:(?P<count>\d+)x)?(?P<cpus>\d+(?:\.\d+)?)c(?:(?P<threads>\d+)t)?"
    r"(?:(?P<sockets>\d+)s)?"
    r"-(?P<mem>[^+]+)(?P<extras>(?:\+[^+]+)*)$"
)
_EXTRA_RE = re.compile(r"^(?P<name>[a-z][a-z-]*?)(?P<count>\d+)(?:@(?P<span>\d+))?$")
_INIT_RE = re.compile(r"^(?P<kind>init|sidecar)(?P<cpus>\d+(?:\.\d+)?)c(?:-(?P<mem>.+))?$")
BURSTABLE = "burstable"
_POD_WORDS = ("init", "sidecar", BURSTABLE)


@dataclass(frozen=True)
class Burst:
    """``size`` pods created at once every ``period`` seconds (the first burst at ``period``)."""

    size: int
    period: float


def parse_burst(text: str, option: str = "--burst") -> Burst:
    size_text, sep, period_text = text.partition("/")
    if not sep or not size_text.strip().isdigit():
        raise InputError(option, f"{text!r} is not N/T (e.g. 200/60s: 200 pods every 60 seconds)")
    size = int(size_text)
    try:
        period = durations.parse_duration(period_text, bare_seconds=True)
    except ValueError:
        raise InputError(option, f"{text!r}: the period is not a duration (e.g. 60s, 1m)") from None
    if size <= 0 or period <= 0:
        raise InputError(option, f"{text!r}: both the size and the period must be positive")
    return Burst(size, period)


@dataclass(frozen=True)
class NodeShape:
    """One kind of node: identical zones, the first of which holds the reserved CPUs and memory."""

    text: str
    zones: int
    cpus_per_zone: int
    memory_per_zone: int
    """Regular memory (bytes) per zone, hugepages excluded."""
    hugepages_per_zone: int
    """Number of 1Gi hugepages per zone."""
    devices_per_zone: Mapping[str, int]
    """Full resource name -> devices attached to each zone."""
    threads_per_core: int = 1
    """Hardware threads per physical core (SMT); ``cpus_per_zone`` is a multiple of it."""
    shared_devices: Mapping[str, tuple[int, int]] = field(default_factory=dict)
    """Full resource name -> (devices per group, zones per group) of devices attached to several
    zones (``<name><N>@<W>``)."""
    zones_per_socket: int = 1
    """NUMA zones per socket (2: Intel SNC2, AMD NPS2); ``zones`` is a multiple of it."""


@dataclass(frozen=True)
class InitShape:
    """One init container of a pod shape: a regular one, or a sidecar (``restartPolicy: Always``)."""

    cpus: Amount
    memory: int
    sidecar: bool


@dataclass(frozen=True)
class PodShape:
    """One kind of pod: ``containers`` identical app containers requesting ``request`` each, after
    its init containers (sidecars among them) in order; Guaranteed unless ``burstable``."""

    text: str
    containers: int
    request: Mapping[str, Amount]
    inits: tuple[InitShape, ...] = ()
    burstable: bool = False

    @property
    def pod_cpus(self) -> Amount:
        """The pod's CPU request as the kubelet and the scheduler sum it: the app containers plus
        the sidecars, or a regular init container plus the sidecars started before it if larger."""
        sidecars: Amount = 0
        by_inits: Amount = 0
        for init in self.inits:
            if init.sidecar:
                sidecars += init.cpus
            else:
                by_inits = max(by_inits, sidecars + init.cpus)
        return max(self.containers * self.request["cpu"] + sidecars, by_inits)


_T = TypeVar("_T")


def _extras(
    extras: str, where: str, hugepages_unit: int, shared: dict[str, tuple[int, int]] | None = None
) -> tuple[int, dict[str, int], list[str]]:
    """Hugepages, devices, and the pod-level words left for the pod mix to read; devices
    attached to several zones go to ``shared`` (node shapes only)."""
    hugepages = 0
    devices: dict[str, int] = {}
    words: list[str] = []
    for extra in filter(None, extras.split("+")):
        if extra == BURSTABLE or _INIT_RE.match(extra):
            words.append(extra)
            continue
        match = _EXTRA_RE.match(extra)
        if match is None:
            raise InputError(where, f"extra {extra!r} is not hp<N> or <device name><N> (e.g. nic4)")
        if match["name"] == "hp":
            hugepages += int(match["count"]) * hugepages_unit
        elif match["name"] in _POD_WORDS:
            raise InputError(where, f"extra {extra!r}: write {match['name']}<CPUs>c[-<memory>], e.g. init2c")
        elif match["span"] is not None:
            if shared is None:
                raise InputError(where, f"extra {extra!r}: devices on several zones describe nodes")
            resource = DEVICE_DOMAIN + match["name"]
            count, span = int(match["count"]), int(match["span"])
            if resource in shared or not 1 <= count <= MAX_DEVICES or span < 2:
                raise InputError(where, f"extra {extra!r}: one <name><N>@<W> per device, N >= 1, W >= 2")
            shared[resource] = (count, span)
        else:
            resource = DEVICE_DOMAIN + match["name"]
            devices[resource] = devices.get(resource, 0) + int(match["count"])
            if devices[resource] > MAX_DEVICES:
                raise InputError(
                    where, f"at most {MAX_DEVICES:,} devices of {match['name']!r}, got {devices[resource]:,}"
                )
    return hugepages, devices, words


def _weighted_entries(
    text: str, option: str, build: Callable[[str, re.Match[str], str], _T]
) -> tuple[tuple[float, _T], ...]:
    entries = [e.strip() for e in text.split(",") if e.strip()]
    if not entries:
        raise InputError(option, "empty specification")
    parsed: list[tuple[float | None, _T]] = []
    for entry in entries:
        match = _SHAPE_RE.match(entry)
        if match is None:
            raise InputError(option, f"{entry!r} does not read as [P%:][Nx]<cpus>c-<memory>[+extra]")
        pct = float(match["pct"]) if match["pct"] else None
        parsed.append((pct, build(entry, match, f"{option} {entry!r}")))
    if len(parsed) == 1 and parsed[0][0] is None:
        return ((100.0, parsed[0][1]),)
    if any(p is None for p, _ in parsed):
        raise InputError(option, f"{text!r}: with several entries, every entry needs a percentage")
    total = sum(p for p, _ in parsed if p is not None)
    if abs(total - 100.0) > 1e-6:
        raise InputError(option, f"{text!r}: percentages add up to {total:g}, not 100")
    return tuple((p, item) for p, item in parsed if p is not None)


def _memory(text: str, where: str) -> int:
    try:
        value = parse_quantity(text.strip())
    except ValueError as e:
        raise InputError(where, f"memory {text!r} is not a quantity") from e
    if value <= 0 or value != int(value):
        raise InputError(where, f"memory {text!r} must be a positive whole number of bytes")
    return int(value)


def _cpus(text: str, where: str) -> Amount:
    """A positive CPU count in whole millicores (``1.5`` is 1500m); whole numbers stay ``int``."""
    value = Fraction(text)
    if value <= 0 or (value * 1000).denominator != 1:
        raise InputError(where, f"CPUs {text!r} must be positive, in whole millicores (e.g. 1.5)")
    if value > MAX_NODE_CPUS:
        raise InputError(where, f"at most {MAX_NODE_CPUS:,} CPUs per container, got {text}")
    return int(value) if value.denominator == 1 else value


def parse_node_shapes(text: str, option: str = "--shape") -> tuple[tuple[float, NodeShape], ...]:
    """``(percent, shape)`` pairs, percentages adding up to 100."""

    def build(entry: str, match: re.Match[str], where: str) -> NodeShape:
        zones = int(match["count"] or 1)
        if not match["cpus"].isdigit():
            raise InputError(where, "CPUs per zone must be a whole number")
        cpus = int(match["cpus"])
        threads = int(match["threads"] or 1)
        if not 1 <= zones <= 64 or cpus < 1:
            raise InputError(where, "zones must be within 1..64 and CPUs per zone at least 1")
        if not 1 <= threads <= 8 or cpus % threads:
            raise InputError(where, f"{threads} threads per core must be within 1..8 and divide {cpus} CPUs")
        if zones * cpus > MAX_NODE_CPUS:
            raise InputError(where, f"at most {MAX_NODE_CPUS:,} CPUs per node, got {zones * cpus:,}")
        sockets = int(match["sockets"] or zones)
        if not 1 <= sockets <= zones or zones % sockets:
            raise InputError(where, f"{sockets} sockets must be within 1..{zones} and divide {zones} zones")
        memory = _memory(match["mem"], where)
        shared: dict[str, tuple[int, int]] = {}
        hugepages, devices, words = _extras(match["extras"], where, 1, shared)
        if words:
            raise InputError(where, f"extra {words[0]!r} describes pods, not nodes")
        for resource, (_, span) in shared.items():
            if zones % span:
                raise InputError(where, f"{resource}: groups of {span} zones do not divide {zones} zones")
        text = entry.split(":")[-1]
        return NodeShape(
            text, zones, cpus, memory // zones, hugepages, devices, threads, shared, zones // sockets
        )

    return _weighted_entries(text, option, build)


def parse_pod_mix(text: str, option: str = "--pod-mix") -> tuple[tuple[float, PodShape], ...]:
    """``(percent, pod shape)`` pairs, percentages adding up to 100."""

    def build(entry: str, match: re.Match[str], where: str) -> PodShape:
        containers = int(match["count"] or 1)
        if match["threads"]:
            raise InputError(where, "threads per core describe nodes, not pods")
        if containers < 1:
            raise InputError(where, "containers must be at least 1")
        if containers > MAX_CONTAINERS:
            raise InputError(where, f"at most {MAX_CONTAINERS} containers per pod, got {containers:,}")
        memory = _memory(match["mem"], where)
        request: dict[str, Amount] = {"cpu": _cpus(match["cpus"], where), "memory": memory}
        hugepages, devices, words = _extras(match["extras"], where, GiB)
        if hugepages:
            request[HUGEPAGES_1G] = hugepages
        request.update(devices)
        inits = []
        for word in words:
            init = _INIT_RE.match(word)
            if init is None:
                continue  # burstable
            size = _memory(init["mem"], where) if init["mem"] else memory
            inits.append(InitShape(_cpus(init["cpus"], where), size, init["kind"] == "sidecar"))
        return PodShape(entry.split(":")[-1], containers, request, tuple(inits), BURSTABLE in words)

    return _weighted_entries(text, option, build)


def split_counts(total: int, weights: tuple[float, ...]) -> list[int]:
    """``total`` split by percentage, by largest remainder (ties to the earlier entry)."""
    raw = [total * w / 100.0 for w in weights]
    counts = [int(r) for r in raw]
    order = sorted(range(len(raw)), key=lambda i: (-(raw[i] - counts[i]), i))
    for i in order[: total - sum(counts)]:
        counts[i] += 1
    return counts
