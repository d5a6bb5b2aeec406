"""``rte top``: per node and NUMA zone, what is available, and whether the scheduler can trust it.

One line per node and zone: available/allocatable cpu, memory, hugepages and devices, the
Topology Manager policy and scope, the NRT's age (time since it last changed), the agent's
Lease age, whether the NRT's fingerprint matches the pods bound to the node, and a STATUS that
names what is stale (:mod:`rte.cluster.status`). ``-o wide`` adds the fingerprints and, when the
NRT publishes numaplacement, the pods whose pinned containers sit on each zone (PINNED-PODS;
``<mismatch>`` when the node's pods are not the NRT's set, so it cannot be decoded).

``--watch`` polls: every ``--interval`` it reads again and redraws. Polling rather than watching,
because the ages on screen change every second whether or not an object does, so the screen is
redrawn on a timer anyway; each read is the same few requests as one ``rte top`` (lists served
from the apiserver's watch cache, ``resourceVersion=0``), and errors read the same. After the
first screen, a failed read is shown in place of the table and retried on the next tick: an
apiserver restart does not end the view.
"""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, TextIO

from rte.cluster.reader import ClusterReader
from rte.cluster.snapshot import read_statuses
from rte.cluster.status import OK, NodeStatus
from rte.commands.humanize import age_text, aligned, amount_text, heartbeat_text, is_bytes
from rte.consumer.config import ResyncMethod
from rte.consumer.placement import NodePlacement, Outcome
from rte.errors import InputError, RteError
from rte.model.attributes import HEARTBEAT_LEASE_NAMESPACE
from rte.model.quantity import quantity_text
from rte.model.topology import ResourceInfo, Zone
from rte.model.vocabulary import InformerMode

TOP_OUTPUTS = ("table", "wide", "json", "yaml")
CLEAR_SCREEN = "\x1b[H\x1b[2J"
_COLUMNS = (
    "NODE",
    "ZONE",
    "CPU",
    "MEMORY",
    "HUGEPAGES",
    "DEVICES",
    "POLICY",
    "NRT-AGE",
    "LEASE",
    "PODS",
    "STATUS",
)
_WIDE = ("FINGERPRINT", "COMPUTED", "COUNTED", "PINNED-PODS")


@dataclass(frozen=True)
class TopOptions:
    """What to show; the defaults are those of ``rte top`` without flags."""

    names: tuple[str, ...] = ()
    selector: str | None = None
    output: str = "table"
    lease_namespace: str = HEARTBEAT_LEASE_NAMESPACE
    """Empty: do not read Leases."""
    stale_after: float | None = None
    """Seconds after which a Lease is stale; None: each Lease's own duration."""
    informer_mode: InformerMode = InformerMode.DEDICATED
    resync_method: ResyncMethod = ResyncMethod.AUTODETECT
    fingerprints: bool = True


def _sorted_zones(zones: Sequence[Zone]) -> list[Zone]:
    return sorted(zones, key=lambda z: (z.numa_id is None, z.numa_id or 0, z.name))


def _pair(r: ResourceInfo) -> str:
    return f"{amount_text(r.name, r.available)}/{amount_text(r.name, r.allocatable)}"


def _cells(zone: Zone, wide: bool) -> tuple[str, str, str, str]:
    """CPU, MEMORY, HUGEPAGES and DEVICES of one zone."""
    by_name = {r.name: r for r in zone.resources}
    cpu = _pair(by_name["cpu"]) if "cpu" in by_name else "-"
    memory = _pair(by_name["memory"]) if "memory" in by_name else "-"
    huge = [
        f"{r.name.removeprefix('hugepages-')}:{_pair(r)}"
        for r in zone.resources
        if r.name.startswith("hugepages-") and (r.allocatable or r.available)
    ]
    devices = [
        f"{r.name if wide else r.name.rsplit('/', 1)[-1]}={_pair(r)}"
        for r in zone.resources
        if r.name not in ("cpu", "memory") and not is_bytes(r.name) and (r.allocatable or r.available)
    ]
    return cpu, memory, ",".join(huge) or "-", ",".join(devices) or "-"


def _pinned_cell(placement: NodePlacement | None, zone: Zone) -> str:
    """The pods whose pinned containers sit on ``zone`` (numaplacement), or why that is unknown."""
    if placement is None:
        return "-"
    if placement.outcome is not Outcome.DECODED:
        return f"<{placement.outcome.value}>"
    here = placement.zone_pods().get(zone.numa_id, []) if zone.numa_id is not None else []
    pods = sorted({f"{c.namespace}/{c.pod}" for c in here})
    return ",".join(pods) or "-"


def _placement_dict(placement: NodePlacement | None, zones: Sequence[Zone]) -> dict[str, Any] | None:
    if placement is None:
        return None
    by_zone = placement.zone_pods()
    return {
        "outcome": placement.outcome.value,
        "detail": placement.detail,
        "zones": {
            z.name: [f"{c.namespace}/{c.pod}/{c.container}" for c in by_zone.get(z.numa_id, [])]
            for z in zones
            if z.numa_id is not None
        },
    }


def _node_cells(s: NodeStatus, now: float, opts: TopOptions) -> list[str]:
    lease = heartbeat_text(s, now)
    pods = s.fingerprint.result.value if s.fingerprint is not None else "-"
    status = ",".join(s.markers(now, opts.stale_after)) or OK
    # A policy the NRT does not state is shown as such, not as the "none" consumers assume.
    policy = "-" if not s.topology else f"{s.policy}/{s.scope}" if s.policy_known else "unknown"
    return [policy, age_text(s.nrt_age(now)) if s.topology else "-", lease, pods, status]


def render_top_table(statuses: Sequence[NodeStatus], now: float, opts: TopOptions) -> str:
    wide = opts.output == "wide"
    rows: list[list[str]] = [list(_COLUMNS + _WIDE) if wide else list(_COLUMNS)]
    for s in statuses:
        node = _node_cells(s, now, opts)
        fp = s.fingerprint
        extra = [fp.expected or "-", fp.computed, str(fp.pod_count)] if fp is not None else ["-", "-", "-"]
        zones = _sorted_zones(s.topology.zones) if s.topology else []
        if not zones:
            rows.append([s.name, "<none>", "-", "-", "-", "-", *node, *([*extra, "-"] if wide else [])])
        for zone in zones:
            pinned = [_pinned_cell(s.placement, zone)] if wide else []
            rows.append([s.name, zone.name, *_cells(zone, wide), *node, *(extra + pinned if wide else [])])
    return "\n".join(aligned(rows)) + "\n"


def _resource_dict(r: ResourceInfo) -> dict[str, str]:
    return {
        "name": r.name,
        "capacity": quantity_text(r.capacity),
        "allocatable": quantity_text(r.allocatable),
        "available": quantity_text(r.available),
    }


def status_dict(s: NodeStatus, now: float, stale_after: float | None = None) -> dict[str, Any]:
    """One node for ``-o json|yaml``: quantities as Kubernetes quantity strings, ages in seconds."""
    lease = None
    if s.lease is not None:
        lease = {
            "namespace": s.lease.namespace,
            "ageSeconds": s.lease_age(now),
            "durationSeconds": s.lease.duration,
            "stale": s.lease_stale(now, stale_after),
        }
    agent = None
    if s.agent is not None:
        agent = {"pod": s.agent.pod, "ready": s.agent.ready, "notReadySeconds": s.agent_unready_for(now)}
    fingerprint = None
    if s.fingerprint is not None:
        fingerprint = {k: v for k, v in s.fingerprint.to_dict().items() if k != "time"}
    markers = s.markers(now, stale_after)
    return {
        "node": s.name,
        "nodeExists": s.node_exists,
        "topologyManager": {"policy": s.policy, "scope": s.scope} if s.policy_known else None,
        "nrtAgeSeconds": s.nrt_age(now),
        "lease": lease,
        "agent": agent,
        "fingerprint": fingerprint,
        "status": [m.value for m in markers] or [OK],
        "stale": s.is_stale(now, stale_after),
        "zones": [
            {"name": z.name, "resources": [_resource_dict(r) for r in z.resources]}
            for z in (_sorted_zones(s.topology.zones) if s.topology else [])
        ],
        **(
            {"numaPlacement": _placement_dict(s.placement, _sorted_zones(s.topology.zones))}
            if s.placement is not None and s.topology is not None
            else {}
        ),
    }


def render(statuses: Sequence[NodeStatus], now: float, opts: TopOptions) -> str:
    if opts.output in ("json", "yaml"):
        doc = [status_dict(s, now, opts.stale_after) for s in statuses]
        if opts.output == "json":
            return json.dumps(doc, indent=2) + "\n"
        import yaml

        return yaml.safe_dump(doc, sort_keys=False)
    if not statuses:
        return "No resources found\n"
    return render_top_table(statuses, now, opts)


def top(
    open_reader: Callable[[str | None], ClusterReader],
    opts: TopOptions,
    *,
    watch: bool = False,
    interval: float = 2.0,
    out: TextIO | None = None,
    clock: Callable[[], float] = time.time,
    sleep: Callable[[float], object] = time.sleep,
    iterations: int | None = None,
) -> list[NodeStatus]:
    """Print the view once, or every ``interval`` seconds with ``watch`` (until interrupted,
    ``sleep`` answers something truthy, or ``iterations`` screens); returns the statuses of the
    last screen that could be read.

    ``open_reader(list_resource_version)`` builds the reader.
    """
    if opts.output not in TOP_OUTPUTS:
        raise InputError(
            "--output", f"unknown format {opts.output!r}; expected one of {', '.join(TOP_OUTPUTS)}"
        )
    if watch and interval <= 0:
        raise InputError("--interval", "must be positive")
    stream = out if out is not None else sys.stdout
    reader = open_reader("0" if watch else None)
    clear = watch and opts.output in ("table", "wide") and stream.isatty()
    statuses: list[NodeStatus] = []
    shown = 0
    try:
        while True:
            now = clock()
            try:
                statuses = read_statuses(
                    reader,
                    names=opts.names,
                    selector=opts.selector,
                    lease_namespace=opts.lease_namespace,
                    fingerprints=opts.fingerprints,
                    informer_mode=opts.informer_mode,
                    resync_method=opts.resync_method,
                    now=now,
                )
                text = render(statuses, now, opts)
            except RteError as e:
                if not shown:
                    raise
                text = f"rte: error: {e}\n"
            if clear:
                stream.write(CLEAR_SCREEN)
            elif shown and opts.output in ("table", "wide"):
                stream.write("\n")
            elif shown and opts.output == "yaml":
                stream.write("---\n")
            if watch and opts.output in ("table", "wide"):
                stamp = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(now))
                stream.write(f"Every {interval:g}s: rte top   {stamp}\n\n")
            stream.write(text)
            stream.flush()
            shown += 1
            if not watch or (iterations is not None and shown >= iterations):
                return statuses
            if sleep(interval):  # a truthy answer: stop watching (the signal `rte top` waits for)
                return statuses
    finally:
        reader.close()
