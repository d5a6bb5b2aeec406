"""The consumer's view of every published NRT, kept current by watch events (or files).

The reference consumer lists NRTs once and then does a live GET per decision, and never notices
an NRT created after it started (scheduler-plugins #967). Here a watch (or a directory of files)
feeds :meth:`NRTStore.apply`, decisions read memory only, and a node whose NRT shows up later is
simply one more ``ADDED`` event.

Each change bumps a store-wide ``generation`` and stamps the node with it (its ``revision``), so
a reader can tell cheaply whether a node changed since it last looked, without comparing objects.

The store also keeps the agents' heartbeats, so "quiet node" and "dead agent" can be told apart
without NRT churn: by default from the agent pods' readiness, which the kubelet writes only when
it flips (:mod:`rte.consumer.agentpods`); optionally from a ``coordination.k8s.io`` Lease the
agent renews, named after its node (namespace :data:`~rte.model.attributes.HEARTBEAT_LEASE_NAMESPACE`).
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from rte.consumer.changelog import ChangeLog
from rte.consumer.nrtfile import read_nrt_file
from rte.consumer.numaview import shared
from rte.errors import InputError
from rte.model.nrt import from_nrt
from rte.model.timestamps import rfc3339_seconds
from rte.model.topology import NodeTopology

ADDED = "ADDED"
MODIFIED = "MODIFIED"
DELETED = "DELETED"
BOOKMARK = "BOOKMARK"
EVENT_TYPES = (ADDED, MODIFIED, DELETED)


def resource_names_of(topology: NodeTopology) -> frozenset[str]:
    """Every resource name listed in any zone (what the exclusivity rule calls "in the NRT"); one
    shared set per distinct set of names (:func:`rte.consumer.numaview.shared`)."""
    names = frozenset(res.name for zone in topology.zones for res in zone.resources)
    return shared(("names", *sorted(names)), names)


class NRTStore:
    """Thread-safe node name -> latest :class:`NodeTopology`, plus heartbeats.

    Writers are the watch loop and the lease watch; readers are every scheduling decision. All
    methods are safe to call from any thread; returned topologies are immutable.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._topologies: dict[str, NodeTopology] = {}
        self._names: dict[str, frozenset[str]] = {}
        self._revisions: dict[str, int] = {}
        self._heartbeats: dict[str, float] = {}
        self._generation = 0
        self._changes = ChangeLog()
        """Every bump, in order: serial ``g`` is the change that made generation ``g + 1``."""
        self._beats = ChangeLog()
        """Every heartbeat change, in order (what the caches' staleness rule reads)."""
        self._rejected: dict[str, str] = {}
        """Node -> why its latest NRT was refused as impossible (:func:`rte.model.nrt.check_topology`)."""
        self._rejections = 0

    # --- writing ---------------------------------------------------------------------------

    def apply(self, event_type: str, topology: NodeTopology) -> bool:
        """Apply one watch event; returns True when the stored state changed.

        ``ADDED`` and ``MODIFIED`` both upsert (a relist after a dropped watch replays objects as
        ``ADDED``, and an ``ADDED`` for a node we already hold is just an update). Re-applying an
        identical object is not a change, so periodic relists cost readers nothing.
        ``BOOKMARK`` events carry no object state and are ignored.
        """
        if event_type == BOOKMARK:
            return False
        if event_type not in EVENT_TYPES:
            raise InputError("NRT watch event", f"unknown event type {event_type!r}")
        with self._lock:
            self._rejected.pop(topology.name, None)  # a good NRT (or a deletion) ends a refusal
            if event_type == DELETED:
                if topology.name not in self._topologies:
                    return False
                del self._topologies[topology.name]
                del self._names[topology.name]
                self._bump(topology.name)
                return True
            if self._topologies.get(topology.name) == topology:
                return False
            self._topologies[topology.name] = topology
            self._names[topology.name] = resource_names_of(topology)
            self._bump(topology.name)
            return True

    def apply_object(self, event_type: str, obj: Mapping[str, Any]) -> bool:
        """Apply an event whose object is a decoded NRT (as a watch or a file delivers it)."""
        return self.apply(event_type, from_nrt(obj))

    def apply_watch_event(self, event: Mapping[str, Any]) -> bool:
        """Apply a ``{"type": ..., "object": {...}}`` event as the Kubernetes watch API sends it."""
        event_type = event.get("type")
        if not isinstance(event_type, str):
            raise InputError("NRT watch event: type", f"expected a string, got {event_type!r}")
        if event_type == BOOKMARK:
            return False
        if event_type not in EVENT_TYPES:
            # ERROR carries a Status (typically 410 Gone): the caller must relist and rewatch.
            raise InputError("NRT watch event", f"unknown event type {event_type!r}")
        obj = event.get("object")
        if not isinstance(obj, Mapping):
            raise InputError("NRT watch event: object", f"expected an object, got {type(obj).__name__}")
        return self.apply_object(event_type, obj)

    def replace_all(self, topologies: Iterable[NodeTopology]) -> int:
        """Make the store hold exactly ``topologies`` (an initial list or a relist).

        Nodes missing from the list are deleted, as a watch would have reported had it not been
        interrupted. Returns how many nodes changed.
        """
        incoming = {t.name: t for t in topologies}
        changed = 0
        for name in self.nodes():
            if name not in incoming:
                changed += self.apply(DELETED, NodeTopology(name=name))
        for topology in incoming.values():
            changed += self.apply(ADDED, topology)
        return changed

    def reject(self, node: str, reason: str) -> None:
        """The node's latest NRT is bad input: refuse the node with ``reason`` until a good NRT
        (or its deletion) arrives, whatever older version the store still holds."""
        with self._lock:
            self._rejected[node] = reason
            self._rejections += 1

    def rejected(self) -> dict[str, str]:
        """Node -> reason, for every node whose latest NRT was refused."""
        with self._lock:
            return dict(self._rejected)

    @property
    def rejections(self) -> int:
        """How many NRTs were refused since the start."""
        with self._lock:
            return self._rejections

    def observe_heartbeat(self, node: str, renew_time: float) -> None:
        """Record the agent's latest Lease renewal (seconds since the epoch).

        Times only move forward: a late, reordered event must not make a live agent look dead.
        """
        with self._lock:
            if renew_time > self._heartbeats.get(node, float("-inf")):
                self._heartbeats[node] = renew_time
                self._beats.note(node)

    def set_heartbeat(self, node: str, beat: float | None) -> None:
        """Replace the node's heartbeat, backwards too (None: it has none): the agent pods' readiness
        (:mod:`rte.consumer.agentpods`) can stop vouching, which a Lease renewal never does."""
        with self._lock:
            old = self._heartbeats.get(node)
            if beat is None:
                self._heartbeats.pop(node, None)
            else:
                self._heartbeats[node] = beat
            if old != beat:
                self._beats.note(node)

    def forget_heartbeat(self, node: str) -> None:
        """The Lease was deleted: the node no longer has a heartbeat at all."""
        with self._lock:
            if self._heartbeats.pop(node, None) is not None:
                self._beats.note(node)

    def _bump(self, node: str) -> None:
        self._generation += 1
        self._revisions[node] = self._generation
        self._changes.note(node)

    # --- reading ---------------------------------------------------------------------------

    def get(self, node: str) -> NodeTopology | None:
        with self._lock:
            return self._topologies.get(node)

    def get_with_revision(self, node: str) -> tuple[NodeTopology | None, int]:
        """The topology and its revision, read atomically."""
        with self._lock:
            return self._topologies.get(node), self._revisions.get(node, 0)

    def revision(self, node: str) -> int:
        """The store generation of this node's last change (also of its deletion); 0 if never seen."""
        with self._lock:
            return self._revisions.get(node, 0)

    def resource_names(self, node: str) -> frozenset[str]:
        """Resource names in any zone of the node's NRT; empty when it has none."""
        with self._lock:
            return self._names.get(node, frozenset())

    def nodes(self) -> list[str]:
        """Names of the nodes that currently have an NRT, sorted."""
        with self._lock:
            return sorted(self._topologies)

    def snapshot(self) -> dict[str, NodeTopology]:
        with self._lock:
            return dict(self._topologies)

    def changed_since(self, generation: int | None) -> tuple[int, list[str] | None]:
        """The current generation and the nodes changed after ``generation`` (None: too long
        ago to tell, or ``generation`` None), read atomically."""
        with self._lock:
            return self._generation, self._changes.since(generation)

    def heartbeats_since(self, serial: int | None) -> tuple[int, dict[str, float | None] | None]:
        """The heartbeat log's serial, and the latest heartbeat (None: none) of each node whose
        heartbeat changed after ``serial``; None when too long ago to tell, or ``serial`` None."""
        with self._lock:
            names = self._beats.since(serial)
            beats = None if names is None else {n: self._heartbeats.get(n) for n in names}
            return self._beats.serial, beats

    def heartbeats(self) -> tuple[int, dict[str, float]]:
        """The heartbeat log's serial and every node's latest heartbeat, read atomically."""
        with self._lock:
            return self._beats.serial, dict(self._heartbeats)

    def heartbeat(self, node: str) -> float | None:
        """The last observed Lease renewal time of the node's agent, or None."""
        with self._lock:
            return self._heartbeats.get(node)

    @property
    def generation(self) -> int:
        """Incremented by every change to any node; a reader compares it to skip work."""
        with self._lock:
            return self._generation

    def __len__(self) -> int:
        with self._lock:
            return len(self._topologies)

    def __contains__(self, node: object) -> bool:
        with self._lock:
            return node in self._topologies

    def known(self, nodes: Iterable[str], heartbeats: bool = True) -> list[bool]:
        """Per node, whether the store holds its NRT (or, with ``heartbeats``, its agent's
        heartbeat), read atomically: of a node it knows neither of, every cache answers as of
        any other such name."""
        with self._lock:
            topologies = self._topologies
            if not heartbeats:
                return [node in topologies for node in nodes]
            beats = self._heartbeats
            return [node in topologies or node in beats for node in nodes]


def heartbeat_from_lease(obj: Mapping[str, Any], source: str = "lease") -> tuple[str, float] | None:
    """``(node, renew time)`` from a decoded Lease, or None when it was never renewed.

    The Lease is named after the node. ``spec.renewTime`` is an RFC 3339 time with microseconds
    (``2024-05-01T10:00:00.123456Z``); ``acquireTime`` stands in when it is missing.
    """
    if not isinstance(obj, Mapping):
        raise InputError(source, f"expected a Lease object, got {type(obj).__name__}")
    metadata = obj.get("metadata")
    spec = obj.get("spec") or {}
    if not isinstance(metadata, Mapping) or not isinstance(spec, Mapping):
        raise InputError(source, "a Lease needs metadata and spec objects")
    name = metadata.get("name")
    if not isinstance(name, str) or not name:
        raise InputError(f"{source}: metadata.name", "a Lease needs a name")
    raw = spec.get("renewTime") or spec.get("acquireTime")
    if raw is None:
        return None
    return name, rfc3339_seconds(raw, f"{source}: spec.renewTime")


def topologies_from_file(path: Path) -> list[NodeTopology]:
    """Every NRT in a JSON or YAML file: one object, a ``...List`` with ``items``, or many documents.

    JSON at JSON speed, into shared parts (:mod:`rte.consumer.nrtfile`); a negative amount is an
    error (a user's file), not a warning.
    """
    return read_nrt_file(path)
