"""Per node: its NRT, how old the NRT and its agent's Lease are, and whether the NRT's pods match.

Pure functions over decoded objects (Nodes, NRTs, Leases, pods); reading them is
:mod:`rte.cluster.reader`'s job. What the words mean:

* **NRT age**: time since the object last changed. The agent writes only when the content
  changes, so that is the newest ``metadata.managedFields[].time`` (the apiserver stamps each
  manager's entry when its write changes the object), or ``creationTimestamp`` without any.
  A quiet node's NRT is old and still right: the Lease, not the NRT, says the agent is alive.
* **Lease age**: time since the agent last renewed Lease ``<namespace>/<node>`` (``renewTime``,
  read as the consumer reads it). Stale past ``stale_after``, by default the Lease's own
  ``leaseDurationSeconds``: the holder promised to renew within that time.
* **Agent**: the readiness of the node's agent pod (``Ready`` condition), which the kubelet
  writes when the agent's ``/readyz`` flips: what the extender reads by default instead of a Lease
  (:mod:`rte.consumer.agentpods`). Not ready is stale at once: the kubelet's failure threshold
  has already passed.
* **Fingerprint**: the pods bound to the node, counted with the consumer's rules (informer mode,
  fingerprint method, the exclusivity classifier: :func:`rte.consumer.cache.resync.compare`),
  against the NRT's published fingerprint, exactly as the scheduler's reserve cache compares.
* **Placement**: when the NRT publishes numaplacement and its fingerprint matches those pods,
  which NUMA zone each pinned container sits on (:func:`rte.consumer.placement.decode_node_placement`);
  with another pod set it cannot be decoded (a MISMATCH outcome).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum

from rte.consumer.agentpods import agent_pod_state
from rte.consumer.cache.resync import CompareResult, Comparison, compare
from rte.consumer.config import ResyncMethod
from rte.consumer.placement import NodePlacement, Outcome, decode_node_placement
from rte.consumer.store import heartbeat_from_lease, resource_names_of
from rte.consumer.tmconfig import tm_config_from
from rte.errors import InputError
from rte.model import numaplacement as npl
from rte.model.attributes import TOPOLOGY_MANAGER_POLICY
from rte.model.nrt import from_nrt
from rte.model.pod import Pod, counts_for_fingerprint, pod_from_manifest, resource_quantities
from rte.model.quantity import Amount
from rte.model.timestamps import rfc3339_seconds
from rte.model.topology import NodeTopology
from rte.model.vocabulary import InformerMode
from rte.runtime.reflector import Obj

DEFAULT_LEASE_SECONDS = 40.0
"""The agent's default ``--lease-duration``; used when a Lease does not say its own."""


class Marker(StrEnum):
    """What is off with a node's data: the words of ``rte top``'s STATUS column, in listing order."""

    NO_NODE = "NoNode"
    """An NRT whose Node is gone (the garbage collector deletes it soon)."""
    NO_NRT = "NoNRT"
    NO_LEASE = "NoLease"
    """Leases were read and the node has none, nor an agent pod: nothing says its agent is alive."""
    LEASE_STALE = "LeaseStale"
    AGENT_NOT_READY = "AgentNotReady"
    """The node's agent pod is not ready: its agent does not vouch for the NRT."""
    PODS_MISMATCH = "PodsMismatch"
    NO_FINGERPRINT = "NoFingerprint"
    BAD_FINGERPRINT = "BadFingerprint"
    NO_POLICY = "NoPolicy"
    """The NRT names no Topology Manager policy (its agent could not read the kubelet config):
    scheduler-plugins and KAI then treat the node as policy ``none`` and filter nothing on it
    (issue #28)."""


OK = "OK"
"""STATUS when no marker applies."""
STALE_MARKERS = frozenset({Marker.LEASE_STALE, Marker.AGENT_NOT_READY, Marker.PODS_MISMATCH})
"""Markers that mean "the scheduler may be deciding on data that is not current". A missing
Lease alone is not one: agents other than rte publish NRTs without a heartbeat."""


def parse_time(text: object, where: str) -> float:
    """Epoch seconds of an RFC 3339 time as the apiserver writes it; errors name ``where``."""
    if isinstance(text, datetime):  # only strings come from the wire here
        raise InputError(where, f"expected an RFC 3339 time, got {text!r}")
    return rfc3339_seconds(text, where)


def last_change(obj: Obj) -> float | None:
    """When the object last changed: its newest managedFields time, else its creation time."""
    metadata = obj.get("metadata") or {}
    name = metadata.get("name", "?")
    times = [
        parse_time(entry["time"], f"{name}: metadata.managedFields[{i}].time")
        for i, entry in enumerate(metadata.get("managedFields") or ())
        if isinstance(entry, Mapping) and entry.get("time")
    ]
    if times:
        return max(times)
    created = metadata.get("creationTimestamp")
    return parse_time(created, f"{name}: metadata.creationTimestamp") if created else None


@dataclass(frozen=True)
class LeaseInfo:
    namespace: str
    renewed: float | None
    """Epoch seconds of ``renewTime`` (``acquireTime`` without it); None if never renewed."""
    duration: float | None
    """``spec.leaseDurationSeconds``."""


def lease_info(obj: Obj, namespace: str) -> LeaseInfo:
    name = (obj.get("metadata") or {}).get("name", "?")
    found = heartbeat_from_lease(obj, source=f"Lease {namespace}/{name}")
    duration = (obj.get("spec") or {}).get("leaseDurationSeconds")
    return LeaseInfo(
        namespace,
        None if found is None else found[1],
        float(duration) if isinstance(duration, int | float) and duration > 0 else None,
    )


@dataclass(frozen=True)
class AgentInfo:
    """The node's agent pod (a ready one when there are several, as during a surge)."""

    pod: str
    """``namespace/name``."""
    ready: bool
    since: float | None
    """Not ready: since when (epoch seconds), None if unknown."""


def agent_infos(pods: Iterable[Obj]) -> dict[str, AgentInfo]:
    """Node -> its agent pod's readiness, from the agent pods (any pod not bound is left out)."""
    out: dict[str, AgentInfo] = {}
    for obj in pods:
        metadata = obj.get("metadata") or {}
        name = f"{metadata.get('namespace', '?')}/{metadata.get('name', '?')}"
        state = agent_pod_state(obj, source=f"pod {name}")
        if state is None:
            continue
        info = AgentInfo(name, state.ready, state.since)
        kept = out.get(state.node)
        if (
            kept is None
            or (info.ready and not kept.ready)
            or (not kept.ready and not info.ready and (info.since or 0.0) > (kept.since or 0.0))
        ):
            out[state.node] = info
    return out


@dataclass(frozen=True)
class NodeStatus:
    """One node as ``rte top`` shows it."""

    name: str
    node_exists: bool
    topology: NodeTopology | None
    changed: float | None
    """When the NRT last changed (epoch seconds)."""
    lease: LeaseInfo | None
    leases_read: bool
    """False when Leases were not looked at: then a missing Lease is not a finding."""
    fingerprint: Comparison | None
    """None without an NRT, or when pods were not read."""
    allocatable: Mapping[str, Amount] | None = None
    """The Node's ``status.allocatable``, when the Node exists."""
    agent: AgentInfo | None = None
    """The node's agent pod, when agent pods were read and it has one."""
    placement: NodePlacement | None = None
    """The NRT's numaplacement, decoded for the node's pods (:func:`placement_of`); None when the
    NRT publishes none or pods were not read."""

    def agent_unready_for(self, now: float) -> float | None:
        """Seconds its agent pod has not been ready; None when it is ready or unknown."""
        if self.agent is None or self.agent.ready or self.agent.since is None:
            return None
        return max(0.0, now - self.agent.since)

    @property
    def policy(self) -> str:
        return tm_config_from(self.topology).policy if self.topology else ""

    @property
    def scope(self) -> str:
        return tm_config_from(self.topology).scope if self.topology else ""

    @property
    def policy_known(self) -> bool:
        """Whether the NRT states a Topology Manager policy at all (an attribute or the
        deprecated ``topologyPolicies``); consumers read a silent one as ``none``."""
        if self.topology is None:
            return False
        return bool(self.topology.topology_policies) or any(
            a.name == TOPOLOGY_MANAGER_POLICY for a in self.topology.attributes
        )

    def nrt_age(self, now: float) -> float | None:
        return None if self.changed is None else max(0.0, now - self.changed)

    def lease_age(self, now: float) -> float | None:
        if self.lease is None or self.lease.renewed is None:
            return None
        return max(0.0, now - self.lease.renewed)

    def lease_stale(self, now: float, stale_after: float | None) -> bool:
        """The Lease exists and was not renewed within ``stale_after`` (default: its duration)."""
        if self.lease is None:
            return False
        age = self.lease_age(now)
        limit = stale_after if stale_after is not None else self.lease.duration or DEFAULT_LEASE_SECONDS
        return age is None or age > limit

    def markers(self, now: float, stale_after: float | None = None) -> list[Marker]:
        """What is wrong with the node's data, as STATUS words; empty when nothing is."""
        out = []
        if not self.node_exists:
            out.append(Marker.NO_NODE)
        if self.topology is None:
            out.append(Marker.NO_NRT)
        if self.leases_read and self.topology is not None and self.lease is None and self.agent is None:
            out.append(Marker.NO_LEASE)
        if self.lease_stale(now, stale_after):
            out.append(Marker.LEASE_STALE)
        if self.agent is not None and not self.agent.ready:
            out.append(Marker.AGENT_NOT_READY)
        if self.topology is not None and not self.policy_known:
            out.append(Marker.NO_POLICY)
        if self.fingerprint is not None:
            result = self.fingerprint.result
            if result is CompareResult.MISMATCH:
                out.append(Marker.PODS_MISMATCH)
            elif result is CompareResult.MISSING:
                out.append(Marker.NO_FINGERPRINT)
            elif result is not CompareResult.MATCH:
                out.append(Marker.BAD_FINGERPRINT)
        return out

    def is_stale(self, now: float, stale_after: float | None = None) -> bool:
        return bool(STALE_MARKERS.intersection(self.markers(now, stale_after)))


def _by_name(objects: Iterable[Obj]) -> dict[str, Obj]:
    return {str((o.get("metadata") or {}).get("name") or ""): o for o in objects}


def node_statuses(
    nodes: Iterable[Obj],
    nrts: Iterable[Obj],
    *,
    leases: Iterable[Obj] | None = None,
    lease_namespace: str = "",
    pods_by_node: Mapping[str, Iterable[Obj]] | None = None,
    agent_pods: Iterable[Obj] = (),
    informer_mode: InformerMode = InformerMode.DEDICATED,
    resync_method: ResyncMethod = ResyncMethod.AUTODETECT,
    now: float = 0.0,
) -> list[NodeStatus]:
    """One status per node that has a Node or an NRT among those given, sorted by name.

    ``leases`` None means they were not read; ``pods_by_node`` None means no fingerprint check.
    ``now`` only stamps the comparisons (the ages are computed when shown).
    """
    node_objs = _by_name(nodes)
    nrt_objs = _by_name(nrts)
    lease_objs = _by_name(leases or ())
    agents = agent_infos(agent_pods)
    out = []
    for name in sorted(set(node_objs) | set(nrt_objs)):
        nrt = nrt_objs.get(name)
        topology = None
        if nrt is not None:
            try:
                topology = from_nrt(nrt)
            except InputError as e:
                raise InputError(f"NodeResourceTopology {name}: {e.source}", e.detail) from e
        node = node_objs.get(name)
        allocatable = None
        if node is not None:
            status = node.get("status") or {}
            allocatable = resource_quantities(status.get("allocatable"), f"Node {name}: status.allocatable")
        lease = lease_objs.get(name)
        comparison = None
        placement = None
        if topology is not None and pods_by_node is not None:
            pods = [
                pod_from_manifest(p, source=f"pod {(p.get('metadata') or {}).get('name', '?')}")
                for p in pods_by_node.get(name, ())
            ]
            comparison = compare(
                topology, pods, resync_method, informer_mode, resource_names_of(topology), now
            )
            placement = placement_of(topology, pods, comparison, informer_mode)
        out.append(
            NodeStatus(
                name=name,
                node_exists=node is not None,
                topology=topology,
                changed=None if nrt is None else last_change(nrt),
                lease=None if lease is None else lease_info(lease, lease_namespace),
                leases_read=leases is not None,
                fingerprint=comparison,
                allocatable=allocatable,
                agent=agents.get(name),
                placement=placement,
            )
        )
    return out


def placement_of(
    topology: NodeTopology, pods: Iterable[Pod], comparison: Comparison, informer_mode: InformerMode
) -> NodePlacement | None:
    """The numaplacement of ``topology`` for the node's ``pods``: decoded when the fingerprint
    matches them (the pods it counts are then the agent's), a MISMATCH otherwise; None when the
    NRT publishes none."""
    if topology.attribute(npl.METADATA_ATTRIBUTE) is None:
        return None
    if comparison.result is not CompareResult.MATCH:
        return NodePlacement(Outcome.MISMATCH, detail="the fingerprint does not match the node's pods")
    return decode_node_placement(topology, [p for p in pods if counts_for_fingerprint(p, informer_mode)])
