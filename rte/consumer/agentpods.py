"""Freshness without writes: the agent pods' readiness stands in for a heartbeat.

A heartbeat Lease renewed every 10 s costs each node 360 apiserver writes an hour, for a fact
that changes a few times a year. Kubernetes already writes that fact, on change only:

* the kubelet probes the agent's ``/readyz`` (which fails exactly when the agent cannot vouch for
  its NRT, and more: see :mod:`rte.agent.status`) and writes the pod's ``Ready`` condition when
  it flips (``pkg/kubelet/status/status_manager.go``), at once when the container exits;
* when a node stops reporting, the node lifecycle controller sets ``Ready=False`` on every pod of
  the node after ``--node-monitor-grace-period`` (``MarkPodsNotReady`` in
  ``pkg/controller/nodelifecycle/node_lifecycle_controller.go``), and taints the node so
  kube-scheduler itself stops offering it.

The consumer already watches every pod (the reserve cache needs them), so the agents' pods come
for free. :class:`AgentPods` turns their events into the store's heartbeats, with the meaning
the staleness rule (:mod:`rte.consumer.cache.freshness`) already gives them:

* some agent pod of the node is ready: heartbeat ``+inf`` (fresh whatever the clock says);
* none is: the latest instant one of them stopped being ready (the ``Ready`` condition's
  ``lastTransitionTime``; the pod's creation for one never ready; the deletion for one deleted),
  so the node turns stale ``heartbeat_max_age`` after its agent stopped vouching;
* no agent pod was ever seen for the node: no heartbeat (``stale_if_no_heartbeat`` decides).

Two pods on one node happen during a rolling update with surge; the node is fresh while either
is ready.
"""

from __future__ import annotations

import math
import sys
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from rte.errors import InputError
from rte.model.pod import PodKey
from rte.model.timestamps import rfc3339_seconds


class HeartbeatSource(StrEnum):
    """Where a consumer learns that an agent still vouches for its node's NRT."""

    AGENT_PODS = "agent-pods"
    """The agent pods' Ready condition (written by the kubelet on change): no steady-state writes."""
    LEASE = "lease"
    """The Lease each agent renews (``rte run --lease-duration``): 360 writes a node-hour at 40 s."""


READY_FOREVER = math.inf
"""The heartbeat of a node whose agent pod is ready: never too old."""

DEFAULT_AGENT_NAMESPACE = "rte"
DEFAULT_AGENT_SELECTOR = "app.kubernetes.io/name=rte,app.kubernetes.io/component=node-agent"
"""The DaemonSet's pod labels (deploy/daemonset.yaml)."""


def parse_selector(text: str, source: str = "agent selector") -> dict[str, str]:
    """An equality-based label selector (``k=v,k2=v2``; ``==`` also accepted) as a dict.

    Set-based selectors (``in``, ``!=``, ``!k``) are refused: the agent pods are told apart by
    plain labels, and a selector this module cannot evaluate exactly must not match silently."""
    labels: dict[str, str] = {}
    for part in (p.strip() for p in text.split(",")):
        if not part:
            continue
        key, sep, value = part.replace("==", "=").partition("=")
        key, value = key.strip(), value.strip()
        if not sep or not key or "!" in key or " " in key:
            raise InputError(source, f"{part!r}: expected key=value (equality only)")
        labels[key] = value
    if not labels:
        raise InputError(source, "an empty selector would take every pod for an agent")
    return labels


@dataclass(frozen=True, slots=True)
class AgentPodState:
    """What one agent pod says about its node's NRT (slotted: one per node, 50 000 of them)."""

    node: str
    ready: bool
    since: float | None
    """When it stopped being ready (or was created, never ready); None: unknown."""


def _time(value: Any, field: str) -> float | None:
    """An optional time (absent or empty: None)."""
    return rfc3339_seconds(value, field) if value else None


def agent_pod_state(obj: Mapping[str, Any], source: str = "agent pod") -> AgentPodState | None:
    """The readiness an agent pod reports, or None for a pod not bound to a node yet."""
    spec = obj.get("spec")
    status = obj.get("status")
    metadata = obj.get("metadata")
    node = spec.get("nodeName") if isinstance(spec, Mapping) else None
    if not isinstance(node, str) or not node:
        return None
    node = sys.intern(str(node))  # shared with the pod index's Pod (rte.model.pod interns it)
    created = None
    if isinstance(metadata, Mapping):
        created = _time(metadata.get("creationTimestamp"), f"{source}: metadata.creationTimestamp")
    conditions = status.get("conditions") if isinstance(status, Mapping) else None
    for condition in conditions if isinstance(conditions, list) else ():
        if isinstance(condition, Mapping) and condition.get("type") == "Ready":
            if condition.get("status") == "True":
                return AgentPodState(node, True, None)
            since = _time(condition.get("lastTransitionTime"), f"{source}: status.conditions[Ready]")
            return AgentPodState(node, False, since if since is not None else created)
    return AgentPodState(node, False, created)


class AgentPods:
    """The agent pods seen, per node, and the heartbeat each node gets from them.

    Not thread-safe: one pod feed calls it. ``publish(node, beat)`` receives every change of a
    node's heartbeat (None: the node has none any more).
    """

    def __init__(
        self,
        namespace: str,
        selector: Mapping[str, str],
        publish: Callable[[str, float | None], None],
        clock: Callable[[], float],
    ) -> None:
        self.namespace = namespace
        self.selector = dict(selector)
        self._publish = publish
        self._clock = clock
        self._pods: dict[PodKey, AgentPodState] = {}
        self._on_node: dict[str, PodKey] = {}
        """The keys of :attr:`_pods` grouped by node, first key here, the others in
        :attr:`_more`: a node's heartbeat reads its own pods, not all of them (scanning every pod
        made a list of 50 000 agent pods cost 38 s, issue #27). A node has one agent pod, two
        during a rolling update: its key alone, not a tuple of it (64 bytes a node)."""
        self._more: dict[str, tuple[PodKey, ...]] = {}
        self._gone: dict[str, float] = {}
        """Nodes whose last agent pod was deleted, and when: they stay stale-able, not unknown."""
        self._beats: dict[str, float | None] = {}

    def is_agent(self, obj: Mapping[str, Any]) -> bool:
        metadata = obj.get("metadata")
        if not isinstance(metadata, Mapping) or metadata.get("namespace") != self.namespace:
            return False
        labels = metadata.get("labels")
        if not isinstance(labels, Mapping):
            return False
        return all(labels.get(k) == v for k, v in self.selector.items())

    def on_event(self, event_type: str, obj: Mapping[str, Any]) -> None:
        """One pod watch event; pods that are not agents are ignored."""
        if not isinstance(obj, Mapping) or not self.is_agent(obj):
            return
        key = _key(obj)
        if key is None:
            return
        if event_type == "DELETED":
            self._delete(key)
            return
        old = self._pods.get(key)
        try:
            state = agent_pod_state(obj, f"pod {key[0]}/{key[1]}")
        except InputError:
            state = None  # a malformed time: the pod tells nothing; treat as not bound
        if state is None:
            if old is not None:
                self._forget(key, old)
                self._refresh(old.node)
            return
        if old is not None:
            self._forget(key, old)
        self._pods[key] = state
        self._set_keys(state.node, (*self._keys(state.node), key))
        if old is not None and old.node != state.node:
            self._refresh(old.node)
        self._refresh(state.node)

    def replace(self, objects: Iterable[Mapping[str, Any]]) -> None:
        """A (re)list: the agent pods are exactly those among ``objects``."""
        listed = {k: o for o in objects if isinstance(o, Mapping) and self.is_agent(o) and (k := _key(o))}
        for key in [k for k in self._pods if k not in listed]:
            self._delete(key)
        for obj in listed.values():
            self.on_event("MODIFIED", obj)

    def heartbeat(self, node: str) -> float | None:
        """The node's heartbeat as published (see the module's docstring)."""
        return self._beats.get(node)

    def _delete(self, key: PodKey) -> None:
        old = self._pods.get(key)
        if old is not None:
            self._forget(key, old)
            self._gone[old.node] = self._clock()
            self._refresh(old.node)

    def _forget(self, key: PodKey, old: AgentPodState) -> None:
        del self._pods[key]
        self._set_keys(old.node, tuple(k for k in self._keys(old.node) if k != key))

    def _keys(self, node: str) -> tuple[PodKey, ...]:
        """The keys of the node's agent pods, in the order they came."""
        first = self._on_node.get(node)
        return () if first is None else (first, *self._more.get(node, ()))

    def _set_keys(self, node: str, keys: tuple[PodKey, ...]) -> None:
        if not keys:
            self._on_node.pop(node, None)
        else:
            self._on_node[node] = keys[0]
        if len(keys) > 1:
            self._more[node] = keys[1:]
        else:
            self._more.pop(node, None)

    def _refresh(self, node: str) -> None:
        states = [self._pods[k] for k in self._keys(node)]
        beat: float | None
        if any(s.ready for s in states):
            beat = READY_FOREVER
        else:
            times = [s.since for s in states if s.since is not None]
            if node in self._gone:
                times.append(self._gone[node])
            beat = max(times) if times else None
        if beat == READY_FOREVER:
            self._gone.pop(node, None)  # a ready pod replaced the deleted one
        if node not in self._beats or self._beats[node] != beat:
            self._beats[node] = beat
            self._publish(node, beat)


def _key(obj: Mapping[str, Any]) -> PodKey | None:
    metadata = obj.get("metadata")
    if not isinstance(metadata, Mapping):
        return None
    namespace, name = metadata.get("namespace"), metadata.get("name")
    if not isinstance(namespace, str) or not isinstance(name, str) or not name:
        return None
    # The namespace interned: each decoded pod brings its own copy of the same few.
    return sys.intern(str(namespace)), name
