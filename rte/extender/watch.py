"""What the extender watches through the Kubernetes client: NRTs, pods, PodDisruptionBudgets, and
the agents' heartbeats.

:class:`ClusterFeeds` runs :class:`~rte.runtime.reflector.Reflector` loops feeding the
:class:`~rte.consumer.store.NRTStore` (NRTs, v1alpha2), the
:class:`~rte.extender.service.ExtenderService` (pods, cluster-wide) and the store's heartbeats:
by default the agent pods' readiness, read off the same pod watch
(:mod:`rte.consumer.agentpods`: no watch and no write more), or the Leases the agents renew; and,
with the pods, the PodDisruptionBudgets the preempt verb counts (:mod:`rte.extender.budgets`).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping
from typing import Any

import msgspec

from rte.consumer.agentpods import DEFAULT_AGENT_SELECTOR, AgentPods, HeartbeatSource, parse_selector
from rte.consumer.nrtfile import CompactReader, list_page
from rte.consumer.store import DELETED, NRTStore, heartbeat_from_lease
from rte.errors import InputError
from rte.extender.service import ExtenderService
from rte.model.topology import NodeTopology
from rte.runtime.heap import release_free_heap
from rte.runtime.kubeclient import raw_list_call
from rte.runtime.reflector import Obj, Reflector

log = logging.getLogger(__name__)

NRT_GROUP = "topology.node.k8s.io"
NRT_VERSION = "v1alpha2"
NRT_PLURAL = "noderesourcetopologies"
_ALL_PODS = "/api/v1/pods"
"""Every namespace's pods (``CoreV1Api.list_pod_for_all_namespaces``)."""
_ALL_PDBS = "/apis/policy/v1/poddisruptionbudgets"
"""Every namespace's PodDisruptionBudgets (``PolicyV1Api.list_pod_disruption_budget_for_all_namespaces``)."""


class ClusterFeeds:
    """The three reflectors that keep the extender current, and their glue.

    ``watch_pods`` must agree with the service's ``Gates.pods_tracked`` (both made by
    :class:`~rte.extender.app.ExtenderApp`): a service that waits for a pod list nobody makes
    never becomes ready.
    """

    def __init__(
        self,
        api_client: Any,
        store: NRTStore,
        service: ExtenderService,
        *,
        heartbeat_namespace: str | None,
        heartbeat_source: HeartbeatSource = HeartbeatSource.AGENT_PODS,
        agent_selector: str = DEFAULT_AGENT_SELECTOR,
        watch_pods: bool = True,
        clock: Callable[[], float] = time.time,
        **reflector_options: Any,
    ) -> None:
        self.store = store
        self.service = service
        # Listed and watched NRTs are read as --nrt-file reads them, equal parts shared: with
        # from_nrt each kept its own strings, zones and amounts, 15 KiB per 8-zone NRT where the
        # file path keeps 4 (the NRT reflector's thread is the reader's only user).
        self._reader = CompactReader()
        self._leases: set[str] = set()
        # Every list and watch is a plain GET (raw_list_call), none through a generated API class:
        # CoreV1Api alone is 20 MiB of the extender, CustomObjectsApi and CoordinationV1Api 2.4.
        self.reflectors: list[Reflector] = [
            Reflector(
                "nrt",
                raw_list_call(api_client, f"/apis/{NRT_GROUP}/{NRT_VERSION}/{NRT_PLURAL}"),
                on_list=self._nrt_list,
                on_event=self._nrt_event,
                read_item=self._nrt_listed,
                decode_page=list_page,
                **reflector_options,
            )
        ]
        self.agent_pods: AgentPods | None = None
        if heartbeat_namespace and heartbeat_source is HeartbeatSource.AGENT_PODS:
            selector = parse_selector(agent_selector, "--agent-selector")
            self.agent_pods = AgentPods(heartbeat_namespace, selector, store.set_heartbeat, clock)
        if watch_pods:
            self.reflectors.append(
                Reflector(
                    "pods",
                    raw_list_call(api_client, _ALL_PODS),
                    on_list=self._pod_list,
                    on_event=self._pod_event,
                    **reflector_options,
                )
            )
            # The preempt verb counts the PDB violations of the pods it adds; it adds only pods
            # the pod watch knows, so without that watch there is nothing to count.
            self.reflectors.append(
                Reflector(
                    "pdbs",
                    raw_list_call(api_client, _ALL_PDBS),
                    on_list=service.budgets.replace,
                    on_event=service.budgets.on_event,
                    **reflector_options,
                )
            )
        elif self.agent_pods is not None:
            # No cluster-wide pod watch to read them off: the agents' pods alone, one per node.
            agents = f"/api/v1/namespaces/{heartbeat_namespace}/pods"
            self.reflectors.append(
                Reflector(
                    "agent-pods",
                    raw_list_call(api_client, agents, [("labelSelector", agent_selector)]),
                    on_list=self.agent_pods.replace,
                    on_event=self.agent_pods.on_event,
                    **reflector_options,
                )
            )
        if heartbeat_namespace and heartbeat_source is HeartbeatSource.LEASE:
            leases = f"/apis/coordination.k8s.io/v1/namespaces/{heartbeat_namespace}/leases"
            self.reflectors.append(
                Reflector(
                    "leases",
                    raw_list_call(api_client, leases),
                    on_list=self._lease_list,
                    on_event=self._lease_event,
                    **reflector_options,
                )
            )

    def start(self) -> ClusterFeeds:
        for reflector in self.reflectors:
            reflector.start()
        return self

    def stop(self) -> None:
        for reflector in self.reflectors:
            reflector.stop()

    def relist(self, name: str) -> Callable[[], bool]:
        """List ``name`` (``"pods"``) again now; the result tells whether that list was delivered."""
        [reflector] = [r for r in self.reflectors if r.name == name]
        ticket = reflector.relist()
        return lambda: reflector.listed >= ticket

    def status(self) -> dict[str, Any]:
        return {
            r.name: {
                "synced": r.synced.is_set(),
                "lists": r.lists,
                "failures": r.failures,
                "lastError": r.last_error,
            }
            for r in self.reflectors
        }

    # --- NRTs ----------------------------------------------------------------------------

    def _nrt_listed(self, item: msgspec.Raw | Any) -> NodeTopology | None:
        """One listed NRT, read as its page arrives: its JSON bytes (:func:`list_page`), or an
        object when the page was decoded whole. None: not an object (left out, as the reflector
        leaves out such items of other lists), or malformed (logged and left out)."""
        try:
            if isinstance(item, msgspec.Raw):
                return self._reader.read_raw(item, strict=False)
            return self._reader.read(item) if isinstance(item, Mapping) else None
        except InputError as e:
            obj = item if isinstance(item, Mapping) else _decoded(item)
            name = _name(obj)
            log.warning("ignoring a malformed NodeResourceTopology %s: %s", name, e)
            if name:
                self.store.reject(name, f"NodeResourceTopology {name} refused: {e}")
            return None

    def _nrt_list(self, topologies: list[NodeTopology | None]) -> None:
        self.store.replace_all(t for t in topologies if t is not None)
        self.service.nrt_listed()
        # The pages' bytes and the reading's temporaries are freed by now, and would stay
        # resident among the topologies otherwise (rte.runtime.heap).
        release_free_heap()

    def _nrt_event(self, event_type: str, obj: Obj) -> None:
        try:
            self.store.apply(event_type, self._reader.read(obj))
        except InputError as e:
            name = _name(obj)
            if event_type == DELETED and name:
                self.store.apply(DELETED, NodeTopology(name=name))  # a deletion needs only the name
                return
            # A malformed update: the node is refused, with the reason, until a good one comes.
            if name:
                self.store.reject(name, f"NodeResourceTopology {name} refused: {e}")
            raise

    # --- pods: the service's index, and the agents' readiness --------------------------------

    def _pod_list(self, items: list[Obj]) -> None:
        self.service.replace_pods(items)
        if self.agent_pods is not None:
            self.agent_pods.replace(items)

    def _pod_event(self, event_type: str, obj: Obj) -> None:
        self.service.on_pod_event(event_type, obj)
        if self.agent_pods is not None:
            self.agent_pods.on_event(event_type, obj)

    # --- Leases --------------------------------------------------------------------------

    def _lease_list(self, items: list[Obj]) -> None:
        seen: set[str] = set()
        for item in items:
            seen.add(_name(item))
            self._lease_event("ADDED", item)
        for name in self._leases - seen:
            self.store.forget_heartbeat(name)
        self._leases = seen

    def _lease_event(self, event_type: str, obj: Obj) -> None:
        name = _name(obj)
        if event_type == DELETED:
            self._leases.discard(name)
            self.store.forget_heartbeat(name)
            return
        try:
            beat = heartbeat_from_lease(obj)
        except InputError as e:
            log.warning("ignoring a malformed Lease %s: %s", name, e)
            return
        self._leases.add(name)
        if beat is not None:
            self.store.observe_heartbeat(*beat)


def _decoded(raw: msgspec.Raw) -> Any:
    """A listed item's JSON decoded, only to name it in a warning (anything undecodable: None)."""
    try:
        return msgspec.json.decode(raw)
    except msgspec.DecodeError:
        return None


def _name(obj: Any) -> str:
    metadata = obj.get("metadata") if isinstance(obj, Mapping) else None
    name = metadata.get("name") if isinstance(metadata, Mapping) else None
    return name if isinstance(name, str) else ""
