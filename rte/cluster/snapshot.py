"""Which objects a view reads for a selection of nodes, and the statuses built from them."""

from __future__ import annotations

from collections.abc import Collection

from rte.cluster.reader import ClusterReader
from rte.cluster.status import NodeStatus, node_statuses
from rte.consumer.agentpods import DEFAULT_AGENT_SELECTOR
from rte.consumer.config import ResyncMethod
from rte.errors import InputError
from rte.model.vocabulary import InformerMode


def read_statuses(
    reader: ClusterReader,
    *,
    names: Collection[str] = (),
    selector: str | None = None,
    lease_namespace: str | None = None,
    agent_selector: str | None = DEFAULT_AGENT_SELECTOR,
    fingerprints: bool = True,
    informer_mode: InformerMode = InformerMode.DEDICATED,
    resync_method: ResyncMethod = ResyncMethod.AUTODETECT,
    now: float = 0.0,
) -> list[NodeStatus]:
    """The statuses of the nodes named (all when none), restricted by a Node label ``selector``.

    A label selector applies to Nodes (NRTs carry no node labels), then their NRTs are read. A
    name that is neither a Node nor an NRT is an :class:`InputError`. ``lease_namespace`` None
    or empty skips the agents' heartbeats: their Leases and, with ``agent_selector``, their pods
    (one list in that namespace); ``fingerprints`` False skips reading the nodes' pods.
    """
    wanted: set[str] | None = set(names) if names else None
    if selector:
        nodes = reader.nodes(selector=selector)
        selected = {str(n["metadata"]["name"]) for n in nodes}
        wanted = selected if wanted is None else wanted & selected
        nodes = [n for n in nodes if n["metadata"]["name"] in wanted]
        nrts = reader.nrts(wanted)
    else:
        nodes = reader.nodes(names=wanted)
        nrts = reader.nrts(wanted)
    if names and not selector:
        found = {str(o["metadata"]["name"]) for o in (*nodes, *nrts)}
        unknown = sorted(set(names) - found)
        if unknown:
            raise InputError("NODE", f"no Node or NodeResourceTopology named {', '.join(unknown)}")
    every = {str(o["metadata"]["name"]) for o in (*nodes, *nrts)}
    leases = (
        reader.leases(lease_namespace, every if wanted is not None else None) if lease_namespace else None
    )
    with_nrt = {str(o["metadata"]["name"]) for o in nrts}
    pods = reader.pods_on(with_nrt) if fingerprints and with_nrt else None
    agent_pods = reader.pods_in(lease_namespace, agent_selector) if lease_namespace and agent_selector else []
    return node_statuses(
        nodes,
        nrts,
        leases=leases,
        lease_namespace=lease_namespace or "",
        pods_by_node=pods if fingerprints else None,
        agent_pods=agent_pods,
        informer_mode=informer_mode,
        resync_method=resync_method,
        now=now,
    )
