"""``rte explain NAMESPACE/NAME``: why is this pod Pending, as far as NUMA alignment goes?

For the pod as the cluster holds it, against every Node and its NRT as they are now:

* each node's verdict, with the reason from the consumer's Filter (the rule the kubelet's
  Topology Manager applies, see :mod:`rte.consumer.api`) and its agent's Lease age;
* the nodes closest to fitting and what their best NUMA zone lacks
  (:mod:`rte.cluster.shortfall` defines "closest");
* whether the pod's scheduler is one that reads NRTs at all (``--scheduler-profile``);
* what the scheduler itself last said (the pod's ``PodScheduled`` condition);
* for the closest nodes whose NRT publishes numaplacement, which pods hold the zone named (their
  pinned containers sit there): the pods a NUMA-aware preemption would look at.

The NRTs are taken as published. A NUMA-aware scheduler also holds back what it has placed but
no NRT shows yet (its reserve cache); the extender's ``GET /state`` shows those reservations.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, TextIO

from rte.cluster.reader import ClusterReader
from rte.cluster.shortfall import ZoneShortfall, closest
from rte.cluster.snapshot import read_statuses
from rte.cluster.status import NodeStatus
from rte.commands.humanize import age_text, aligned, amount_text, heartbeat_text
from rte.consumer.api import Decision, NodeCandidate, evaluate
from rte.consumer.config import DEFAULT_PROFILE
from rte.consumer.numaview import build_view
from rte.consumer.placement import NodePlacement, Outcome
from rte.consumer.requests import prepare_pod
from rte.errors import InputError
from rte.model import numaplacement as npl
from rte.model.attributes import HEARTBEAT_LEASE_NAMESPACE
from rte.model.pod import PHASE_PENDING, Pod, pod_from_manifest
from rte.model.quantity import quantity_text
from rte.model.topology import numa_id_of
from rte.runtime.reflector import Obj

EXPLAIN_OUTPUTS = ("table", "json", "yaml")
KUBELET_REJECTIONS = ("TopologyAffinityError", "SMTAlignmentError", "UnexpectedAdmissionError")


@dataclass(frozen=True)
class Explanation:
    pod: Pod
    pod_obj: Obj
    reads_nrt: bool
    nrt_schedulers: tuple[str, ...]
    decisions: list[Decision]
    statuses: dict[str, NodeStatus]
    closest: list[ZoneShortfall]
    now: float
    stale_after: float | None
    placements: Mapping[str, NodePlacement] = field(default_factory=dict)
    """Closest nodes whose NRT publishes numaplacement: as decoded for their pods."""

    def holders(self, shortfall: ZoneShortfall) -> list[str] | None:
        """The pods pinned on the zone of ``shortfall``, or None when that is not known."""
        placement = self.placements.get(shortfall.node)
        if placement is None or placement.outcome is not Outcome.DECODED:
            return None
        numa_id = numa_id_of(shortfall.zone)
        return (
            sorted({f"{c.namespace}/{c.pod}" for c in placement.zone_pods().get(numa_id, [])})
            if numa_id is not None
            else None
        )

    @property
    def scheduler_message(self) -> str | None:
        for condition in (self.pod_obj.get("status") or {}).get("conditions") or ():
            if (
                isinstance(condition, dict)
                and condition.get("type") == "PodScheduled"
                and condition.get("status") != "True"
                and condition.get("message")
            ):
                return str(condition["message"])
        return None

    @property
    def rejection(self) -> str | None:
        """The kubelet's admission rejection (``status.reason: message``), if it refused the pod."""
        status = self.pod_obj.get("status") or {}
        if status.get("reason") in KUBELET_REJECTIONS:
            return f"{status['reason']}: {status.get('message') or ''}".rstrip(": ")
        return None


def parse_pod_ref(ref: str, namespace: str) -> tuple[str, str]:
    """``NAMESPACE/NAME``, or ``NAME`` in ``namespace``."""
    ns, slash, name = ref.partition("/")
    if not slash:
        ns, name = namespace, ref
    if not ns or not name or "/" in name:
        raise InputError("POD", f"expected NAMESPACE/NAME or NAME, got {ref!r}")
    return ns, name


def explain_pod(
    reader: ClusterReader,
    namespace: str,
    name: str,
    *,
    lease_namespace: str = HEARTBEAT_LEASE_NAMESPACE,
    stale_after: float | None = None,
    nrt_schedulers: Collection[str] = (DEFAULT_PROFILE,),
    closest_count: int = 3,
    now: float = 0.0,
) -> Explanation:
    """Read the pod, the Nodes, their NRTs and Leases, and judge every node."""
    pod_obj = reader.pod(namespace, name)
    pod = pod_from_manifest(pod_obj, source=f"pod {namespace}/{name}")
    statuses = read_statuses(reader, lease_namespace=lease_namespace, fingerprints=False, now=now)
    # The scheduler places pods on Nodes: an NRT whose Node is gone is no candidate.
    on_nodes = [s for s in statuses if s.node_exists]
    prep = prepare_pod(pod)
    candidates = [
        NodeCandidate(s.name, build_view(s.topology) if s.topology else None, s.allocatable) for s in on_nodes
    ]
    decisions = evaluate(prep, candidates)
    failing = {d.node for d in decisions if not d.fits}
    near = closest(
        prep,
        [s.topology for s in on_nodes if s.topology is not None and s.name in failing],
        closest_count,
        {s.name: s.allocatable for s in on_nodes if s.allocatable is not None},
    )
    placements = _placements(reader, [s for s in on_nodes if any(n.node == s.name for n in near)], now)
    return Explanation(
        pod=pod,
        pod_obj=pod_obj,
        reads_nrt=pod.scheduler_name in nrt_schedulers,
        nrt_schedulers=tuple(nrt_schedulers),
        decisions=decisions,
        statuses={s.name: s for s in on_nodes},
        closest=near,
        now=now,
        stale_after=stale_after,
        placements=placements,
    )


def _placements(
    reader: ClusterReader, statuses: Sequence[NodeStatus], now: float
) -> dict[str, NodePlacement]:
    """The numaplacement of the nodes whose NRT publishes one, decoded for their pods."""
    names = [
        s.name for s in statuses if s.topology is not None and s.topology.attribute(npl.METADATA_ATTRIBUTE)
    ]
    if not names:
        return {}
    found = read_statuses(reader, names=names, lease_namespace=None, fingerprints=True, now=now)
    return {s.name: s.placement for s in found if s.placement is not None}


def _lacks_text(shortfall: ZoneShortfall) -> str:
    parts = []
    for lack in shortfall.lacks:
        missing = amount_text(lack.resource, lack.missing)
        requested = amount_text(lack.resource, lack.requested)
        if lack.why:
            parts.append(f"{lack.resource} {requested} ({lack.why})")
        else:
            parts.append(f"{lack.resource} {missing} of {requested} ({round(100 * lack.share)}%)")
    return ", ".join(parts)


def _lease_cell(status: NodeStatus | None, e: Explanation) -> str:
    if status is None or not status.leases_read:
        return "-"
    if status.lease is None:
        if status.agent is not None:
            return heartbeat_text(status, e.now) + ("" if status.agent.ready else " (stale)")
        return "<none>"
    text = age_text(status.lease_age(e.now))
    return f"{text} (stale)" if status.lease_stale(e.now, e.stale_after) else text


def _scheduler_line(e: Explanation) -> str:
    name = e.pod.scheduler_name
    if e.reads_nrt:
        return f"scheduler {name} reads NRTs"
    return (
        f"scheduler {name} does not read NRTs: it places the pod without looking at NUMA zones, and"
        f" the kubelet may reject it with TopologyAffinityError; NUMA-aware:"
        f" {', '.join(e.nrt_schedulers) or '(none given)'} (spec.schedulerName)"
    )


def render_explanation(e: Explanation) -> str:
    pod = e.pod
    where = f"bound to {pod.node_name}" if pod.node_name else "not bound to a node"
    lines = [f"Pod {pod.namespace}/{pod.name} ({pod.qos_class}), phase {pod.phase or '?'}, {where};"]
    lines.append(f"{_scheduler_line(e)}.")
    if e.rejection:
        lines.append(f"The kubelet rejected it: {e.rejection}")
    if pod.node_name and pod.phase != PHASE_PENDING:
        lines.append(
            "The verdicts below judge it against NRTs that may already count it: explain is for Pending pods."
        )
    requests = prepare_pod(pod).pod_request.nonzero
    wanted = ", ".join(f"{i.name} {amount_text(i.name, i.amount)}" for i in requests) or "nothing"
    lines += [f"Requests (the whole pod): {wanted}", ""]
    rows = [["NODE", "FITS", "SCORE", "LEASE", "REASON"]]
    rows += [
        [
            d.node,
            "yes" if d.fits else "no",
            "-" if d.score is None else str(d.score),
            _lease_cell(e.statuses.get(d.node), e),
            d.reason,
        ]
        for d in e.decisions
    ]
    lines += aligned(rows) if e.decisions else ["No nodes found"]
    fitting = [d for d in e.decisions if d.fits]
    lines.append("")
    if fitting:
        best = max(fitting, key=lambda d: d.score or 0)
        lines.append(
            f"Fits NUMA-aligned on {len(fitting)} of {len(e.decisions)} node(s); best {best.node}"
            f" (score {best.score}). If it stays Pending, something other than NUMA alignment holds it."
        )
    else:
        lines.append(f"Fits NUMA-aligned on none of {len(e.decisions)} node(s).")
    if e.closest:
        lines += ["", "Closest to fitting (what the best NUMA zone lacks for the whole pod):"]
        lines += ["  " + line for line in aligned([[s.node, s.zone, _lacks_text(s)] for s in e.closest])]
        held = [(s, e.holders(s)) for s in e.closest]
        if any(pods is not None for _, pods in held):
            lines += ["", "Pods pinned on those zones (numaplacement):"]
            lines += [
                "  " + line
                for line in aligned(
                    [[s.node, s.zone, ", ".join(pods) or "none"] for s, pods in held if pods is not None]
                )
            ]
    if e.scheduler_message:
        lines += ["", f"The scheduler said: {e.scheduler_message}"]
    return "\n".join(lines) + "\n"


def explanation_dict(e: Explanation) -> dict[str, Any]:
    pod = e.pod
    out_nodes = []
    for d in e.decisions:
        status = e.statuses.get(d.node)
        entry = d.to_dict()
        if status is not None and status.lease is not None:
            entry["leaseAgeSeconds"] = status.lease_age(e.now)
            entry["leaseStale"] = status.lease_stale(e.now, e.stale_after)
        out_nodes.append(entry)
    return {
        "pod": {
            "namespace": pod.namespace,
            "name": pod.name,
            "phase": pod.phase,
            "qosClass": pod.qos_class,
            "nodeName": pod.node_name or None,
            "schedulerName": pod.scheduler_name,
        },
        "schedulerReadsNRT": e.reads_nrt,
        "requests": {i.name: quantity_text(i.amount) for i in prepare_pod(pod).pod_request.nonzero},
        "nodes": out_nodes,
        "closest": [
            {
                "node": s.node,
                "zone": s.zone,
                **({"pinnedPods": pods} if (pods := e.holders(s)) is not None else {}),
                "lacks": [
                    {
                        "resource": lack.resource,
                        "requested": quantity_text(lack.requested),
                        "missing": quantity_text(lack.missing),
                        **({"why": lack.why} if lack.why else {}),
                    }
                    for lack in s.lacks
                ],
            }
            for s in e.closest
        ],
        "schedulerMessage": e.scheduler_message,
        "kubeletRejection": e.rejection,
    }


def explain(
    reader: ClusterReader,
    ref: str,
    *,
    namespace: str,
    output: str = "table",
    lease_namespace: str = HEARTBEAT_LEASE_NAMESPACE,
    stale_after: float | None = None,
    nrt_schedulers: Sequence[str] = (DEFAULT_PROFILE,),
    closest_count: int = 3,
    now: float = 0.0,
    out: TextIO | None = None,
) -> Explanation:
    """Explain pod ``ref`` (``NAMESPACE/NAME`` or ``NAME`` in ``namespace``) and print it."""
    if output not in EXPLAIN_OUTPUTS:
        raise InputError(
            "--output", f"unknown format {output!r}; expected one of {', '.join(EXPLAIN_OUTPUTS)}"
        )
    if closest_count < 0:
        raise InputError("--closest", "must be 0 or more")
    ns, name = parse_pod_ref(ref, namespace)
    e = explain_pod(
        reader,
        ns,
        name,
        lease_namespace=lease_namespace,
        stale_after=stale_after,
        nrt_schedulers=nrt_schedulers,
        closest_count=closest_count,
        now=now,
    )
    stream = out if out is not None else sys.stdout
    if output == "json":
        stream.write(json.dumps(explanation_dict(e), indent=2) + "\n")
    elif output == "yaml":
        import yaml

        stream.write(yaml.safe_dump(explanation_dict(e), sort_keys=False))
    else:
        stream.write(render_explanation(e))
    return e
